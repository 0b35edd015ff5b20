//go:build !torchshared

// shim_gemm.cc - gemm.hpp: float32 products through oneDNN's sgemm, and the
// linear layer on them with its own backward:
//   y = x w^T + b,  dx = dy w,  dw = dy^T x,  db = sum_rows(dy).
//
// It includes the autograd frontend header, so it is a file of its own (as
// shim_head.cc and shim_train.cc).
#include <torch/csrc/autograd/custom_function.h>

#include <ATen/Parallel.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/mm.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "gemm.hpp"
#include "shim.h"

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// oneDNN's C entry point (dnnl.h, v1.0 on): row-major
// C = alpha op(A) op(B) + beta C; returns dnnl_success (0) or an error code.
using sgemm_fn = int (*)(char transa, char transb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                         int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc);

sgemm_fn dnnl_sgemm_ptr() {
  static const sgemm_fn f = []() -> sgemm_fn {
    const char* mode = std::getenv("RAGEN_GEMM");
    if (mode && std::strcmp(mode, "aten") == 0) return nullptr;
    return reinterpret_cast<sgemm_fn>(dlsym(RTLD_DEFAULT, "dnnl_sgemm"));
  }();
  return f;
}

bool is_2d_f32_cpu(const at::Tensor& t) {
  return t.defined() && t.dim() == 2 && t.scalar_type() == at::kFloat && t.device().is_cpu();
}

// A matrix operand as oneDNN reads it: the data, its row stride and whether
// it is stored transposed relative to the product's op.
struct Operand {
  at::Tensor keep;  // owns a copy when the input had no unit stride
  const float* p;
  int64_t ld;
  bool trans;
};

// operand describes t (R,C) for a product that wants op(t) = t^T when trans:
// rows with a unit last stride as they are, a transposed view (unit first
// stride) as its transpose with trans flipped, anything else (an expanded
// or sliced-across view) copied.
Operand operand(const at::Tensor& t, bool trans) {
  const int64_t R = t.size(0), C = t.size(1);
  if ((C <= 1 || t.stride(1) == 1) && (R <= 1 || t.stride(0) >= C))
    return {at::Tensor(), t.data_ptr<float>(), R <= 1 ? std::max<int64_t>(C, 1) : t.stride(0), trans};
  if ((R <= 1 || t.stride(0) == 1) && (C <= 1 || t.stride(1) >= R))
    return {at::Tensor(), t.data_ptr<float>(), C <= 1 ? std::max<int64_t>(R, 1) : t.stride(1), !trans};
  at::Tensor c = t.contiguous();
  return {c, c.data_ptr<float>(), std::max<int64_t>(C, 1), trans};
}

}  // namespace

namespace tt_gemm {

bool available() { return dnnl_sgemm_ptr() != nullptr; }

void mm_into(const at::Tensor& a, bool ta, const at::Tensor& b, bool tb, at::Tensor& c, float beta) {
  const at::Tensor A = ta ? a.t() : a, B = tb ? b.t() : b;
  const sgemm_fn f = dnnl_sgemm_ptr();
  const bool fast = f && is_2d_f32_cpu(a) && is_2d_f32_cpu(b) && is_2d_f32_cpu(c) && c.stride(1) == 1 &&
                    c.stride(0) >= std::max<int64_t>(c.size(1), 1) && A.size(1) == B.size(0) &&
                    c.size(0) == A.size(0) && c.size(1) == B.size(1);
  if (!fast) {
    if (beta == 0.f)
      at::mm_out(c, A, B);
    else
      c.addmm_(A, B, beta, 1);
    return;
  }
  const int64_t M = A.size(0), N = B.size(1), K = A.size(1);
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (beta == 0.f)
      c.zero_();
    else
      c.mul_(beta);
    return;
  }
  const Operand oa = operand(a, ta), ob = operand(b, tb);
  at::internal::lazy_init_num_threads();  // oneDNN's OpenMP team: this thread's intra-op threads
  const int st = f(oa.trans ? 'T' : 'N', ob.trans ? 'T' : 'N', M, N, K, 1.f, oa.p, oa.ld, ob.p, ob.ld, beta,
                   c.data_ptr<float>(), c.stride(0));
  if (st != 0) throw std::runtime_error("oneDNN sgemm failed with status " + std::to_string(st));
}

