package sokoban_test

import (
	"context"
	"fmt"

	"ragen/env"
	"ragen/env/sokoban"
)

// SimpleSokoban's level for seed 0, solved by the BFS solver.
func Example() {
	e, _ := sokoban.FromEnvConfig(map[string]any{"dim_x": 6, "dim_y": 6, "num_boxes": 1, "max_steps": 100})
	obs, _ := e.Reset(context.Background(), 0, env.ModeTrain)
	fmt.Println(obs)
	plan, ok, _ := sokoban.Solve(e.Room(), 100, 0)
	fmt.Println(plan, ok)
	var r env.StepResult
	for _, id := range plan {
		r, _ = e.Step(context.Background(), env.Action{ID: id})
	}
	fmt.Println(env.FormatReward(r.Reward, r.RewardIsInt), r.Done, r.Info["success"])
	// Output:
	// ######
	// #____#
	// ##O_P#
	// ###X_#
	// ###__#
	// ######
	// [2 2 3 1 4 1 3] true
	// 10.9 true true
}

func ExampleParseRoom() {
	room, _ := sokoban.ParseRoom([]string{"#####", "#@$.#", "#####"})
	e, _ := sokoban.NewFromRoom(sokoban.DefaultConfig(), room)
	r, _ := e.Step(context.Background(), env.Action{ID: 4}) // Right
	fmt.Println(e.Render())
	fmt.Println(r.Reward, r.Done)
	// Output:
	// #####
	// #_P√#
	// #####
	// 10.9 true
}
