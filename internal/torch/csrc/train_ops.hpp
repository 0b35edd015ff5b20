// train_ops.hpp - fused decoder-layer ops with their own backward
// (shim_train.cc), used by the fused forward (shim_llm.cc) and the
// checkpointed layer (shim_ckpt.cc) on a CPU with AVX2, for float32 and
// bfloat16 tensors. Included only from this directory.
//
// Each op is one pass over its rows forward and one backward, where ATen
// composes three to eight element-wise kernels and keeps their
// intermediates for autograd: RMSNorm keeps one float per row, SwiGLU its
// input, RoPE nothing but the tables, and attention one float per query row
// (its log-normaliser) instead of the (B,H,T,Lk) softmax. With gradients
// off the same kernels run without an autograd node.
#pragma once

#include <ATen/core/Tensor.h>

namespace tt_train {

// supports says whether the fused ops take x: a CPU tensor of float32 or
// bfloat16 on a CPU with AVX2 (RAGEN_CPU_ISA=generic turns them off).
bool supports(const at::Tensor& x);

// rms_norm is Qwen2RMSNorm over the last dim: x in float32 times
// rsqrt(mean(x^2) + eps), rounded to x's dtype, times w (x's dtype).
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps);

// swiglu is silu(gu[..., :I]) * gu[..., I:] of gu (..., 2I) -> (..., I).
at::Tensor swiglu(const at::Tensor& gu);

// rope is x*cos + rotate_half(x)*sin for x (B,N,T,D) of any strides with a
// unit last stride and cos, sin (B,1,T,D) in x's dtype -> (B,N,T,D).
at::Tensor rope(const at::Tensor& x, const at::Tensor& cs, const at::Tensor& sn);

// attention is grouped-query softmax attention: q (B,H,T,D), k and v
// (B,KV,Lk,D), the float32 additive key bias kbias (B, >= Lk) (0 where
// attended, the lowest float where not), query t at position off + t
// attending keys j <= off + t; returns (B,T,H*D). A query row whose keys
// are all masked attends all Lk keys uniformly, as the additive-mask
// softmax it replaces does.
at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& kbias,
                     int64_t off, double scale);

}  // namespace tt_train
