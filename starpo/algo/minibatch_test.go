package algo

import (
	"strings"
	"testing"
)

func TestMiniBatchTokenMeanIsSeqMeanWithMicroOne(t *testing.T) {
	// Upstream quirk (overview #9): with micro-batch size 1, token-mean is
	// aggregated per row and the rows are averaged, i.e. seq-mean-token-mean.
	lp, old, adv, _, ent, mask := randMats(5, 4, 7)
	for i := 0; i < 4; i++ { // make sure no row is empty
		mask.Set(i, 0, 1)
	}
	in := ActorLossInput{LogProb: lp, OldLogProb: old, Advantages: adv, Mask: mask, Entropy: ent}
	cfg := DefaultActorLossConfig()
	micro, mm, err := MiniBatchActorLoss(in, cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policy.LossAggMode = SeqMeanTokenMean
	whole, _, err := ActorLoss(in, cfg)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "loss", micro.Loss, whole.Loss, 1e-7)
	assertMat(t, "grad lp", micro.GradLogProb, whole.GradLogProb.Rows(), 1e-7)
	assertMat(t, "grad H", micro.GradEntropy, whole.GradEntropy.Rows(), 1e-7)
	if _, ok := mm[MetricPGClipFrac]; !ok {
		t.Error("pg_clipfrac missing")
	}

	// With micro = B the mini-batch loss is the plain ActorLoss.
	cfg = DefaultActorLossConfig()
	full, _, _ := MiniBatchActorLoss(in, cfg, 4)
	one, _, _ := ActorLoss(in, cfg)
	assertClose(t, "micro = B", full.Loss, one.Loss, 1e-12)

	// Gradient of the accumulated loss matches finite differences (micro 2).
	mb, _, _ := MiniBatchActorLoss(in, cfg, 2)
	num := numGrad(lp, func(x Mat) float64 {
		in := in
		in.LogProb = x
		o, _, _ := MiniBatchActorLoss(in, cfg, 2)
		return o.Loss
	})
	assertMat(t, "micro 2 grad", mb.GradLogProb, num.Rows(), 1e-5)

	if _, _, err := MiniBatchActorLoss(in, cfg, 3); err == nil || !strings.Contains(err.Error(), "divisible") {
		t.Errorf("4 rows, micro 3: err = %v", err)
	}
	if _, _, err := MiniBatchActorLoss(in, cfg, 0); err == nil {
		t.Error("micro 0: want error")
	}
}

func TestMiniBatchValueLoss(t *testing.T) {
	// Two rows, micro 1 (grad_accum 2), token-mean, ε_v = .5:
	//  row 0: v = [1 2], V = [1 1], R = [1 1]: v_clip = [1 1.5]; max losses [0 1]
	//         → ½·(0+1)/2 = .25
	//  row 1: v = [0 0], V = [0 0], R = [2 0], m = [1 0]: losses [4] → ½·4 = 2
	// total = (.25 + 2)/2 = 1.125; logged vf_loss = mean over micro of loss/2 = 1.125/2.
	// clipfrac: row 0 token 2: (1.5−1)² = .25 < (2−1)² = 1 → not clipped → 0.
	v := mat(t, []float64{1, 2}, []float64{0, 0})
	V := mat(t, []float64{1, 1}, []float64{0, 0})
	R := mat(t, []float64{1, 1}, []float64{2, 0})
	m := mat(t, []float64{1, 1}, []float64{1, 0})
	loss, g, metrics, err := MiniBatchValueLoss(v, V, R, m, DefaultValueLossConfig(), 1)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "loss", loss, 1.125, 1e-7)
	assertClose(t, MetricVFLoss, metrics[MetricVFLoss], 1.125/2, 1e-7)
	num := numGrad(v, func(x Mat) float64 {
		l, _, _, _ := MiniBatchValueLoss(x, V, R, m, DefaultValueLossConfig(), 1)
		return l
	})
	assertMat(t, "grad", g, num.Rows(), 1e-5)
	if _, _, _, err := MiniBatchValueLoss(v, V, R, m, DefaultValueLossConfig(), 3); err == nil {
		t.Error("2 rows, micro 3: want error")
	}
}

// actor/kl_loss is assigned (not appended) per micro-batch upstream, so the
// mini-batch reports the last micro-batch's value; the other metrics are
// means over micro-batches.
func TestMiniBatchKLLossIsLastMicroBatch(t *testing.T) {
	lp, old, adv, ref, ent, mask := randMats(7, 4, 5)
	for i := 0; i < 4; i++ {
		mask.Set(i, 0, 1)
	}
	in := ActorLossInput{LogProb: lp, OldLogProb: old, Advantages: adv, Mask: mask, Entropy: ent, RefLogProb: ref}
	cfg := DefaultActorLossConfig()
	cfg.UseKLLoss, cfg.KLLossType, cfg.KLLossCoef = true, "mse", 0.5
	_, mm, err := MiniBatchActorLoss(in, cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	var pg [2]float64
	var kl [2]float64
	for k := 0; k < 2; k++ {
		part := ActorLossInput{LogProb: lp.SliceRows(2*k, 2*k+2), OldLogProb: old.SliceRows(2*k, 2*k+2),
			Advantages: adv.SliceRows(2*k, 2*k+2), Mask: mask.SliceRows(2*k, 2*k+2), Entropy: ent.SliceRows(2*k, 2*k+2),
			RefLogProb: ref.SliceRows(2*k, 2*k+2)}
		_, m, err := ActorLoss(part, cfg)
		if err != nil {
			t.Fatal(err)
		}
		pg[k], kl[k] = m[MetricPGLoss], m[MetricKLLoss]
	}
	assertClose(t, MetricKLLoss, mm[MetricKLLoss], kl[1], 1e-12)
	assertClose(t, MetricKLCoef, mm[MetricKLCoef], 0.5, 0)
	assertClose(t, MetricPGLoss, mm[MetricPGLoss], (pg[0]+pg[1])/2, 1e-12)
}
