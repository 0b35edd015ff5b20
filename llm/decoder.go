package llm

import (
	"fmt"
	"math"

	"ragen/torch"
)

// The Go forward: the decoder over ragen/torch ops, one op per line, each
// family's layer function composing the blocks below. It is the readable
// definition of every family and the training forward. RMSNorm, RoPE,
// attention and SwiGLU run as the fused ops of package torch (one kernel
// and one autograd node each); with Model.referenceOps the blocks compose
// them from elementary ops instead, the reference that the fused ops
// (TestFusedOpsMatchReference) and the fused C++ forward of generation and
// scoring (internal/torch/fused, TestFusedMatchesGo) are tested against.
//
// Shapes: B batch, T time, E hidden, H query heads, KV key/value heads,
// D head dim, I intermediate, V vocabulary.

// block is what one layer's forward needs: its weights and the per-batch
// rotary tables and attention bias.
type block struct {
	s        *torch.Scope
	cfg      Config
	w        *layer
	lora     *[14]*torch.Tensor // nil without LoRA
	scale    float64            // LoRA alpha/rank
	cos, sin *torch.Tensor      // (B,1,T,D) in the model dtype
	kb       *torch.Tensor      // (B,T) float32 additive key bias (padding)
	bias     *torch.Tensor      // reference ops: (B,1,1,T,T) float32 additive, key padding + causal
	ref      bool               // compose every op from elementary ones (the reference the fused ops are tested against)
	B, T     int64
}

// rmsNorm is HF's RMSNorm over the last dim: in float32, cast back, scaled.
func (b *block) rmsNorm(x, w *torch.Tensor) *torch.Tensor {
	s := b.s
	if !b.ref {
		return s.RMSNorm(x, w, b.cfg.RMSNormEps)
	}
	xf := s.Cast(x, torch.Float32)
	v := s.Mean(s.Square(xf), true, -1)                  // (...,1)
	xf = s.Mul(xf, s.Rsqrt(s.AddS(v, b.cfg.RMSNormEps))) // (...,n)
	return s.Mul(w, s.Cast(xf, x.DType()))
}

// linear is x @ w.T (+ bias) plus the LoRA delta of target t (-1: none).
func (b *block) linear(x, w, bias *torch.Tensor, t int) *torch.Tensor {
	s := b.s
	y := s.Linear(x, w, bias)
	return b.addLoRA(y, x, t)
}

// addLoRA adds scale * B(A(x)) of target t to y when that adapter is on.
func (b *block) addLoRA(y, x *torch.Tensor, t int) *torch.Tensor {
	if b.lora == nil || t < 0 || b.lora[2*t] == nil {
		return y
	}
	s := b.s
	d := s.Linear(s.Linear(x, b.lora[2*t], nil), b.lora[2*t+1], nil)
	return s.Add(y, s.MulS(d, b.scale))
}

// qkv projects h (B,T,E) to q (B,T,H*D), k and v (B,T,KV*D): one matmul on
// the stacked weight (with the qkv bias when the family has one), then the
// LoRA deltas of q, k and v.
func (b *block) qkv(h *torch.Tensor) (q, k, v *torch.Tensor) {
	s := b.s
	Q, K := b.q(), b.kv()
	y := s.Linear(h, b.w[rQKV], b.w[rQKVBias]) // (B,T,Q+2K)
	q = b.addLoRA(s.Narrow(y, 2, 0, Q), h, 0)
	k = b.addLoRA(s.Narrow(y, 2, Q, K), h, 1)
	v = b.addLoRA(s.Narrow(y, 2, Q+K, K), h, 2)
	return q, k, v
}

func (b *block) q() int64 { return int64(b.cfg.NumAttentionHeads * b.cfg.HeadDimension()) }
func (b *block) kv() int64 {
	return int64(b.cfg.NumKeyValueHeads * b.cfg.HeadDimension())
}

// heads splits (B,T,n*D) into (B,T,n,D).
func (b *block) heads(x *torch.Tensor, n int) *torch.Tensor {
	return b.s.View(x, b.B, b.T, int64(n), int64(b.cfg.HeadDimension()))
}

