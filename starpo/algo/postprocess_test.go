package algo

import (
	"math"
	"strings"
	"testing"
)

func TestPostProcessOrder(t *testing.T) {
	// A = [[1 1] [2 0] [3 3]], uids [0 0 1], group std [2 2 1] (GRPO's),
	// mask [[1 1] [1 0] [1 1]].
	// 1. soft reweight: max σ = 2; w0 = 2/(2+1e-6), w1 = 1/(2+1e-6)
	//    metrics over uids: min w1, max w0, mean (w0+w1)/2
	// 2. linear filter scaling with kept ratio .5: A *= .5
	// 3. GRPO length weight: lengths [2 1 2], mean 5/3; rel = (len+1e-6)/(5/3)
	adv := mat(t, []float64{1, 1}, []float64{2, 0}, []float64{3, 3})
	m := mat(t, []float64{1, 1}, []float64{1, 0}, []float64{1, 1})
	cfg := DefaultPostConfig(EstGRPO)
	cfg.SoftAdvantageReweight = true
	cfg.FilterLossScaling = FilterScalingLinear
	cfg.FilterKeptRatio = 0.5
	cfg.GRPOLengthWeight = true
	out, metrics, err := PostProcess(adv, m, []int{0, 0, 1}, []float64{2, 2, 1}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	w0, w1 := 2/(2+1e-6), 1/(2+1e-6)
	rel2, rel1 := (2+1e-6)/(5.0/3), (1+1e-6)/(5.0/3)
	want := [][]float64{
		{1 * w0 * .5 / rel2, 1 * w0 * .5 / rel2},
		{2 * w0 * .5 / rel1, 0},
		{3 * w1 * .5 / rel2, 3 * w1 * .5 / rel2},
	}
	assertMat(t, "post-processed", out, want, 1e-12)
	assertClose(t, MetricSoftReweightMin, metrics[MetricSoftReweightMin], w1, 1e-12)
	assertClose(t, MetricSoftReweightMax, metrics[MetricSoftReweightMax], w0, 1e-12)
	assertClose(t, MetricSoftReweightMean, metrics[MetricSoftReweightMean], (w0+w1)/2, 1e-12)
	// The input is not modified.
	assertMat(t, "input", adv, [][]float64{{1, 1}, {2, 0}, {3, 3}}, 0)

	// sqrt scaling, and the length weight is GRPO-only.
	cfg = DefaultPostConfig(EstGAE)
	cfg.FilterLossScaling = FilterScalingSqrt
	cfg.FilterKeptRatio = 0.25
	cfg.GRPOLengthWeight = true
	out, metrics, _ = PostProcess(adv, m, nil, nil, cfg)
	assertMat(t, "sqrt", out, [][]float64{{.5, .5}, {1, 0}, {1.5, 1.5}}, 1e-12)
	if len(metrics) != 0 {
		t.Errorf("metrics = %v, want none", metrics)
	}

	// Soft reweight without group std (non-GRPO estimator) is skipped.
	cfg = DefaultPostConfig(EstGAE)
	cfg.SoftAdvantageReweight = true
	out, _, _ = PostProcess(adv, m, []int{0, 0, 1}, nil, cfg)
	assertMat(t, "no group std", out, adv.Rows(), 0)

	// Zero-task ablation comes last and wins.
	cfg.ZeroTaskAdvantage = true
	cfg.FilterLossScaling = FilterScalingLinear
	out, _, _ = PostProcess(adv, m, nil, nil, cfg)
	assertMat(t, "zero task", out, [][]float64{{0, 0}, {0, 0}, {0, 0}}, 0)
}

func TestPostProcessLengthWeightEmptyRows(t *testing.T) {
	// Lengths [0 0]: mean 0, rel = 1e-6/0 = +Inf; A = 0/Inf = 0 (no NaN).
	cfg := DefaultPostConfig(EstGRPO)
	cfg.GRPOLengthWeight = true
	out, _, err := PostProcess(NewMat(2, 2), NewMat(2, 2), nil, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range out.Data {
		if v != 0 {
			t.Fatalf("got %v, want zeros", out.Data)
		}
	}
}

func TestPostProcessErrors(t *testing.T) {
	adv := ones(2, 2)
	cfg := DefaultPostConfig(EstGRPO)
	cfg.FilterLossScaling = "cubic"
	cfg.FilterKeptRatio = math.NaN()
	_, _, err := PostProcess(adv, adv, nil, nil, cfg)
	if err == nil || !strings.Contains(err.Error(), "cubic") || !strings.Contains(err.Error(), "kept ratio") {
		t.Errorf("err = %v, want both problems reported", err)
	}
	cfg = DefaultPostConfig(EstGRPO)
	cfg.SoftAdvantageReweight = true
	if _, _, err := PostProcess(adv, adv, []int{0}, []float64{1, 1}, cfg); err == nil || !strings.Contains(err.Error(), "UIDs") {
		t.Errorf("short uids: err = %v", err)
	}
	if _, _, err := PostProcess(adv, ones(2, 3), nil, nil, DefaultPostConfig(EstGRPO)); err == nil {
		t.Error("shape mismatch: want error")
	}
}
