package llm

import (
	"fmt"
	"math"
	"testing"

	"ragen/torch"
)

// TestMixedPrecisionTracksFloat32 trains the same tiny model (tied head, a
// critic-free LM loss with an entropy term) for 50 AdamW steps in float32 and
// with bfloat16 compute on float32 master weights. The bf16 run must track
// the float32 loss curve within 3% (+0.02) at every step, learn as much, and
// keep its parameters, gradients and optimizer in float32. With gradient
// checkpointing too, since the checkpointed layer takes the cast weights.
func TestMixedPrecisionTracksFloat32(t *testing.T) {
	if testing.Short() {
		t.Skip("50 training steps twice")
	}
	seqs := [][]int{{5, 6, 7, 8, 9, 10, 11, 12, 13}, {100, 200, 3, 4, 5, 6}, {40, 41, 42, 43, 44, 45, 46, 47}}
	curve := func(compute torch.DType, ckpt bool) []float64 {
		cfg := TinyConfig(300)
		cfg.TieWordEmbeddings = true
		m, err := New(cfg, Options{DType: torch.Float32, Device: torch.CPU, Seed: 21, ComputeDType: compute, GradientCheckpointing: ckpt})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		if compute == torch.BFloat16 && m.ComputeDType() != torch.BFloat16 {
			t.Fatalf("ComputeDType %v", m.ComputeDType())
		}
		cfgO := torch.DefaultAdamW()
		cfgO.LR = 3e-3
		o, err := torch.NewAdamW(m.Trainable(), cfgO)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		var out []float64
		for range 50 {
			s := torch.NewScope()
			if err := torch.ZeroGrad(m.Trainable()); err != nil {
				t.Fatal(err)
			}
			loss := lossOf(t, s, m, seqs)
			out = append(out, s.Item(loss))
			if err := loss.Backward(nil); err != nil {
				t.Fatal(err)
			}
			for _, p := range m.Trainable() {
				if g, err := p.Grad(); err == nil && g != nil {
					if g.DType() != torch.Float32 {
						t.Fatalf("a gradient is %v, want the master dtype float32", g.DType())
					}
					g.Free()
				}
			}
			if err := o.Step(cfgO.LR); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
		for _, p := range m.Trainable() {
			if p.DType() != torch.Float32 {
				t.Fatalf("a parameter is %v, want float32", p.DType())
			}
		}
		return out
	}
	ref := curve(torch.Float32, false)
	if !(ref[49] < ref[0]-1) {
		t.Fatalf("float32 run did not learn: %.3f -> %.3f", ref[0], ref[49])
	}
	for _, ckpt := range []bool{false, true} {
		got := curve(torch.BFloat16, ckpt)
		worst := 0.0
		for i := range ref {
			d := math.Abs(got[i] - ref[i])
			worst = max(worst, d/(0.02+0.03*math.Abs(ref[i])))
		}
		t.Logf("checkpointing %v: loss %.4f -> %.4f (float32 %.4f -> %.4f), worst deviation %.2f of the tolerance", ckpt, got[0], got[49], ref[0], ref[49], worst)
		if worst == 0 {
			t.Errorf("checkpointing %v: the bf16 curve equals the float32 one: nothing ran in bf16", ckpt)
		}
		if worst > 1 {
			t.Errorf("%s", fmt.Sprintf("checkpointing %v: bf16 curve leaves the float32 one by more than 3%% + 0.02: %v vs %v", ckpt, got, ref))
		}
	}
}

// AutoComputeDType: bfloat16 on CUDA (veRL's FSDP default), on the CPU only
// for models of AutoComputeParams or more on a CPU with native bfloat16
// matmuls, never for non-float32 parameters; a model built with AutoCompute
// carries the choice in its Options.
func TestAutoComputeDType(t *testing.T) {
	small := TinyConfig(300)
	large := TinyConfig(151936)
	large.HiddenSize, large.IntermediateSize, large.NumAttentionHeads, large.NumKeyValueHeads = 896, 4864, 14, 2
	if large.ParamCount() < AutoComputeParams || small.ParamCount() >= AutoComputeParams {
		t.Fatalf("sizes %d, %d around %d", small.ParamCount(), large.ParamCount(), AutoComputeParams)
	}
	cpu := Options{DType: torch.Float32, Device: torch.CPU}
	wantLarge := torch.Float32
	if torch.NativeBF16Matmul() {
		wantLarge = torch.BFloat16
	}
	for _, c := range []struct {
		cfg  Config
		opt  Options
		want torch.DType
	}{
		{small, cpu, torch.Float32},
		{large, cpu, wantLarge},
		{small, Options{DType: torch.Float32, Device: torch.CUDA(0)}, torch.BFloat16},
		{large, Options{DType: torch.Float64, Device: torch.CPU}, torch.Float64},
		{large, Options{DType: torch.BFloat16, Device: torch.CUDA(0)}, torch.BFloat16},
	} {
		if got := AutoComputeDType(c.cfg, c.opt); got != c.want {
			t.Errorf("%d params on %v, %v parameters: %v, want %v", c.cfg.ParamCount(), c.opt.Device, c.opt.DType, got, c.want)
		}
	}
	m, err := New(small, Options{DType: torch.Float32, Device: torch.CPU, AutoCompute: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if o := m.Options(); o.AutoCompute || o.ComputeDType != torch.Float32 || m.ComputeDType() != torch.Float32 {
		t.Fatalf("options after the choice: %+v, compute %v", o, m.ComputeDType())
	}
}
