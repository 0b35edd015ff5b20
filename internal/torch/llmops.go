package torch

import "ragen/internal/torch/csrc"

// Fused ops for package llm (Qwen2-family models). Each is one C call over
// whole tensors; see csrc/shim_llm.cc.

// LLMWeights are the tensors of a Qwen2 model in the order the fused forward
// expects.
type LLMWeights struct {
	Embed  *Tensor      // (V,E)
	Layers [][7]*Tensor // per layer: ln1 (E), wqkv (Q+2K,E), bqkv (Q+2K), wo (E,Q), ln2 (E), wgu (2I,E), wd (E,I)
	Norm   *Tensor      // (E)
	Head   *Tensor      // (V,E), or nil for hidden states
	// LoRA, if non-nil, holds per layer the (A,B) pairs for q,k,v,o,gate,up,down (nil where off).
	LoRA      [][14]*Tensor
	LoRAScale float64
}

// LLMShape is the attention geometry.
type LLMShape struct {
	Heads, KVHeads, HeadDim int
	Eps                     float64
}

// LLMForwardArgs are the inputs of one forward pass.
type LLMForwardArgs struct {
	IDs, Pos *Tensor   // (B,T) int64
	Cos, Sin *Tensor   // rotary tables (P,D)
	KeyBias  *Tensor   // (B, >= Lk) float32: 0 attend, lowest float mask
	KV       []*Tensor // nil, or 2 per layer (B,KV,Lmax,D), written in place
	CachePos int64     // slot of the first of the T new tokens in the cache
	LastOnly bool      // head on the last time step only
	NoGrad   bool      // run without recording autograd history
}

// LLMForward runs the whole model in one C call and returns logits (B,T,V)
// ((B,1,V) with LastOnly), or final hidden states when w.Head is nil.
func (s *Scope) LLMForward(w *LLMWeights, sh LLMShape, a LLMForwardArgs) *Tensor {
	ws := make([]*Tensor, 0, 3+7*len(w.Layers))
	ws = append(ws, w.Embed)
	for _, l := range w.Layers {
		ws = append(ws, l[:]...)
	}
	ws = append(ws, w.Norm)
	in := append(append([]*Tensor{}, ws...), a.IDs, a.Pos, a.Cos, a.Sin, a.KeyBias)
	in = append(in, a.KV...)
	if w.Head != nil {
		in = append(in, w.Head)
	}
	if !s.ok(in...) {
		return nil
	}
	hs := make([]csrc.Tensor, len(ws)+1)
	for i, t := range ws {
		hs[i] = t.handle()
	}
	hs[len(ws)] = w.Head.handle() // nil head -> NULL

	var lora, kvs []csrc.Tensor // nil -> NULL
	if w.LoRA != nil {
		if len(w.LoRA) != len(w.Layers) {
			s.Errorf("llm_forward", "%d LoRA layers for %d layers", len(w.LoRA), len(w.Layers))
			return nil
		}
		lora = make([]csrc.Tensor, 14*len(w.LoRA))
		for i, l := range w.LoRA {
			for j, t := range l {
				lora[14*i+j] = t.handle()
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
			kvs[i] = t.handle()
		}
	}
	return s.put(csrc.LLMForward(hs, len(w.Layers), lora, w.LoRAScale, sh.Heads, sh.KVHeads, sh.HeadDim, sh.Eps,
		a.IDs.handle(), a.Pos.handle(), a.Cos.handle(), a.Sin.handle(), a.KeyBias.handle(), kvs,
		a.CachePos, a.LastOnly, a.NoGrad))
}

// LLMKeyBias turns a (B,L) 0/1 attention mask into an additive float32 bias:
// 0 where attended, the lowest float32 where masked.
func (s *Scope) LLMKeyBias(attn *Tensor) *Tensor {
	if !s.ok(attn) {
		return nil
	}
	return s.put(csrc.LLMKeyBias(attn.handle()))
}

// LLMTokenLogProbs returns float32 (B,T) log-probs of ids under
// log_softmax(logits[:,t-1]/temperature) (0 at t=0) and, if withEntropy, the
// entropy of the same distributions (else nil). chunk bounds the time steps
// whose log-softmax is materialised at once (< 1: all).
func (s *Scope) LLMTokenLogProbs(logits, ids *Tensor, temperature float64, withEntropy bool, chunk int64) (logp, entropy *Tensor) {
	if !s.ok(logits, ids) {
		return nil, nil
	}
	a, b, err := csrc.LLMTokenLogProbs(logits.handle(), ids.handle(), temperature, withEntropy, chunk)
	if err != nil {
		s.err = check(err)
		return nil, nil
	}
	logp = newTensor(a)
	s.ts = append(s.ts, logp)
	if !b.IsNil() {
		entropy = newTensor(b)
		s.ts = append(s.ts, entropy)
	}
	return logp, entropy
}

// LLMSample draws one id per row from logits (B,V) or the last step of
// (B,T,V): greedy when temperature <= 0, else softmax(logits/temperature)
// restricted to the top-k (k > 0) and the top-p nucleus (0 < p < 1), drawn
// with g. logp is the chosen id's log-probability under the unrestricted
// tempered distribution (float32).
func (s *Scope) LLMSample(logits *Tensor, temperature float64, topK int, topP float64, g *Generator) (ids, logp *Tensor) {
	if !s.ok(logits) {
		return nil, nil
	}
	var gh csrc.Gen
	if g != nil {
		gh = g.handle()
		if gh.IsNil() {
			s.err = ErrFreed
			return nil, nil
		}
	}
	return s.put2(csrc.LLMSample(logits.handle(), temperature, int64(topK), topP, gh))
}

// SelectRowsInPlace replaces each tensor by its index_select(dim, idx),
// keeping the *Tensor identities (used to drop finished sequences from KV
// caches). Nil entries are skipped.
func SelectRowsInPlace(ts []*Tensor, dim int64, idx *Tensor) error {
	if idx.handle().IsNil() {
		return ErrFreed
	}
	hs := make([]csrc.Tensor, len(ts))
	for i, t := range ts {
		if t != nil {
			if hs[i] = t.handle(); hs[i].IsNil() {
				return ErrFreed
			}
		}
	}
	if len(hs) == 0 {
		return nil
	}
	return check(csrc.LLMSelectRows(hs, dim, idx.handle()))
}

// KeepFreedMemory makes the C heap serve allocations below bytes (at most
// 1 GiB) from memory it keeps after frees, instead of fresh mmap'd pages that
// cost a page fault each (glibc mallopt M_MMAP_THRESHOLD/M_TRIM_THRESHOLD).
// It speeds up training steps that allocate the same large buffers every
// step, at the price of a resident set that stays at its peak. Process-wide.
func KeepFreedMemory(bytes int64) { csrc.LLMMallocTune(bytes) }

// LLMHeadLogProbs is LLMTokenLogProbs computed from final hidden states
// (B,T,E) and the LM head (V,E), with the logits materialised one time chunk
// at a time.
func (s *Scope) LLMHeadLogProbs(hidden, head, ids *Tensor, temperature float64, withEntropy bool, chunk int64) (logp, entropy *Tensor) {
	if !s.ok(hidden, head, ids) {
		return nil, nil
	}
	a, b, err := csrc.LLMHeadLogProbs(hidden.handle(), head.handle(), ids.handle(), temperature, withEntropy, chunk)
	if err != nil {
		s.err = check(err)
		return nil, nil
	}
	logp = newTensor(a)
	s.ts = append(s.ts, logp)
	if !b.IsNil() {
		entropy = newTensor(b)
		s.ts = append(s.ts, entropy)
	}
	return logp, entropy
}
