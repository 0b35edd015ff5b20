package metamathqa_test

import (
	"context"
	"fmt"

	"ragen/env"
	"ragen/env/metamathqa"
)

func ExampleExtractAnswer() {
	fmt.Println(metamathqa.ExtractAnswer("2 + 3 = 5.\nThe answer is: 5"))
	// Output: 5 true
}

func ExampleNewFromItems() {
	items := []metamathqa.Item{{Query: "What is 2 + 3?", Response: "The answer is: 5"}}
	e, _ := metamathqa.NewFromItems(metamathqa.DefaultConfig(), items, nil)
	obs, _ := e.Reset(context.Background(), 0, env.ModeTrain)
	fmt.Println(obs)
	res, _ := e.Step(context.Background(), env.Action{Text: "4"})
	fmt.Println(e.Render(), res.Reward, res.Done)
	res, _ = e.Step(context.Background(), env.Action{Text: "5"})
	fmt.Println(e.Render(), res.Reward, res.Done)
	// Output:
	// What is 2 + 3?
	// Incorrect. Please think again. 0 false
	// Correct! 0.5 true
}
