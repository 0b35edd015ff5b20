// Package fused holds the fused C++ forward of a pre-norm decoder
// (csrc/shim_llm.cc): the whole model in one C call over whole tensors. It
// is package llm's fast path for prefill and decode. It knows weight roles
// (Layer), not model families: package llm's family files map Hugging Face
// names onto the roles and build the rotary tables (RoPE scaling included).
package fused

import (
	"ragen/internal/torch/bridge"
	"ragen/internal/torch/csrc"
	"ragen/torch"
)

func h(t *torch.Tensor) csrc.Tensor { return bridge.Handle(t) }

// ok reports whether s may run an op on ts, failing s with torch.ErrFreed
// when one of them is nil or freed.
func ok(s *torch.Scope, ts ...*torch.Tensor) bool {
	if s.Err() != nil {
		return false
	}
	for _, t := range ts {
		if h(t).IsNil() {
			bridge.Fail(s, torch.ErrFreed)
			return false
		}
	}
	return true
}

func put(s *torch.Scope, c csrc.Tensor, err error) *torch.Tensor {
	t, _ := bridge.Put(s, c, err).(*torch.Tensor)
	return t
}

// Layer holds one decoder layer's weights by role. QKVBias, QNorm and KNorm
// are optional (nil: the layer has none).
type Layer struct {
	Ln1     *torch.Tensor // (E) input RMSNorm
	QKV     *torch.Tensor // (Q+2K,E): q, k, v projections stacked
	QKVBias *torch.Tensor // (Q+2K) or nil
	QNorm   *torch.Tensor // (D) per-head RMSNorm of q before RoPE, or nil
	KNorm   *torch.Tensor // (D) per-head RMSNorm of k before RoPE, or nil
	O       *torch.Tensor // (E,Q)
	Ln2     *torch.Tensor // (E) post-attention RMSNorm
	GateUp  *torch.Tensor // (2I,E): gate and up projections stacked
	Down    *torch.Tensor // (E,I)
}

// roles lists l's tensors in shim.h's tt_llm_role order.
func (l *Layer) roles() []*torch.Tensor {
	return []*torch.Tensor{l.Ln1, l.QKV, l.QKVBias, l.QNorm, l.KNorm, l.O, l.Ln2, l.GateUp, l.Down}
}

// Weights are the tensors of a decoder.
type Weights struct {
	Embed  *torch.Tensor // (V,E)
	Layers []Layer
	Norm   *torch.Tensor // (E)
	Head   *torch.Tensor // (V,E), or nil for hidden states
	// LoRA, if non-nil, holds per layer the (A,B) pairs for q,k,v,o,gate,up,down (nil where off).
	LoRA      [][14]*torch.Tensor
	LoRAScale float64
}

// Shape is the attention geometry.
type Shape struct {
	Heads, KVHeads, HeadDim int
	Eps                     float64
}

// ForwardArgs are the inputs of one forward pass.
type ForwardArgs struct {
	IDs, Pos *torch.Tensor   // (B,T) int64
	Cos, Sin *torch.Tensor   // rotary tables (P,D)
	KeyBias  *torch.Tensor   // (B, >= Lk) float32: 0 attend, lowest float mask
	KV       []*torch.Tensor // nil, or 2 per layer (B,KV,Lmax,D), written in place
	CachePos int64           // slot of the first of the T new tokens in the cache
	LastOnly bool            // head on the last time step only
	NoGrad   bool            // run without recording autograd history
}

// Forward runs the whole model in one C call and returns logits (B,T,V)
// ((B,1,V) with LastOnly), or final hidden states when w.Head is nil.
func Forward(s *torch.Scope, w *Weights, sh Shape, a ForwardArgs) *torch.Tensor {
	if len(w.Layers) > 0 && len(w.Layers[0].roles()) != csrc.LLMRoles {
		s.Errorf("llm_forward", "fused.Layer has %d roles, the shim %d", len(w.Layers[0].roles()), csrc.LLMRoles)
		return nil
	}
	// required tensors are checked here (freed or missing -> ErrFreed);
	// optional roles pass as NULL when nil
	req := []*torch.Tensor{w.Embed, w.Norm, a.IDs, a.Pos, a.Cos, a.Sin, a.KeyBias}
	hs := []csrc.Tensor{h(w.Embed)}
	for i := range w.Layers {
		l := &w.Layers[i]
		req = append(req, l.Ln1, l.QKV, l.O, l.Ln2, l.GateUp, l.Down)
		for _, t := range l.roles() {
			if t != nil && h(t).IsNil() {
				bridge.Fail(s, torch.ErrFreed)
				return nil
			}
			hs = append(hs, h(t))
		}
	}
	hs = append(hs, h(w.Norm), h(w.Head)) // nil head -> NULL
	req = append(req, a.KV...)
	if w.Head != nil {
		req = append(req, w.Head)
	}
	if !ok(s, req...) {
		return nil
	}

	var lora, kvs []csrc.Tensor // nil -> NULL
	if w.LoRA != nil {
		if len(w.LoRA) != len(w.Layers) {
			s.Errorf("llm_forward", "%d LoRA layers for %d layers", len(w.LoRA), len(w.Layers))
			return nil
		}
		lora = make([]csrc.Tensor, 14*len(w.LoRA))
		for i, l := range w.LoRA {
			for j, t := range l {
				lora[14*i+j] = h(t)
			}
		}
	}
	if a.KV != nil {
		if len(a.KV) != 2*len(w.Layers) {
			s.Errorf("llm_forward", "%d KV caches for %d layers", len(a.KV), len(w.Layers))
			return nil
		}
		kvs = make([]csrc.Tensor, len(a.KV))
		for i, t := range a.KV {
			kvs[i] = h(t)
		}
	}
	out, err := csrc.LLMForward(hs, len(w.Layers), lora, w.LoRAScale, sh.Heads, sh.KVHeads, sh.HeadDim, sh.Eps,
		h(a.IDs), h(a.Pos), h(a.Cos), h(a.Sin), h(a.KeyBias), kvs,
		a.CachePos, a.LastOnly, a.NoGrad)
	return put(s, out, err)
}
