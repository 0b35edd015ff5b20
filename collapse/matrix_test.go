package collapse

import (
	"context"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

func close(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func expectMetrics(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Errorf("missing %s", k)
		} else if !close(g, w) {
			t.Errorf("%s = %.12g, want %.12g", k, g, w)
		}
	}
}

// A 2×2 matrix worked by hand:
//
//	L = [[-1, -3], [-2, -2]], S = [[-4, -12], [-6, -6]], c = (0, 1).
//	matched = (-1, -2); marginal_0 = -1 + ln(1+e^-2) − ln 2 = -1.566219,
//	marginal_1 = -2 + ln 2 − ln 2 = -2. mean(marginal) = -1.783110.
//	MI = -1.5 + 1.783110 = 0.283110; std(marginal, ÷n) = 0.216890;
//	z = mean((0.566219, 0)) / (0.216890 + 0.001) = 1.299321.
//	S: marginal_S0 = -4 + ln(1+e^-8) − ln 2 = -4.692812, marginal_S1 = -6;
//	MI_seq = mean(0.692812, 0) = 0.346406; std_seq = 0.653594.
//	Retrieval: row 0 → col 0 (right), row 1 ties → first max col 0 (wrong):
//	accuracy 0.5, chance mean(1/2, 1/2) = 0.5; top-2 always right (k_eff = 2),
//	chance@2 = min(1, 0.5·2) = 1.
func TestMatrixMetricsHand(t *testing.T) {
	m := Matrix{
		L:   [][]float64{{-1, -3}, {-2, -2}},
		S:   [][]float64{{-4, -12}, {-6, -6}},
		Col: []int{0, 1},
	}
	got, ema, err := MatrixMetrics(m, 1e-3, 0.9, EMA{})
	if err != nil {
		t.Fatal(err)
	}
	expectMetrics(t, got, map[string]float64{
		NameMIEstimate:             0.28310958475848635,
		NameMIUpperBound:           math.Ln2,
		NameMatchedLogProbMean:     -1.5,
		NameMarginalLogProbMean:    -1.7831095847584864,
		NameMISeqEstimate:          0.3464058870935247,
		NameCondEntropy:            1.5,
		NameReasoningEntropy:       1.7831095847584864,
		NameCondEntropySeq:         5,
		NameReasoningEntropySeq:    5.346405887093525,
		NameMarginalStd:            0.21689041524151365,
		NameMarginalStdSeq:         0.6535941129064753,
		NameMIZScore:               1.2993209657463942,
		NameMIZScoreSeq:            0.5291918767118782,
		NameMarginalStdEMA:         0.21689041524151365, // first value = current
		NameMarginalStdEMASeq:      0.6535941129064753,
		NameMIZScoreEMA:            1.2993209657463942,
		NameMIZScoreEMASeq:         0.5291918767118782,
		NameRetrievalAccuracy:      0.5,
		NameRetrievalChance:        0.5,
		NameRetrievalAbove:         0,
		"retrieval_accuracy@2":     1,
		"retrieval_chance_level@2": 1,
		"retrieval_above_chance@2": 0,
		"retrieval_accuracy@8":     1,
		"retrieval_chance_level@8": 1,
	})
	if len(got) != 29 {
		t.Errorf("got %d metrics, want 29: %v", len(got), got)
	}
	// Second step: L = [[-1, -5], [-3, -1]] → marginal std 0.054389;
	// EMA = 0.9·0.216890 + 0.1·0.054389 = 0.200640; MI = 0.620608;
	// z_ema = 0.620608 / (0.200640 + 0.001) = 3.077799.
	m2 := Matrix{L: [][]float64{{-1, -5}, {-3, -1}}, S: m.S, Col: []int{0, 1}}
	got, ema2, err := MatrixMetrics(m2, 1e-3, 0.9, ema)
	if err != nil {
		t.Fatal(err)
	}
	expectMetrics(t, got, map[string]float64{
		NameMarginalStd:    0.0543890415625814,
		NameMarginalStdEMA: 0.20064027787362043,
		NameMIZScoreEMA:    3.0777988288060434,
		NameMIEstimate:     0.6206082110795541,
	})
	if !close(ema2.StdSeq, ema.StdSeq) { // same S both steps
		t.Errorf("seq EMA %v, want %v", ema2.StdSeq, ema.StdSeq)
	}
}

