package ragen

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/env"
)

// Upstream tests/es_manager/test_seed_iteration.py: one group, seed.train=7:
// two resets give env seeds 7 then 8.
func TestSeedIteration(t *testing.T) {
	cfg := testConfig(1, []string{"Line"}, []int{1})
	cfg.Seed.Train = i64(7)
	p := &testProvider{}
	m, err := NewEnvStateManager(cfg, env.ModeTrain, p)
	require.NoError(t, err)
	ctx := context.Background()
	_, err = m.Reset(ctx, nil)
	require.NoError(t, err)
	_, err = m.Reset(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, []int64{7, 8}, p.built[0].(*lineEnv).seeds)
}

func TestSeedLayout(t *testing.T) {
	// Tags Line (2 groups) then Echo (1 group), group_size 2, base 100:
	// env ids 0..5, groups 0,0,1,1,2,2; group g gets base+g; the counter
	// then advances by env_groups = 3.
	cfg := testConfig(2, []string{"Line", "Echo"}, []int{2, 1})
	cfg.Seed.Train = i64(100)
	p := &testProvider{}
	m, err := NewEnvStateManager(cfg, env.ModeTrain, p)
	require.NoError(t, err)
	ctx := context.Background()
	outs, err := m.Reset(ctx, nil)
	require.NoError(t, err)
	var ids, groups, seeds []int
	var tags []string
	for _, o := range outs {
		ids = append(ids, o.EnvID)
		groups = append(groups, o.GroupID)
		tags = append(tags, o.Tag)
		s, err := m.Seed(o.EnvID)
		require.NoError(t, err)
		seeds = append(seeds, int(s))
	}
	assert.Equal(t, []int{0, 1, 2, 3, 4, 5}, ids)
	assert.Equal(t, []int{0, 0, 1, 1, 2, 2}, groups)
	assert.Equal(t, []string{"Line", "Line", "Line", "Line", "Echo", "Echo"}, tags)
	assert.Equal(t, []int{100, 100, 101, 101, 102, 102}, seeds)
	_, err = m.Reset(ctx, nil)
	require.NoError(t, err)
	s, _ := m.Seed(0)
	assert.Equal(t, int64(103), s)
	// Explicit seed 200: used as given; counter = 200−100+1 = 101, so the
	// next scheduled reset uses 100+101 = 201.
	_, err = m.Reset(ctx, i64(200))
	require.NoError(t, err)
	s, _ = m.Seed(5)
	assert.Equal(t, int64(202), s)
	_, err = m.Reset(ctx, nil)
	require.NoError(t, err)
	s, _ = m.Seed(0)
	assert.Equal(t, int64(201), s)

	// Validation: the same seeds every time (base 123 by default).
	vm, err := NewEnvStateManager(cfg, env.ModeVal, p)
	require.NoError(t, err)
	for range 2 {
		_, err = vm.Reset(ctx, nil)
		require.NoError(t, err)
		s, _ = vm.Seed(2)
		assert.Equal(t, int64(124), s)
	}
	cfg.Seed.Val = nil
	vm, err = NewEnvStateManager(cfg, env.ModeVal, p)
	require.NoError(t, err)
	_, err = vm.Reset(ctx, nil)
	require.NoError(t, err)
	s, _ = vm.Seed(0)
	assert.Equal(t, int64(123), s)
	// Train without a base: a random seed in [0, 1e6], shared by the group.
	cfg.Seed.Train = nil
	tm, err := NewEnvStateManager(cfg, env.ModeTrain, p)
	require.NoError(t, err)
	_, err = tm.Reset(ctx, nil)
	require.NoError(t, err)
	s0, _ := tm.Seed(0)
	s1, _ := tm.Seed(1)
	s2, _ := tm.Seed(2)
	assert.Equal(t, s0, s1)
	assert.Equal(t, s0+1, s2)
	assert.True(t, s0 >= 0 && s0 <= 1_000_000)
}

