package csrc

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Fused decoder ops (shim_llm.cc), used by package llm through package fused.

// LLMRoles is the number of weight handles per layer of LLMForward
// (shim.h's tt_llm_role: ln1, qkv, qkv bias, q norm, k norm, o, ln2,
// gate_up, down).
const LLMRoles = int(C.TT_LLM_ROLES)

// LLMForward runs one whole forward pass (tt_llm_forward). w holds the embed,
// then LLMRoles handles per layer (NULL for an absent optional role), the
// final norm and the LM head (NULL: return the normed hidden states):
// LLMRoles*nLayers+3 handles. lora is nil or 14 handles per layer (NULL where
// off); kv is nil or 2 per layer, written in place at cachePos.
func LLMForward(w []Tensor, nLayers int, lora []Tensor, loraScale float64, nHeads, nKV, headDim int, eps float64,
	ids, pos, cos, sin, kbias Tensor, kv []Tensor, cachePos int64, lastOnly, noGrad bool) (Tensor, error) {
	switch {
	case len(w) != LLMRoles*nLayers+3:
		return Tensor{}, &Error{Op: "llm_forward", Msg: fmt.Sprintf("%d weights for %d layers", len(w), nLayers)}
	case lora != nil && len(lora) != 14*nLayers:
		return Tensor{}, &Error{Op: "llm_forward", Msg: fmt.Sprintf("%d LoRA tensors for %d layers", len(lora), nLayers)}
	case kv != nil && len(kv) != 2*nLayers:
		return Tensor{}, &Error{Op: "llm_forward", Msg: fmt.Sprintf("%d KV caches for %d layers", len(kv), nLayers)}
	}
	var h C.tt_tensor
	var e C.tt_err
	Heavy(func() { // worker.go
		e = C.tt_llm_forward(list(w), C.int(nLayers), list(lora), C.double(loraScale), C.int(nHeads), C.int(nKV),
			C.int(headDim), C.double(eps), ids.p, pos.p, cos.p, sin.p, kbias.p, list(kv), C.int64_t(cachePos),
			b2i(lastOnly), b2i(noGrad), &h)
	})
	return out1(e, h)
}

// KeyBias turns a (B,L) 0/1 attention mask into an additive float32 key
// bias (tt_llm_key_bias).
func KeyBias(attn Tensor) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_llm_key_bias(attn.p, &h), h)
}

// TokenLogProbs returns the log-probs of ids under the tempered logits
// and, if withEntropy, their entropies (else NULL) (tt_llm_token_logprobs).
func TokenLogProbs(logits, ids Tensor, temperature float64, withEntropy bool, chunk int64) (logp, ent Tensor, err error) {
	var a, b C.tt_tensor
	return out2(C.tt_llm_token_logprobs(logits.p, ids.p, C.double(temperature), b2i(withEntropy), C.int64_t(chunk), &a, &b), a, b)
}

// HeadLogProbs is TokenLogProbs from final hidden states and the LM
// head (tt_llm_head_logprobs).
func HeadLogProbs(hidden, head, ids Tensor, temperature float64, withEntropy bool, chunk int64) (logp, ent Tensor, err error) {
	var a, b C.tt_tensor
	return out2(C.tt_llm_head_logprobs(hidden.p, head.p, ids.p, C.double(temperature), b2i(withEntropy), C.int64_t(chunk), &a, &b), a, b)
}

// Sample draws one id per row of logits and returns the ids and their
// log-probs (tt_llm_sample). g may be NULL (the default generator).
func Sample(logits Tensor, temperature float64, topK int64, topP float64, g Gen) (ids, logp Tensor, err error) {
	var a, b C.tt_tensor
	return out2(C.tt_llm_sample(logits.p, C.double(temperature), C.int64_t(topK), C.double(topP), g.p, &a, &b), a, b)
}

// SampleRows is Sample with one generator per row of logits (a zero Gen:
// the row is not drawn and gets its greedy id) (tt_llm_sample_rows).
func SampleRows(logits Tensor, temperature float64, topK int64, topP float64, gens []Gen) (ids, logp Tensor, err error) {
	var a, b C.tt_tensor
	var gp *C.tt_gen
	if len(gens) > 0 {
		gp = (*C.tt_gen)(unsafe.Pointer(unsafe.SliceData(gens)))
	}
	return out2(C.tt_llm_sample_rows(logits.p, C.double(temperature), C.int64_t(topK), C.double(topP), gp, C.int(len(gens)), &a, &b), a, b)
}

// LLMSelectRows replaces each non-NULL tensor of ts by its index_select(dim,
// idx), in place behind the same handles (tt_llm_select_rows).
func LLMSelectRows(ts []Tensor, dim int64, idx Tensor) error {
	return check(C.tt_llm_select_rows(list(ts), C.int(len(ts)), C.int64_t(dim), idx.p))
}

// LLMMallocTune keeps freed C heap memory for allocations below bytes
// (tt_llm_malloc_tune).
func LLMMallocTune(bytes int64) { C.tt_llm_malloc_tune(C.int64_t(bytes)) }

// LLMMallocRelease returns the C heap's free memory to the OS
// (tt_llm_malloc_release).
func LLMMallocRelease() { C.tt_llm_malloc_release() }

// RMSNorm is x / rms(x) * w over the last dim, in float32 math (tt_rms_norm).
func RMSNorm(x, w Tensor, eps float64) (Tensor, error) {
	var h C.tt_tensor
	var e C.tt_err
	Heavy(func() { e = C.tt_rms_norm(x.p, w.p, C.double(eps), &h) })
	return out1(e, h)
}

// SwiGLU is silu(gu[..., :I]) * gu[..., I:] (tt_swiglu).
func SwiGLU(gu Tensor) (Tensor, error) {
	var h C.tt_tensor
	var e C.tt_err
	Heavy(func() { e = C.tt_swiglu(gu.p, &h) })
	return out1(e, h)
}

// Rope rotates x (B,N,T,D) by the tables cos and sin (B,1,T,D) (tt_rope).
func Rope(x, cos, sin Tensor) (Tensor, error) {
	var h C.tt_tensor
	var e C.tt_err
	Heavy(func() { e = C.tt_rope(x.p, cos.p, sin.p, &h) })
	return out1(e, h)
}

// GQAAttention is causal grouped-query attention with a key bias
// (tt_gqa_attention).
func GQAAttention(q, k, v, kbias Tensor, offset int64, scale float64) (Tensor, error) {
	var h C.tt_tensor
	var e C.tt_err
	Heavy(func() { e = C.tt_gqa_attention(q.p, k.p, v.p, kbias.p, C.int64_t(offset), C.double(scale), &h) })
	return out1(e, h)
}
