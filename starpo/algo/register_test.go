package algo

import (
	"slices"
	"testing"
)

// A registered estimator is found by name and listed; empty names, nil
// functions and taken names are refused.
func TestRegisterEstimator(t *testing.T) {
	double := func(in AdvantageInput, cfg AdvantageConfig) (AdvantageOutput, map[string]float64, error) {
		out, met, err := grpoEstimator(in, cfg)
		for i := range out.Advantages.Data {
			out.Advantages.Data[i] *= 2
		}
		return out, met, err
	}
	if err := RegisterEstimator("test_double_grpo", double); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // the registry is global: leave it as the other tests expect
		estimatorsMu.Lock()
		delete(estimators, "test_double_grpo")
		estimatorsMu.Unlock()
	})
	if _, err := Estimator("test_double_grpo"); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(EstimatorNames(), "test_double_grpo") {
		t.Fatal("registered estimator not listed")
	}
	for _, c := range []struct {
		name string
		f    EstimatorFunc
	}{{"", double}, {"x", nil}, {EstGRPO, double}, {"test_double_grpo", double}} {
		if err := RegisterEstimator(c.name, c.f); err == nil {
			t.Errorf("RegisterEstimator(%q, nil=%v) succeeded", c.name, c.f == nil)
		}
	}
}
