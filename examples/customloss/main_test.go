package main

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"ragen/starpo"
	"ragen/starpo/algo"
	"ragen/torch"
)

// By hand, ε = 0.2: row 0 has log-ratios (ln 2, ln 2) → r = 2, A = 1:
// max(−2, −1.2) = −1.2; row 1 has log-ratio 0 → r = 1, A = −3 on its one
// token: max(3, 3) = 3; row 2 has no tokens and is left out. L = 0.9, and
// one of the two rows is clipped. The gradient reaches the log-probs.
func TestSequenceClipLossByHand(t *testing.T) {
	s := torch.NewScope()
	defer s.Close()
	lp := s.Own(torch.From([]float64{math.Log(2), math.Log(2), 0, 5, 0, 0}, 3, 2))
	if err := lp.SetRequiresGrad(true); err != nil {
		t.Fatal(err)
	}
	old := s.Own(torch.From([]float64{0, 0, 0, 7, 0, 0}, 3, 2))
	adv := s.Own(torch.From([]float64{1, 1, -3, 0, 9, 9}, 3, 2))
	m := s.Own(torch.From([]float64{1, 1, 1, 0, 0, 0}, 3, 2))
	cfg := algo.DefaultActorLossConfig()
	cfg.Policy.ClipRatio = 0.2
	loss, met := SequenceClipLoss(s, starpo.ActorLossInput{LogProbs: lp, OldLogProbs: old, Advantages: adv, Mask: m}, cfg)
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if got := s.Item(loss); math.Abs(got-0.9) > 1e-6 { // the 1e-8 in the token count
		t.Fatalf("loss %v, want 0.9", got)
	}
	if got := met.Read(s)["actor/seq_clipfrac"]; math.Abs(got-0.5) > 1e-6 {
		t.Fatalf("clipfrac %v, want 0.5", got)
	}
	if err := loss.Backward(nil); err != nil {
		t.Fatal(err)
	}
	gt, err := lp.Grad()
	if err != nil {
		t.Fatal(err)
	}
	defer gt.Free()
	g, err := torch.Data[float64](gt)
	if err != nil {
		t.Fatal(err)
	}
	// Row 1 is unclipped: ∂/∂lp of ½·(−A·r) with r = exp(lp−old) at 1 = 1.5.
	if math.Abs(g[2]-1.5) > 1e-6 || g[0] != 0 {
		t.Fatalf("grad %v", g)
	}
}

// The trainer calls the custom loss: its metrics are logged.
func TestTrainsWithCustomLoss(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), 1, &out); err != nil {
		t.Fatal(err)
	}
	t.Log(out.String())
	// Demonstrations pull random arms, so groups have reward variance and
	// the custom loss has a gradient.
	if !strings.Contains(out.String(), "step 1  seq_loss") || strings.Contains(out.String(), "grad_norm 0.0000") {
		t.Fatalf("custom loss metrics missing:\n%s", out.String())
	}
}
