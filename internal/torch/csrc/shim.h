/* shim.h - the C ABI between Go and libtorch (ATen).
 *
 * Only C types cross this boundary. Tensors are opaque handles to a
 * heap-allocated at::Tensor (a counted reference). Every call that can throw
 * returns a tt_err: NULL on success, else a malloc'd message "op: reason"
 * that the caller frees. There is no thread-local error state.
 *
 * The same file builds into the Go package (cgo) and, unchanged, into a
 * standalone shared library (libragen_torch.so) for machines with a PyTorch
 * wheel but no Go toolchain.
 */
#ifndef RAGEN_TORCH_SHIM_H
#define RAGEN_TORCH_SHIM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tt_tensor_s* tt_tensor;
typedef struct tt_gen_s* tt_gen;
typedef char* tt_err;

/* dtypes */
enum { TT_F32 = 0, TT_F64 = 1, TT_I64 = 2, TT_I32 = 3, TT_BOOL = 4, TT_BF16 = 5, TT_F16 = 6, TT_U8 = 7 };
/* devices: TT_CPU or a CUDA ordinal >= 0 */
enum { TT_CPU = -1 };

/* unary ops (tt_unary) */
enum {
  TT_NEG, TT_EXP, TT_LOG, TT_SQRT, TT_RSQRT, TT_ABS, TT_SIGN, TT_SILU, TT_GELU, TT_GELU_TANH,
  TT_SIGMOID, TT_TANH, TT_COS, TT_SIN, TT_RELU, TT_CONTIGUOUS, TT_LOGICAL_NOT, TT_RECIPROCAL,
  TT_SQUARE, TT_CLONE, TT_DETACH, TT_ISNAN, TT_LOG1P, TT_FLOOR,
  TT_UNARY_COUNT
};
/* binary tensor-tensor ops (tt_binary) */
enum {
  TT_ADD, TT_SUB, TT_MUL, TT_DIV, TT_POW, TT_MINIMUM, TT_MAXIMUM, TT_EQ, TT_NE, TT_LT, TT_LE,
  TT_GT, TT_GE, TT_MATMUL, TT_BMM, TT_LOGICAL_AND, TT_LOGICAL_OR,
  TT_BINARY_COUNT
};
/* tensor-scalar ops (tt_scalar); TT_RSUB_S computes s - a, TT_RDIV_S s / a */
enum {
  TT_ADD_S, TT_SUB_S, TT_MUL_S, TT_DIV_S, TT_POW_S, TT_RSUB_S, TT_RDIV_S, TT_EQ_S, TT_NE_S,
  TT_LT_S, TT_LE_S, TT_GT_S, TT_GE_S, TT_MINIMUM_S, TT_MAXIMUM_S,
  TT_SCALAR_COUNT
};
/* reductions over dims (tt_reduce); ndims == 0 reduces all elements */
enum {
  TT_SUM, TT_MEAN, TT_VAR, TT_STD, TT_VAR_POP, TT_STD_POP, TT_AMAX, TT_AMIN, TT_LOGSUMEXP,
  TT_PROD, TT_ANY, TT_ALL, TT_NORM2,
  TT_REDUCE_COUNT
};

/* lifetime and queries */
int64_t tt_live(void);
void tt_free(tt_tensor t);
void tt_free_many(tt_tensor* ts, int n);
int tt_ndim(tt_tensor t);
void tt_shape(tt_tensor t, int64_t* out); /* out has tt_ndim entries */
int tt_dtype(tt_tensor t);
int tt_device(tt_tensor t);
int64_t tt_numel(tt_tensor t);
int tt_requires_grad(tt_tensor t);
int tt_is_contiguous(tt_tensor t);
tt_err tt_to_string(tt_tensor t, char** out); /* malloc'd */

/* creation and copy-out */
tt_err tt_from_data(const void* data, int dtype, const int64_t* shape, int ndim, int device, tt_tensor* out);
tt_err tt_copy_out(tt_tensor t, int dtype, void* dst, int64_t nbytes);
tt_err tt_full(const int64_t* shape, int ndim, double value, int dtype, int device, tt_tensor* out);
tt_err tt_arange(double start, double end, double step, int dtype, int device, tt_tensor* out);
tt_err tt_randn(const int64_t* shape, int ndim, int dtype, int device, tt_gen g, tt_tensor* out);
tt_err tt_rand(const int64_t* shape, int ndim, int dtype, int device, tt_gen g, tt_tensor* out);
tt_err tt_item(tt_tensor t, double* out);

