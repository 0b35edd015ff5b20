// Package fused holds the fused C++ forward of the Qwen2-family decoder
// (csrc/shim_llm.cc): the whole model in one C call over whole tensors. It
// is package llm's fast path for prefill and decode; the layout of the
// weights it takes is the one Weights documents.
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

// Weights are the tensors of a Qwen2 model in the order the fused forward
// expects.
type Weights struct {
	Embed  *torch.Tensor      // (V,E)
	Layers [][7]*torch.Tensor // per layer: ln1 (E), wqkv (Q+2K,E), bqkv (Q+2K), wo (E,Q), ln2 (E), wgu (2I,E), wd (E,I)
	Norm   *torch.Tensor      // (E)
	Head   *torch.Tensor      // (V,E), or nil for hidden states
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
	ws := make([]*torch.Tensor, 0, 3+7*len(w.Layers))
	ws = append(ws, w.Embed)
	for _, l := range w.Layers {
		ws = append(ws, l[:]...)
	}
	ws = append(ws, w.Norm)
	in := append(append([]*torch.Tensor{}, ws...), a.IDs, a.Pos, a.Cos, a.Sin, a.KeyBias)
	in = append(in, a.KV...)
	if w.Head != nil {
		in = append(in, w.Head)
	}
	if !ok(s, in...) {
		return nil
	}
	hs := make([]csrc.Tensor, len(ws)+1)
	for i, t := range ws {
		hs[i] = h(t)
	}
	hs[len(ws)] = h(w.Head) // nil head -> NULL

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
