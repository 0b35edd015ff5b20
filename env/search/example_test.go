package search_test

import (
	"context"
	"fmt"
	"strings"

	"ragen/env"
	"ragen/env/search"
)

// The SearchQA env with its defaults: the embedded question set and BM25
// over the embedded corpus, no server.
func Example() {
	e, err := search.FromEnvConfig(map[string]any{"max_search_results": 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	obs, _ := e.Reset(ctx, 0, env.ModeVal)
	fmt.Println(obs)
	e.Step(ctx, env.Action{Text: "search[capital of Austria]"})
	fmt.Println(strings.Join(strings.SplitN(e.Render(), "\n", 4)[:3], "\n"))
	r, _ := e.Step(ctx, env.Action{Text: "finish[Vienna]"})
	fmt.Println(e.Render(), r.Done)
	// Output:
	// Question: Which city is the capital of Austria?
	// Available actions: search[<query>], finish[<answer>]
	// Search results for 'capital of Austria':
	// [Document 1] (ID: vienna, Score: 4.755)
	// Vienna
	// Your answer: Vienna. Reward: 1.00 true
}