/* generators */
tt_err tt_gen_new(uint64_t seed, int device, tt_gen* out);
void tt_gen_free(tt_gen g);
tt_err tt_gen_get_state(tt_gen g, tt_tensor* out); /* a uint8 tensor */
tt_err tt_gen_set_state(tt_gen g, tt_tensor state);
void tt_manual_seed(uint64_t seed);

/* elementwise and matmul families */
tt_err tt_unary(int op, tt_tensor a, tt_tensor* out);
tt_err tt_binary(int op, tt_tensor a, tt_tensor b, tt_tensor* out);
tt_err tt_scalar(int op, tt_tensor a, double s, tt_tensor* out);
tt_err tt_reduce(int op, tt_tensor a, const int64_t* dims, int ndims, int keepdim, tt_tensor* out);
tt_err tt_clamp(tt_tensor a, double lo, double hi, int has_lo, int has_hi, tt_tensor* out);
tt_err tt_where(tt_tensor cond, tt_tensor a, tt_tensor b, tt_tensor* out);
tt_err tt_masked_fill(tt_tensor a, tt_tensor mask, double value, tt_tensor* out);
tt_err tt_linear(tt_tensor x, tt_tensor w, tt_tensor b /* may be NULL */, tt_tensor* out);
tt_err tt_embedding(tt_tensor weight, tt_tensor ids, tt_tensor* out);
tt_err tt_softmax(tt_tensor a, int64_t dim, int log, tt_tensor* out);
tt_err tt_argmax(tt_tensor a, int64_t dim, int keepdim, tt_tensor* out);
tt_err tt_max_dim(tt_tensor a, int64_t dim, int keepdim, tt_tensor* values, tt_tensor* indices);
tt_err tt_topk(tt_tensor a, int64_t k, int64_t dim, int largest, tt_tensor* values, tt_tensor* indices);
tt_err tt_sort(tt_tensor a, int64_t dim, int descending, int stable, tt_tensor* values, tt_tensor* indices);
tt_err tt_cumsum(tt_tensor a, int64_t dim, tt_tensor* out);
tt_err tt_multinomial(tt_tensor probs, int64_t n, int replacement, tt_gen g, tt_tensor* out);
tt_err tt_to(tt_tensor a, int dtype, int device, tt_tensor* out);

/* views and indexing */
tt_err tt_reshape(tt_tensor a, const int64_t* shape, int ndim, tt_tensor* out);
tt_err tt_view(tt_tensor a, const int64_t* shape, int ndim, tt_tensor* out);
tt_err tt_expand(tt_tensor a, const int64_t* shape, int ndim, tt_tensor* out);
tt_err tt_permute(tt_tensor a, const int64_t* dims, int ndim, tt_tensor* out);
tt_err tt_transpose(tt_tensor a, int64_t d0, int64_t d1, tt_tensor* out);
tt_err tt_slice(tt_tensor a, int64_t dim, int64_t start, int64_t end, int64_t step, tt_tensor* out);
tt_err tt_narrow(tt_tensor a, int64_t dim, int64_t start, int64_t len, tt_tensor* out);
tt_err tt_unsqueeze(tt_tensor a, int64_t dim, tt_tensor* out);
tt_err tt_squeeze(tt_tensor a, int64_t dim, tt_tensor* out);
tt_err tt_index_select(tt_tensor a, int64_t dim, tt_tensor idx, tt_tensor* out);
tt_err tt_gather(tt_tensor a, int64_t dim, tt_tensor idx, tt_tensor* out);
tt_err tt_scatter(tt_tensor a, int64_t dim, tt_tensor idx, tt_tensor src, tt_tensor* out);
tt_err tt_scatter_add(tt_tensor a, int64_t dim, tt_tensor idx, tt_tensor src, tt_tensor* out);
tt_err tt_cat(tt_tensor* ts, int n, int64_t dim, tt_tensor* out);
tt_err tt_stack(tt_tensor* ts, int n, int64_t dim, tt_tensor* out);
tt_err tt_triu(tt_tensor a, int64_t k, int upper, tt_tensor* out);

/* in place (no autograd history expected) */
tt_err tt_copy_(tt_tensor dst, tt_tensor src);
tt_err tt_fill_(tt_tensor dst, double v);
tt_err tt_index_copy_(tt_tensor dst, int64_t dim, tt_tensor idx, tt_tensor src);

