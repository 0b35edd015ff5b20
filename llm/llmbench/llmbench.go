package llmbench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"ragen/llm"
	"ragen/torch"
)

// Config is the benchmark model of notes/peers.md: Qwen2 architecture,
// vocab 8192, hidden 256, 4 layers, 4 heads, 4 KV heads, intermediate 1024,
// untied head (8,393,984 parameters).
func Config() llm.Config {
	c := llm.TinyConfig(8192)
	c.HiddenSize = 256
	c.IntermediateSize = 1024
	c.NumHiddenLayers = 4
	c.NumAttentionHeads = 4
	c.NumKeyValueHeads = 4
	c.TieWordEmbeddings = false
	c.MaxPositionEmbeddings = 4096
	return c
}

// Prompts returns b random prompts of n ids below vocab.
func Prompts(b, n, vocab int, seed uint64) [][]int {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([][]int, b)
	for i := range out {
		out[i] = make([]int, n)
		for j := range out[i] {
			out[i][j] = r.IntN(vocab)
		}
	}
	return out
}

// Decode times one greedy Generate of newTokens for the prompts (no EOS
// stop) and returns generated tokens per second.
func Decode(m *llm.Model, prompts [][]int, newTokens int) (float64, error) {
	t0 := time.Now()
	res, err := m.Generate(context.Background(), nil, prompts, llm.GenOptions{MaxNewTokens: newTokens, IgnoreEOS: true})
	if err != nil {
		return 0, err
	}
	dt := time.Since(t0).Seconds()
	n := 0
	for _, r := range res {
		n += len(r.IDs)
	}
	return float64(n) / dt, nil
}

// Trainer runs training steps: next-token cross-entropy over a (B,T) batch,
// backward, AdamW.
type Trainer struct {
	m              *llm.Model
	opt            *torch.AdamW
	lr             float64
	ids, pos, attn *torch.Tensor
	s              *torch.Scope
}

// NewTrainer prepares a batch of b random sequences of length t.
func NewTrainer(m *llm.Model, b, t int, lr float64) (*Trainer, error) {
	torch.KeepFreedMemory(1 << 30)
	cfg := torch.DefaultAdamW()
	cfg.LR = lr
	o, err := torch.NewAdamW(m.Trainable(), cfg)
	if err != nil {
		return nil, err
	}
	s := torch.NewScope()
	ids, pos, attn := llm.PadBatch(s, Prompts(b, t, m.Config().VocabSize, 3), 0, false, m.Options().Device)
	if err := s.Err(); err != nil {
		o.Close()
		return nil, err
	}
	return &Trainer{m: m, opt: o, lr: lr, ids: ids, pos: pos, attn: attn, s: s}, nil
}

// Phases times the parts of one step: forward (the log-probs and loss),
// backward and the optimizer step, each ended by reading a value back from
// the device, which waits for the work queued before it.
func (tr *Trainer) Phases() (fwd, bwd, opt time.Duration, err error) {
	s := torch.NewScope()
	defer s.Close()
	t0 := time.Now()
	lp, _ := tr.m.TokenLogProbs(s, tr.ids, tr.pos, tr.attn, 1, false)
	if lp == nil {
		return 0, 0, 0, s.Err()
	}
	loss := s.Neg(s.Mean(s.Narrow(lp, 1, 1, lp.Size(1)-1), false))
	s.Item(loss)
	if err := s.Err(); err != nil {
		return 0, 0, 0, err
	}
	t1 := time.Now()
	params := tr.m.Trainable()
	if err := torch.ZeroGrad(params); err != nil {
		return 0, 0, 0, err
	}
	if err := loss.Backward(nil); err != nil {
		return 0, 0, 0, err
	}
	wait := func() error {
		g := s.Own(params[0].Grad())
		if g == nil {
			return s.Err()
		}
		s.Item(s.Sum(g, false))
		return s.Err()
	}
	if err := wait(); err != nil {
		return 0, 0, 0, err
	}
	t2 := time.Now()
	if err := tr.opt.Step(tr.lr); err != nil {
		return 0, 0, 0, err
	}
	s.Item(s.Sum(params[0], false))
	if err := s.Err(); err != nil {
		return 0, 0, 0, err
	}
	return t1.Sub(t0), t2.Sub(t1), time.Since(t2), nil
}

