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

// Requests that carry their own stream seed sample the same tokens whatever
// batch, order or call decodes them (float64, so that batch composition
// cannot flip a draw through rounding); other seeds give other tokens.
func TestPolicySeededStreams(t *testing.T) {
	tok := tokenizer.NewByte()
	m, err := llm.New(llm.TinyConfig(tok.VocabSize()), llm.Options{DType: torch.Float64, Device: torch.CPU, Seed: 21})
	require.NoError(t, err)
	defer m.Close()
	sp := ragen.SamplingParams{DoSample: true, Temperature: 1, TopK: -1, TopP: 1, MaxNewTokens: 6}
	prompts := []string{"hi", "hello there", "x", "a longer prompt"}
	reqs := make([]ragen.GenRequest, len(prompts))
	for i, pr := range prompts {
		reqs[i] = ragen.GenRequest{EnvID: i, Prompt: pr, Sampling: sp, Seed: uint64(100 + i), Seeded: true}
	}
	ctx := context.Background()
	all, err := New(m, tok, Options{Seed: 1}).Generate(ctx, reqs)
	require.NoError(t, err)
	// one at a time, in reverse order, from a policy with another seed and call count
	p := New(m, tok, Options{Seed: 77, MaxBatch: 1})
	_, err = p.Generate(ctx, reqs[:1])
	require.NoError(t, err)
	for i := len(reqs) - 1; i >= 0; i-- {
		got, err := p.Generate(ctx, []ragen.GenRequest{reqs[i]})
		require.NoError(t, err)
		require.Equal(t, all[i].IDs, got[0].IDs, "request %d", i)
		require.InDeltaSlice(t, all[i].LogProbs, got[0].LogProbs, 1e-5, "request %d", i)
	}
	// a pair batch in swapped order
	pair, err := p.Generate(ctx, []ragen.GenRequest{reqs[3], reqs[1]})
	require.NoError(t, err)
	require.Equal(t, all[3].IDs, pair[0].IDs)
	require.Equal(t, all[1].IDs, pair[1].IDs)
	// another stream seed samples other tokens
	other := reqs[1]
	other.Seed = 12345
	diff, err := p.Generate(ctx, []ragen.GenRequest{other})
	require.NoError(t, err)
	require.NotEqual(t, all[1].IDs, diff[0].IDs)
}
