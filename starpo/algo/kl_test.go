package algo

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestKLPenaltyTable(t *testing.T) {
	// lp = −1, ref = −1.5: d = lp − ref = .5, x = ref − lp = −.5.
	//   kl/k1:         .5                         grad 1
	//   abs:           .5                         grad 1
	//   mse/k2:        ½·.25 = .125               grad .5
	//   low_var_kl/k3: e^−.5 + .5 − 1 = .10653066 grad −(e^−.5 − 1) = .39346934
	// lp = 0, ref = 30: x = 30 → clamped to 20, e^20 − 21 → clamped to 10, grad 0.
	// lp = 0, ref = 0: abs grad 0 (torch's sign(0)).
	lp := mat(t, []float64{-1, 0, 0})
	ref := mat(t, []float64{-1.5, 30, 0})
	e := math.Exp(-.5)
	cases := []struct {
		names []string
		v, g  []float64
	}{
		{[]string{"kl", "k1"}, []float64{.5, -30, 0}, []float64{1, 1, 1}},
		{[]string{"abs"}, []float64{.5, 30, 0}, []float64{1, -1, 0}},
		{[]string{"mse", "k2"}, []float64{.125, 450, 0}, []float64{.5, -30, 0}},
		{[]string{"low_var_kl", "k3"}, []float64{e + .5 - 1, 10, 0}, []float64{-(e - 1), 0, 0}},
		// "+" names: forward of the base type, gradient lp − ref.
		{[]string{"k3+", "low_var_kl+"}, []float64{e + .5 - 1, 10, 0}, []float64{.5, -30, 0}},
		{[]string{"kl+"}, []float64{.5, -30, 0}, []float64{.5, -30, 0}},
	}
	for _, c := range cases {
		for _, name := range c.names {
			v, g, err := KLPenalty(lp, ref, name)
			if err != nil {
				t.Fatal(err)
			}
			assertMat(t, name+" value", v, [][]float64{c.v}, 1e-12)
			assertMat(t, name+" grad", g, [][]float64{c.g}, 1e-12)
		}
	}
}

func TestKLPenaltyGradFiniteDifferences(t *testing.T) {
	lp := mat(t, []float64{-1.2, -0.3, -2.5}, []float64{-0.7, -4, -0.01})
	ref := mat(t, []float64{-0.9, -0.8, -2.4}, []float64{-1.7, -3.1, -0.2})
	for _, name := range []string{"kl", "abs", "mse", "low_var_kl"} {
		_, g, _ := KLPenalty(lp, ref, name)
		for k := range lp.Data {
			f := func(x Mat) float64 { v, _, _ := KLPenalty(x, ref, name); return v.Data[k] }
			num := numGrad(lp, f)
			assertClose(t, name+" grad", g.Data[k], num.Data[k], 1e-6)
		}
	}
}

func TestKLPenaltyNames(t *testing.T) {
	one := ones(1, 1)
	for _, name := range []string{"full", "low-var-kl", "", "k4", "+"} {
		_, _, err := KLPenalty(one, one, name)
		if !errors.Is(err, ErrUnknownKLType) {
			t.Errorf("%q: err = %v, want ErrUnknownKLType", name, err)
		}
	}
	_, _, err := KLPenalty(one, one, "low-var-kl")
	if !strings.Contains(err.Error(), "(did you mean low_var_kl?)") {
		t.Errorf("dash hint missing: %v", err)
	}
}

func TestKLLoss(t *testing.T) {
	// kl type, token-mean over m = [1 1 0]: lp − ref = [.5 −.1 9] → (.5−.1)/2 = .2.
	// coef .1 → term .02; grad = coef·m/2 = [.05 .05 0].
	lp := mat(t, []float64{-1, -2, 0})
	ref := mat(t, []float64{-1.5, -1.9, -9})
	m := mat(t, []float64{1, 1, 0})
	v, g, metrics, err := KLLoss(lp, ref, m, "kl", 0.1, TokenMean)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "kl term", v, .02, 1e-7)
	assertMat(t, "kl grad", g, [][]float64{{.05, .05, 0}}, 1e-7)
	assertClose(t, MetricKLLoss, metrics[MetricKLLoss], .2, 1e-7)
	assertClose(t, MetricKLCoef, metrics[MetricKLCoef], .1, 0)
}

