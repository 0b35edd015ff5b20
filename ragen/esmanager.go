package ragen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"ragen/env"
	"ragen/internal/pystr"
)

// EnvProvider builds envs for the managers and tells the context manager
// what the system prompt of a tag needs. The CLI implements it with the env
// registry (env.New and the tag table); tests use fakes.
type EnvProvider interface {
	// NewEnv builds one env of a tag from its custom_envs entry.
	NewEnv(tag string, spec EnvSpec) (env.BaseEnv, error)
	// PromptInfo describes the *default* config of spec.EnvType overlaid
	// with the top-level keys of the entry (spec §3.1).
	PromptInfo(tag string, spec EnvSpec) (PromptInfo, error)
}

// PromptInfo is what the system prompt reads from an env type's config.
type PromptInfo struct {
	ObservationFormat string       // "grid" (default), "coord", "grid_coord", ...
	GridVocab         []VocabEntry // in upstream's dict order; empty = none
	ActionNames       []string     // action_lookup values in id order; empty = none
}

// VocabEntry is one symbol of a grid vocabulary.
type VocabEntry struct {
	Symbol, Meaning string
}

// ProviderFuncs adapts two functions to EnvProvider.
type ProviderFuncs struct {
	New    func(tag string, spec EnvSpec) (env.BaseEnv, error)
	Prompt func(tag string, spec EnvSpec) (PromptInfo, error) // nil = empty PromptInfo
}

// NewEnv implements EnvProvider.
func (p ProviderFuncs) NewEnv(tag string, spec EnvSpec) (env.BaseEnv, error) { return p.New(tag, spec) }

// PromptInfo implements EnvProvider.
func (p ProviderFuncs) PromptInfo(tag string, spec EnvSpec) (PromptInfo, error) {
	if p.Prompt == nil {
		return PromptInfo{}, nil
	}
	return p.Prompt(tag, spec)
}

type envStatus struct {
	seed       int64
	truncated  bool
	terminated bool
	numActions int
	rewards    []Reward
}

type managedEnv struct {
	env    env.BaseEnv
	spec   EnvSpec
	out    EnvOutput
	status envStatus
	done   bool
}

// EnvStateManager owns the envs of one mode (train or val): it resets them
// from per-group seeds, executes parsed actions with the per-episode action
// cap and the format penalty, records histories and computes per-env
// metrics (spec §2).
//
// Reset and GetRolloutStates must not run concurrently with anything else;
// Step may run concurrently for disjoint sets of envs (the pipelined
// rollout does this).
type EnvStateManager struct {
	mode          env.Mode
	set           EnvSetConfig
	seedBase      *int64
	counter       int64
	formatPenalty float64
	timeout       time.Duration
	rng           *rand.Rand
	envs          []*managedEnv
	tagEnvs       map[string]int // envs per tag (n_groups·group_size)
}

// NewEnvStateManager builds every env of cfg.es_manager.<mode> through p.
func NewEnvStateManager(cfg Config, mode env.Mode, p EnvProvider) (*EnvStateManager, error) {
	if mode != env.ModeTrain && mode != env.ModeVal {
		return nil, fmt.Errorf("ragen: env manager: mode %q, want train or val", mode)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	set := cfg.envSet(mode)
	m := &EnvStateManager{
		mode:          mode,
		set:           set,
		formatPenalty: cfg.ESManager.FormatPenalty,
		timeout:       cfg.ESManager.StepTimeout,
		rng:           rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x9e3779b97f4a7c15)),
		tagEnvs:       map[string]int{},
	}
	if mode == env.ModeVal {
		m.seedBase = cfg.Seed.Val
	} else {
		m.seedBase = cfg.Seed.Train
	}
	type pw struct {
		parallel bool
		workers  int
	}
	seen := map[string]pw{}
	group := 0
	for k, tag := range set.EnvConfigs.Tags {
		spec := cfg.CustomEnvs[tag]
		w := pw{spec.ParallelFriendly, spec.MaxWorkers}
		if prev, ok := seen[tag]; ok && prev != w {
			return nil, fmt.Errorf("ragen: env manager: tag %s: envs disagree on parallel_friendly/max_workers", tag)
		}
		seen[tag] = w
		n := set.EnvConfigs.NGroups[k]
		m.tagEnvs[tag] += n * set.GroupSize
		for g := group; g < group+n; g++ {
			for i := 0; i < set.GroupSize; i++ {
				id := g*set.GroupSize + i
				e, err := p.NewEnv(tag, spec)
				if err != nil {
					m.Close()
					return nil, fmt.Errorf("ragen: env manager: env %d (tag %s): %w", id, tag, err)
				}
				if e == nil {
					m.Close()
					return nil, fmt.Errorf("ragen: env manager: env %d (tag %s): provider returned a nil env", id, tag)
				}
				m.envs = append(m.envs, &managedEnv{env: e, spec: spec, out: EnvOutput{EnvID: id, GroupID: g, Tag: tag}})
			}
		}
		group += n
	}
	return m, nil
}

