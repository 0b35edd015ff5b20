package bandit_test

import (
	"context"
	"fmt"

	"ragen/env"
	"ragen/env/bandit"
)

func Example() {
	e, _ := bandit.NewWithInternalSeed(bandit.DefaultConfig(), 0)
	_, _ = e.Reset(context.Background(), 0, env.ModeTrain)
	fmt.Println(e.ActionLookup())
	r, _ := e.Step(context.Background(), env.Action{ID: 2})
	fmt.Println(e.Render(), r.Done, r.Info["success"])
	// Output:
	// map[1:Technician 2:Youtuber]
	// Youtuber: 1.0 points true true
}