func TestStepRecordsAndMetrics(t *testing.T) {
	// One Line env (5 cells, start = seed mod 4). base seed 2 → start at 2.
	cfg := testConfig(1, []string{"Line"}, []int{1})
	cfg.Seed.Train = i64(2)
	cfg.CustomEnvs["Line"] = EnvSpec{EnvType: "line", MaxActionsPerTraj: 3}
	m, err := NewEnvStateManager(cfg, env.ModeTrain, &testProvider{})
	require.NoError(t, err)
	ctx := context.Background()
	outs, err := m.Reset(ctx, nil)
	require.NoError(t, err)
	require.Len(t, outs, 1)
	assert.Equal(t, []HistoryEntry{{State: "__P_G", ActionsLeft: 3}}, outs[0].History)

	// Turn 1: "left" (case-insensitive) + "jump" (unknown → dropped,
	// penalty −0.1); one action executed, reward 0 (int).
	outs, err = m.Step(ctx, []EnvInput{{EnvID: 0, LLMResponse: "r1", LLMRawResponse: "raw1", Actions: []string{"left", "jump"}}})
	require.NoError(t, err)
	require.Len(t, outs, 1)
	h := outs[0].History
	require.Len(t, h, 2)
	assert.True(t, h[0].Acted)
	assert.Equal(t, []env.Action{{ID: 1, Text: "left"}}, h[0].Actions)
	assert.Equal(t, "0", h[0].Reward.String())
	assert.Equal(t, "r1", h[0].LLMResponse)
	assert.Equal(t, "raw1", h[0].LLMRawResponse)
	assert.Equal(t, HistoryEntry{State: "_P__G", ActionsLeft: 2}, h[1])
	assert.InDelta(t, -0.1, outs[0].Penalty, 1e-12)

	// Turn 2: nothing valid → no env call, manager_invalid_action on the
	// info and on the new state entry; penalty again.
	outs, err = m.Step(ctx, []EnvInput{{EnvID: 0, LLMResponse: "bad", Actions: nil}})
	require.NoError(t, err)
	h = outs[0].History
	assert.Equal(t, true, h[1].Info["manager_invalid_action"])
	assert.True(t, h[2].ManagerInvalidAction)
	assert.Equal(t, 2, h[2].ActionsLeft)
	assert.InDelta(t, -0.2, outs[0].Penalty, 1e-12)

	// Turn 3: three rights but only 2 actions left: pos 1→2→3, cap reached
	// → terminated and truncated (not success). The cut action is not
	// penalised.
	outs, err = m.Step(ctx, []EnvInput{{EnvID: 0, LLMResponse: "r3", Actions: []string{"Right", "Right", "Right"}}})
	require.NoError(t, err)
	assert.Empty(t, outs)
	_, err = m.Step(ctx, []EnvInput{{EnvID: 0}})
	assert.ErrorContains(t, err, "already done")

	st := m.GetRolloutStates()
	h = st[0].History
	require.Len(t, h, 4)
	assert.Equal(t, 0, h[3].ActionsLeft)
	assert.InDelta(t, -0.2, st[0].Penalty, 1e-12)
	// Metrics: 3 turns. action_is_valid: turns 1 and 3 carry true → 2/3.
	// action_is_effective: turn1 true, turn3 true (last action moved) → 2/3.
	// manager_invalid_action only on turn 2 → 1/3. raw_reward all 0.
	want := map[string]float64{
		"Line/success":                0,
		"Line/num_actions":            3,
		"Line/episodic_return":        0,
		"Line/action_is_valid":        2.0 / 3,
		"Line/action_is_effective":    2.0 / 3,
		"Line/manager_invalid_action": 1.0 / 3,
		"Line/raw_reward":             0,
		"Line/pass@1":                 0,
	}
	assert.InDeltaMapValues(t, want, st[0].Metrics, 1e-12)
	assert.Equal(t, []float64{0, 0, 0}, h[3].Metrics["raw_reward"])
}

func TestStepSuccessAndPass(t *testing.T) {
	// Two Line envs in one group, seed 3 → start at 3, goal at 4.
	cfg := testConfig(2, []string{"Line"}, []int{1})
	cfg.Seed.Train = i64(3)
	m, err := NewEnvStateManager(cfg, env.ModeTrain, &testProvider{})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = m.Reset(ctx, nil)
	require.NoError(t, err)
	outs, err := m.Step(ctx, []EnvInput{
		{EnvID: 1, Actions: []string{"Left"}},
		{EnvID: 0, Actions: []string{"Right", "Left"}}, // done after the first: Left not executed
	})
	require.NoError(t, err)
	require.Len(t, outs, 1)
	assert.Equal(t, 1, outs[0].EnvID)
	st := m.GetRolloutStates()
	h0 := st[0].History
	assert.Equal(t, "1.0", h0[0].Reward.String())
	assert.Len(t, h0[0].Actions, 1)
	assert.Equal(t, 1.0, st[0].Metrics["Line/success"])
	assert.Equal(t, 1.0, st[0].Metrics["Line/episodic_return"])
	assert.Equal(t, 0.0, st[1].Metrics["Line/success"])
	// pass@2: any env of the group succeeded.
	assert.Equal(t, 1.0, st[0].Metrics["Line/pass@2"])
	assert.Equal(t, 1.0, st[1].Metrics["Line/pass@2"])
}