// NumEnvs is env_groups·group_size.
func (m *EnvStateManager) NumEnvs() int { return len(m.envs) }

// Mode is the manager's mode.
func (m *EnvStateManager) Mode() env.Mode { return m.mode }

// Close closes every env and reports all failures.
func (m *EnvStateManager) Close() error {
	var errs []error
	for _, e := range m.envs {
		if err := e.env.Close(); err != nil {
			errs = append(errs, fmt.Errorf("ragen: close env %d: %w", e.out.EnvID, err))
		}
	}
	return errors.Join(errs...)
}

// nextSeed returns the base seed of a Reset and advances
// the counter (spec §2.2).
func (m *EnvStateManager) nextSeed(explicit *int64) int64 {
	if explicit != nil {
		if m.mode == env.ModeTrain && m.seedBase != nil {
			m.counter = *explicit - *m.seedBase + 1
		}
		return *explicit
	}
	if m.mode == env.ModeVal {
		if m.seedBase != nil {
			return *m.seedBase
		}
		return 123
	}
	if m.seedBase != nil {
		s := *m.seedBase + m.counter
		m.counter += int64(m.set.EnvGroups)
		return s
	}
	return int64(m.rng.IntN(1_000_001)) // Python random.randint(0, 1_000_000)
}

// Reset resets every env: group g gets seed+g (spec §2.2). seed nil = the
// manager's schedule. It returns the cache entries in env-id order.
func (m *EnvStateManager) Reset(ctx context.Context, seed *int64) ([]*EnvOutput, error) {
	base := m.nextSeed(seed)
	type res struct{ state string }
	results := make([]res, len(m.envs))
	ids := make([]int, len(m.envs))
	for i := range ids {
		ids[i] = i
	}
	err := m.forEach(ctx, ids, func(ctx context.Context, i int) error {
		e := m.envs[i]
		s := base + int64(e.out.GroupID)
		st, err := callWithTimeout(ctx, m.timeout, func(ctx context.Context) (string, error) {
			if _, err := e.env.Reset(ctx, s, m.mode); err != nil {
				return "", err
			}
			return e.env.Render(), nil
		})
		if err != nil {
			return fmt.Errorf("ragen: reset env %d (tag %s, seed %d): %w", e.out.EnvID, e.out.Tag, s, err)
		}
		results[i] = res{st}
		return nil
	})
	if err != nil {
		return nil, err
	}
	outs := make([]*EnvOutput, len(m.envs))
	for i, e := range m.envs {
		s := base + int64(e.out.GroupID)
		e.status = envStatus{seed: s}
		e.done = false
		e.out.History = []HistoryEntry{{State: results[i].state, ActionsLeft: e.spec.MaxActionsPerTraj}}
		e.out.Penalty = 0
		e.out.Metrics = nil
		e.out.CorrectAnswer = ""
		outs[i] = &e.out
	}
	return outs, nil
}

// Seed returns the seed env envID was last reset with.
func (m *EnvStateManager) Seed(envID int) (int64, error) {
	if envID < 0 || envID >= len(m.envs) {
		return 0, fmt.Errorf("ragen: env id %d out of range [0, %d)", envID, len(m.envs))
	}
	return m.envs[envID].status.seed, nil
}

