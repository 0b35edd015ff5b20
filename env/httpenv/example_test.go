package httpenv_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"ragen/env"
	_ "ragen/env/frozenlake"
	"ragen/env/httpenv"
)

// A FrozenLake served over loopback HTTP and driven through the client,
// exactly as a local env would be.
func Example() {
	srv := httpenv.NewServer(httpenv.Options{})
	defer srv.Close()
	hs := httptest.NewServer(srv)
	defer hs.Close()

	e, err := httpenv.New(httpenv.Config{URL: hs.URL, EnvType: "frozen_lake",
		EnvConfig: map[string]any{"observation_format": "coord"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	ctx := context.Background()
	if _, err := e.Reset(ctx, 0, env.ModeTrain); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.Render())
	fmt.Println(e.ActionLookup())
	r, err := e.Step(ctx, env.Action{ID: 2}) // Down
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(env.FormatReward(r.Reward, r.RewardIsInt), r.Done, r.Info["action_is_effective"])
	// Output:
	// Board size: 4 rows x 4 cols (zero-indexed).
	// Start: (0, 3)
	// Goal: (0, 2)
	// Player: (0, 3)
	// Holes: (1, 1), (2, 1)
	// map[1:Left 2:Down 3:Right 4:Up]
	// 0 false true
}
