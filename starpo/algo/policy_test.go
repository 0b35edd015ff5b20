package algo

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestPolicyLossTable(t *testing.T) {
	// ε_low = .2, ε_high = .28 (ρ clipped to [.8, 1.28]), c = 3, token-mean.
	//  tok  A    ρ     L1     L2      Lc     final               clip  lower  ∂L/∂lp
	//  a    1    1     −1     −1      −1     −1                  no    no     −Aρ = −1
	//  b    1    1.5   −1.5   −1.28   −1.28  −1.28               yes   no     0 (ρ clamped)
	//  c   −1    .5    .5     .8      .8     min(3, .8) = .8     yes   no     0 (ρ clamped)
	//  d   −1    4     4      1.28    4      min(3, 4) = 3       no    yes    0 (−A·c constant)
	//  e   −2    1.1   2.2    2.2     2.2    min(6, 2.2) = 2.2   no    no     −Aρ = 2.2
	//  f   .5    .5    −.25   −.4     −.25   masked out
	// pg_loss = (−1 − 1.28 + .8 + 3 + 2.2)/5 = .744; clipfrac 2/5; lower 1/5;
	// ppo_kl = mean(old − lp) = −(0 + ln1.5 + ln.5 + ln4 + ln1.1)/5.
	// Gradients are scaled by ∂token-mean/∂L = 1/5.
	old := mat(t, []float64{-1, -1, -1}, []float64{-1, -1, -1})
	lp := mat(t, []float64{-1, -1 + math.Log(1.5), -1 + math.Log(.5)}, []float64{-1 + math.Log(4), -1 + math.Log(1.1), -1 + math.Log(.5)})
	adv := mat(t, []float64{1, 1, -1}, []float64{-1, -2, .5})
	m := mat(t, []float64{1, 1, 1}, []float64{1, 1, 0})
	loss, g, metrics, err := PolicyLoss(lp, old, adv, m, DefaultPolicyLossConfig())
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "pg_loss", loss, .744, 1e-7)
	assertClose(t, MetricPGLoss, metrics[MetricPGLoss], loss, 0)
	assertClose(t, MetricPGClipFrac, metrics[MetricPGClipFrac], .4, 1e-7)
	assertClose(t, MetricPGClipFracLower, metrics[MetricPGClipFracLower], .2, 1e-7)
	kl := -(math.Log(1.5) + math.Log(.5) + math.Log(4) + math.Log(1.1)) / 5
	assertClose(t, MetricPPOKL, metrics[MetricPPOKL], kl, 1e-7)
	assertMat(t, "grad", g, [][]float64{{-1.0 / 5, 0, 0}, {0, 2.2 / 5, 0}}, 1e-7)

	// seq-mean-token-sum over the same tokens: rows (−1 −1.28 + .8) = −1.48 and
	// (3 + 2.2) = 5.2 → mean 1.86; grads scale by 1/2.
	cfg := DefaultPolicyLossConfig()
	cfg.LossAggMode = SeqMeanTokenSum
	loss, g, _, _ = PolicyLoss(lp, old, adv, m, cfg)
	assertClose(t, "seq-mean-token-sum", loss, 1.86, 1e-7)
	assertMat(t, "seq grad", g, [][]float64{{-.5, 0, 0}, {0, 1.1, 0}}, 1e-7)
}

func TestPolicyLossClipFallbackAndLogRatioClamp(t *testing.T) {
	// Null clip_ratio_low/high fall back to clip_ratio = .1: ρ = 1.2 with A = 1
	// clips at 1.1 → L = −1.1 and clipfrac 1.
	cfg := DefaultPolicyLossConfig()
	cfg.ClipRatio, cfg.ClipRatioLow, cfg.ClipRatioHigh = .1, nil, nil
	loss, _, metrics, err := PolicyLoss(mat(t, []float64{math.Log(1.2)}), mat(t, []float64{0}), mat(t, []float64{1}), ones(1, 1), cfg)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "fallback loss", loss, -1.1, 1e-7)
	assertClose(t, "fallback clipfrac", metrics[MetricPGClipFrac], 1, 1e-7)

	// lp − old = −30 is clamped to −20: ρ = e^−20, ppo_kl = 20, gradient 0
	// (outside the clamp) even though A > 0 would otherwise give one... the
	// ratio is also below 1−ε_low so the loss is the clipped −A·.8.
	cfg = DefaultPolicyLossConfig()
	loss, g, metrics, _ := PolicyLoss(mat(t, []float64{-30}), mat(t, []float64{0}), mat(t, []float64{-1}), ones(1, 1), cfg)
	// A = −1: L1 = e^−20, L2 = .8 → Lc = .8, min(3, .8) = .8.
	assertClose(t, "clamped loss", loss, .8, 1e-7)
	assertClose(t, "clamped ppo_kl", metrics[MetricPPOKL], 20, 1e-7)
	assertClose(t, "clamped grad", g.Data[0], 0, 0)
}

