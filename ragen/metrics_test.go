package ragen

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/env"
)

// scriptEnv returns scripted step results in order; it exposes a grid and a
// reference answer so the manager's optional metrics can be checked.
type scriptEnv struct {
	steps  []env.StepResult
	n      int
	grid   [][]int
	answer string
}

func (e *scriptEnv) Reset(ctx context.Context, seed int64, mode env.Mode) (string, error) {
	e.n = 0
	return e.Render(), nil
}

func (e *scriptEnv) Step(ctx context.Context, a env.Action) (env.StepResult, error) {
	if e.n >= len(e.steps) {
		return env.StepResult{}, fmt.Errorf("scriptEnv: no step %d", e.n)
	}
	r := e.steps[e.n]
	e.n++
	return r, nil
}

func (e *scriptEnv) Render() string        { return fmt.Sprintf("s%d", e.n) }
func (e *scriptEnv) Close() error          { return nil }
func (e *scriptEnv) Grid() [][]int         { return e.grid }
func (e *scriptEnv) CorrectAnswer() string { return e.answer }

// runScript runs one env of a tag through its script, one action per turn.
func runScript(t *testing.T, tag string, e *scriptEnv) *EnvOutput {
	t.Helper()
	cfg := DefaultConfig()
	cfg.CustomEnvs = map[string]EnvSpec{tag: {EnvType: "script", MaxActionsPerTraj: 10}}
	set := EnvSetConfig{EnvGroups: 1, GroupSize: 1, EnvConfigs: EnvConfigs{Tags: []string{tag}, NGroups: []int{1}}}
	cfg.ESManager.Train, cfg.ESManager.Val = set, set
	m, err := NewEnvStateManager(cfg, env.ModeTrain, ProviderFuncs{New: func(string, EnvSpec) (env.BaseEnv, error) { return e, nil }})
	require.NoError(t, err)
	ctx := context.Background()
	outs, err := m.Reset(ctx, nil)
	require.NoError(t, err)
	for len(outs) > 0 {
		outs, err = m.Step(ctx, []EnvInput{{EnvID: 0, Actions: []string{"a"}}})
		require.NoError(t, err)
	}
	return m.GetRolloutStates()[0]
}

// TestEnvMetricsWebShop: spec §2.4 for a tag containing "webshop"
// (case-insensitive). Two turns, so the per-turn mean divides by
// len(history) − 1 = 2:
//
//	action_is_valid (1, 1) → 1; action_is_effective (0, 1) → 0.5;
//	end_of_page (only turn 2, 0) → 0; every other key k → traj_sum/k = Σ:
//	score 0.25+1 = 1.25, page 2, raw_reward 0.5+1 = 1.5 (always set per
//	turn); final_score = last score = 1; episodic_return = Σ raw_reward.
func TestEnvMetricsWebShop(t *testing.T) {
	e := &scriptEnv{steps: []env.StepResult{
		{Reward: 0.5, Info: env.Info{"action_is_valid": true, "action_is_effective": false, "score": 0.25, "page": 2, "raw_reward": 0.5}},
		{Reward: 1, Done: true, Info: env.Info{"action_is_valid": true, "action_is_effective": true, "score": 1.0, "end_of_page": false, "raw_reward": 1.0, "success": true}},
	}}
	o := runScript(t, "MyWebShop", e)
	want := map[string]float64{
		"MyWebShop/success":             1,
		"MyWebShop/num_actions":         2,
		"MyWebShop/episodic_return":     1.5,
		"MyWebShop/action_is_valid":     1,
		"MyWebShop/action_is_effective": 0.5,
		"MyWebShop/end_of_page":         0,
		"MyWebShop/traj_sum/score":      1.25,
		"MyWebShop/traj_sum/page":       2,
		"MyWebShop/traj_sum/raw_reward": 1.5,
		"MyWebShop/final_score":         1,
		"MyWebShop/pass@1":              1,
	}
	assert.Equal(t, want, o.Metrics)
	assert.Equal(t, "", o.CorrectAnswer) // only the MetamathQA tag stores it
}

// TestEnvMetricsNonNumericInfo: service-envs.md §0. A key's metric exists
// from its first sighting even when no value is numeric (then 0.0), and a
// string joins the sum where Python's float() parses it. Two turns, so the
// mean divides by 2:
//
//	query "1990" then " 1_0 " → (1990 + 10) / 2 = 1000;
//	action_type "search" twice → never numeric → 0;
//	detail ["x"] then nil → 0; flag int 1 then 0 → 0.5;
//	one-element slice []float64{3} then "inf" → +Inf.
//
// Search's tag is not webshop, so no traj_sum keys.
func TestEnvMetricsNonNumericInfo(t *testing.T) {
	e := &scriptEnv{steps: []env.StepResult{
		{Info: env.Info{"query": "1990", "action_type": "search", "detail": []any{"x"}, "flag": 1, "arr": []float64{3}}},
		{Done: true, Info: env.Info{"query": " 1_0 ", "action_type": "search", "detail": nil, "flag": 0, "arr": "inf", "success": true}},
	}}
	o := runScript(t, "SearchQA", e)
	assert.Equal(t, 1000.0, o.Metrics["SearchQA/query"])
	assert.Contains(t, o.Metrics, "SearchQA/action_type")
	assert.Equal(t, 0.0, o.Metrics["SearchQA/action_type"])
	assert.Contains(t, o.Metrics, "SearchQA/detail")
	assert.Equal(t, 0.0, o.Metrics["SearchQA/detail"])
	assert.Equal(t, 0.5, o.Metrics["SearchQA/flag"])
	assert.True(t, math.IsInf(o.Metrics["SearchQA/arr"], 1))
	assert.Equal(t, 1.0, o.Metrics["SearchQA/success"])
}

