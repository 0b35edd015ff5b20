package algo

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestValueLossTable(t *testing.T) {
	// ε_v = .5, token-mean, m = 1.
	//  tok  v    V_old  R     v_clip  l1=(v−R)²  l2=(v_clip−R)²  max    clipped  ∂/∂v
	//  1    1.0  .8     2.0   1.0     1          1               1      no       tie: ½·2(v−R) + ½·2(vc−R) = −2
	//  2    2.0  1.0    1.2   1.5     .64        .09             .64    no       2(v−R) = 1.6
	//  3    2.0  1.0    2.5   1.5     .25        1               1      yes      2(vc−R)·0 = 0
	// vf_loss = ½·(2.64/3) = .44; clipfrac 1/3; vpred_mean 5/3.
	// ∂vf_loss/∂v = ½·(1/3)·[−2 1.6 0].
	v := mat(t, []float64{1, 2, 2})
	old := mat(t, []float64{.8, 1, 1})
	ret := mat(t, []float64{2, 1.2, 2.5})
	cfg := DefaultValueLossConfig()
	loss, g, metrics, err := ValueLoss(v, old, ret, ones(1, 3), cfg)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "vf_loss", loss, .44, 1e-7)
	assertMat(t, "grad", g, [][]float64{{-1.0 / 3, 1.6 / 6, 0}}, 1e-7)
	assertClose(t, MetricVFLoss, metrics[MetricVFLoss], .44, 1e-7)
	assertClose(t, MetricVFClipFrac, metrics[MetricVFClipFrac], 1.0/3, 1e-7)
	assertClose(t, MetricVPredMean, metrics[MetricVPredMean], 5.0/3, 1e-7)

	// The logged vf_loss is divided by grad_accum; the returned loss is not.
	cfg.GradAccum = 4
	loss, _, metrics, _ = ValueLoss(v, old, ret, ones(1, 3), cfg)
	assertClose(t, "loss with accum", loss, .44, 1e-7)
	assertClose(t, "logged with accum", metrics[MetricVFLoss], .11, 1e-7)
}

func TestValueLossGradFiniteDifferences(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	b, tt := 3, 5
	v, old, ret, m := NewMat(b, tt), NewMat(b, tt), NewMat(b, tt), NewMat(b, tt)
	for k := range v.Data {
		old.Data[k] = r.NormFloat64()
		v.Data[k] = old.Data[k] + r.NormFloat64()*0.8
		ret.Data[k] = r.NormFloat64() * 2
		if r.Float64() < 0.7 {
			m.Data[k] = 1
		}
	}
	for _, mode := range LossAggModes() {
		cfg := DefaultValueLossConfig()
		cfg.LossAggMode = mode
		_, g, _, err := ValueLoss(v, old, ret, m, cfg)
		if err != nil {
			t.Fatal(err)
		}
		num := numGrad(v, func(x Mat) float64 { l, _, _, _ := ValueLoss(x, old, ret, m, cfg); return l })
		assertMat(t, mode, g, num.Rows(), 1e-5)
	}
}

func TestValueLossErrors(t *testing.T) {
	cfg := DefaultValueLossConfig()
	cfg.LossAggMode = "mean"
	if _, _, _, err := ValueLoss(ones(1, 1), ones(1, 1), ones(1, 1), ones(1, 1), cfg); err == nil || !strings.Contains(err.Error(), "mean") {
		t.Errorf("bad mode: err = %v", err)
	}
	if _, _, _, err := ValueLoss(ones(1, 1), ones(1, 2), ones(1, 1), ones(1, 1), DefaultValueLossConfig()); err == nil || !strings.Contains(err.Error(), "values") {
		t.Errorf("shape: err = %v", err)
	}
}