// rope rotates x (B,T,n,D) by the positions' angles and returns (B,n,T,D):
// x*cos + rotate_half(x)*sin, rotate_half(x) = (-x[D/2:], x[:D/2]).
func (b *block) rope(x *torch.Tensor) *torch.Tensor {
	s := b.s
	x = s.Transpose(x, 1, 2) // (B,n,T,D)
	if !b.ref {
		return s.Rope(x, b.cos, b.sin)
	}
	h := int64(b.cfg.HeadDimension() / 2)
	rot := s.Cat([]*torch.Tensor{s.Neg(s.Narrow(x, 3, h, h)), s.Narrow(x, 3, 0, h)}, 3)
	return s.Add(s.Mul(x, b.cos), s.Mul(rot, b.sin))
}

// attend is grouped-query attention: q (B,H,T,D), k and v (B,KV,T,D) ->
// (B,T,H*D). The G = H/KV query heads of a group share one K/V head; they
// are stacked along time so that K and V are never copied.
func (b *block) attend(q, k, v *torch.Tensor) *torch.Tensor {
	s := b.s
	H, KV, D := int64(b.cfg.NumAttentionHeads), int64(b.cfg.NumKeyValueHeads), int64(b.cfg.HeadDimension())
	if !b.ref {
		return s.GQAAttention(q, k, v, b.kb, 0, 1/math.Sqrt(float64(D)))
	}
	G, B, T := H/KV, b.B, b.T
	qg := s.Reshape(q, B, KV, G*T, D)                                         // (B,KV,G*T,D)
	sc := s.MulS(s.MatMul(qg, s.Transpose(k, 2, 3)), 1/math.Sqrt(float64(D))) // (B,KV,G*T,T)
	sc = s.Add(s.Cast(s.View(sc, B, KV, G, T, T), torch.Float32), b.bias)     // (B,KV,G,T,T)
	p := s.Cast(s.View(s.Softmax(sc, -1), B, KV, G*T, T), q.DType())          // (B,KV,G*T,T)
	a := s.Transpose(s.View(s.MatMul(p, v), B, H, T, D), 1, 2)                // (B,T,H,D)
	return s.Reshape(a, B, T, H*D)                                            // (B,T,H*D)
}

// mlp is SwiGLU: down(silu(gate(h)) * up(h)), h (B,T,E) -> (B,T,E).
func (b *block) mlp(h *torch.Tensor) *torch.Tensor {
	s := b.s
	I := int64(b.cfg.IntermediateSize)
	gu := s.Linear(h, b.w[rGateUp], nil) // (B,T,2I)
	g := b.addLoRA(s.Narrow(gu, 2, 0, I), h, 4)
	u := b.addLoRA(s.Narrow(gu, 2, I, I), h, 5)
	if b.ref {
		return b.linear(s.Mul(s.SiLU(g), u), b.w[rDown], nil, 6)
	}
	if b.lora != nil && (b.lora[8] != nil || b.lora[10] != nil) {
		gu = s.Cat([]*torch.Tensor{g, u}, 2)
	}
	return b.linear(s.SwiGLU(gu), b.w[rDown], nil, 6)
}