at::Tensor mm(const at::Tensor& a, bool ta, const at::Tensor& b, bool tb) {
  at::Tensor c = at::empty({a.size(ta ? 1 : 0), b.size(tb ? 0 : 1)}, a.options());
  mm_into(a, ta, b, tb, c, 0.f);
  return c;
}

}  // namespace tt_gemm

namespace {

// y (M,N) = x (M,K) w^T (+ b)
at::Tensor linear_rows(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  at::Tensor y = at::empty({x.size(0), w.size(0)}, x.options());
  if (b.defined()) y.copy_(b.expand_as(y));
  tt_gemm::mm_into(x, false, w, true, y, b.defined() ? 1.f : 0.f);
  return y;
}

std::vector<int64_t> out_shape(at::IntArrayRef in, int64_t n) {
  std::vector<int64_t> sh = in.vec();
  sh.back() = n;
  return sh;
}

// forward and backward of the node; the bias, when there is one, is the
// third input (autograd's custom functions take no undefined tensors, so
// the biased and unbiased forms are two nodes on these).
at::Tensor linear_fwd(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  const int64_t K = x.size(-1);
  at::Tensor x2 = x.reshape({-1, K});
  ctx->save_for_backward({x2, w});
  ctx->saved_data["shape"] = x.sizes().vec();
  return linear_rows(x2, w, b).view(out_shape(x.sizes(), w.size(0)));
}

variable_list linear_bwd(AutogradContext* ctx, const variable_list& g, bool has_bias) {
  const variable_list saved = ctx->get_saved_variables();
  const at::Tensor &x2 = saved[0], &w = saved[1];
  const std::vector<int64_t> shape = ctx->saved_data["shape"].toIntVector();
  variable_list out(has_bias ? 3 : 2);
  if (!g[0].defined()) return out;
  const at::Tensor gy = g[0].reshape({-1, w.size(0)});
  if (ctx->needs_input_grad(0)) out[0] = tt_gemm::mm(gy, false, w, false).view(shape);
  if (ctx->needs_input_grad(1)) out[1] = tt_gemm::mm(gy, true, x2, false);
  if (has_bias && ctx->needs_input_grad(2)) out[2] = gy.sum(0);
  return out;
}

struct Linear : public torch::autograd::Function<Linear> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w) {
    return linear_fwd(ctx, x, w, at::Tensor());
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) { return linear_bwd(ctx, g, false); }
};

struct LinearBias : public torch::autograd::Function<LinearBias> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
    return linear_fwd(ctx, x, w, b);
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) { return linear_bwd(ctx, g, true); }
};

// The least rows for the oneDNN path: the shapes it was measured on are a
// training step's (hundreds of rows); few-row products (decoding) stay with
// ATen's BLAS.
constexpr int64_t kMinRows = 64;

}  // namespace

namespace tt_gemm {

at::Tensor linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  const bool fast = available() && x.defined() && x.dim() >= 1 && x.scalar_type() == at::kFloat &&
                    x.device().is_cpu() && is_2d_f32_cpu(w) && x.size(-1) == w.size(1) &&
                    (!b.defined() || (b.dim() == 1 && b.scalar_type() == at::kFloat && b.device().is_cpu() &&
                                      b.size(0) == w.size(0))) &&
                    x.numel() >= kMinRows * std::max<int64_t>(x.size(-1), 1);
  if (!fast) return b.defined() ? at::linear(x, w, b) : at::linear(x, w);
  if (c10::GradMode::is_enabled() && (x.requires_grad() || w.requires_grad() || (b.defined() && b.requires_grad())))
    return b.defined() ? LinearBias::apply(x, w, b) : Linear::apply(x, w);
  return linear_rows(x.reshape({-1, x.size(-1)}), w, b).view(out_shape(x.sizes(), w.size(0)));
}

}  // namespace tt_gemm

extern "C" int tt_onednn_sgemm(void) { return tt_gemm::available() ? 1 : 0; }
