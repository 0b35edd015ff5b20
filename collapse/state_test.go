package collapse

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestDetectorStateRoundTripAndPerStepSeeds(t *testing.T) {
	d, err := NewDetectorPerStep(DefaultConfig(), 10)
	if err != nil {
		t.Fatal(err)
	}
	d.ema["first_turn"] = EMA{Std: 0.5, StdSeq: 2.5, Set: true}
	b, err := d.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	e, err := NewDetectorPerStep(DefaultConfig(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.UnmarshalState(b); err != nil {
		t.Fatal(err)
	}
	if got := e.EMAState("first_turn"); got != (EMA{Std: 0.5, StdSeq: 2.5, Set: true}) {
		t.Fatalf("EMA after round trip = %+v", got)
	}
	if err := e.UnmarshalState([]byte("[")); err == nil {
		t.Fatal("bad state must be an error")
	}
}

// A per-step-seeded detector that skipped earlier steps (a resumed run)
// draws the same samples at step 10 as one that computed them.
func TestPerStepSeedsIgnoreHistory(t *testing.T) {
	cfg := firstTurnCfg()
	cfg.NumSamples = 2
	recA, recB := &recordingScorer{}, &recordingScorer{}
	a, err := NewDetectorPerStep(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Compute(context.Background(), firstTurnBatch(), inputDriven, 5); err != nil {
		t.Fatal(err)
	}
	b, err := NewDetectorPerStep(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := a.MarshalState()
	if err := b.UnmarshalState(st); err != nil {
		t.Fatal(err)
	}
	ra, err := a.Compute(context.Background(), firstTurnBatch(), recA, 10)
	if err != nil {
		t.Fatal(err)
	}
	rb, err := b.Compute(context.Background(), firstTurnBatch(), recB, 10)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(recA.pairs) != fmt.Sprint(recB.pairs) {
		t.Fatalf("sampled pairs differ:\n%v\n%v", recA.pairs, recB.pairs)
	}
	for k, v := range ra.Metrics {
		if strings.HasPrefix(k, "timing") {
			continue
		}
		if w := rb.Metrics[k]; w != v && !(math.IsNaN(v) && math.IsNaN(w)) {
			t.Fatalf("%s: %v vs %v", k, v, w)
		}
	}
}

type recordingScorer struct{ pairs [][]int }

func (r *recordingScorer) ScoreReasoning(ctx context.Context, ps []Pair) ([]Score, error) {
	for _, p := range ps {
		r.pairs = append(r.pairs, append(append([]int(nil), p.Prompt...), p.Reasoning...))
	}
	return inputDriven.ScoreReasoning(ctx, ps)
}

// A non-finite marginal std (a row scored −Inf under every prompt) must not
// make the detector state unwritable; it round-trips exactly, and states
// written before (plain numbers) still load.
func TestDetectorStateNonFinite(t *testing.T) {
	d, err := NewDetector(DefaultConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	d.ema[FamilyFirstTurn] = EMA{Std: math.NaN(), StdSeq: math.Inf(-1), Set: true}
	d.ema[FamilyTrajectory] = EMA{Std: 0.25, StdSeq: math.Inf(1), Set: true}
	b, err := d.MarshalState()
	if err != nil {
		t.Fatal(err)
	}
	e, _ := NewDetector(DefaultConfig(), nil)
	if err := e.UnmarshalState(b); err != nil {
		t.Fatal(err)
	}
	ft, tr := e.EMAState(FamilyFirstTurn), e.EMAState(FamilyTrajectory)
	if !math.IsNaN(ft.Std) || !math.IsInf(ft.StdSeq, -1) || !ft.Set || tr != (EMA{Std: 0.25, StdSeq: math.Inf(1), Set: true}) {
		t.Fatalf("round trip: %+v %+v (%s)", ft, tr, b)
	}
	if err := e.UnmarshalState([]byte(`{"x":{"Std":1.5,"StdSeq":2,"Set":true}}`)); err != nil || e.EMAState("x") != (EMA{1.5, 2, true}) {
		t.Fatalf("plain state: %v %+v", err, e.EMAState("x"))
	}
}
