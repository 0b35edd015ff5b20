package bench

import (
	"fmt"
	"math"

	"ragen/torch"
)

// Workload is one training-step benchmark: Setup builds parameters, Step
// runs forward, backward and an AdamW update.
type Workload struct {
	Name  string
	FLOPs float64 // approximate FLOPs of one step (6 x params x tokens for matmuls)
	Setup func() (step func() error, closeFn func(), err error)
}

// det fills n values deterministically (the Python peer uses the same formula).
func det(n int, a, b, scale float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(scale * math.Sin(a*float64(i)+b))
	}
	return out
}

type params struct {
	ts []*torch.Tensor
}

func (p *params) add(data []float32, shape ...int64) (*torch.Tensor, error) {
	t, err := torch.From(data, shape...)
	if err != nil {
		return nil, err
	}
	if err := t.SetRequiresGrad(true); err != nil {
		t.Free()
		return nil, err
	}
	p.ts = append(p.ts, t)
	return t, nil
}

func (p *params) free() {
	for _, t := range p.ts {
		t.Free()
	}
}

// MLP shapes: x (Batch, In) -> In->Hidden -> GELU -> Hidden->Hidden -> GELU -> Hidden->Out, MSE.
const (
	MLPBatch  = 256
	MLPIn     = 512
	MLPHidden = 2048
	MLPOut    = 512
)

// MLPStep is one AdamW training step of a 3-layer MLP.
func MLPStep() Workload {
	nParams := float64(MLPIn*MLPHidden + MLPHidden*MLPHidden + MLPHidden*MLPOut)
	return Workload{
		Name:  "mlp_step",
		FLOPs: 6 * nParams * MLPBatch,
		Setup: func() (func() error, func(), error) {
			var p params
			dims := [][2]int{{MLPIn, MLPHidden}, {MLPHidden, MLPHidden}, {MLPHidden, MLPOut}}
			var ws, bs []*torch.Tensor
			for i, d := range dims {
				w, err := p.add(det(d[0]*d[1], 0.37+float64(i), 0.1, 1/math.Sqrt(float64(d[0]))), int64(d[1]), int64(d[0]))
				if err != nil {
					p.free()
					return nil, nil, err
				}
				b, err := p.add(det(d[1], 1.3, float64(i), 0.01), int64(d[1]))
				if err != nil {
					p.free()
					return nil, nil, err
				}
				ws, bs = append(ws, w), append(bs, b)
			}
			x, err := torch.From(det(MLPBatch*MLPIn, 0.11, 0.2, 1), MLPBatch, MLPIn)
			if err != nil {
				p.free()
				return nil, nil, err
			}
			y, err := torch.From(det(MLPBatch*MLPOut, 0.23, 0.4, 1), MLPBatch, MLPOut)
			if err != nil {
				p.free()
				x.Free()
				return nil, nil, err
			}
			opt, err := torch.NewAdamW(p.ts, torch.AdamWConfig{LR: 1e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01})
			if err != nil {
				p.free()
				return nil, nil, err
			}
			step := func() error {
				if err := torch.ZeroGrad(p.ts); err != nil {
					return err
				}
				s := torch.NewScope()
				h := x
				for i := range ws {
					h = s.Linear(h, ws[i], bs[i])
					if i < len(ws)-1 {
						h = s.GELU(h)
					}
				}
				loss := s.Mean(s.Square(s.Sub(h, y)), false)
				return finishStep(s, loss, opt)
			}
			return step, func() { opt.Close(); p.free(); x.Free(); y.Free() }, nil
		},
	}
}

// Attention-block shapes: 2 pre-norm transformer layers (RMSNorm, causal
// multi-head attention, GELU MLP) on (Batch, Seq, Model).
const (
	AttnBatch  = 8
	AttnSeq    = 128
	AttnModel  = 256
	AttnHeads  = 4
	AttnFF     = 1024
	AttnLayers = 2
)