func TestKLController(t *testing.T) {
	// adaptive: β = .1, target .1, horizon 10000; kl = .3 → error 2 clipped to
	// .2 → β·(1 + .2·128/10000) = .100256. kl = .05 → −.5 → −.2 → ·(1 − .00256).
	c, err := NewKLController(KLControlConfig{Type: KLCtrlAdaptive, KLCoef: .1, TargetKL: .1, Horizon: 10000})
	if err != nil {
		t.Fatal(err)
	}
	c.Update(.3, 128)
	assertClose(t, "adaptive up", c.Value, .100256, 1e-15)
	c.Update(.05, 128)
	assertClose(t, "adaptive down", c.Value, .100256*(1-.00256), 1e-15)
	// kl = .105 → error .05 (inside the clip): ·(1 + .05·1000/10000).
	c, _ = NewKLController(KLControlConfig{Type: KLCtrlAdaptive, KLCoef: 1, TargetKL: .1, Horizon: 10000})
	c.Update(.105, 1000)
	assertClose(t, "adaptive inside clip", c.Value, 1.005, 1e-12)

	f, _ := NewKLController(DefaultKLControlConfig())
	f.Update(5, 100)
	assertClose(t, "fixed", f.Value, 0, 0)

	_, err = NewKLController(KLControlConfig{Type: KLCtrlAdaptive, Horizon: 0, TargetKL: 0})
	if err == nil || !strings.Contains(err.Error(), "horizon") || !strings.Contains(err.Error(), "target_kl") {
		t.Errorf("bad adaptive config: err = %v", err)
	}
	if _, err := NewKLController(KLControlConfig{Type: "pid"}); err == nil || !strings.Contains(err.Error(), "pid") {
		t.Errorf("bad type: err = %v", err)
	}
}

func TestApplyKLPenalty(t *testing.T) {
	// scores [[0 1] [0 2]], old [[−1 −1] [−2 −2]], ref [[−1.5 −1] [−2 −3]],
	// m [[1 1] [1 0]], kl type, β = .5:
	//   kld·m = [[.5 0] [0 0]] (row 1's 1.0 is masked out)
	//   rewards = scores − β·kld = [[−.25 1] [0 2]]
	//   row masked means [.25 0] → current_kl = .125
	scores := mat(t, []float64{0, 1}, []float64{0, 2})
	old := mat(t, []float64{-1, -1}, []float64{-2, -2})
	ref := mat(t, []float64{-1.5, -1}, []float64{-2, -3})
	m := mat(t, []float64{1, 1}, []float64{1, 0})
	ctrl, _ := NewKLController(KLControlConfig{Type: KLCtrlAdaptive, KLCoef: .5, TargetKL: .1, Horizon: 100})
	r, metrics, err := ApplyKLPenalty(scores, old, ref, m, "kl", ctrl)
	if err != nil {
		t.Fatal(err)
	}
	assertMat(t, "rewards", r, [][]float64{{-.25, 1}, {0, 2}}, 1e-12)
	assertClose(t, MetricRewardKLPenalty, metrics[MetricRewardKLPenalty], .125, 1e-7)
	assertClose(t, MetricRewardKLPenaltyCoeff, metrics[MetricRewardKLPenaltyCoeff], .5, 0)
	// Controller updated with (.125, B=2): error .25 → .2: β = .5·(1 + .2·2/100).
	assertClose(t, "β after update", ctrl.Value, .5*1.004, 1e-9)

	if _, _, err := ApplyKLPenalty(scores, old, ref, m, "kl", nil); err == nil {
		t.Error("nil controller: want error")
	}
	if _, _, err := ApplyKLPenalty(NewMat(0, 2), NewMat(0, 2), NewMat(0, 2), NewMat(0, 2), "kl", ctrl); err == nil {
		t.Error("empty batch: want error")
	}
	if _, _, err := ApplyKLPenalty(scores, old, ref, m, "full", ctrl); !errors.Is(err, ErrUnknownKLType) {
		t.Errorf("full: err = %v", err)
	}
}
