package frozenlake_test

import (
	"context"
	"fmt"

	"ragen/env"
	"ragen/env/frozenlake"
)

func Example() {
	e, _ := frozenlake.FromEnvConfig(map[string]any{"observation_format": "coord"})
	obs, _ := e.Reset(context.Background(), 0, env.ModeTrain)
	fmt.Println(obs)
	r, _ := e.Step(context.Background(), env.Action{ID: 2}) // Down
	fmt.Println(env.FormatReward(r.Reward, r.RewardIsInt), r.Done, r.Info["action_is_effective"])
	// Output:
	// Board size: 4 rows x 4 cols (zero-indexed).
	// Start: (0, 3)
	// Goal: (0, 2)
	// Player: (0, 3)
	// Holes: (1, 1), (2, 1)
	// 0 false true
}