// AttentionStep is one AdamW training step of a 2-layer attention block.
func AttentionStep() Workload {
	perLayer := float64(4*AttnModel*AttnModel + 2*AttnModel*AttnFF)
	tokens := float64(AttnBatch * AttnSeq)
	// matmul params plus attention scores and mixing (2 x T x d per token, x3 for backward)
	flops := 6*perLayer*AttnLayers*tokens + AttnLayers*3*2*2*float64(AttnSeq)*AttnModel*tokens
	return Workload{
		Name:  "attention_step",
		FLOPs: flops,
		Setup: func() (func() error, func(), error) {
			var p params
			type layer struct{ n1, wq, wk, wv, wo, n2, w1, w2 *torch.Tensor }
			var layers []layer
			fail := func(err error) (func() error, func(), error) { p.free(); return nil, nil, err }
			for l := range AttnLayers {
				mk := func(k, out, in int) (*torch.Tensor, error) {
					return p.add(det(out*in, 0.31+0.07*float64(k)+float64(l), 0.5, 1/math.Sqrt(float64(in))), int64(out), int64(in))
				}
				var L layer
				var err error
				ones := make([]float32, AttnModel)
				for i := range ones {
					ones[i] = 1
				}
				if L.n1, err = p.add(ones, AttnModel); err != nil {
					return fail(err)
				}
				if L.n2, err = p.add(append([]float32(nil), ones...), AttnModel); err != nil {
					return fail(err)
				}
				for i, dst := range []**torch.Tensor{&L.wq, &L.wk, &L.wv, &L.wo} {
					if *dst, err = mk(i, AttnModel, AttnModel); err != nil {
						return fail(err)
					}
				}
				if L.w1, err = mk(4, AttnFF, AttnModel); err != nil {
					return fail(err)
				}
				if L.w2, err = mk(5, AttnModel, AttnFF); err != nil {
					return fail(err)
				}
				layers = append(layers, L)
			}
			x, err := torch.From(det(AttnBatch*AttnSeq*AttnModel, 0.13, 0.3, 1), AttnBatch, AttnSeq, AttnModel)
			if err != nil {
				return fail(err)
			}
			mask, err := causalMask(AttnSeq)
			if err != nil {
				x.Free()
				return fail(err)
			}
			opt, err := torch.NewAdamW(p.ts, torch.AdamWConfig{LR: 1e-4, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, WeightDecay: 0.01})
			if err != nil {
				x.Free()
				mask.Free()
				return fail(err)
			}
			hd := int64(AttnModel / AttnHeads)
			scale := 1 / math.Sqrt(float64(hd))
			rms := func(s *torch.Scope, h, w *torch.Tensor) *torch.Tensor {
				return s.Mul(s.Mul(h, s.Rsqrt(s.AddS(s.Mean(s.Square(h), true, -1), 1e-6))), w)
			}
			heads := func(s *torch.Scope, t *torch.Tensor) *torch.Tensor { // (B,T,D) -> (B,H,T,hd)
				return s.Transpose(s.View(t, AttnBatch, AttnSeq, AttnHeads, hd), 1, 2)
			}
			step := func() error {
				if err := torch.ZeroGrad(p.ts); err != nil {
					return err
				}
				s := torch.NewScope()
				h := x
				for _, L := range layers {
					a := rms(s, h, L.n1)
					q, k, v := heads(s, s.Linear(a, L.wq, nil)), heads(s, s.Linear(a, L.wk, nil)), heads(s, s.Linear(a, L.wv, nil))
					att := s.Add(s.MulS(s.MatMul(q, s.Transpose(k, 2, 3)), scale), mask)
					o := s.MatMul(s.Softmax(att, -1), v) // (B,H,T,hd)
					o = s.Reshape(s.Transpose(o, 1, 2), AttnBatch, AttnSeq, AttnModel)
					h = s.Add(h, s.Linear(o, L.wo, nil))
					m := rms(s, h, L.n2)
					h = s.Add(h, s.Linear(s.GELU(s.Linear(m, L.w1, nil)), L.w2, nil))
				}
				loss := s.Mean(s.Square(h), false)
				return finishStep(s, loss, opt)
			}
			return step, func() { opt.Close(); p.free(); x.Free(); mask.Free() }, nil
		},
	}
}

// finishStep runs backward from loss, frees the step's scope and takes an
// AdamW step.
func finishStep(s *torch.Scope, loss *torch.Tensor, opt *torch.AdamW) error {
	if err := s.Err(); err != nil {
		s.Close()
		return err
	}
	if err := loss.Backward(nil); err != nil {
		s.Close()
		return err
	}
	if err := s.Close(); err != nil {
		return err
	}
	return opt.Step(1e-4)
}

// causalMask is a (T,T) additive mask: 0 on and below the diagonal, -inf above.
func causalMask(t int) (*torch.Tensor, error) {
	m := make([]float32, t*t)
	for i := range t {
		for j := i + 1; j < t; j++ {
			m[i*t+j] = float32(math.Inf(-1))
		}
	}
	return torch.From(m, int64(t), int64(t))
}

// Workloads lists the training-step workloads in the order benchall runs them.
func Workloads() []Workload { return []Workload{MLPStep(), AttentionStep()} }

// ByName finds a workload.
func ByName(name string) (Workload, error) {
	for _, w := range Workloads() {
		if w.Name == name {
			return w, nil
		}
	}
	return Workload{}, fmt.Errorf("bench: unknown workload %q", name)
}
