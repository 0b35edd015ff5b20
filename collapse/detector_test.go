package collapse

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

// scripted is a Rand that replays fixed draws.
type scripted struct {
	ints  []int
	perms [][]int
	t     *testing.T
}

func (s *scripted) Intn(n int) int {
	if len(s.ints) == 0 {
		s.t.Fatalf("unexpected Intn(%d)", n)
	}
	v := s.ints[0]
	s.ints = s.ints[1:]
	if v >= n {
		s.t.Fatalf("scripted %d out of range %d", v, n)
	}
	return v
}

func (s *scripted) Permutation(n int) []int {
	if len(s.perms) == 0 || len(s.perms[0]) != n {
		s.t.Fatalf("unexpected Permutation(%d)", n)
	}
	p := s.perms[0]
	s.perms = s.perms[1:]
	return p
}

func firstTurnCfg() Config {
	c := DefaultConfig()
	c.MultiTurnEnabled = false
	c.NumSamples = AllSamples
	return c
}

// 8 rows in 4 groups (ids 10..13); group g's prompt is [g, 100+g] and row
// r's reasoning is [g, r, r], so it "belongs" to its own prompt.
func firstTurnBatch() Batch {
	var b Batch
	for r := range 8 {
		g := 10 + r/2
		b.GroupIDs = append(b.GroupIDs, g)
		b.FirstTurnPrompts = append(b.FirstTurnPrompts, []int{g, 100 + g})
		b.FirstTurnReasoning = append(b.FirstTurnReasoning, []int{g, r, r})
	}
	return b
}