// Step runs one step and returns the loss.
func (tr *Trainer) Step() (float64, error) {
	s := torch.NewScope()
	defer s.Close()
	lp, _ := tr.m.TokenLogProbs(s, tr.ids, tr.pos, tr.attn, 1, false)
	if lp == nil {
		return 0, s.Err()
	}
	T := lp.Size(1)
	loss := s.Neg(s.Mean(s.Narrow(lp, 1, 1, T-1), false))
	if err := s.Err(); err != nil {
		return 0, err
	}
	if err := torch.ZeroGrad(tr.m.Trainable()); err != nil {
		return 0, err
	}
	if err := loss.Backward(nil); err != nil {
		return 0, err
	}
	if err := tr.opt.Step(tr.lr); err != nil {
		return 0, err
	}
	return s.Item(loss), s.Err()
}

// Close frees the optimiser state and the batch.
func (tr *Trainer) Close() {
	tr.opt.Close()
	tr.s.Close()
}

// MatmulPeak measures fp32 2048² matmul GFLOP/s (best of 5).
func MatmulPeak() (float64, error) {
	s := torch.NewScope()
	defer s.Close()
	g, err := torch.NewGenerator(1, torch.CPU)
	if err != nil {
		return 0, err
	}
	defer g.Close()
	a := s.Randn(g, []int64{2048, 2048}, torch.Float32, torch.CPU)
	b := s.Randn(g, []int64{2048, 2048}, torch.Float32, torch.CPU)
	best := 1e9
	for i := 0; i < 6; i++ {
		t0 := time.Now()
		c := s.MatMul(a, b)
		dt := time.Since(t0).Seconds()
		if i > 0 {
			best = min(best, dt)
		}
		c.Free()
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 2 * 2048 * 2048 * 2048 / best / 1e9, nil
}

// TrainFLOPs is one training step's work on batch sequences of seqLen
// tokens as PaLM's MFU counts it (Chowdhery et al. 2022, appendix B):
// 6·N per token for the parameters plus 12·L·H·Q·T for attention's two
// matmuls (H heads of width Q over T positions, forward and backward).
func TrainFLOPs(c llm.Config, batch, seqLen int) float64 {
	perToken := 6*float64(c.ParamCount()) +
		12*float64(c.NumHiddenLayers)*float64(c.NumAttentionHeads*c.HeadDimension())*float64(seqLen)
	return perToken * float64(batch*seqLen)
}

// Summary formats a side-by-side line.
func Summary(name string, goV, pyV float64, unit string, higherBetter bool) string {
	ratio := goV / pyV
	if !higherBetter {
		ratio = pyV / goV
	}
	return fmt.Sprintf("%-12s go %10.3f %-6s pytorch %10.3f %-6s  speedup %.2fx", name, goV, unit, pyV, unit, ratio)
}

// Qwen05B is Qwen2.5-0.5B's shape (vocabulary 151,936, hidden 896, 14 query
// and 2 KV heads, intermediate 4,864, tied head) with the given number of
// layers (the real model has 24), randomly initialised, float32.
func Qwen05B(layers int) llm.Config {
	c := llm.TinyConfig(151936)
	c.HiddenSize = 896
	c.IntermediateSize = 4864
	c.NumHiddenLayers = layers
	c.NumAttentionHeads = 14
	c.NumKeyValueHeads = 2
	c.MaxPositionEmbeddings = 32768
	c.TieWordEmbeddings = true
	return c
}

// Qwen15B is Qwen2.5-1.5B's shape (vocabulary 151,936, hidden 1,536, 12
// query and 2 KV heads, intermediate 8,960, tied head) with the given number
// of layers (the real model has 28).
func Qwen15B(layers int) llm.Config {
	c := Qwen05B(layers)
	c.HiddenSize = 1536
	c.IntermediateSize = 8960
	c.NumAttentionHeads = 12
	return c
}

// TimeStep returns the minimum wall time of runs calls of step after warmup calls.
func TimeStep(step func() error, warmup, runs int) (time.Duration, error) {
	for range warmup {
		if err := step(); err != nil {
			return 0, err
		}
	}
	best := time.Duration(1<<63 - 1)
	for range runs {
		t0 := time.Now()
		if err := step(); err != nil {
			return 0, err
		}
		best = min(best, time.Since(t0))
	}
	return best, nil
}
