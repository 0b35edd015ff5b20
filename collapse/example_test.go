package collapse_test

import (
	"context"
	"fmt"

	"ragen/collapse"
)

// promptBlind is a fake policy whose reasoning ignores the prompt: every
// token costs −1 nat whatever the prompt (template collapse).
var promptBlind = collapse.ScorerFunc(func(_ context.Context, pairs []collapse.Pair) ([]collapse.Score, error) {
	out := make([]collapse.Score, len(pairs))
	for i, p := range pairs {
		out[i] = collapse.Score{SumLogProb: -float64(len(p.Reasoning)), Tokens: len(p.Reasoning)}
	}
	return out, nil
})

func ExampleDetector_Compute() {
	cfg := collapse.DefaultConfig()
	cfg.MultiTurnEnabled = false
	cfg.NumSamples = collapse.AllSamples
	d, err := collapse.NewDetector(cfg, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	b := collapse.Batch{
		GroupIDs:           []int{0, 0, 1, 1},
		FirstTurnPrompts:   [][]int{{5, 6}, {5, 6}, {7, 8}, {7, 8}},
		FirstTurnReasoning: [][]int{{1, 2}, {1, 3}, {4}, {4, 4}},
	}
	res, err := d.Compute(context.Background(), b, promptBlind, 1)
	if err != nil {
		fmt.Println(err)
		return
	}
	m := res.Metrics
	fmt.Printf("MI %.3f of at most %.3f\n", m["collapse_first_turn_sample/mi_estimate"], m["collapse_first_turn_sample/mi_upper_bound"])
	fmt.Printf("retrieval %.2f, chance %.2f\n", m["collapse_first_turn_sample/retrieval_accuracy"], m["collapse_first_turn_sample/retrieval_chance_level"])
	// Output:
	// MI 0.000 of at most 0.693
	// retrieval 0.50, chance 0.50
}

func ExampleMatrixMetrics() {
	// Two reasonings, each far more likely under its own prompt.
	m := collapse.Matrix{
		L:   [][]float64{{-0.1, -4}, {-4, -0.1}},
		S:   [][]float64{{-1, -40}, {-40, -1}},
		Col: []int{0, 1},
	}
	out, _, err := collapse.MatrixMetrics(m, 1e-3, 0.9, collapse.EMA{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("MI %.3f (ln 2 = %.3f), accuracy %.1f\n", out[collapse.NameMIEstimate], out[collapse.NameMIUpperBound], out[collapse.NameRetrievalAccuracy])
	// Output: MI 0.673 (ln 2 = 0.693), accuracy 1.0
}