// TestEnvMetricsSuccessTruthiness: truncated = not info.success uses
// Python's bool(): an empty list or dict, or a size-1 numpy array holding 0
// ([]float64{0}), is false, so the episode is not a success; a non-empty
// list (JSON [0.0] is a Python list) is true. A query of Arabic-Indic
// digits is a number to float(), as in Python.
func TestEnvMetricsSuccessTruthiness(t *testing.T) {
	for _, c := range []struct {
		success any
		want    float64
	}{
		{[]any{}, 0}, {map[string]any{}, 0}, {[]float64{0}, 0}, {[]float64{2}, 1},
		{[]any{0.0}, 1}, {map[string]any{"a": 1}, 1}, {"", 0}, {"no", 1}, {nil, 0},
	} {
		e := &scriptEnv{steps: []env.StepResult{{Done: true, Info: env.Info{"success": c.success, "query": "\u0661\u0669\u0669\u0660"}}}}
		o := runScript(t, "SearchQA", e)
		assert.Equal(t, c.want, o.Metrics["SearchQA/success"], "success %#v", c.success)
		assert.Equal(t, 1990.0, o.Metrics["SearchQA/query"])
	}
}

// TestEnvMetricsMaxTileAndAnswer: the grid max is a built-in metric, and an
// info key of the same name, written after the built-ins, replaces it with
// its per-turn mean (2048: terminal info.max_tile 16 over 2 turns → 8,
// although the grid max is 32). The MetamathQA tag stores correct_answer.
func TestEnvMetricsMaxTileAndAnswer(t *testing.T) {
	grid := [][]int{{2, 32}, {4, 0}}
	e := &scriptEnv{grid: grid, answer: "42", steps: []env.StepResult{
		{Info: env.Info{}},
		{Done: true, Info: env.Info{"max_tile": 16, "success": false}},
	}}
	o := runScript(t, "MetamathQA", e)
	assert.Equal(t, 8.0, o.Metrics["MetamathQA/max_tile"])
	assert.Equal(t, 0.0, o.Metrics["MetamathQA/success"]) // done but not success → truncated
	assert.Equal(t, "42", o.CorrectAnswer)

	e = &scriptEnv{grid: grid, steps: []env.StepResult{{Done: true, Info: env.Info{"success": true}}}}
	o = runScript(t, "G", e)
	assert.Equal(t, 32.0, o.Metrics["G/max_tile"])
	assert.Equal(t, 1.0, o.Metrics["G/success"])
}

// TestBatchMetrics: spec §3.9. Tags A and B with 1 group × 2 envs each, so
// every "{tag}/{name}" is Σ over envs / 2 even when an env lacks the key
// (B has one env here). non-zero means skip zeros and are omitted when all
// values are zero; charts/avg_episode_return is the mean over tags of the
// per-tag averages: (1 + (−0.5)) / 2 = 0.25; response_length is the mean
// response-mask row sum: (3 + 1) / 2 = 2.
func TestBatchMetrics(t *testing.T) {
	set := EnvSetConfig{EnvGroups: 2, GroupSize: 2, EnvConfigs: EnvConfigs{Tags: []string{"A", "B"}, NGroups: []int{1, 1}}}
	outs := []*EnvOutput{
		{Tag: "A", Metrics: map[string]float64{"A/success": 1, "A/episodic_return": 2, "A/num_actions": 0}},
		{Tag: "A", Metrics: map[string]float64{"A/success": 0, "A/episodic_return": 0, "A/num_actions": 0}},
		{Tag: "B", Metrics: map[string]float64{"B/success": 1, "B/episodic_return": -1, "B/traj_sum/x": 3}},
	}
	got := batchMetrics(outs, set, [][]int{{1, 1, 0, 1}, {0, 0, 1, 0}})
	want := map[string]float64{
		"A/success": 0.5, "A/non-zero/success": 1,
		"A/episodic_return": 1, "A/non-zero/episodic_return": 2,
		"A/num_actions": 0,
		"B/success":     0.5, "B/non-zero/success": 1,
		"B/episodic_return": -0.5, "B/non-zero/episodic_return": -1,
		"B/traj_sum/x": 1.5, "B/non-zero/traj_sum/x": 3,
		"charts/avg_episode_return": 0.25,
		"response_length":           2,
	}
	assert.Equal(t, want, got)
}
