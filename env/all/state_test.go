package all_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/env"
	"ragen/env/bandit"
	"ragen/env/frozenlake"
	"ragen/env/game2048"
	"ragen/env/sokoban"
)

var ctx = context.Background()

// Sokoban's counters follow the solver's plan to the end: every box on a
// target, one step per action.
func TestSokobanCounters(t *testing.T) {
	e, err := sokoban.New(sokoban.DefaultConfig())
	require.NoError(t, err)
	_, err = e.Reset(ctx, 3, env.ModeVal)
	require.NoError(t, err)
	assert.Zero(t, e.StepsTaken())
	plan, ok, err := e.OracleActions(100)
	require.True(t, ok)
	require.NoError(t, err)
	names := map[string]int{}
	for id, n := range e.ActionLookup() {
		names[n] = id
	}
	for _, a := range plan {
		_, err := e.Step(ctx, env.Action{ID: names[a], Text: a})
		require.NoError(t, err)
	}
	assert.Equal(t, len(plan), e.StepsTaken())
	assert.Equal(t, e.NumBoxes(), e.BoxesOnTarget())
}

// FrozenLake's table, slippery 4x4: from a frozen cell each action has
// three outcomes whose probabilities sum to 1; holes and the goal absorb.
func TestFrozenLakeTransitions(t *testing.T) {
	e, err := frozenlake.New(frozenlake.DefaultConfig())
	require.NoError(t, err)
	assert.Nil(t, e.Transitions())
	_, err = e.Reset(ctx, 1, env.ModeVal)
	require.NoError(t, err)
	P := e.Transitions()
	m := e.Map()
	cols := len(m[0])
	require.Len(t, P, len(m)*cols)
	for s := range P {
		require.Len(t, P[s], 4)
		for a := range P[s] {
			sum := 0.0
			for _, o := range P[s][a] {
				sum += o.Prob
			}
			assert.InDelta(t, 1, sum, 1e-12)
			if c := m[s/cols][s%cols]; c == 'H' || c == 'G' {
				assert.Equal(t, []frozenlake.Outcome{{Prob: 1, Next: s, Done: true}}, P[s][a])
			}
		}
	}
}

// The bandit's arms: the high arm is the one whose pull counts as success.
func TestBanditArms(t *testing.T) {
	e, err := bandit.New(bandit.DefaultConfig())
	require.NoError(t, err)
	_, err = e.Reset(ctx, 5, env.ModeVal)
	require.NoError(t, err)
	lo, hi, loID, hiID := e.Arms()
	assert.NotEqual(t, lo, hi)
	r, err := e.Step(ctx, env.Action{ID: hiID, Text: hi})
	require.NoError(t, err)
	assert.Equal(t, true, r.Info["success"])
	assert.NotEqual(t, loID, hiID)
}

// 2048's state info after reset: two tiles, score 0, the mask of moves.
func TestGame2048Info(t *testing.T) {
	e, err := game2048.New(game2048.DefaultConfig())
	require.NoError(t, err)
	assert.Empty(t, e.Info())
	_, err = e.Reset(ctx, 2, env.ModeVal)
	require.NoError(t, err)
	info := e.Info()
	assert.Equal(t, 0, info["score"])
	assert.Len(t, info["action_mask"], 4)
	tiles := 0
	for _, row := range info["grid"].([][]int) {
		for _, v := range row {
			if v != 0 {
				tiles++
			}
		}
	}
	assert.Equal(t, 2, tiles)
}
