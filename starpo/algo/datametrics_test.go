package algo

import (
	"strings"
	"testing"
)

func TestDataMetrics(t *testing.T) {
	// scores rows [0 1] [0 3] → sums 1, 3: mean 2, max 3, min 1 (rewards equal).
	// mask [[1 1] [1 0]] selects advantages {.5 −1 2}, returns {1 2 3},
	// values {1 1 2}: R−V = {0 1 1}: var = 1/3; var(R) = 1;
	// explained var = 1 − (1/3)/(1 + 1e-5).
	// response lengths [2 1] with max 2: clip ratio .5; prompt lengths [5 5], max 6: 0.
	s := mat(t, []float64{0, 1}, []float64{0, 3})
	in := DataMetricsInput{
		Scores: s, Rewards: s,
		Advantages:      mat(t, []float64{.5, -1}, []float64{2, 9}),
		Returns:         mat(t, []float64{1, 2}, []float64{3, 9}),
		Values:          mat(t, []float64{1, 1}, []float64{2, 9}),
		Mask:            mat(t, []float64{1, 1}, []float64{1, 0}),
		ResponseLengths: []float64{2, 1}, MaxResponseLength: 2,
		PromptLengths: []float64{5, 5}, MaxPromptLength: 6,
	}
	m, err := DataMetrics(in)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{
		"critic/score/mean": 2, "critic/score/max": 3, "critic/score/min": 1,
		"critic/rewards/mean": 2, "critic/rewards/max": 3, "critic/rewards/min": 1,
		"critic/advantages/mean": 0.5, "critic/advantages/max": 2, "critic/advantages/min": -1,
		"critic/returns/mean": 2, "critic/returns/max": 3, "critic/returns/min": 1,
		"critic/values/mean": 4.0 / 3, "critic/values/max": 2, "critic/values/min": 1,
		"critic/vf_explained_var": 1 - (1.0/3)/(1+1e-5),
		"response_length/mean":    1.5, "response_length/max": 2, "response_length/min": 1, "response_length/clip_ratio": .5,
		"prompt_length/mean": 5, "prompt_length/max": 5, "prompt_length/min": 5, "prompt_length/clip_ratio": 0,
	}
	if len(m) != len(want) {
		t.Errorf("got %d metrics, want %d: %v", len(m), len(want), m)
	}
	for k, w := range want {
		assertClose(t, k, m[k], w, 1e-12)
	}

	// No critic, no lengths: only score/rewards/advantages/returns.
	in.Values = Mat{}
	in.ResponseLengths, in.PromptLengths = nil, nil
	m, _ = DataMetrics(in)
	if len(m) != 12 {
		t.Errorf("without critic: %d metrics: %v", len(m), m)
	}
	in.Mask = NewMat(2, 2)
	if _, err := DataMetrics(in); err == nil || !strings.Contains(err.Error(), "masked") {
		t.Errorf("empty mask: err = %v", err)
	}
}
