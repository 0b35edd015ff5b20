package llmpolicy

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/ragen"
	"ragen/torch"
)

// tinyModel is a seeded tiny Qwen2 over the byte tokenizer's vocabulary.
func tinyModel(t *testing.T) *llm.Model {
	t.Helper()
	m, err := llm.New(llm.TinyConfig(tokenizer.NewByte().VocabSize()), llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 21})
	require.NoError(t, err)
	return m
}

func TestPolicy(t *testing.T) {
	m := tinyModel(t)
	defer m.Close()
	tok := tokenizer.NewByte()
	greedy := ragen.SamplingParams{DoSample: false, Temperature: 1, TopK: -1, TopP: 1, MaxNewTokens: 6}
	sampled := ragen.SamplingParams{DoSample: true, Temperature: 1, TopK: -1, TopP: 1, MaxNewTokens: 5}
	reqs := []ragen.GenRequest{
		{EnvID: 0, Prompt: "hi", Sampling: greedy},
		{EnvID: 1, IDs: []int{1, 2, 3}, Sampling: sampled},
		{EnvID: 2, Prompt: "hello there", Sampling: greedy},
	}
	p := New(m, tok, Options{MaxBatch: 1, Seed: 5})
	out, err := p.Generate(context.Background(), reqs)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 {
		t.Fatalf("%d generations", len(out))
	}
	// greedy requests equal direct greedy generation
	for _, i := range []int{0, 2} {
		want, err := m.Generate(context.Background(), tok, [][]int{tok.Encode(reqs[i].Prompt)}, llm.GenOptions{MaxNewTokens: 6})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(out[i].IDs) != fmt.Sprint(want[0].IDs) || out[i].Text != want[0].Text {
			t.Errorf("req %d: %+v want %+v", i, out[i], want[0])
		}
	}
	if n := len(out[1].IDs); n == 0 || n > 5 || len(out[1].LogProbs) != n {
		t.Fatalf("sampled: %+v", out[1])
	}
}

func TestPolicyStateRoundTrip(t *testing.T) {
	tok := tokenizer.NewByte()
	m := tinyModel(t)
	defer m.Close()
	p := New(m, tok, Options{Seed: 5}).(*policy)
	p.n = 7
	b, err := p.MarshalState()
	require.NoError(t, err)
	q := New(m, tok, Options{Seed: 5}).(*policy)
	require.NoError(t, q.UnmarshalState(b))
	require.Equal(t, uint64(7), q.n)
	require.Error(t, q.UnmarshalState([]byte("{")))
}