func TestPolicyLossConfigErrors(t *testing.T) {
	cfg := DefaultPolicyLossConfig()
	cfg.ClipRatioC = 1
	cfg.LossAggMode = "token-sum"
	cfg.ClipRatioHigh = Float(math.Inf(1))
	_, _, _, err := PolicyLoss(ones(1, 1), ones(1, 1), ones(1, 1), ones(1, 1), cfg)
	if err == nil {
		t.Fatal("want error")
	}
	for _, s := range []string{"clip_ratio_c", "token-sum", "clip_ratio_high"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %s", err, s)
		}
	}
	if _, _, _, err := PolicyLoss(ones(1, 2), ones(1, 1), ones(1, 1), ones(1, 1), DefaultPolicyLossConfig()); err == nil {
		t.Error("shape mismatch: want error")
	}
}

// randMats returns reproducible random inputs for gradient checks.
func randMats(seed uint64, b, tt int) (lp, old, adv, ref, ent, mask Mat) {
	r := rand.New(rand.NewPCG(seed, 7))
	lp, old, adv, ref, ent, mask = NewMat(b, tt), NewMat(b, tt), NewMat(b, tt), NewMat(b, tt), NewMat(b, tt), NewMat(b, tt)
	for k := range lp.Data {
		old.Data[k] = -3 * r.Float64()
		lp.Data[k] = old.Data[k] + (r.Float64()-0.5)*0.9
		ref.Data[k] = old.Data[k] + (r.Float64()-0.5)*2
		adv.Data[k] = r.NormFloat64() * 2
		ent.Data[k] = 3 * r.Float64()
		if r.Float64() < 0.75 {
			mask.Data[k] = 1
		}
	}
	return
}