// goForward is Forward over ragen/torch ops: ids, positions, attn (B,T) ->
// logits (B,T,V), or final hidden states (B,T,E) without head.
func (m *Model) goForward(s *torch.Scope, ids, positions, attn *torch.Tensor, head bool) *torch.Tensor {
	if s.Err() != nil {
		return nil
	}
	if ids == nil || !ids.Valid() || ids.Dim() != 2 {
		s.Errorf("llm_forward", "ids must be a live (B,T) tensor")
		return nil
	}
	B, T := ids.Size(0), ids.Size(1)
	if err := m.ensureRope(int(T)); err != nil {
		s.Fail(fmt.Errorf("llm: rotary table: %w", err))
		return nil
	}
	D, dt := int64(m.cfg.HeadDimension()), m.ComputeDType()
	mixed := dt != m.opt.DType
	x := s.Embedding(m.embed, ids) // (B,T,E)
	if mixed {
		x = s.Cast(x, dt)
	}
	p := s.Reshape(positions, -1)
	cos := s.Cast(s.View(s.IndexSelect(m.cos, 0, p), B, 1, T, D), dt) // (B,1,T,D)
	sin := s.Cast(s.View(s.IndexSelect(m.sin, 0, p), B, 1, T, D), dt)
	kb := s.To(s.KeyBias(attn), torch.Float32, m.opt.Device) // (B,T)
	b := &block{s: s, cfg: m.cfg, cos: cos, sin: sin, kb: kb, ref: m.referenceOps, B: B, T: T}
	if b.ref {
		// additive bias (B,1,1,T,T): key padding plus causal, lowest float where masked
		lowest := -math.MaxFloat32
		causal := make([]float32, T*T)
		for t := int64(0); t < T; t++ {
			for j := t + 1; j < T; j++ {
				causal[t*T+j] = float32(lowest)
			}
		}
		cm := s.Own(upload(causal, m.opt.Device, 1, 1, 1, T, T))
		b.bias = s.MaxS(s.Add(s.View(kb, B, 1, 1, 1, T), cm), lowest)
	}
	if m.lora != nil {
		b.scale = m.lora.scale
	}
	// each layer's intermediates live in a scope of their own, closed after
	// the layer: without gradients they are freed at once; with gradients
	// autograd keeps what backward needs (Close drops only our reference)
	for i := range m.layers {
		ls := torch.NewScope()
		b.s, b.w = ls, &m.layers[i]
		if m.lora != nil {
			b.lora = &m.lora.layers[i]
		}
		if mixed { // compute copies; their gradients flow back to the master weights
			b.w, b.lora = castLayer(ls, b.w, dt), castLoRA(ls, b.lora, dt)
		}
		var y *torch.Tensor
		if m.checkpointing() {
			y = ls.Escape(m.checkpointLayer(b, x)) // (B,T,E); recomputed in backward
		} else {
			y = ls.Escape(m.fam.layer(b, x)) // (B,T,E)
		}
		if err := ls.Close(); err != nil {
			s.Fail(fmt.Errorf("llm: layer %d: %w", i, err))
			return nil
		}
		x = s.Own(y, nil)
	}
	b.s = s
	nw := m.norm
	if mixed {
		nw = s.Cast(nw, dt)
	}
	x = b.rmsNorm(x, nw) // (B,T,E)
	if !head {
		return x
	}
	return s.Linear(x, m.computeHead(s), nil) // (B,T,V)
}

// computeHead is the LM head (the embedding when tied) in the compute dtype.
func (m *Model) computeHead(s *torch.Scope) *torch.Tensor { return m.headIn(s, m.ComputeDType()) }

// headIn is the LM head (the embedding when tied) in dt: a cast made in s
// when dt differs from the parameters' dtype, the parameter otherwise.
func (m *Model) headIn(s *torch.Scope, dt torch.DType) *torch.Tensor {
	w := m.head
	if w == nil {
		w = m.embed
	}
	if dt != m.opt.DType {
		return s.Cast(w, dt)
	}
	return w
}

// castLayer returns the layer's weights cast to dt (nil roles stay nil).
func castLayer(s *torch.Scope, l *layer, dt torch.DType) *layer {
	var out layer
	castEach(s, out[:], l[:], dt)
	return &out
}

// castLoRA returns the adapters cast to dt (nil when LoRA is off).
func castLoRA(s *torch.Scope, l *[14]*torch.Tensor, dt torch.DType) *[14]*torch.Tensor {
	if l == nil {
		return nil
	}
	var out [14]*torch.Tensor
	castEach(s, out[:], l[:], dt)
	return &out
}

// castEach sets dst[i] to src[i] cast to dt, leaving nil entries nil.
func castEach(s *torch.Scope, dst, src []*torch.Tensor, dt torch.DType) {
	for i, t := range src {
		if t != nil {
			dst[i] = s.Cast(t, dt)
		}
	}
}