/* autograd */
tt_err tt_set_requires_grad(tt_tensor t, int on);
tt_err tt_backward(tt_tensor t, tt_tensor grad /* may be NULL */, int retain_graph);
tt_err tt_grad(tt_tensor t, tt_tensor* out); /* *out = NULL when undefined */
tt_err tt_zero_grad(tt_tensor* ts, int n); /* sets grads undefined */
tt_err tt_set_grad(tt_tensor t, tt_tensor g /* NULL clears */);
int tt_set_grad_enabled(int enabled); /* returns the previous mode; thread-local */
int tt_grad_enabled(void);

/* optimizers and clipping (in place on parameters; no autograd) */
tt_err tt_adamw_step(tt_tensor* params, tt_tensor* m, tt_tensor* v, int n, double lr, double b1, double b2,
                     double eps, double wd, int64_t step);
tt_err tt_sgd_step(tt_tensor* params, tt_tensor* buf /* may be NULL */, int n, double lr, double momentum,
                   double wd);
tt_err tt_clip_grad_norm(tt_tensor* params, int n, double max_norm, double* total_norm);

/* runtime */
void tt_set_num_threads(int n);
int tt_get_num_threads(void);
/* CPU allocations of 2 MiB or more on transparent huge pages
 * (shim_hugepages.cc): on between tt_hugepages_begin (1 when the allocator
 * is installed, 0 under RAGEN_HUGEPAGES=0) and tt_hugepages_end, calls that
 * nest and may come from any thread; tt_hugepages_bytes is the bytes so
 * mapped and not yet freed. */
int tt_hugepages_begin(void);
void tt_hugepages_end(void);
int64_t tt_hugepages_bytes(void);
/* the torch thread (worker.go): tt_worker_mark marks the calling OS thread as
 * the one that runs heavy calls; tt_on_worker is 1 on it, else 0. */
void tt_worker_mark(void);
int tt_on_worker(void);
/* tt_worker_serving(1) makes the element-wise, reduction, softmax,
 * embedding, cat, to and copy_ entry points return the tt_deferred()
 * sentinel (never freed, never an error) instead of running an op on >= 32768
 * elements off the torch thread; the caller re-issues the call there. */
void tt_worker_serving(int on);
tt_err tt_deferred(void);
/* Per-token log-probs of ids under softmax(hidden @ head^T / temperature)
 * (logp[b,t] uses position t-1; 0 at t = 0) and, if with_entropy, the
 * entropies (else *ent = NULL), float32 (B,T). hidden (B,T,E), head (V,E),
 * ids (B,T) int64. The logits exist one time chunk (B,chunk,V) at a time in
 * the forward and, recomputed, in the backward: one autograd node that keeps
 * only its inputs (shim_head.cc), or, when B*(T-1)*V <= keep, its inputs and
 * log p (float32) so that the backward needs no recompute. chunk < 1: all
 * steps at once. */
// Sets the fast head path's least logits per chunk (default 2^27), returning
// the previous value; tests lower it to run several chunks.
int64_t tt_head_min_chunk(int64_t elems);
tt_err tt_head_logprobs_chunked(tt_tensor hidden, tt_tensor head, tt_tensor ids, double temperature,
                                int with_entropy, int64_t chunk, int64_t keep, tt_tensor* logp, tt_tensor* ent);
/* Fused decoder-layer ops (shim_train.cc), one autograd node each with its
 * own backward on a CPU with AVX2 for float32 and bfloat16, the ATen
 * composition they replace elsewhere (CUDA, other dtypes).
 * rms_norm: x (...,N), w (N) -> x/rms(x) (float32 math) * w.
 * swiglu: gu (...,2I) -> silu(gu[..., :I]) * gu[..., I:].
 * rope: x (B,N,T,D), cos and sin (B,1,T,D) -> x*cos + rotate_half(x)*sin.
 * gqa_attention: q (B,H,T,D), k and v (B,KV,Lk,D), kbias (B,>=Lk) float32
 * additive key bias; query t at position offset+t attends keys <= offset+t;
 * -> (B,T,H*D). */
tt_err tt_rms_norm(tt_tensor x, tt_tensor w, double eps, tt_tensor* out);
tt_err tt_swiglu(tt_tensor gu, tt_tensor* out);
tt_err tt_rope(tt_tensor x, tt_tensor cos, tt_tensor sin, tt_tensor* out);
tt_err tt_gqa_attention(tt_tensor q, tt_tensor k, tt_tensor v, tt_tensor kbias, int64_t offset, double scale,
                        tt_tensor* out);
int tt_cuda_available(void);
// 1 when libtorch has oneDNN (MKL-DNN) and may use it: bfloat16 CPU matmuls run there.
int tt_mkldnn_enabled(void);
// 1 when float32 CPU linear, attention and head products take oneDNN's sgemm (gemm.hpp).
int tt_onednn_sgemm(void);
int tt_cuda_device_count(void);
const char* tt_version(void);

