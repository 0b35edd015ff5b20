package llmpolicy_test

import (
	"context"
	"fmt"

	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/llmpolicy"
	"ragen/ragen"
	"ragen/torch"
)

// New turns an in-process model into the rollout core's ragen.Policy: each
// request's prompt ids are decoded in one batch with its own sampling
// settings (here greedy, 6 new tokens).
func Example() {
	tok := tokenizer.NewByte()
	m, err := llm.New(llm.TinyConfig(tok.VocabSize()), llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 1})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	p := llmpolicy.New(m, tok, llmpolicy.Options{Seed: 1})
	sp := ragen.SamplingParams{MaxNewTokens: 6, TopK: -1}
	gens, err := p.Generate(context.Background(), []ragen.GenRequest{
		{EnvID: 0, Prompt: "Hello", IDs: tok.Encode("Hello"), Sampling: sp},
		{EnvID: 1, Prompt: "Hi", IDs: tok.Encode("Hi"), Sampling: sp},
	})
	if err != nil {
		panic(err)
	}
	for _, g := range gens {
		fmt.Println(len(g.IDs), "tokens,", g.FinishReason)
	}
	// Output:
	// 6 tokens, length
	// 6 tokens, length
}