// Columns 0 and 2 share a prompt (signature 0): a row of column 2 whose
// argmax is column 0 counts as retrieved. chance = mean(2/3, 1/3, 2/3) = 5/9;
// all three rows are right at top-1.
func TestMatrixMetricsSignatures(t *testing.T) {
	prompts := [][]int{{1, 2}, {3}, {1, 2}}
	sig := Signatures(prompts)
	if !reflect.DeepEqual(sig, []int{0, 1, 0}) {
		t.Fatalf("signatures %v", sig)
	}
	m := Matrix{
		L:   [][]float64{{-1, -2, -3}, {-3, -1, -2}, {-1, -3, -2}},
		S:   [][]float64{{-1, -2, -3}, {-3, -1, -2}, {-1, -3, -2}},
		Col: []int{0, 1, 2},
		Sig: sig,
	}
	got, _, err := MatrixMetrics(m, 1e-3, 0.9, EMA{})
	if err != nil {
		t.Fatal(err)
	}
	expectMetrics(t, got, map[string]float64{
		NameRetrievalAccuracy: 1, NameRetrievalChance: 5.0 / 9, NameRetrievalAbove: 4.0 / 9,
		// k_eff = min(2, 3) = 2; chance@2 = min(1, 10/9) = 1.
		"retrieval_chance_level@2": 1, "retrieval_accuracy@2": 1,
		// k_eff = min(4, 8, 3) = 3.
		"retrieval_chance_level@4": 1,
		NameMIUpperBound:           math.Log(3),
	})
	// Without signatures row 2 (true column 2) retrieves column 0: wrong.
	m.Sig = nil
	got, _, _ = MatrixMetrics(m, 1e-3, 0.9, EMA{})
	expectMetrics(t, got, map[string]float64{NameRetrievalAccuracy: 2.0 / 3, NameRetrievalChance: 1.0 / 3})
}

// top-k ranking: value descending, ties to the lower index, NaN first.
func TestTopK(t *testing.T) {
	row := []float64{1, 3, 3, math.NaN(), 2, 3}
	if got := topK(row, 4, nil); !reflect.DeepEqual(got, []int{3, 1, 2, 5}) {
		t.Fatalf("topK = %v", got)
	}
	if got := topK([]float64{0, 0, 0}, 8, nil); !reflect.DeepEqual(got, []int{0, 1, 2}) {
		t.Fatalf("topK ties = %v", got)
	}
}

func TestMatrixMetricsErrors(t *testing.T) {
	bad := []Matrix{
		{},
		{L: [][]float64{{}}, S: [][]float64{{}}, Col: []int{0}},
		{L: [][]float64{{1, 2}}, S: [][]float64{{1}}, Col: []int{0}},
		{L: [][]float64{{1, 2}}, S: [][]float64{{1, 2}}, Col: []int{2}},
		{L: [][]float64{{1, 2}}, S: [][]float64{{1, 2}}, Col: []int{0}, Sig: []int{0}},
		{L: [][]float64{{1, 2}}, S: [][]float64{{1, 2}}},
	}
	for i, m := range bad {
		if _, _, err := MatrixMetrics(m, 1e-3, 0.9, EMA{}); err == nil {
			t.Errorf("case %d: want error", i)
		}
	}
}

type call struct{ pairs []Pair }

type recorder struct {
	calls []call
	inner Scorer
}

func (r *recorder) ScoreReasoning(ctx context.Context, pairs []Pair) ([]Score, error) {
	r.calls = append(r.calls, call{append([]Pair(nil), pairs...)})
	return r.inner.ScoreReasoning(ctx, pairs)
}

// inputDriven scores a token −0.1 when the reasoning's first token equals
// the prompt's first token (the reasoning "belongs" to that prompt) and −5
// otherwise: reasoning that depends on its input.
var inputDriven = ScorerFunc(func(_ context.Context, pairs []Pair) ([]Score, error) {
	out := make([]Score, len(pairs))
	for k, p := range pairs {
		per := -5.0
		if p.Reasoning[0] == p.Prompt[0] {
			per = -0.1
		}
		out[k] = Score{SumLogProb: per * float64(len(p.Reasoning)), Tokens: len(p.Reasoning)}
	}
	return out, nil
})

