package torch

import "ragen/internal/torch/csrc"

// headKeepElems is the logit count up to which HeadLogProbs keeps log p for
// the backward rather than recomputing it (a variable for the tests).
var headKeepElems int64 = 1 << 27

// KeyBias turns a (B,L) 0/1 attention mask into an additive float32 bias:
// 0 where attended, the lowest float32 where masked.
func (s *Scope) KeyBias(attn *Tensor) *Tensor {
	if !s.ok(attn) {
		return nil
	}
	return s.put(csrc.KeyBias(attn.handle()))
}

// TokenLogProbs returns float32 (B,T) log-probs of ids under
// log_softmax(logits[:,t-1]/temperature) (0 at t=0) and, if withEntropy, the
// entropy of the same distributions (else nil). chunk bounds the time steps
// whose log-softmax is materialised at once (< 1: all).
func (s *Scope) TokenLogProbs(logits, ids *Tensor, temperature float64, withEntropy bool, chunk int64) (logp, entropy *Tensor) {
	if !s.ok(logits, ids) {
		return nil, nil
	}
	var a, b csrc.Tensor
	var err error
	csrc.Heavy(func() { a, b, err = csrc.TokenLogProbs(logits.handle(), ids.handle(), temperature, withEntropy, chunk) })
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

// Sample draws one id per row from logits (B,V) or the last step of
// (B,T,V): greedy when temperature <= 0, else softmax(logits/temperature)
// restricted to the top-k (k > 0) and the top-p nucleus (0 < p < 1), drawn
// with g. logp is the chosen id's log-probability under the unrestricted
// tempered distribution (float32).
func (s *Scope) Sample(logits *Tensor, temperature float64, topK int, topP float64, g *Generator) (ids, logp *Tensor) {
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
	var a, b csrc.Tensor
	var err error
	csrc.Heavy(func() { a, b, err = csrc.Sample(logits.handle(), temperature, int64(topK), topP, gh) })
	return s.put2(a, b, err)
}

// SampleRows is Sample with one generator per row of logits, each row
// drawing from its own (len(gens) must be the number of rows): the ids of
// calling Sample on each row alone, in one call that draws the rows in
// parallel. A nil generator leaves its row undrawn (its id is the greedy
// one and no generator advances).
func (s *Scope) SampleRows(logits *Tensor, temperature float64, topK int, topP float64, gens []*Generator) (ids, logp *Tensor) {
	if !s.ok(logits) {
		return nil, nil
	}
	gh := make([]csrc.Gen, len(gens))
	for i, g := range gens {
		if g != nil {
			if gh[i] = g.handle(); gh[i].IsNil() {
				s.err = ErrFreed
				return nil, nil
			}
		}
	}
	var a, b csrc.Tensor
	var err error
	csrc.Heavy(func() { a, b, err = csrc.SampleRows(logits.handle(), temperature, int64(topK), topP, gh) })
	return s.put2(a, b, err)
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
// cost a page fault each (glibc mallopt: M_MMAP_THRESHOLD at bytes, no
// M_TRIM_THRESHOLD trimming, and one arena: torch runs on its own OS thread,
// whose arena would mmap every block over 64 MiB afresh). It speeds up
// training steps that allocate the same large buffers every step, at the
// price of a resident set that stays at its peak; ReleaseFreedMemory gives
// the free part back. Process-wide. The shim applies KeepFreedMemory(1<<30)
// when the program loads, before any thread exists (a thread that allocated
// before would keep an arena of its own), unless the environment sets
// RAGEN_KEEP_FREED_MEMORY=0.
func KeepFreedMemory(bytes int64) { csrc.LLMMallocTune(bytes) }

// ReleaseFreedMemory returns the C heap's free memory to the OS (glibc
// malloc_trim), for a program that kept freed memory (KeepFreedMemory) and
// is done with its largest steps, or is about to hand memory to another
// process. Tensors stay as they are.
func ReleaseFreedMemory() { csrc.LLMMallocRelease() }

// HeadLogProbs is TokenLogProbs computed from final hidden states
// (B,T,E) and the LM head (V,E) without ever holding the (B,T,V) logits: the
// head, log-softmax and entropy run one time chunk of (B,chunk,V) at a time,
// and with gradients they form one autograd node whose backward recomputes
// each chunk's logits and applies the closed-form gradients (so training
// keeps one float per token for the backward, not the logits and their
// softmax). When all the logits fit in 2^27 floats (512 MB) the node keeps
// one float32 copy of log p instead, and the backward skips the recompute of
// the head. chunk < 1: all time steps at once.
func (s *Scope) HeadLogProbs(hidden, head, ids *Tensor, temperature float64, withEntropy bool, chunk int64) (logp, entropy *Tensor) {
	if !s.ok(hidden, head, ids) {
		return nil, nil
	}
	a, b, err := csrc.HeadLogProbsChunked(hidden.handle(), head.handle(), ids.handle(), temperature, withEntropy, chunk, headKeepElems)
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

// Decoder-layer ops. On a CPU with AVX2, for float32 and bfloat16 tensors,
// each is one fused kernel and, with gradients, one autograd node with its
// own backward that keeps less than the composition it replaces; elsewhere
// (CUDA, other dtypes) it is that ATen composition. Results equal the
// composition's to float rounding.

// RMSNorm is Hugging Face's RMSNorm over the last dim: x in float32 times
// rsqrt(mean(x^2) + eps), cast back to x's dtype, times w. x (..., N), w (N)
// in x's dtype. With gradients it keeps x and one float per row.
func (s *Scope) RMSNorm(x, w *Tensor, eps float64) *Tensor {
	if !s.ok(x, w) {
		return nil
	}
	return s.put(csrc.RMSNorm(x.handle(), w.handle(), eps))
}

// SwiGLU is silu(gu[..., :I]) * gu[..., I:] for gu (..., 2I), the gated MLP
// activation of Llama and Qwen on the stacked gate and up projections. With
// gradients it keeps gu only.
func (s *Scope) SwiGLU(gu *Tensor) *Tensor {
	if !s.ok(gu) {
		return nil
	}
	return s.put(csrc.SwiGLU(gu.handle()))
}

// Rope is the rotary embedding x*cos + rotate_half(x)*sin, rotate_half(x) =
// (-x[D/2:], x[:D/2]), of x (B,N,T,D) (any strides; a transposed (B,T,N,D)
// view is fine) with the tables gathered at the positions, cos and sin
// (B,1,T,D) in x's dtype. Returns a contiguous (B,N,T,D).
func (s *Scope) Rope(x, cos, sin *Tensor) *Tensor {
	if !s.ok(x, cos, sin) {
		return nil
	}
	return s.put(csrc.Rope(x.handle(), cos.handle(), sin.handle()))
}

// GQAAttention is causal grouped-query softmax attention: q (B,H,T,D), k and
// v (B,KV,Lk,D) with H a multiple of KV (query heads h*H/KV .. share KV head
// h), keyBias the float32 additive key bias (B, >= Lk) of KeyBias, and query
// t at position offset+t attending keys j <= offset+t (offset 0 for a
// whole sequence, the cache length for a continuation). Scores are
// q k^T * scale (1/sqrt(D) in the models), softmax in float32. Returns
// (B,T,H*D). A query whose keys are all masked (left padding) attends all Lk
// keys evenly, as the additive-mask softmax does. The fused form works one
// block of query times at a time and skips the keys causality hides; with
// gradients it keeps one float per query row instead of the (B,H,T,Lk)
// probabilities, and its backward recomputes each block's scores.
func (s *Scope) GQAAttention(q, k, v, keyBias *Tensor, offset int64, scale float64) *Tensor {
	if !s.ok(q, k, v, keyBias) {
		return nil
	}
	return s.put(csrc.GQAAttention(q.handle(), k.handle(), v.handle(), keyBias.handle(), offset, scale))
}