func TestStepLanguageEnvAndNonNumericInfo(t *testing.T) {
	cfg := testConfig(1, []string{"Echo"}, []int{2})
	m, err := NewEnvStateManager(cfg, env.ModeTrain, &testProvider{})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = m.Reset(ctx, nil)
	require.NoError(t, err)
	outs, err := m.Step(ctx, []EnvInput{{EnvID: 0, Actions: []string{"yes"}}, {EnvID: 1, Actions: []string{"No"}}})
	require.NoError(t, err)
	assert.Empty(t, outs)
	st := m.GetRolloutStates()
	assert.Equal(t, "0.5", st[0].History[0].Reward.String())
	assert.Equal(t, "0", st[1].History[0].Reward.String())
	assert.Equal(t, 1.0, st[0].Metrics["Echo/success"])
	// a never-numeric key still makes a metric, 0.0 (service-envs.md §0)
	assert.Equal(t, 0.0, st[0].Metrics["Echo/note"])
	assert.Contains(t, st[0].Metrics, "Echo/note")
	// raw_reward is read from info (absent here → 0), not from the reward.
	assert.Equal(t, 0.0, st[0].Metrics["Echo/episodic_return"])
}

func TestStepTimeout(t *testing.T) {
	cfg := testConfig(1, []string{"Line"}, []int{1})
	cfg.ESManager.StepTimeout = 50 * time.Millisecond
	m, err := NewEnvStateManager(cfg, env.ModeTrain, &testProvider{block: true})
	require.NoError(t, err)
	ctx := context.Background()
	_, err = m.Reset(ctx, nil)
	require.NoError(t, err)
	start := time.Now()
	_, err = m.Step(ctx, []EnvInput{{EnvID: 0, Actions: []string{"Right"}}})
	require.Error(t, err)
	assert.True(t, errors.Is(err, context.DeadlineExceeded), "%v", err)
	assert.Contains(t, err.Error(), "step env 0 (tag Line)")
	assert.Less(t, time.Since(start), 5*time.Second)
}

func TestParallelStepMatchesSequential(t *testing.T) {
	run := func(parallel bool) []string {
		cfg := testConfig(1, []string{"Line"}, []int{6})
		spec := cfg.CustomEnvs["Line"]
		spec.ParallelFriendly, spec.MaxWorkers = parallel, 3
		cfg.CustomEnvs["Line"] = spec
		m, err := NewEnvStateManager(cfg, env.ModeTrain, &testProvider{stepDelay: time.Millisecond})
		require.NoError(t, err)
		ctx := context.Background()
		outs, err := m.Reset(ctx, nil)
		require.NoError(t, err)
		for len(outs) > 0 {
			var in []EnvInput
			for _, o := range outs {
				in = append(in, EnvInput{EnvID: o.EnvID, Actions: []string{"Right"}})
			}
			outs, err = m.Step(ctx, in)
			require.NoError(t, err)
		}
		var s []string
		for _, o := range m.GetRolloutStates() {
			var states []string
			for _, h := range o.History {
				states = append(states, h.State)
			}
			s = append(s, strings.Join(states, ","))
		}
		return s
	}
	assert.Equal(t, run(false), run(true))
}

func TestManagerConfigErrors(t *testing.T) {
	cfg := testConfig(1, []string{"Line", "Nope"}, []int{1})
	cfg.ESManager.Train.EnvGroups = 3
	cfg.AgentProxy.ContextWindowMode = "window"
	_, err := NewEnvStateManager(cfg, env.ModeTrain, &testProvider{})
	require.Error(t, err)
	for _, s := range []string{"es_manager.train.env_configs.n_groups: has 1 entries but tags has 2 ([Line, Nope])",
		`es_manager.train.env_configs.tags: unknown env tag "Nope"`, `agent_proxy.context_window_mode: unknown value "window"`} {
		assert.Contains(t, err.Error(), s)
	}
	cfg = testConfig(1, []string{"Line"}, []int{1})
	cfg.ESManager.Train.EnvGroups = 3
	_, err = NewEnvStateManager(cfg, env.ModeTrain, &testProvider{})
	assert.ErrorContains(t, err, "es_manager.train.env_configs.n_groups: [1] sums to 1 but env_groups=3")
	cfg = testConfig(1, []string{"Line"}, []int{1})
	cfg.CustomEnvs["Line"] = EnvSpec{EnvType: "zzz", MaxActionsPerTraj: 1}
	_, err = NewEnvStateManager(cfg, env.ModeTrain, &testProvider{})
	assert.ErrorContains(t, err, `env 0 (tag Line): unknown env type "zzz"`)
}