// templated ignores the prompt: a collapsed policy.
var templated = ScorerFunc(func(_ context.Context, pairs []Pair) ([]Score, error) {
	out := make([]Score, len(pairs))
	for k, p := range pairs {
		out[k] = Score{SumLogProb: -0.5*float64(len(p.Reasoning)) - 0.01*float64(p.Reasoning[len(p.Reasoning)-1]), Tokens: len(p.Reasoning)}
	}
	return out, nil
})

// 3 reasonings × 2 prompts = 6 pairs, sent column by column in chunks of 4,
// each padded to a multiple of world size 3 with its last pair.
func TestCrossScoresBatching(t *testing.T) {
	rec := &recorder{inner: inputDriven}
	prompts := [][]int{{1}, {2}}
	reasoning := [][]int{{1, 9}, {2}, {1}}
	L, S, err := CrossScores(context.Background(), rec, prompts, reasoning, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.calls) != 2 || len(rec.calls[0].pairs) != 6 || len(rec.calls[1].pairs) != 3 {
		t.Fatalf("calls %+v", rec.calls)
	}
	c0 := rec.calls[0].pairs
	wantC0 := []Pair{{prompts[0], reasoning[0]}, {prompts[0], reasoning[1]}, {prompts[0], reasoning[2]},
		{prompts[1], reasoning[0]}, {prompts[1], reasoning[0]}, {prompts[1], reasoning[0]}}
	if !reflect.DeepEqual(c0, wantC0) {
		t.Fatalf("first call %v", c0)
	}
	if p := rec.calls[1].pairs[2]; !reflect.DeepEqual(p, Pair{prompts[1], reasoning[2]}) {
		t.Fatalf("pad %v", p)
	}
	// Row 0 = [1, 9]: under prompt 1 → 2·(−0.1), under prompt 2 → 2·(−5).
	wantS := [][]float64{{-0.2, -10}, {-5, -0.1}, {-0.1, -5}}
	wantL := [][]float64{{-0.1, -5}, {-5, -0.1}, {-0.1, -5}}
	for i := range wantS {
		for j := range wantS[i] {
			if !close(S[i][j], wantS[i][j]) || !close(L[i][j], wantL[i][j]) {
				t.Fatalf("S %v L %v", S, L)
			}
		}
	}
}

func TestCrossScoresEmptyReasoningAndErrors(t *testing.T) {
	rec := &recorder{inner: inputDriven}
	L, S, err := CrossScores(context.Background(), rec, [][]int{{1}, {2}}, [][]int{{}, {2}}, 16, 1)
	if err != nil {
		t.Fatal(err)
	}
	if L[0][0] != 0 || S[0][1] != 0 || len(rec.calls) != 1 || len(rec.calls[0].pairs) != 2 {
		t.Fatalf("L %v S %v calls %v", L, S, rec.calls)
	}
	bad := map[string]Scorer{
		"returned 1 scores for 2 pairs": ScorerFunc(func(context.Context, []Pair) ([]Score, error) { return []Score{{}}, nil }),
		"log-prob NaN": ScorerFunc(func(_ context.Context, p []Pair) ([]Score, error) {
			return []Score{{SumLogProb: math.NaN(), Tokens: 1}, {}}, nil
		}),
		"counted 5 tokens": ScorerFunc(func(_ context.Context, p []Pair) ([]Score, error) {
			return []Score{{Tokens: 5}, {}}, nil
		}),
		"model failed": ScorerFunc(func(context.Context, []Pair) ([]Score, error) { return nil, errors.New("model failed") }),
	}
	for want, s := range bad {
		_, _, err := CrossScores(context.Background(), s, [][]int{{1}, {2}}, [][]int{{1}}, 16, 1)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q, got %v", want, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := CrossScores(ctx, inputDriven, [][]int{{1}}, [][]int{{1}}, 16, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if _, _, err := CrossScores(context.Background(), inputDriven, nil, nil, 0, 1); err == nil {
		t.Fatal("want micro batch error")
	}
}
