package llm

import (
	"context"
	"fmt"
	"math"
	"os"
	"testing"

	"ragen/torch"
)

// testOptions are the model options of device-aware tests: the device named
// by RAGEN_TEST_DEVICE (default cpu). The GPU bundle (make gpu-bundle) runs
// them with RAGEN_TEST_DEVICE=cuda; without CUDA such a run skips.
func testOptions(t *testing.T) Options {
	t.Helper()
	opt := DefaultOptions()
	d, err := torch.ParseDevice(os.Getenv("RAGEN_TEST_DEVICE"))
	if err != nil {
		t.Fatal(err)
	}
	if d.IsCUDA() && !torch.CUDAAvailable() {
		t.Skipf("RAGEN_TEST_DEVICE=%s but this build has no CUDA (%s)", d, torch.BuildInfo())
	}
	opt.Device = d
	return opt
}

// onDevice is a float32 copy of the CPU model ref on opt's device, through a
// saved checkpoint.
func onDevice(t *testing.T, ref *Model, opt Options) *Model {
	t.Helper()
	dir := t.TempDir()
	if err := ref.Save(dir); err != nil {
		t.Fatal(err)
	}
	opt.DType = torch.Float32
	m, err := Load(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestDeviceTrainingMatchesReference runs a training forward and backward
// (float32, then bf16 compute) on the test device over a left-padded batch,
// with the loss on the log-probs of tokens that follow an attended token
// only (as a policy loss is; the gradient through a padding query, which
// attends no key, is an artifact the kernels need not share), and
// compares logits and every gradient with the reference ops on the CPU. On
// a GPU it checks the CUDA paths (PyTorch's fused attention with and
// without a padding mask, the chunked log-probs) against the plain
// composition; on a CPU it checks the fused kernels, or PyTorch's fused
// attention where RAGEN_ATTENTION=sdpa.
func TestDeviceTrainingMatchesReference(t *testing.T) {
	opt := testOptions(t)
	long, other := make([]int, 96), make([]int, 96)
	for i := range long {
		long[i] = (i*37 + 5) % 300
		other[i] = (i*11 + 17) % 300
	}
	for _, c := range []struct {
		name string
		seqs [][]int
		bf   bool
	}{
		{"unpadded", [][]int{long, other}, false},
		{"left-padded", [][]int{long, long[40:], long[90:]}, false},
		{"left-padded bf16", [][]int{long, long[40:], long[90:]}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref := familyModel(t, "qwen2", 7, false)
			defer ref.Close()
			m := onDevice(t, ref, opt)
			defer m.Close()
			if c.bf {
				ref.opt.ComputeDType, m.opt.ComputeDType = torch.BFloat16, torch.BFloat16
			}
			run := func(m *Model, refOps bool) ([][]float32, []float32) {
				m.referenceOps = refOps
				defer func() { m.referenceOps = false }()
				var lp []float32
				grads, _ := gradsWith(t, m.Trainable(), func(s *torch.Scope) *torch.Tensor {
					ids, pos, attn := PadBatch(s, c.seqs, 0, true, m.Options().Device)
					logp, _ := m.TokenLogProbs(s, ids, pos, attn, 1, false)
					// the log-probs of tokens after an attended one, as a
					// response's are: a padding position (its query attends
					// no key) feeds no loss
					T := int(ids.Size(1))
					wv := make([]float32, len(c.seqs)*T)
					for b, q := range c.seqs {
						for t := T - len(q) + 1; t < T; t++ {
							wv[b*T+t] = 1
						}
					}
					w := s.To(s.Own(torch.From(wv, int64(len(c.seqs)), int64(T))), torch.Float32, m.Options().Device)
					lp = s.Float32s(s.Mul(logp, w))
					// weights that differ by position, so every logit matters
					g, err := torch.NewGenerator(3, torch.CPU)
					if err != nil {
						t.Fatal(err)
					}
					defer g.Close()
					r := s.To(s.Randn(g, logp.Shape(), torch.Float32, torch.CPU), torch.Float32, m.Options().Device)
					loss := s.Sum(s.Mul(s.Mul(logp, w), r), false)
					if err := s.Err(); err != nil {
						t.Fatal(err)
					}
					return loss
				})
				return grads, lp
			}
			want, wlp := run(ref, true)
			got, glp := run(m, false)
			tol := 1e-4
			if c.bf {
				tol = 0.05
			}
			if opt.Device.IsCUDA() && !c.bf {
				tol = 2e-3 // TF32-free, but GPU kernels reduce in another order
			}
			if d := maxDiff(wlp, glp); d > tol*10 {
				t.Fatalf("log-probs differ by %.3g", d)
			}
			names := make([]string, len(want))
			for i, p := range ref.Trainable() {
				names[i] = fmt.Sprint("trainable ", i, " ", p.Shape())
			}
			compareGrads(t, names, want, got, tol)
		})
	}
}

// TestDeviceGreedyMatchesCPU generates greedily from left-padded prompts of
// different lengths on the test device and on the CPU (float32): the same
// tokens, log-probs within float rounding.
func TestDeviceGreedyMatchesCPU(t *testing.T) {
	opt := testOptions(t)
	ref := familyModel(t, "qwen2", 9, true)
	defer ref.Close()
	m := onDevice(t, ref, opt)
	defer m.Close()
	prompts := [][]int{{5, 9, 13, 200, 7, 7, 31}, {44}, {1, 2, 3, 4}}
	g := GenOptions{MaxNewTokens: 24, IgnoreEOS: true}
	want, err := ref.Generate(context.Background(), nil, prompts, g)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Generate(context.Background(), nil, prompts, g)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if fmt.Sprint(want[i].IDs) != fmt.Sprint(got[i].IDs) {
			t.Fatalf("prompt %d: %s generated %v, the CPU %v", i, opt.Device, got[i].IDs, want[i].IDs)
		}
		for j := range want[i].LogProbs {
			if d := math.Abs(want[i].LogProbs[j] - got[i].LogProbs[j]); d > 1e-3 {
				t.Fatalf("prompt %d token %d: log-prob %.6f on %s, %.6f on the CPU", i, j, got[i].LogProbs[j], opt.Device, want[i].LogProbs[j])
			}
		}
	}
}
