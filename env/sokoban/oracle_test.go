package sokoban

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/env"
)

func TestOracleSolvesGeneratedRooms(t *testing.T) {
	var _ env.Oracle = (*Env)(nil)
	for seed := int64(0); seed < 20; seed++ {
		e, err := FromEnvConfig(map[string]any{"dim_room": []any{6, 6}, "num_boxes": 1})
		require.NoError(t, err)
		_, err = e.Reset(context.Background(), seed, env.ModeTrain)
		require.NoError(t, err)
		done := false
		for turn := 0; turn < 20 && !done; turn++ {
			acts, ok, err := e.OracleActions(2)
			require.NoError(t, err)
			require.True(t, ok, "seed %d", seed)
			for _, a := range acts {
				id := 0
				for k, v := range e.ActionLookup() {
					if v == a {
						id = k
					}
				}
				r, err := e.Step(context.Background(), env.Action{ID: id, Text: a})
				require.NoError(t, err)
				if r.Done {
					require.Equal(t, true, r.Info["success"], "seed %d", seed)
					done = true
					break
				}
			}
		}
		require.True(t, done, "seed %d: oracle plan did not finish", seed)
	}
}
