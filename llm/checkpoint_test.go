package llm

import (
	"fmt"
	"math"
	"testing"

	"ragen/torch"
)

// gradsOf runs lossOf and backward and returns every trainable tensor's
// gradient (nil where none) and the loss, then clears the gradients.
func gradsOf(t *testing.T, m *Model, ts []*torch.Tensor, seqs [][]int) ([][]float32, float32) {
	t.Helper()
	return gradsWith(t, ts, func(s *torch.Scope) *torch.Tensor { return lossOf(t, s, m, seqs) })
}

// gradsWith is gradsOf for the scalar loss that lossFn builds in s.
func gradsWith(t *testing.T, ts []*torch.Tensor, lossFn func(s *torch.Scope) *torch.Tensor) ([][]float32, float32) {
	t.Helper()
	s := torch.NewScope()
	defer s.Close()
	loss := lossFn(s)
	l := s.Float32s(loss)
	if err := loss.Backward(nil); err != nil {
		t.Fatal(err)
	}
	out := make([][]float32, len(ts))
	for i, p := range ts {
		g, err := p.Grad()
		if err != nil {
			t.Fatal(err)
		}
		if g == nil {
			continue
		}
		out[i] = s.Float32s(s.Cast(g, torch.Float32))
		g.Free()
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := torch.ZeroGrad(ts); err != nil {
		t.Fatal(err)
	}
	return out, l[0]
}

// compareGrads fails unless a and b agree to tol relative to the largest
// gradient entry of each tensor.
func compareGrads(t *testing.T, names []string, a, b [][]float32, tol float64) {
	t.Helper()
	worst := 0.0
	defer func() { t.Logf("largest gradient difference %.2g of the tensor's largest entry", worst) }()
	for i := range a {
		if (a[i] == nil) != (b[i] == nil) {
			t.Fatalf("%s: gradient present %v in the first run, %v in the second", names[i], a[i] != nil, b[i] != nil)
		}
		top := 0.0
		for _, v := range a[i] {
			top = max(top, math.Abs(float64(v)))
		}
		if top == 0 && a[i] != nil {
			t.Fatalf("%s: zero gradient, the test would not see a difference", names[i])
		}
		d := maxDiff(a[i], b[i])
		if top > 0 {
			worst = max(worst, d/top)
		}
		if d > tol*top {
			t.Errorf("%s: gradients differ by %.3g (largest entry %.3g)", names[i], d, top)
		}
	}
}

// TestCheckpointMatchesPlain: for every family, tied and untied heads, with
// and without LoRA (frozen base), the loss and every trainable gradient with
// activation checkpointing equal those of the plain Go forward (loss to
// 1e-6 relative, gradients to 1e-5 of each tensor's largest entry); a
// bfloat16 model (to 1e-3 and 1e-2) and a critic trunk likewise; no tensor
// handle is left behind.
func TestCheckpointMatchesPlain(t *testing.T) {
	start := torch.Live()
	seqs := [][]int{{11, 22, 33, 44, 55, 66, 77, 88, 99, 5}, {200, 201, 202, 7, 8}}
	for _, fam := range Families() {
		for _, tied := range []bool{true, false} {
			for _, lora := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/tied=%v/lora=%v", fam, tied, lora), func(t *testing.T) {
					m := familyModel(t, fam, 5, tied)
					defer m.Close()
					if lora {
						enableNoisyLoRA(t, m)
					}
					ts := m.Trainable()
					names := make([]string, len(ts))
					for i := range ts {
						names[i] = fmt.Sprint("trainable ", i, " ", ts[i].Shape())
					}
					plain, l0 := gradsOf(t, m, ts, seqs)
					m.SetGradientCheckpointing(true)
					if !m.GradientCheckpointing() || !m.checkpointing() {
						t.Fatal("checkpointing not on with gradients enabled")
					}
					ck, l1 := gradsOf(t, m, ts, seqs)
					if math.Abs(float64(l0-l1)) > 1e-6*math.Abs(float64(l0)) {
						t.Fatalf("loss %v without checkpointing, %v with", l0, l1)
					}
					compareGrads(t, names, plain, ck, 1e-5)
					// without gradients checkpointing is off: scoring is unchanged
					torch.NoGrad(func() error {
						if m.checkpointing() {
							t.Error("checkpointing on under NoGrad")
						}
						return nil
					})
				})
			}
		}
	}
	// bfloat16: the casts around the float32 norms, scores and softmax
	t.Run("qwen3/bf16", func(t *testing.T) {
		cfg, err := TinyConfigFor("qwen3", 300)
		if err != nil {
			t.Fatal(err)
		}
		m, err := New(cfg, Options{DType: torch.BFloat16, Device: torch.CPU, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		ts := m.Trainable()
		names := make([]string, len(ts))
		for i := range ts {
			names[i] = fmt.Sprint("bf16 trainable ", i, " ", ts[i].Shape())
		}
		plain, l0 := gradsOf(t, m, ts, seqs)
		m.SetGradientCheckpointing(true)
		ck, l1 := gradsOf(t, m, ts, seqs)
		if math.Abs(float64(l0-l1)) > 1e-3*math.Abs(float64(l0)) {
			t.Fatalf("bf16 loss %v without checkpointing, %v with", l0, l1)
		}
		compareGrads(t, names, plain, ck, 1e-2)
	})
	t.Run("critic", func(t *testing.T) {
		m := familyModel(t, "qwen2", 6, true)
		defer m.Close()
		c, err := NewCritic(m)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		run := func() ([][]float32, float32) {
			s := torch.NewScope()
			defer s.Close()
			ids, pos, attn := batch(t, s, seqs, true)
			v := c.Values(s, ids, pos, attn)
			loss := s.Mean(s.Square(v), false)
			l := s.Float32s(loss)
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			if err := loss.Backward(nil); err != nil {
				t.Fatal(err)
			}
			ts := c.Trainable()
			out := make([][]float32, len(ts))
			for i, p := range ts {
				g, err := p.Grad()
				if err != nil || g == nil {
					t.Fatalf("critic tensor %d: no gradient (%v)", i, err)
				}
				out[i], _ = torch.Data[float32](g)
				g.Free()
			}
			if err := torch.ZeroGrad(ts); err != nil {
				t.Fatal(err)
			}
			return out, l[0]
		}
		plain, l0 := run()
		c.Trunk().SetGradientCheckpointing(true)
		ck, l1 := run()
		if math.Abs(float64(l0-l1)) > 1e-6*math.Abs(float64(l0)) {
			t.Fatalf("critic loss %v without checkpointing, %v with", l0, l1)
		}
		names := make([]string, len(plain))
		for i := range names {
			names[i] = fmt.Sprint("critic tensor ", i)
		}
		compareGrads(t, names, plain, ck, 1e-5)
	})
	if got := torch.Live(); got != start {
		t.Fatalf("live tensors %d -> %d", start, got)
	}
}
