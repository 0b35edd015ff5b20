package algo

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestGAETable(t *testing.T) {
	// γ = 0.9, λ = 0.8 (γλ = 0.72).
	// Row 0: r = [0 0 1], V = [.5 .6 .7], m = [1 1 1]
	//   t=2: δ = 1 − .7 = .3;               g = .3
	//   t=1: δ = .9·.7 − .6 = .03;          g = .03 + .72·.3 = .246
	//   t=0: δ = .9·.6 − .5 = .04;          g = .04 + .72·.246 = .21712
	//   R = A + V = [.71712 .846 1.0]
	// Row 1: r = [0 0 2], V = [.1 0 .3], m = [1 0 1] (t=1 is an env token)
	//   t=2: δ = 2 − .3 = 1.7;              g = 1.7, nextV = .3
	//   t=1: m=0 → g and nextV carried;     A = 1.7
	//   t=0: δ = .9·.3 − .1 = .17;          g = .17 + .72·1.7 = 1.394
	//   R = [1.494 1.7 2.0]
	// A is whitened over the 5 masked tokens; the unmasked token is whitened too.
	r := mat(t, []float64{0, 0, 1}, []float64{0, 0, 2})
	v := mat(t, []float64{.5, .6, .7}, []float64{.1, 0, .3})
	m := mat(t, []float64{1, 1, 1}, []float64{1, 0, 1})
	adv, ret, err := GAE(r, v, m, 0.9, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	raw := []float64{.21712, .246, .3, 1.394, 1.7, 1.7}
	assertMat(t, "returns", ret, [][]float64{{.71712, .846, 1.0}, {1.494, 1.7, 2.0}}, 1e-12)
	assertMat(t, "advantages", adv, reshape(2, 3, whitenRef(raw, m.Data)), 1e-9)

	// Through the registry with γ = λ = 1: A_t = R − V_t on every masked token
	// before whitening. Row 0: [1−.5, 1−.6, 1−.7], R = 1. Row 1: t=2: 2−.3 =
	// 1.7; t=1 (m=0) carries 1.7, R1 = 1.7 + V1 = 1.7; t=0: .3−.1 + 1.7 = 1.9,
	// R0 = 2.
	f, err := Estimator(EstGAE)
	if err != nil {
		t.Fatal(err)
	}
	out, metrics, err := f(AdvantageInput{Rewards: r, Values: v, Mask: m}, DefaultAdvantageConfig())
	if err != nil {
		t.Fatal(err)
	}
	if metrics == nil {
		t.Error("metrics map is nil")
	}
	assertMat(t, "returns γ=λ=1", out.Returns, [][]float64{{1, 1, 1}, {2, 1.7, 2}}, 1e-12)
	raw1 := []float64{.5, .4, .3, 1.9, 1.7, 1.7}
	assertMat(t, "advantages γ=λ=1", out.Advantages, reshape(2, 3, whitenRef(raw1, m.Data)), 1e-9)
}

func TestGAEEdgeCases(t *testing.T) {
	r := mat(t, []float64{0, 1})
	v := mat(t, []float64{0, 0})
	// One masked token: Bessel factor n/(n−1) undefined → error.
	if _, _, err := GAE(r, v, mat(t, []float64{0, 1}), 1, 1); !errors.Is(err, ErrTooFewTokens) {
		t.Errorf("one token: err = %v", err)
	}
	// Everything masked.
	if _, _, err := GAE(r, v, mat(t, []float64{0, 0}), 1, 1); !errors.Is(err, ErrTooFewTokens) {
		t.Errorf("no tokens: err = %v", err)
	}
	// Non-binary mask.
	if _, _, err := GAE(r, v, mat(t, []float64{0.5, 1}), 1, 1); err == nil || !strings.Contains(err.Error(), "0 or 1") {
		t.Errorf("fractional mask: err = %v", err)
	}
	// Shape mismatch names both inputs.
	if _, _, err := GAE(r, mat(t, []float64{0, 0, 0}), mat(t, []float64{1, 1}), 1, 1); err == nil || !strings.Contains(err.Error(), "values") {
		t.Errorf("shape: err = %v", err)
	}
	// An all-masked row among others is fine: its A is 0 before whitening.
	adv, _, err := GAE(mat(t, []float64{0, 1}, []float64{0, 0}), NewMat(2, 2), mat(t, []float64{1, 1}, []float64{0, 0}), 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	// raw = [[1 1] [0 0]]: μ ≈ 1, σ² ≈ 0 → (x−μ)/sqrt(σ²+1e-8): ≈0 and ≈−1e4.
	w := whitenRef([]float64{1, 1, 0, 0}, []float64{1, 1, 0, 0})
	assertClose(t, "all-masked row value", w[2], -1e4, 1e-6)
	assertMat(t, "all-masked row", adv, reshape(2, 2, w), 1e-9)
}

func TestBiLevelGAE(t *testing.T) {
	// Upstream's own example: r = [0 0 0 0 1 0 0 0 0 1], V = [.1 … 1.0], m = 1,
	// γ = λ = 1, γ_h = .95. Turn ends E = {4, 9}.
	// High level (backward over E):
	//   e=9: δ = 1 + 0 − 1.0 = 0                  a9 = 0,    R9 = 1.0
	//   e=4: δ = 1 + .95·V9 − .5 = 1.45           a4 = 1.45, R4 = 1.95
	//   rewards at E become R_e: r'4 = 1.95, r'9 = 1.0
	// Low level (γ = λ = 1), reset at every e:
	//   t=9: δ = 1.0 − 1.0 = 0                    A = 0
	//   t=8…5: δ = V_{t+1} − V_t = .1 each        A = .1 .2 .3 .4
	//   t=4: δ = 1.95 − .5 = 1.45                 A = 1.45
	//   t=3…0: δ = .1 each                        A = 1.55 1.65 1.75 1.85
	// R = A + V = 1.95 on the first turn, 1.0 on the second.
	r := mat(t, []float64{0, 0, 0, 0, 1, 0, 0, 0, 0, 1})
	v := mat(t, []float64{.1, .2, .3, .4, .5, .6, .7, .8, .9, 1.0})
	m := ones(1, 10)
	cfg := DefaultAdvantageConfig()
	cfg.BiLevelGAE = true
	f, _ := Estimator(EstGAE)
	out, _, err := f(AdvantageInput{Rewards: r, Values: v, Mask: m}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	raw := []float64{1.85, 1.75, 1.65, 1.55, 1.45, .4, .3, .2, .1, 0}
	assertMat(t, "returns", out.Returns, [][]float64{{1.95, 1.95, 1.95, 1.95, 1.95, 1, 1, 1, 1, 1}}, 1e-12)
	assertMat(t, "advantages", out.Advantages, [][]float64{whitenRef(raw, m.Data)}, 1e-9)

	// A masked position after the last turn end (upstream: IndexError).
	// r = [0 1 0], V = [.2 .4 .6], m = 1, γ = λ = γ_h = 1:
	//   high: e=1: δ = 1 − .4 = .6, R1 = 1.0
	//   low:  t=2: no next masked position → nextV = 0: δ = −.6, A = −.6, R = 0
	//         t=1: reset, δ = 1.0 − .4 = .6, A = .6, R = 1.0
	//         t=0: δ = .4 − .2 = .2, A = .8, R = 1.0
	adv, ret, err := BiLevelGAE(mat(t, []float64{0, 1, 0}), mat(t, []float64{.2, .4, .6}), ones(1, 3), 1, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	assertMat(t, "trailing returns", ret, [][]float64{{1, 1, 0}}, 1e-12)
	assertMat(t, "trailing advantages", adv, [][]float64{whitenRef([]float64{.8, .6, -.6}, []float64{1, 1, 1})}, 1e-9)

	// An unmasked turn end keeps its high-level a_e and R_e; other unmasked
	// positions stay 0. r = [0 2 0 0], V = [.5 1 0 0], m = [1 0 1 1], γ_h = .5:
	//   high: e=1: δ = 2 − 1 = 1, a1 = 1, R1 = 2
	//   low: t=3: last masked, nextV = 0: δ = 0, A3 = 0, R3 = 0
	//        t=2: nextV = V3 = 0: δ = 0, g = 0, A2 = 0
	//        t=0: nextV = V2 = 0: δ = −.5, A0 = −.5, R0 = 0
	adv, ret, err = BiLevelGAE(mat(t, []float64{0, 2, 0, 0}), mat(t, []float64{.5, 1, 0, 0}), mat(t, []float64{1, 0, 1, 1}), 1, 1, .5)
	if err != nil {
		t.Fatal(err)
	}
	assertMat(t, "unmasked end returns", ret, [][]float64{{0, 2, 0, 0}}, 1e-12)
	assertMat(t, "unmasked end advantages", adv, [][]float64{whitenRef([]float64{-.5, 1, 0, 0}, []float64{1, 0, 1, 1})}, 1e-9)
}

func TestGRPOTable(t *testing.T) {
	// uids [0 0 0 1]; scores s = Σ_t r = [1 0 3 5].
	// Group 0: μ = 4/3, σ = sqrt(((−1/3)² + (−4/3)² + (5/3)²)/2) = sqrt(7/3).
	// Group 1 is a singleton: μ = 0, σ = 1 → A = 5/(1+1e-6).
	// Row 1's mask is [1 0], so its second token gets 0.
	r := mat(t, []float64{0, 1}, []float64{0, 0}, []float64{1, 2}, []float64{5, 0})
	m := mat(t, []float64{1, 1}, []float64{1, 0}, []float64{1, 1}, []float64{1, 1})
	uids := []int{0, 0, 0, 1}
	sd := math.Sqrt(7.0 / 3)
	a := func(s float64) float64 { return (s - 4.0/3) / (sd + 1e-6) }
	f, _ := Estimator(EstGRPO)
	out, _, err := f(AdvantageInput{Rewards: r, Mask: m, UIDs: uids}, DefaultAdvantageConfig())
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{{a(1), a(1)}, {a(0), 0}, {a(3), a(3)}, {5 / (1 + 1e-6), 5 / (1 + 1e-6)}}
	assertMat(t, "advantages", out.Advantages, want, 1e-12)
	assertMat(t, "returns", out.Returns, want, 1e-12)
	for i, w := range []float64{sd, sd, sd, 1} {
		assertClose(t, "group std", out.GroupStd[i], w, 1e-12)
	}
	// Dr. GRPO: s − μ only.
	cfg := DefaultAdvantageConfig()
	cfg.NormAdvByStdInGRPO = false
	out, _, _ = f(AdvantageInput{Rewards: r, Mask: m, UIDs: uids}, cfg)
	assertMat(t, "Dr. GRPO", out.Advantages, [][]float64{{-1.0 / 3, -1.0 / 3}, {-4.0 / 3, 0}, {5.0 / 3, 5.0 / 3}, {5, 5}}, 1e-12)
}

func TestGRPOEpisodeDedupAndEdgeCases(t *testing.T) {
	// One uid, episodes [0 0 1 2], scores [1 9 3 5]: row 1 repeats (uid 0,
	// episode 0) and is left out of the statistics: μ = 3, σ = 2 over {1,3,5};
	// every row is still normalised with its own score: (9−3)/2 = 3.
	r := mat(t, []float64{1}, []float64{9}, []float64{3}, []float64{5})
	m := ones(4, 1)
	adv, std, err := GRPO(r, m, []int{0, 0, 0, 0}, []int{0, 0, 1, 2}, true, 1e-6)
	if err != nil {
		t.Fatal(err)
	}
	e := 2 + 1e-6
	assertMat(t, "dedup", adv, [][]float64{{-2 / e}, {6 / e}, {0}, {2 / e}}, 1e-12)
	assertClose(t, "dedup std", std[1], 2, 1e-12)

	// Without episode ids all four count: μ = 4.5, σ = sqrt((12.25+20.25+2.25+0.25)/3).
	adv, _, _ = GRPO(r, m, []int{0, 0, 0, 0}, nil, true, 1e-6)
	sd := math.Sqrt(35.0 / 3)
	assertClose(t, "no dedup", adv.At(1, 0), 4.5/(sd+1e-6), 1e-12)

	// Every row of a uid in one episode → a single counted member: μ = 0, σ = 1
	// (upstream's special case; torch.std of one value would be NaN).
	adv, std, _ = GRPO(mat(t, []float64{2}, []float64{4}), ones(2, 1), []int{7, 7}, []int{3, 3}, true, 1e-6)
	assertMat(t, "single episode", adv, [][]float64{{2 / (1 + 1e-6)}, {4 / (1 + 1e-6)}}, 1e-12)
	assertClose(t, "single episode std", std[0], 1, 0)

	// Zero std: identical scores → 0/(0+ε) = 0.
	adv, std, _ = GRPO(mat(t, []float64{2, 0}, []float64{1, 1}), ones(2, 2), []int{1, 1}, nil, true, 1e-6)
	assertMat(t, "zero std", adv, [][]float64{{0, 0}, {0, 0}}, 0)
	assertClose(t, "zero std value", std[0], 0, 0)

	// Missing or short metadata.
	if _, _, err := GRPO(r, m, nil, nil, true, 1e-6); err == nil || !strings.Contains(err.Error(), "UIDs") {
		t.Errorf("nil uids: err = %v", err)
	}
	if _, _, err := GRPO(r, m, []int{0, 0}, nil, true, 1e-6); err == nil || !strings.Contains(err.Error(), "UIDs") {
		t.Errorf("short uids: err = %v", err)
	}
	if _, _, err := GRPO(r, m, []int{0, 0, 0, 0}, []int{1}, true, 1e-6); err == nil || !strings.Contains(err.Error(), "EpisodeIDs") {
		t.Errorf("short episode ids: err = %v", err)
	}
}

func TestRLOO(t *testing.T) {
	// Group 0 scores [1 0 3], n = 3, μ = 4/3: A = s·3/2 − μ·3/2 = [−.5 −2 2.5].
	// Group 1 is a singleton: A = s = 5. Row 1 mask [1 0].
	r := mat(t, []float64{0, 1}, []float64{0, 0}, []float64{1, 2}, []float64{5, 0})
	m := mat(t, []float64{1, 1}, []float64{1, 0}, []float64{1, 1}, []float64{1, 1})
	f, _ := Estimator(EstRLOO)
	out, _, err := f(AdvantageInput{Rewards: r, Mask: m, UIDs: []int{0, 0, 0, 1}}, DefaultAdvantageConfig())
	if err != nil {
		t.Fatal(err)
	}
	assertMat(t, "rloo", out.Advantages, [][]float64{{-.5, -.5}, {-2, 0}, {2.5, 2.5}, {5, 5}}, 1e-12)
	if _, _, err := f(AdvantageInput{Rewards: r, Mask: m}, DefaultAdvantageConfig()); err == nil {
		t.Error("rloo without uids: want error")
	}
}

func TestReinforcePlusPlusBaseline(t *testing.T) {
	// uids [0 0]: scores [1 3], μ = 2 → [−1 1], broadcast over m = 1:
	// [[−1 −1] [1 1]]; whiten: μ = 0, σ² = (4/(4+1e-8))·4/3 → ≈ ±1/sqrt(4/3).
	r := mat(t, []float64{0, 1}, []float64{0, 3})
	f, _ := Estimator(EstReinforcePlusPlusBaseline)
	out, _, err := f(AdvantageInput{Rewards: r, Mask: ones(2, 2), UIDs: []int{0, 0}}, DefaultAdvantageConfig())
	if err != nil {
		t.Fatal(err)
	}
	a := 1 / math.Sqrt(4.0/(4+1e-8)*4/3+1e-8)
	assertClose(t, "≈ sqrt(3/4)", a, math.Sqrt(0.75), 1e-8)
	assertMat(t, "rpp baseline", out.Advantages, [][]float64{{-a, -a}, {a, a}}, 1e-12)
	// Singletons use μ = 0; the unmasked token ends at 0 (·m after whitening).
	// scores [1 3] → x = [[1 0] [3 3]] over m = [[1 0] [1 1]]: masked {1,3,3}.
	m := mat(t, []float64{1, 0}, []float64{1, 1})
	out, _, _ = f(AdvantageInput{Rewards: r, Mask: m, UIDs: []int{0, 1}}, DefaultAdvantageConfig())
	w := whitenRef([]float64{1, 0, 3, 3}, m.Data)
	assertMat(t, "rpp baseline singletons", out.Advantages, [][]float64{{w[0], 0}, {w[2], w[3]}}, 1e-9)
}

func TestReinforcePlusPlus(t *testing.T) {
	// γ = .5. Row 0: r = [1 0 2], m = [1 0 1]
	//   t=2: G = 2, R2 = 2;  G·m = 2
	//   t=1: G = 0 + .5·2 = 1, R1 = 1; G·m = 0 (reset after an env token)
	//   t=0: G = 1 + 0 = 1, R0 = 1
	// Row 1: r = [0 0 4], m = 1: R = [1 2 4].
	// A = whiten(R over m)·m.
	r := mat(t, []float64{1, 0, 2}, []float64{0, 0, 4})
	m := mat(t, []float64{1, 0, 1}, []float64{1, 1, 1})
	cfg := DefaultAdvantageConfig()
	cfg.Gamma = 0.5
	f, _ := Estimator(EstReinforcePlusPlus)
	out, _, err := f(AdvantageInput{Rewards: r, Mask: m}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	R := []float64{1, 1, 2, 1, 2, 4}
	assertMat(t, "returns", out.Returns, reshape(2, 3, R), 1e-12)
	w := whitenRef(R, m.Data)
	w[1] = 0
	assertMat(t, "advantages", out.Advantages, reshape(2, 3, w), 1e-9)
}

func TestReMax(t *testing.T) {
	// r = [0 1 2], m = [1 0 1], b = .5: R = reverse cumsum of r·m = [2 2 2];
	// A = R − b·m = [1.5 2 1.5].
	f, _ := Estimator(EstReMax)
	out, _, err := f(AdvantageInput{Rewards: mat(t, []float64{0, 1, 2}), Mask: mat(t, []float64{1, 0, 1}), RewardBaselines: []float64{.5}}, DefaultAdvantageConfig())
	if err != nil {
		t.Fatal(err)
	}
	assertMat(t, "returns", out.Returns, [][]float64{{2, 2, 2}}, 1e-12)
	assertMat(t, "advantages", out.Advantages, [][]float64{{1.5, 2, 1.5}}, 1e-12)
	if _, _, err := f(AdvantageInput{Rewards: mat(t, []float64{0}), Mask: mat(t, []float64{1})}, DefaultAdvantageConfig()); err == nil || !strings.Contains(err.Error(), "RewardBaselines") {
		t.Errorf("remax without baselines: err = %v", err)
	}
}

func TestEstimatorRegistry(t *testing.T) {
	want := []string{"gae", "grpo", "reinforce_plus_plus", "reinforce_plus_plus_baseline", "remax", "rloo"}
	got := EstimatorNames()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("EstimatorNames = %v, want %v", got, want)
	}
	for _, name := range want {
		if f, err := Estimator(name); err != nil || f == nil {
			t.Errorf("Estimator(%q): %v", name, err)
		}
	}
	for _, name := range []string{"opo", "grpo_passk", "gpg", "grpo_vectorized", "GAE", ""} {
		_, err := Estimator(name)
		if !errors.Is(err, ErrUnknownEstimator) {
			t.Errorf("Estimator(%q): err = %v, want ErrUnknownEstimator", name, err)
			continue
		}
		for _, n := range want {
			if !strings.Contains(err.Error(), n) {
				t.Errorf("error %q does not list %q", err, n)
			}
		}
	}
	cfg := DefaultAdvantageConfig()
	cfg.Gamma = math.NaN()
	f, _ := Estimator(EstGAE)
	if _, _, err := f(AdvantageInput{Rewards: ones(1, 2), Values: ones(1, 2), Mask: ones(1, 2)}, cfg); err == nil || !strings.Contains(err.Error(), "gamma") {
		t.Errorf("NaN gamma: err = %v", err)
	}
}