#ifdef __cplusplus
}
#endif
#endif

/* ---- llm: fused decoder ops (shim_llm.cc; owned by package llm) ---- */
#ifndef RAGEN_TORCH_SHIM_LLM_H
#define RAGEN_TORCH_SHIM_LLM_H
#ifdef __cplusplus
extern "C" {
#endif
/* Roles of a decoder layer's weights: w holds TT_LLM_ROLES handles per layer
 * in this order. QKV is q, k and v stacked on dim 0 ((H+2KV)*D, E), GATE_UP
 * gate and up ((2I, E)); QKV_BIAS, Q_NORM and K_NORM (per-head RMSNorm of q
 * and k before RoPE, weight (D)) may be NULL. */
enum tt_llm_role {
  TT_LLM_LN1, TT_LLM_QKV, TT_LLM_QKV_BIAS, TT_LLM_Q_NORM, TT_LLM_K_NORM, TT_LLM_O,
  TT_LLM_LN2, TT_LLM_GATE_UP, TT_LLM_DOWN, TT_LLM_ROLES
};
/* One whole forward pass. w: embed, then TT_LLM_ROLES per layer, then the
 * final norm, then the LM head (NULL: return the normed hidden states).
 * cos_table, sin_table: (P, D) rotary tables built by the caller (any RoPE
 * scaling is in them). lora: NULL or 14 per layer, (A,B) for q,k,v,o,gate,up,down,
 * NULL where off. kbias: (B, >= Lk) additive float key bias. kv: NULL or 2 per
 * layer (B,KV,Lmax,D) caches written in place at cache_pos. */
tt_err tt_llm_forward(const tt_tensor* w, int n_layers, const tt_tensor* lora, double lora_scale, int n_heads,
                      int n_kv, int head_dim, double eps, tt_tensor ids, tt_tensor pos, tt_tensor cos_table,
                      tt_tensor sin_table, tt_tensor kbias, const tt_tensor* kv, int64_t cache_pos, int last_only,
                      int no_grad, tt_tensor* out);
tt_err tt_llm_key_bias(tt_tensor attn, tt_tensor* out);
tt_err tt_llm_token_logprobs(tt_tensor logits, tt_tensor ids, double temperature, int with_entropy, int64_t chunk,
                             tt_tensor* logp, tt_tensor* ent);
tt_err tt_llm_head_logprobs(tt_tensor hidden, tt_tensor head, tt_tensor ids, double temperature, int with_entropy,
                            int64_t chunk, tt_tensor* logp, tt_tensor* ent);
tt_err tt_llm_sample(tt_tensor logits, double temperature, int64_t top_k, double top_p, tt_gen g, tt_tensor* ids,
                     tt_tensor* logp);
// tt_llm_sample with one generator per row (n_gens rows; a NULL one: the
// row is not drawn and gets its greedy id).
tt_err tt_llm_sample_rows(tt_tensor logits, double temperature, int64_t top_k, double top_p, const tt_gen* gens,
                          int n_gens, tt_tensor* ids, tt_tensor* logp);
tt_err tt_llm_select_rows(tt_tensor* ts, int n, int64_t dim, tt_tensor idx);
void tt_llm_malloc_tune(int64_t bytes);
void tt_llm_malloc_release(void);
#ifdef __cplusplus
}
#endif
/* ---- end llm ---- */
/* ---- llm: checkpointed decoder layer (shim_ckpt.cc; owned by package llm) ---- */
#ifdef __cplusplus
extern "C" {
#endif
/* One decoder layer x (B,T,E) -> (B,T,E) as one autograd node that keeps
 * only its inputs and recomputes the layer in backward (activation
 * checkpointing). w: TT_LLM_ROLES handles by role (optional ones NULL);
 * lora: NULL or 14 (A,B) handles, NULL where off. cos, sin: (B,1,T,D) in the
 * model dtype; bias: the (B,T) float32 additive key bias (tt_llm_key_bias);
 * the layer adds the causal mask. */
tt_err tt_llm_ckpt_layer(tt_tensor x, const tt_tensor* w, const tt_tensor* lora, double lora_scale, int n_heads,
                         int n_kv, int head_dim, double eps, tt_tensor cos, tt_tensor sin, tt_tensor bias,
                         tt_tensor* out);
#ifdef __cplusplus
}
#endif
/* ---- end llm checkpoint ---- */
#endif /* RAGEN_TORCH_SHIM_LLM_H */