func mustDetector(t *testing.T, c Config, rng Rand) *Detector {
	t.Helper()
	d, err := NewDetector(c, rng)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// Input-driven reasoning: every row scores −0.1/token under its own prompt
// and −5 under the 3 others, so MI = −0.1 − (lse(−0.1, −5, −5, −5) − ln 4)
// = 1.364200 (upper bound ln 4 = 1.386294) and retrieval is perfect
// against a chance level of 1/4.
func TestDetectorFirstTurnInputDriven(t *testing.T) {
	d := mustDetector(t, firstTurnCfg(), nil)
	res, err := d.Compute(context.Background(), firstTurnBatch(), inputDriven, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.FamilyErrors) != 0 {
		t.Fatal(res.FamilyErrors)
	}
	p := FamilyFirstTurn + "/"
	expectMetrics(t, res.Metrics, map[string]float64{
		p + NameMIEstimate:             1.364200488953922,
		p + NameMIUpperBound:           math.Log(4),
		p + NameRetrievalAccuracy:      1,
		p + NameRetrievalChance:        0.25,
		p + NameRetrievalAbove:         0.75,
		p + "retrieval_chance_level@2": 0.5,
		p + "retrieval_chance_level@4": 1,
		p + "retrieval_chance_level@8": 1,
		p + NameCondEntropy:            0.1,
		MetricFirstTurnNumTotal:        8,
		MetricFirstTurnNumValid:        8,
		MetricFirstTurnValidRate:       1,
	})
	if _, ok := res.Metrics[MetricTimingFirstTurn]; !ok {
		t.Error("missing first-turn timing")
	}
	if _, ok := res.Metrics[MetricTimingMultiTurn]; ok {
		t.Error("multi-turn timing without the multi-turn switch")
	}
	if e := d.EMAState(FamilyFirstTurn); !e.Set || !close(e.Std, res.Metrics[p+NameMarginalStd]) {
		t.Errorf("EMA %+v", e)
	}
}

// Template collapse: scores ignore the prompt, so every row's column values
// are equal, marginal = matched and MI = 0 exactly; argmax falls on column 0
// for every row, right for the 2 rows of group 10: accuracy 2/8 = chance.
func TestDetectorFirstTurnTemplateCollapse(t *testing.T) {
	d := mustDetector(t, firstTurnCfg(), nil)
	res, err := d.Compute(context.Background(), firstTurnBatch(), templated, 5)
	if err != nil {
		t.Fatal(err)
	}
	p := FamilyFirstTurn + "/"
	if mi := res.Metrics[p+NameMIEstimate]; math.Abs(mi) > 1e-12 {
		t.Errorf("MI %v, want 0", mi)
	}
	expectMetrics(t, res.Metrics, map[string]float64{
		p + NameRetrievalAccuracy: 0.25, p + NameRetrievalChance: 0.25, p + NameRetrievalAbove: 0,
	})
}

// num_samples 4 of 7 valid rows (row 1 has no reasoning): valid =
// [0,2,3,4,5,6,7]; permutation [6,5,4,3,2,1,0] picks valid[6..3] = rows
// 7, 6, 5, 4 → groups 13, 13, 12, 12 → two columns.
func TestDetectorFirstTurnSampling(t *testing.T) {
	c := firstTurnCfg()
	c.NumSamples = 4
	rng := &scripted{perms: [][]int{{6, 5, 4, 3, 2, 1, 0}}, t: t}
	d := mustDetector(t, c, rng)
	b := firstTurnBatch()
	b.FirstTurnReasoning[1] = nil
	rec := &recorder{inner: inputDriven}
	res, err := d.Compute(context.Background(), b, rec, 10)
	if err != nil {
		t.Fatal(err)
	}
	expectMetrics(t, res.Metrics, map[string]float64{
		MetricFirstTurnNumValid: 7, MetricFirstTurnValidRate: 7.0 / 8,
		FamilyFirstTurn + "/" + NameMIUpperBound: math.Ln2,
	})
	var rows [][]int
	for _, c := range rec.calls {
		for _, p := range c.pairs[:4] {
			rows = append(rows, p.Reasoning)
		}
	}
	want := [][]int{{13, 7, 7}, {13, 6, 6}, {12, 5, 5}, {12, 4, 4}}
	if !reflect.DeepEqual(rows[:4], want) {
		t.Fatalf("sampled %v", rows)
	}
}

func TestDetectorFirstTurnEdgeCases(t *testing.T) {
	// One group only → fewer than 2 columns → no family metrics, no error.
	b := firstTurnBatch()
	for r := range b.GroupIDs {
		b.GroupIDs[r] = 10
		b.FirstTurnPrompts[r] = []int{10, 110}
	}
	d := mustDetector(t, firstTurnCfg(), nil)
	res, err := d.Compute(context.Background(), b, inputDriven, 1)
	if err != nil || len(res.FamilyErrors) != 0 {
		t.Fatal(err, res.FamilyErrors)
	}
	for k := range res.Metrics {
		if strings.HasPrefix(k, FamilyFirstTurn) {
			t.Fatalf("unexpected %s", k)
		}
	}
	// Prompt mismatch inside a group: the family is dropped and reported.
	b = firstTurnBatch()
	b.FirstTurnPrompts[1] = []int{10, 999}
	res, err = d.Compute(context.Background(), b, inputDriven, 1)
	if err != nil {
		t.Fatal(err)
	}
	if e := res.FamilyErrors[FamilyFirstTurn]; e == nil || !strings.Contains(e.Error(), "prompt mismatch within group_id 10: sample 0 vs 1") {
		t.Fatalf("family error %v", e)
	}
	if _, ok := res.Metrics[FamilyFirstTurn+"/"+NameMIEstimate]; ok {
		t.Fatal("metrics of a failed family")
	}
	if res.Metrics[MetricFirstTurnNumTotal] != 8 {
		t.Fatal("counts must survive a failed family")
	}
	// A scorer failure is a family error too; cancellation is returned.
	res, err = d.Compute(context.Background(), firstTurnBatch(), ScorerFunc(func(context.Context, []Pair) ([]Score, error) {
		return nil, errors.New("out of memory")
	}), 1)
	if err != nil || res.FamilyErrors[FamilyFirstTurn] == nil {
		t.Fatalf("%v %v", err, res.FamilyErrors)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.Compute(ctx, firstTurnBatch(), inputDriven, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	// First-turn data missing and nothing else produced → error.
	b = firstTurnBatch()
	b.FirstTurnPrompts = nil
	if _, err := d.Compute(context.Background(), b, inputDriven, 1); err == nil {
		t.Fatal("want missing-data error")
	}
	// ... unless another metric exists (valid_thinking_rate here).
	b.TurnCounts = make([]int, 8)
	b.TurnCountsTotal = []int{1, 1, 1, 1, 1, 1, 1, 1}
	res, err = d.Compute(context.Background(), b, inputDriven, 1)
	if err != nil || res.Metrics[MetricValidThinkingRate] != 0 {
		t.Fatalf("%v %v", err, res.Metrics)
	}
	// Malformed batch.
	b = firstTurnBatch()
	b.FirstTurnReasoning = b.FirstTurnReasoning[:3]
	if _, err := d.Compute(context.Background(), b, inputDriven, 1); err == nil || !strings.Contains(err.Error(), "FirstTurnReasoning has 3 rows, GroupIDs has 8") {
		t.Fatalf("err %v", err)
	}
}

// Trajectory sampling with scripted draws: rows have 2, 0 and 1 valid
// turns; n = min(4, 3) = 3 draws: m=0 → t=1; m=1 (no turn, no draw); m=2 →
// t=0. Two pairs, each its own column: MI = ln 2 − ln(1 + e^−4.9).
func TestDetectorTrajectory(t *testing.T) {
	c := DefaultConfig()
	c.FirstTurnEnabled = false
	c.NumSamples = 4
	rng := &scripted{ints: []int{0, 1, 1, 2, 0}, t: t}
	d := mustDetector(t, c, rng)
	b := Batch{
		GroupIDs:          []int{0, 1, 2},
		AllTurnsPrompts:   [][][]int{{{1, 0}, {2, 0}}, {}, {{3, 0}}},
		AllTurnsReasoning: [][][]int{{{1, 5}, {2, 5}}, {}, {{3, 5, 5}}},
		TurnCounts:        []int{2, 0, 1},
		TurnCountsTotal:   []int{3, 1, 2},
	}
	rec := &recorder{inner: inputDriven}
	res, err := d.Compute(context.Background(), b, rec, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := FamilyTrajectory + "/"
	expectMetrics(t, res.Metrics, map[string]float64{
		p + NameMIEstimate:        math.Ln2 - math.Log1p(math.Exp(-4.9)),
		p + NameRetrievalAccuracy: 1,
		p + NameRetrievalChance:   0.5,
		MetricValidThinkingRate:   0.5, // 3 / 6
	})
	if _, ok := res.Metrics[MetricTimingMultiTurn]; !ok {
		t.Error("missing multi-turn timing")
	}
	if got := rec.calls[0].pairs; !reflect.DeepEqual(got[0], Pair{[]int{2, 0}, []int{2, 5}}) || !reflect.DeepEqual(got[1], Pair{[]int{2, 0}, []int{3, 5, 5}}) {
		t.Fatalf("pairs %v", got)
	}
	if len(rng.ints) != 0 {
		t.Fatalf("unused draws %v", rng.ints)
	}
}

func TestShouldCompute(t *testing.T) {
	d := mustDetector(t, DefaultConfig(), nil) // compute_freq 5
	for step, want := range map[int]bool{0: false, 1: true, 2: false, 4: false, 5: true, 10: true, 11: false} {
		if got := d.ShouldCompute(step); got != want {
			t.Errorf("ShouldCompute(%d) = %v", step, got)
		}
	}
	c := DefaultConfig()
	c.ThinkDisabled = true
	if mustDetector(t, c, nil).ShouldCompute(1) {
		t.Error("enable_think=false must switch both families off")
	}
	if mustDetector(t, CodeDefaultConfig(), nil).ShouldCompute(1) {
		t.Error("code defaults have both families off")
	}
}

func TestDetectorSkips(t *testing.T) {
	c := firstTurnCfg()
	c.ContextWindowMode = ModeSingleTurn
	d := mustDetector(t, c, nil)
	res, err := d.Compute(context.Background(), firstTurnBatch(), inputDriven, 1)
	if err != nil || len(res.Metrics) != 0 {
		t.Fatalf("%v %v", err, res.Metrics)
	}
	d = mustDetector(t, firstTurnCfg(), nil)
	if res, err := d.Compute(context.Background(), firstTurnBatch(), inputDriven, 2); err != nil || len(res.Metrics) != 0 {
		t.Fatalf("unscheduled step: %v %v", err, res.Metrics)
	}
	b := firstTurnBatch()
	b.GroupIDs = nil
	if res, err := d.Compute(context.Background(), b, inputDriven, 1); err != nil || len(res.Metrics) != 0 {
		t.Fatalf("no group ids: %v %v", err, res.Metrics)
	}
}

func TestNilScorerAndPartialConfig(t *testing.T) {
	d := mustDetector(t, Config{FirstTurnEnabled: true, NumSamples: AllSamples, StdEps: 1e-3, EMADecay: 0.9}, nil)
	if c := d.Config(); c.ComputeFreq != 10 || c.MicroBatchSize != 16 || c.ContextWindowMode != ModeFull {
		t.Fatalf("%+v", c)
	}
	if _, err := d.Compute(context.Background(), firstTurnBatch(), nil, 1); err == nil {
		t.Fatal("want error for a nil scorer")
	}
	res, err := d.Compute(context.Background(), firstTurnBatch(), inputDriven, 10)
	if err != nil || res.Metrics[FamilyFirstTurn+"/"+NameRetrievalAccuracy] != 1 {
		t.Fatalf("%v %v", err, res.Metrics)
	}
}

func TestSplitName(t *testing.T) {
	f, n, ok := SplitName("collapse_first_turn_sample/retrieval_accuracy@2")
	if !ok || f != FamilyFirstTurn || n != "retrieval_accuracy@2" {
		t.Fatal(f, n, ok)
	}
	if _, _, ok := SplitName("collapse/valid_thinking_rate"); ok {
		t.Fatal("not a family metric")
	}
}
