package countdown_test

import (
	"context"
	"fmt"

	"ragen/env"
	"ragen/env/countdown"
)

func ExampleEvaluate() {
	for _, s := range []string{"(3 + 5) * 2", "7 / 2", "7 // -2", "2 ** -1", "__import__('os')"} {
		v, err := countdown.Evaluate(s)
		if err != nil {
			fmt.Println("error")
			continue
		}
		fmt.Println(v)
	}
	// Output:
	// 16
	// 3.5
	// -4
	// 0.5
	// error
}

func ExampleScore() {
	task := countdown.Task{Target: 24, Nums: []int{4, 6, 1}}
	fmt.Println(countdown.Score("4 * 6 * 1", task))
	fmt.Println(countdown.Score("4 * 6 + 1", task))
	fmt.Println(countdown.Score("4 * 6", task))
	// Output:
	// 1 true
	// 0.1 false
	// 0 true
}

func ExampleNewFromTasks() {
	e, _ := countdown.NewFromTasks(countdown.DefaultConfig(), []countdown.Task{{Target: 10, Nums: []int{3, 5, 2}}})
	obs, _ := e.Reset(context.Background(), 0, env.ModeTrain)
	fmt.Println(obs)
	res, _ := e.Step(context.Background(), env.Action{Text: "3 + 5 + 2"})
	fmt.Println(res.Observation, res.Done)
	// Output:
	// Target: 10, nums: [3, 5, 2]
	// Your answer get 1 points. true
}

func ExampleSolve() {
	expr, ok := countdown.Solve([]int{3, 3, 8, 8}, 24)
	fmt.Println(expr, ok)
	// Output: 8 / (3 - (8 / 3)) true
}
