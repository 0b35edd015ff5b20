package rubikscube_test

import (
	"context"
	"fmt"

	"ragen/env"
	"ragen/env/rubikscube"
)

func ExampleCube_Apply() {
	c := rubikscube.SolvedCube()
	c.Apply(1) // U
	fmt.Println(c)
	c.Apply(rubikscube.Move(1).Inverse()) // U'
	fmt.Println(c, c.IsSolved())
	// Output:
	// WWWW GGOO RRGG BBRR OOBB YYYY
	// WWWW OOOO GGGG RRRR BBBB YYYY true
}

func ExampleNewFromState() {
	cube, _ := rubikscube.ParseCube("WWWW GGOO RRGG BBRR OOBB YYYY") // one U turn from solved
	e, _ := rubikscube.NewFromState(rubikscube.DefaultConfig(), cube)
	res, _ := e.Step(context.Background(), env.Action{ID: 2, Text: "U'"})
	fmt.Println(res.Reward, res.Done, res.Info["success"])
	// Output: 1 true true
}

func Example_registry() {
	e, err := env.New("rubikscube", map[string]any{"scramble_depth": 1, "max_steps": 20})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := e.Reset(context.Background(), 42, env.ModeTrain); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(e.(env.ActionLookup).ActionLookup()[12])
	// Output: B'
}
