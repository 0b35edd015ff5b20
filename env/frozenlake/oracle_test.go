package frozenlake

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/env"
)

func TestOracleFollowsShortestSafePath(t *testing.T) {
	cfg := DefaultConfig()
	cfg.IsSlippery = false
	// S at (0,0), holes force the path down the left column then right:
	// S F F F
	// F H H F
	// F F F G   → Down, Down, Right, Right, Right (5 moves; the top route is 5 too,
	// but BFS tries ids in order Left(1) Down(2) Right(3) Up(4), so Down is explored first)
	e, err := NewFromMap(cfg, []string{"SFFF", "FHHF", "FFFG"}, env.NewScripted(make([]float64, 16), nil))
	require.NoError(t, err)
	acts, ok, err := e.OracleActions(10)
	require.NoError(t, err)
	require.True(t, ok)
	require.Len(t, acts, 5)
	// following the plan reaches the goal
	for _, a := range acts {
		id := 0
		for k, v := range cfg.ActionLookupMap {
			if v == a {
				id = k
			}
		}
		r, err := e.Step(context.Background(), env.Action{ID: id, Text: a})
		require.NoError(t, err)
		if r.Done {
			require.Equal(t, true, r.Info["success"])
		}
	}
	r, c := e.Player()
	require.Equal(t, [2]int{2, 3}, [2]int{r, c})
	first, ok, err := func() ([]string, bool, error) {
		e2, _ := NewFromMap(cfg, []string{"SFFF", "FHHF", "FFFG"}, env.NewScripted(make([]float64, 16), nil))
		return e2.OracleActions(2)
	}()
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, acts[:2], first)

	// (not slippery: every draw of 0 picks the intended move)
	// a goal walled off by holes has no plan
	e, err = NewFromMap(cfg, []string{"SH", "HG"}, env.NewScripted(make([]float64, 16), nil))
	require.NoError(t, err)
	_, ok, err = e.OracleActions(3)
	require.NoError(t, err)
	require.False(t, ok)
}
