package llm

import (
	"context"
	"math"
	"testing"

	"ragen/collapse"
	"ragen/torch"
)

// The prefix scorer (one prefill per distinct prompt, reasonings as KV-cache
// continuations) gives the plain scorer's sums, for shared and distinct
// prompts, reasonings of several lengths and empty ones, across micro-batch
// boundaries, at a temperature.
func TestPrefixScorerMatchesScorer(t *testing.T) {
	cfg := TinyConfig(50)
	cfg.InitializerRange = 0.5 // logits that depend on the context
	m, err := New(cfg, Options{DType: torch.Float32, Device: torch.CPU, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	x1, x2 := []int{1, 2, 3, 4, 5, 6, 7}, []int{9, 8, 7}
	zs := [][]int{{11, 12, 13}, {14}, {15, 16, 17, 18, 19, 20}, {}, {21, 22}}
	var pairs []collapse.Pair
	for _, x := range [][]int{x1, x2} {
		for _, z := range zs {
			pairs = append(pairs, collapse.Pair{Prompt: x, Reasoning: z})
		}
	}
	pairs = append(pairs, collapse.Pair{Prompt: []int{1, 2, 3, 4, 5, 6, 7}, Reasoning: []int{30, 31}}) // equal content, other slice
	want, err := NewScorerTemperature(m, 4, 0.7).ScoreReasoning(context.Background(), pairs)
	if err != nil {
		t.Fatal(err)
	}
	// the context matters: the same reasoning scores differently under x1 and x2
	if d := math.Abs(want[0].SumLogProb - want[len(zs)].SumLogProb); d < 0.05 {
		t.Fatalf("scores barely depend on the prompt (%g): the test would not see a wrong prefix", d)
	}
	for _, mb := range []int{1, 3, 64} {
		got, err := NewPrefixScorer(m, mb, 0.7).ScoreReasoning(context.Background(), pairs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got[i].Tokens != want[i].Tokens || math.Abs(got[i].SumLogProb-want[i].SumLogProb) > 1e-4 {
				t.Fatalf("micro-batch %d, pair %d: %+v, plain scorer %+v", mb, i, got[i], want[i])
			}
		}
	}
	if _, err := NewPrefixScorer(m, 2, 1).ScoreReasoning(context.Background(), []collapse.Pair{{Reasoning: []int{1}}}); err == nil {
		t.Fatal("empty prompt: no error")
	}
	// bf16 mixed precision: both score in the compute dtype, so they agree
	// to bf16 rounding and differ from float32's sums
	prev := m.opt.ComputeDType
	m.opt.ComputeDType = torch.BFloat16
	defer func() { m.opt.ComputeDType = prev }()
	wantBF, err := NewScorerTemperature(m, 4, 0.7).ScoreReasoning(context.Background(), pairs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := NewPrefixScorer(m, 3, 0.7).ScoreReasoning(context.Background(), pairs)
	if err != nil {
		t.Fatal(err)
	}
	moved := 0.0
	for i := range want {
		moved = max(moved, math.Abs(got[i].SumLogProb-want[i].SumLogProb))
		if d := math.Abs(got[i].SumLogProb - wantBF[i].SumLogProb); d > 0.02*math.Abs(wantBF[i].SumLogProb)+0.02 {
			t.Errorf("bf16 pair %d: prefix scorer %g, plain scorer %g", i, got[i].SumLogProb, wantBF[i].SumLogProb)
		}
	}
	if moved == 0 {
		t.Error("bf16 prefix scores equal float32's: the scorer did not compute in the compute dtype")
	}
}