func TestActorLossGradFiniteDifferences(t *testing.T) {
	lp, old, adv, ref, ent, mask := randMats(1, 4, 6)
	for _, mode := range LossAggModes() {
		for _, klType := range []string{"kl", "abs", "mse", "low_var_kl", "k3+"} {
			cfg := DefaultActorLossConfig()
			cfg.Policy.LossAggMode = mode
			cfg.Policy.ClipRatioC = 1.5 // exercise the dual clip often
			cfg.EntropyCoeff = 0.01
			cfg.UseKLLoss = true
			cfg.KLLossType = klType
			cfg.KLLossCoef = 0.3
			in := ActorLossInput{LogProb: lp, OldLogProb: old, Advantages: adv, Mask: mask, Entropy: ent, RefLogProb: ref}
			out, metrics, err := ActorLoss(in, cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{MetricPGLoss, MetricPGClipFrac, MetricPPOKL, MetricPGClipFracLower, MetricEntropyLoss, MetricKLLoss, MetricKLCoef} {
				if _, ok := metrics[k]; !ok {
					t.Errorf("metric %s missing", k)
				}
			}
			if strings.HasSuffix(klType, "+") {
				continue // straight-through: the gradient is not that of the value
			}
			numLP := numGrad(lp, func(x Mat) float64 {
				in := in
				in.LogProb = x
				o, _, _ := ActorLoss(in, cfg)
				return o.Loss
			})
			assertMat(t, mode+"/"+klType+" ∂/∂lp", out.GradLogProb, numLP.Rows(), 1e-5)
			numH := numGrad(ent, func(x Mat) float64 {
				in := in
				in.Entropy = x
				o, _, _ := ActorLoss(in, cfg)
				return o.Loss
			})
			assertMat(t, mode+"/"+klType+" ∂/∂H", out.GradEntropy, numH.Rows(), 1e-5)
		}
	}
}

func TestActorLossComposition(t *testing.T) {
	// policy_loss = pg_loss − coeff·agg(H) + coef·agg(kl).
	lp, old, adv, ref, ent, mask := randMats(2, 3, 5)
	cfg := DefaultActorLossConfig()
	cfg.UseKLLoss, cfg.KLLossType, cfg.KLLossCoef = true, "low_var_kl", 0.2
	out, metrics, err := ActorLoss(ActorLossInput{LogProb: lp, OldLogProb: old, Advantages: adv, Mask: mask, Entropy: ent, RefLogProb: ref}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	pg, _, _, _ := PolicyLoss(lp, old, adv, mask, cfg.Policy)
	h, _ := AggLoss(ent, mask, TokenMean)
	klv, _, _ := KLPenalty(lp, ref, "low_var_kl")
	k, _ := AggLoss(klv, mask, TokenMean)
	assertClose(t, "loss", out.Loss, pg-0.001*h+0.2*k, 1e-12)
	assertClose(t, MetricEntropyLoss, metrics[MetricEntropyLoss], h, 1e-12)
	assertClose(t, MetricKLLoss, metrics[MetricKLLoss], k, 1e-12)

	// entropy_coeff 0 and no KL loss: only pg metrics; entropy not needed.
	cfg = DefaultActorLossConfig()
	cfg.EntropyCoeff = 0
	out, metrics, err = ActorLoss(ActorLossInput{LogProb: lp, OldLogProb: old, Advantages: adv, Mask: mask}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "pg only", out.Loss, pg, 0)
	if _, ok := metrics[MetricEntropyLoss]; ok {
		t.Error("entropy metric logged with entropy_coeff 0")
	}
	// Missing entropy / ref inputs are errors.
	cfg.EntropyCoeff = 0.001
	if _, _, err := ActorLoss(ActorLossInput{LogProb: lp, OldLogProb: old, Advantages: adv, Mask: mask}, cfg); err == nil || !strings.Contains(err.Error(), "entropy") {
		t.Errorf("missing entropy: err = %v", err)
	}
	cfg.EntropyCoeff, cfg.UseKLLoss = 0, true
	if _, _, err := ActorLoss(ActorLossInput{LogProb: lp, OldLogProb: old, Advantages: adv, Mask: mask}, cfg); err == nil || !strings.Contains(err.Error(), "reference") {
		t.Errorf("missing ref: err = %v", err)
	}
	cfg.KLLossType = "full"
	if _, _, err := ActorLoss(ActorLossInput{LogProb: lp, OldLogProb: old, Advantages: adv, Mask: mask}, cfg); err == nil || !strings.Contains(err.Error(), "full") {
		t.Errorf("kl type full: err = %v", err)
	}
}

func TestPolicyLossTieGradient(t *testing.T) {
	// A < 0 and Lc exactly equal to −A·c: torch.min splits the gradient, so
	// ∂L/∂lp is half of ∂Lc/∂lp. A = −1, c = 2, ρ = 2 (unclipped since 2 >
	// 1.28 only matters for L2 = 1.28 < L1 = 2): Lc = 2 = −A·c.
	// ∂Lc/∂ρ = −A = 1 → ∂Lc/∂lp = ρ = 2 → tie gives 1.
	cfg := DefaultPolicyLossConfig()
	cfg.ClipRatioC = 2
	_, g, _, err := PolicyLoss(mat(t, []float64{math.Log(2)}), mat(t, []float64{0}), mat(t, []float64{-1}), ones(1, 1), cfg)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "tie grad", g.Data[0], 1, 1e-7)
}

func TestPolicyLossAllMasked(t *testing.T) {
	// Every token masked out: every mode gives loss 0, zero gradients and
	// zero metrics (the 1e-8 guards), never NaN.
	lp, old, adv, _, _, _ := randMats(9, 2, 3)
	for _, mode := range LossAggModes() {
		cfg := DefaultPolicyLossConfig()
		cfg.LossAggMode = mode
		loss, g, metrics, err := PolicyLoss(lp, old, adv, NewMat(2, 3), cfg)
		if err != nil {
			t.Fatal(err)
		}
		assertClose(t, mode+" loss", loss, 0, 0)
		for k, v := range g.Data {
			if v != 0 || math.Signbit(v) {
				t.Errorf("%s grad[%d] = %v", mode, k, v)
			}
		}
		for k, v := range metrics {
			if v != 0 {
				t.Errorf("%s %s = %v", mode, k, v)
			}
		}
	}
}