type turnResult struct {
	actions  []env.Action
	reward   Reward
	info     env.Info
	done     bool
	invalid  bool
	penalty  float64
	state    string
	executed int
}

// Step executes the parsed actions of each input (spec §2.3) and returns the
// cache entries of the envs that are not done, in input order.
func (m *EnvStateManager) Step(ctx context.Context, inputs []EnvInput) ([]*EnvOutput, error) {
	idx := make([]int, len(inputs))
	seen := map[int]bool{}
	for i, in := range inputs {
		if in.EnvID < 0 || in.EnvID >= len(m.envs) {
			return nil, fmt.Errorf("ragen: step: env id %d out of range [0, %d)", in.EnvID, len(m.envs))
		}
		if seen[in.EnvID] {
			return nil, fmt.Errorf("ragen: step: env id %d given twice", in.EnvID)
		}
		if m.envs[in.EnvID].done {
			return nil, fmt.Errorf("ragen: step: env %d is already done", in.EnvID)
		}
		seen[in.EnvID] = true
		idx[i] = in.EnvID
	}
	results := make([]turnResult, len(inputs))
	pos := map[int]int{}
	for i, in := range inputs {
		pos[in.EnvID] = i
	}
	err := m.forEach(ctx, idx, func(ctx context.Context, id int) error {
		e := m.envs[id]
		in := inputs[pos[id]]
		r, err := callWithTimeout(ctx, m.timeout, func(ctx context.Context) (turnResult, error) {
			return m.runTurn(ctx, e, in)
		})
		if err != nil {
			return fmt.Errorf("ragen: step env %d (tag %s): %w", id, e.out.Tag, err)
		}
		results[pos[id]] = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	var outs []*EnvOutput
	for i, in := range inputs {
		e, r := m.envs[in.EnvID], results[i]
		e.status.numActions += r.executed
		e.status.rewards = append(e.status.rewards, r.reward)
		if r.done {
			e.status.terminated = true
			e.status.truncated = !truthy(r.info["success"])
		}
		h := &e.out.History[len(e.out.History)-1]
		h.Acted = true
		h.Actions = r.actions
		h.Reward = r.reward
		h.Info = r.info
		h.LLMResponse = in.LLMResponse
		h.LLMRawResponse = in.LLMRawResponse
		max := e.spec.MaxActionsPerTraj
		e.out.History = append(e.out.History, HistoryEntry{State: r.state, ActionsLeft: max - e.status.numActions, ManagerInvalidAction: r.invalid})
		done := r.done
		if e.status.numActions >= max && !done {
			e.status.terminated, e.status.truncated = true, true
			done = true
		}
		e.out.Penalty += r.penalty
		e.done = done
		if !done {
			outs = append(outs, &e.out)
		}
	}
	return outs, nil
}

// runTurn executes one turn of one env without touching manager state.
func (m *EnvStateManager) runTurn(ctx context.Context, e *managedEnv, in EnvInput) (turnResult, error) {
	left := e.spec.MaxActionsPerTraj - e.status.numActions
	valid := mapActions(e.env, in.Actions)
	r := turnResult{reward: Reward{IsInt: true}, info: env.Info{}}
	rawSum := 0.0
	for _, a := range valid {
		if r.executed >= left {
			break
		}
		sr, err := e.env.Step(ctx, a)
		if err != nil {
			return r, fmt.Errorf("action %q: %w", a.Text, err)
		}
		r.executed++
		r.actions = append(r.actions, a)
		r.reward = r.reward.Add(sr.Reward, sr.RewardIsInt)
		if v, ok := sr.Info["raw_reward"]; ok {
			f, _ := toFloat(v)
			rawSum += f
		}
		for k, v := range sr.Info {
			r.info[k] = v
		}
		if sr.Done {
			r.done = true
			break
		}
	}
	r.info["raw_reward"] = rawSum
	if len(valid) != len(in.Actions) || len(valid) == 0 {
		r.penalty = m.formatPenalty
	}
	if len(valid) == 0 {
		r.info["manager_invalid_action"] = true
		r.invalid = true
	}
	r.state = e.env.Render()
	return r, nil
}

// mapActions maps parsed action strings to env actions (envs.md §0.2):
// discrete envs by exact case-insensitive name, others unchanged.
func mapActions(e env.BaseEnv, actions []string) []env.Action {
	var lookup map[int]string
	if al, ok := e.(env.ActionLookup); ok {
		lookup = al.ActionLookup()
	}
	if lookup == nil {
		out := make([]env.Action, len(actions))
		for i, a := range actions {
			out[i] = env.Action{Text: a}
		}
		return out
	}
	rev := make(map[string]int, len(lookup))
	for id, name := range lookup {
		k := strings.ToLower(name)
		if prev, ok := rev[k]; !ok || id > prev { // Python dict: the last id wins
			rev[k] = id
		}
	}
	var out []env.Action
	for _, a := range actions {
		if id, ok := rev[strings.ToLower(a)]; ok {
			out = append(out, env.Action{ID: id, Text: a})
		}
	}
	return out
}

// GetRolloutStates computes every env's final metrics (spec §2.4) and
// returns the cache entries in env-id order.
func (m *EnvStateManager) GetRolloutStates() []*EnvOutput {
	outs := make([]*EnvOutput, len(m.envs))
	for i, e := range m.envs {
		e.out.Metrics = envMetrics(e)
		if ca, ok := e.env.(CorrectAnswerer); ok && e.out.Tag == "MetamathQA" {
			e.out.CorrectAnswer = ca.CorrectAnswer()
		}
		outs[i] = &e.out
	}
	pass := fmt.Sprintf("pass@%d", m.set.GroupSize)
	type tg struct {
		tag   string
		group int
	}
	any := map[tg]bool{}
	for _, e := range m.envs {
		if e.out.Metrics[e.out.Tag+"/success"] > 0 {
			any[tg{e.out.Tag, e.out.GroupID}] = true
		}
	}
	for _, e := range m.envs {
		v := 0.0
		if any[tg{e.out.Tag, e.out.GroupID}] {
			v = 1
		}
		e.out.Metrics[e.out.Tag+"/"+pass] = v
	}
	return outs
}

func envMetrics(e *managedEnv) map[string]float64 {
	tag := e.out.Tag
	success := 0.0
	if e.status.terminated && !e.status.truncated {
		success = 1
	}
	base := map[string]float64{"success": success, "num_actions": float64(e.status.numActions)}
	if g, ok := e.env.(env.Gridder); ok {
		if grid := g.Grid(); len(grid) > 0 {
			mx := math.Inf(-1)
			for _, row := range grid {
				for _, v := range row {
					mx = math.Max(mx, float64(v))
				}
			}
			if !math.IsInf(mx, -1) {
				base["max_tile"] = mx
			}
		}
	}
	hist := e.out.History
	lists := map[string][]float64{}
	var order []string
	for _, h := range hist {
		if !h.Acted {
			continue
		}
		keys := make([]string, 0, len(h.Info))
		for k := range h.Info {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if k == "success" {
				continue
			}
			// as upstream: the key's list exists from its first sighting,
			// numeric or not (a never-numeric key yields a 0.0 metric);
			// a value joins it only where Python's float() takes it
			if _, seen := lists[k]; !seen {
				order = append(order, k)
				lists[k] = []float64{}
			}
			if f, ok := pyFloat(h.Info[k]); ok {
				lists[k] = append(lists[k], f)
			}
		}
	}
	ret := 0.0
	for _, v := range lists["raw_reward"] {
		ret += v
	}
	base["episodic_return"] = ret
	turns := float64(len(hist) - 1)
	webshop := strings.Contains(strings.ToLower(tag), "webshop")
	for _, k := range order {
		vals := lists[k]
		sum := 0.0
		for _, v := range vals {
			sum += v
		}
		if webshop && k != "action_is_effective" && k != "action_is_valid" && k != "end_of_page" {
			base["traj_sum/"+k] = sum
			continue
		}
		if turns > 0 {
			base[k] = sum / turns
		}
	}
	if s := lists["score"]; len(s) > 0 {
		base["final_score"] = s[len(s)-1]
	}
	if len(hist) > 0 {
		hist[len(hist)-1].Metrics = lists
	}
	out := make(map[string]float64, len(base))
	for k, v := range base {
		out[tag+"/"+k] = v
	}
	return out
}

// forEach runs fn over the envs ids, grouped by tag: tags run one after
// another; within a tag envs run on a pool of max_workers goroutines when
// the tag is parallel_friendly, else sequentially. The first error (in ids
// order) is returned after all started calls finish.
func (m *EnvStateManager) forEach(ctx context.Context, ids []int, fn func(ctx context.Context, id int) error) error {
	errs := make([]error, len(ids))
	var tags []string
	byTag := map[string][]int{}
	for i, id := range ids {
		t := m.envs[id].out.Tag
		if _, ok := byTag[t]; !ok {
			tags = append(tags, t)
		}
		byTag[t] = append(byTag[t], i)
	}
	for _, t := range tags {
		pos := byTag[t]
		spec := m.envs[ids[pos[0]]].spec
		workers := 1
		if spec.ParallelFriendly && spec.MaxWorkers > 1 {
			workers = spec.MaxWorkers
		}
		if workers == 1 {
			for _, p := range pos {
				if err := ctx.Err(); err != nil {
					errs[p] = fmt.Errorf("ragen: %w", err)
					break
				}
				if errs[p] = fn(ctx, ids[p]); errs[p] != nil {
					break
				}
			}
		} else {
			var wg sync.WaitGroup
			sem := make(chan struct{}, workers)
			for _, p := range pos {
				sem <- struct{}{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					if err := ctx.Err(); err != nil {
						errs[p] = fmt.Errorf("ragen: %w", err)
						return
					}
					errs[p] = fn(ctx, ids[p])
				}()
			}
			wg.Wait()
		}
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// callWithTimeout runs f with a deadline of d (0 = none). If f does not
// return by then (an env that ignores its context), the call reports the
// deadline error instead of hanging; f keeps running in the background and
// the env must be considered broken.
func callWithTimeout[T any](ctx context.Context, d time.Duration, f func(context.Context) (T, error)) (T, error) {
	if d <= 0 {
		if _, ok := ctx.Deadline(); !ok && ctx.Done() == nil {
			return f(ctx)
		}
	} else {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() {
		v, err := f(ctx)
		ch <- res{v, err}
	}()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		var zero T
		return zero, fmt.Errorf("env call did not return: %w", ctx.Err())
	}
}

// toFloat converts a numeric or bool info value; ok=false for others.
func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case int:
		return float64(x), true
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint8:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint64:
		return float64(x), true
	case float32:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// pyFloat is Python's float() of an info value, as upstream's metric
// lists take them: numbers and bools, a one-element numeric slice (a numpy
// array of size 1), and strings that Python parses as floats (surrounding
// whitespace, one sign, '_' between digits, inf, infinity and nan in any
// case); ok=false for anything else (lists, maps, nil, other strings).
func pyFloat(v any) (float64, bool) {
	if f, ok := toFloat(v); ok {
		return f, true
	}
	switch x := v.(type) {
	case string:
		return pystr.ParseFloat(x)
	case []float64:
		if len(x) == 1 {
			return x[0], true
		}
	case []float32:
		if len(x) == 1 {
			return float64(x[0]), true
		}
	case []int:
		if len(x) == 1 {
			return float64(x[0]), true
		}
	case []int64:
		if len(x) == 1 {
			return float64(x[0]), true
		}
	}
	return 0, false
}

// truthy is Python's bool() for info values: empty strings, lists and
// maps are false; a one-element numeric slice (a numpy array of size 1, as
// pyFloat reads it) is its element's truth; other lists and maps are true.
func truthy(v any) bool {
	if v == nil {
		return false
	}
	if s, ok := v.(string); ok {
		return s != ""
	}
	if f, ok := pyFloat(v); ok { // numbers, bools, size-1 numeric slices
		return f != 0
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return rv.Len() > 0
	}
	return true
}
