package ragen

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"ragen/env"
)

// lineEnv is a fake discrete env: a walker on cells 0..size−1 starting at
// seed mod size, goal at the last cell. Actions: 1 "Left", 2 "Right".
// Moving gives reward 0 (int); reaching the goal gives 1.0 (float), done,
// success. Reset records seeds.
type lineEnv struct {
	size      int
	pos       int
	seeds     []int64
	stepDelay time.Duration
	block     bool // Step blocks forever, ignoring ctx
	mu        sync.Mutex
}

func (e *lineEnv) Reset(ctx context.Context, seed int64, mode env.Mode) (string, error) {
	e.mu.Lock()
	e.seeds = append(e.seeds, seed)
	e.mu.Unlock()
	e.pos = int(seed % int64(e.size-1))
	return e.Render(), nil
}

func (e *lineEnv) Step(ctx context.Context, a env.Action) (env.StepResult, error) {
	if e.block {
		select {} // a stuck env that ignores its context
	}
	if e.stepDelay > 0 {
		time.Sleep(e.stepDelay)
	}
	old := e.pos
	switch a.ID {
	case 1:
		e.pos = max(0, e.pos-1)
	case 2:
		e.pos = min(e.size-1, e.pos+1)
	default:
		return env.StepResult{}, fmt.Errorf("lineEnv: bad action id %d", a.ID)
	}
	done := e.pos == e.size-1
	r := env.StepResult{Observation: e.Render(), RewardIsInt: true, Done: done, Info: env.Info{
		"action_is_valid": true, "action_is_effective": e.pos != old, "success": done,
	}}
	if done {
		r.Reward, r.RewardIsInt = 1.0, false
	}
	r.Info["raw_reward"] = r.Reward
	return r, nil
}

func (e *lineEnv) Render() string {
	b := make([]byte, e.size)
	for i := range b {
		b[i] = '_'
	}
	b[e.size-1] = 'G'
	b[e.pos] = 'P'
	return string(b)
}

func (e *lineEnv) Close() error                 { return nil }
func (e *lineEnv) ActionLookup() map[int]string { return map[int]string{1: "Left", 2: "Right"} }

// echoEnv is a fake language env: each step ends the episode; success when
// the action is "yes"; reward 0.5 (float) on success, 0 (int) otherwise.
type echoEnv struct{ last string }

func (e *echoEnv) Reset(ctx context.Context, seed int64, mode env.Mode) (string, error) {
	e.last = fmt.Sprintf("question %d", seed)
	return e.last, nil
}

func (e *echoEnv) Step(ctx context.Context, a env.Action) (env.StepResult, error) {
	ok := a.Text == "yes"
	r := env.StepResult{RewardIsInt: !ok, Done: true, Info: env.Info{"success": ok, "note": "text is skipped"}}
	if ok {
		r.Reward = 0.5
	}
	e.last = "answered " + a.Text
	return r, nil
}

func (e *echoEnv) Render() string { return e.last }
func (e *echoEnv) Close() error   { return nil }

// testProvider builds lineEnv for type "line" and echoEnv for "echo" and
// keeps every env it built.
type testProvider struct {
	mu        sync.Mutex
	built     []env.BaseEnv
	stepDelay time.Duration
	block     bool
}

func (p *testProvider) NewEnv(tag string, spec EnvSpec) (env.BaseEnv, error) {
	var e env.BaseEnv
	switch spec.EnvType {
	case "line":
		e = &lineEnv{size: 5, stepDelay: p.stepDelay, block: p.block}
	case "echo":
		e = &echoEnv{}
	default:
		return nil, fmt.Errorf("unknown env type %q", spec.EnvType)
	}
	p.mu.Lock()
	p.built = append(p.built, e)
	p.mu.Unlock()
	return e, nil
}

func (p *testProvider) PromptInfo(tag string, spec EnvSpec) (PromptInfo, error) {
	if spec.EnvType == "line" {
		return PromptInfo{
			GridVocab:   []VocabEntry{{"P", "player"}, {"_", "empty"}, {"G", "goal"}},
			ActionNames: []string{"Left", "Right"},
		}, nil
	}
	return PromptInfo{}, nil
}

// testConfig: tags Line (line env, 10 actions per episode) and Echo.
func testConfig(groupSize int, tags []string, nGroups []int) Config {
	c := DefaultConfig()
	c.CustomEnvs = map[string]EnvSpec{
		"Line": {EnvType: "line", MaxActionsPerTraj: 10, EnvInstruction: "You walk on a line. Reach G.", MaxTokens: 100},
		"Echo": {EnvType: "echo", MaxActionsPerTraj: 1, EnvInstruction: "Answer yes or no."},
	}
	n := 0
	for _, g := range nGroups {
		n += g
	}
	set := EnvSetConfig{EnvGroups: n, GroupSize: groupSize, EnvConfigs: EnvConfigs{Tags: tags, NGroups: nGroups}}
	c.ESManager.Train, c.ESManager.Val = set, set
	return c
}

type stringsBuilder struct{ strings.Builder }
