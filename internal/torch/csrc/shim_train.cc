//go:build !torchshared

// shim_train.cc - the fused decoder-layer ops of train_ops.hpp: RMSNorm,
// SwiGLU, RoPE and grouped-query attention, forward and backward, each one
// autograd node.
//
// The element-wise ops run one AVX2 pass per row (SwiGLU's 16 lanes at a
// time where the CPU has AVX-512, with the 8-lane pass's bits). Their bfloat16 forms
// round where ATen's composition rounds (after each op that yields a bf16
// tensor), so float32 and bf16 results follow the ops they replace to float
// rounding; the backward passes compute in float32 and round once.
//
// Attention works on one (batch, KV head, query chunk) block at a time: the
// G query heads sharing a KV head are stacked as rows, so a block is three
// GEMMs (scores, probabilities x V) on contiguous operands, with the causal
// part of the keys skipped. The forward keeps only the log-normaliser of
// each query row; the backward recomputes a block's scores from it
// (FlashAttention's recomputation with GEMM-sized blocks):
//   P = exp(S*scale + bias - lse), dV += P^T dO, dP = dO V^T,
//   dS = P (dP - rowsum(P dP)) scale, dQ = dS K, dK += dS^T Q.
// Peak memory is a block's scores, not the (B,H,T,Lk) softmax.
//
// It includes the autograd frontend header, so it is a file of its own (as
// shim_head.cc).
#include <torch/csrc/autograd/custom_function.h>

#include <ATen/Parallel.h>
#include <ATen/ThreadLocalState.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/mm.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/zeros.h>
#include <c10/core/GradMode.h>
#include <c10/util/BFloat16.h>
#include <c10/core/InferenceMode.h>
#include <c10/core/UndefinedTensorImpl.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/api/include/torch/version.h>

// scaled_dot_product_attention (with its scale argument) since PyTorch 2.1
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define RAGEN_HAVE_SDPA 1
#include <ATen/ops/arange.h>
#include <ATen/ops/scaled_dot_product_attention.h>
#endif

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

#include "cpu_kernels.hpp"
#include "gemm.hpp"
#include "op_errors.hpp"
#include "shim.h"
#include "tensor_impl.hpp"
#include "train_ops.hpp"

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;
using BF = c10::BFloat16;

// ---- attention geometry ----

constexpr float kMasked = -1e30f;  // a bias at or below this masks its key
constexpr int64_t kChunk = 128;    // query times per block

struct Geometry {
  int64_t B, H, KV, G, T, Lk, D, off;
  float scale;
  // key limit (exclusive) of query time t: causal
  int64_t lim(int64_t t) const { return std::min(Lk, off + t + 1); }
};

Geometry geometry(const at::Tensor& q, const at::Tensor& k, int64_t off, double scale) {
  Geometry g;
  g.B = q.size(0);
  g.H = q.size(1);
  g.T = q.size(2);
  g.D = q.size(3);
  g.KV = k.size(1);
  g.Lk = k.size(2);
  g.G = g.H / g.KV;
  g.off = off;
  g.scale = (float)scale;
  return g;
}

// Everything below, up to the entry points, is compiled for AVX2 and FMA
// (lambdas included, which a target attribute would miss); the entry points
// run it only where tt_train::supports holds.
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#pragma GCC optimize("O3")
#define TT_AVX __attribute__((target("avx2,fma")))

// ---- float32 / bfloat16 lanes ----
//
// E<T> loads 8 elements as float32, stores 8 (bf16: rounded to nearest
// even, as c10::BFloat16 rounds), and rounds a float32 vector to T's
// precision (identity for float).
template <class T>
struct E;

template <>
struct E<float> {
  TT_AVX static __m256 ld(const float* p) { return _mm256_loadu_ps(p); }
  TT_AVX static void st(float* p, __m256 v) { _mm256_storeu_ps(p, v); }
  TT_AVX static __m256 rnd(__m256 v) { return v; }
  static float ld1(const float* p) { return *p; }
  static void st1(float* p, float v) { *p = v; }
  static float rnd1(float v) { return v; }
};

template <>
struct E<BF> {
  TT_AVX static __m256 ld(const BF* p) {
    __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  // the float32 bit patterns rounded to bf16 (low 16 bits zero); NaN stays NaN
  TT_AVX static __m256i rne(__m256 v) {
    __m256i u = _mm256_castps_si256(v);
    __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
    __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
    r = _mm256_castps_si256(
        _mm256_blendv_ps(_mm256_castsi256_ps(r), _mm256_castsi256_ps(_mm256_set1_epi32(0x7fc00000)), nan));
    return _mm256_and_si256(r, _mm256_set1_epi32(int(0xffff0000u)));
  }
  TT_AVX static __m256 rnd(__m256 v) { return _mm256_castsi256_ps(rne(v)); }
  TT_AVX static void st(BF* p, __m256 v) {
    __m256i r = _mm256_srli_epi32(rne(v), 16);
    __m256i pk = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0xD8);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_castsi256_si128(pk));
  }
  static float ld1(const BF* p) { return float(*p); }
  static void st1(BF* p, float v) { *p = BF(v); }
  static float rnd1(float v) { return float(BF(v)); }
};

// Calls f.template operator()<T>() with T the element type of st.
template <class F>
void by_dtype(at::ScalarType st, F&& f) {
  if (st == at::kFloat)
    f(float{});
  else if (st == at::kBFloat16)
    f(BF{});
  else
    throw std::invalid_argument("fused training ops take float32 or bfloat16");
}

template <class T>
T* ptr(const at::Tensor& t) {
  return reinterpret_cast<T*>(t.data_ptr());
}

// sigmoid(x) = 1 / (1 + exp(-x)), from exp(-|x|) so that it never overflows.
TT_AVX inline __m256 sigmoid8(__m256 x) {
  const __m256 one = _mm256_set1_ps(1.f);
  __m256 e = tt_cpu::exp256(_mm256_or_ps(x, _mm256_set1_ps(-0.f)));  // exp(-|x|) in (0,1]
  __m256 r = _mm256_div_ps(one, _mm256_add_ps(one, e));             // sigmoid(|x|)
  __m256 neg = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  return _mm256_blendv_ps(r, _mm256_mul_ps(e, r), neg);  // sigmoid(-|x|) = e / (1 + e)
}

// ---- the same lanes 16 at a time (AVX-512) ----
//
// E16 and sigmoid16 do E's and sigmoid8's operations lane by lane, so a
// 16-lane pass gives the bits an 8-lane pass gives.
#define TT_AVX512 __attribute__((target("avx512f,avx512bw,avx2,fma")))

template <class T>
struct E16;

template <>
struct E16<float> {
  TT_AVX512 static __m512 ld(const float* p) { return _mm512_loadu_ps(p); }
  TT_AVX512 static void st(float* p, __m512 v) { _mm512_storeu_ps(p, v); }
  TT_AVX512 static __m512 rnd(__m512 v) { return v; }
};

template <>
struct E16<BF> {
  TT_AVX512 static __m512 ld(const BF* p) {
    __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  TT_AVX512 static __m512i rne(__m512 v) {
    __m512i u = _mm512_castps_si512(v);
    __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb));
    r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm512_set1_epi32(0x7fc00000));
    return _mm512_and_si512(r, _mm512_set1_epi32(int(0xffff0000u)));
  }
  TT_AVX512 static __m512 rnd(__m512 v) { return _mm512_castsi512_ps(rne(v)); }
  TT_AVX512 static void st(BF* p, __m512 v) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(_mm512_srli_epi32(rne(v), 16)));
  }
};

TT_AVX512 inline __m512 sigmoid16(__m512 x) {
  const __m512 one = _mm512_set1_ps(1.f);
  const __m512 ax = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32(int(0x80000000u))));
  __m512 e = tt_cpu::exp512(ax);                          // exp(-|x|) in (0,1]
  __m512 r = _mm512_div_ps(one, _mm512_add_ps(one, e));  // sigmoid(|x|)
  const __mmask16 neg = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  return _mm512_mask_blend_ps(neg, r, _mm512_mul_ps(e, r));  // sigmoid(-|x|) = e / (1 + e)
}

inline float sigmoid1(float x) { return x >= 0 ? 1.f / (1.f + std::exp(-x)) : std::exp(x) / (1.f + std::exp(x)); }

bool needs_grad(std::initializer_list<at::Tensor> ts) {
  if (!c10::GradMode::is_enabled()) return false;
  for (const at::Tensor& t : ts)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

// ---- RMSNorm ----

// y = rnd(w * rnd(x * r)), r = 1/sqrt(mean(x^2) + eps) per row (kept in rs when not NULL).
template <class T>
TT_AVX void rms_fwd_rows(const T* x, const T* w, T* y, float* rs, int64_t M, int64_t N, float eps) {
  const int64_t N8 = N & ~int64_t(7);
  at::parallel_for(0, M, 16, [&](int64_t lo, int64_t hi) {
    for (int64_t m = lo; m < hi; m++) {
      const T* xr = x + m * N;
      T* yr = y + m * N;
      __m256 a = _mm256_setzero_ps();
      for (int64_t e = 0; e < N8; e += 8) {
        __m256 v = E<T>::ld(xr + e);
        a = _mm256_fmadd_ps(v, v, a);
      }
      float ss = tt_cpu::hsum(a);
      for (int64_t e = N8; e < N; e++) ss += E<T>::ld1(xr + e) * E<T>::ld1(xr + e);
      const float r = 1.f / std::sqrt(ss / (float)N + eps);
      if (rs) rs[m] = r;
      const __m256 vr = _mm256_set1_ps(r);
      for (int64_t e = 0; e < N8; e += 8)
        E<T>::st(yr + e, _mm256_mul_ps(E<T>::ld(w + e), E<T>::rnd(_mm256_mul_ps(E<T>::ld(xr + e), vr))));
      for (int64_t e = N8; e < N; e++) E<T>::st1(yr + e, E<T>::ld1(w + e) * E<T>::rnd1(E<T>::ld1(xr + e) * r));
    }
  });
}

// gx = r (gn - xh mean(gn xh)), gn = gy w, xh = x r; gw = sum over rows gy rnd(xh).
template <class T>
TT_AVX void rms_bwd_rows(const T* gy, const T* x, const T* w, const float* rs, T* gx, float* gw, int64_t M, int64_t N) {
  const int64_t N8 = N & ~int64_t(7);
  const int nt = at::get_num_threads();
  std::vector<float> part(gw ? (size_t)(nt * N) : 0, 0.f);
  at::parallel_for(0, M, 16, [&](int64_t lo, int64_t hi) {
    float* acc = gw ? part.data() + (size_t)at::get_thread_num() * N : nullptr;
    for (int64_t m = lo; m < hi; m++) {
      const T *gr = gy + m * N, *xr = x + m * N;
      const float r = rs[m];
      const __m256 vr = _mm256_set1_ps(r);
      if (acc) {
        for (int64_t e = 0; e < N8; e += 8) {
          __m256 xh = E<T>::rnd(_mm256_mul_ps(E<T>::ld(xr + e), vr));
          _mm256_storeu_ps(acc + e, _mm256_fmadd_ps(E<T>::ld(gr + e), xh, _mm256_loadu_ps(acc + e)));
        }
        for (int64_t e = N8; e < N; e++) acc[e] += E<T>::ld1(gr + e) * E<T>::rnd1(E<T>::ld1(xr + e) * r);
      }
      if (!gx) continue;
      __m256 a = _mm256_setzero_ps();
      for (int64_t e = 0; e < N8; e += 8)
        a = _mm256_fmadd_ps(_mm256_mul_ps(E<T>::ld(gr + e), E<T>::ld(w + e)), _mm256_mul_ps(E<T>::ld(xr + e), vr), a);
      float dot = tt_cpu::hsum(a);
      for (int64_t e = N8; e < N; e++) dot += E<T>::ld1(gr + e) * E<T>::ld1(w + e) * E<T>::ld1(xr + e) * r;
      const float c = dot / (float)N;
      const __m256 vc = _mm256_set1_ps(c);
      T* o = gx + m * N;
      for (int64_t e = 0; e < N8; e += 8) {
        __m256 gn = _mm256_mul_ps(E<T>::ld(gr + e), E<T>::ld(w + e));
        __m256 xh = _mm256_mul_ps(E<T>::ld(xr + e), vr);
        E<T>::st(o + e, _mm256_mul_ps(vr, _mm256_fnmadd_ps(xh, vc, gn)));
      }
      for (int64_t e = N8; e < N; e++) {
        const float gn = E<T>::ld1(gr + e) * E<T>::ld1(w + e), xh = E<T>::ld1(xr + e) * r;
        E<T>::st1(o + e, r * (gn - xh * c));
      }
    }
  });
  if (!gw) return;
  for (int64_t e = 0; e < N; e++) {
    float s = 0.f;
    for (int t = 0; t < nt; t++) s += part[(size_t)t * N + e];
    gw[e] = s;
  }
}

at::Tensor rms_forward(const at::Tensor& x, const at::Tensor& w, double eps, at::Tensor* rs) {
  const int64_t N = x.size(-1), M = x.numel() / std::max<int64_t>(N, 1);
  at::Tensor y = at::empty(x.sizes(), x.options());
  if (rs) *rs = at::empty({M}, x.options().dtype(at::kFloat));
  by_dtype(x.scalar_type(), [&](auto z) {
    using T = decltype(z);
    rms_fwd_rows<T>(ptr<T>(x), ptr<T>(w), ptr<T>(y), rs ? rs->data_ptr<float>() : nullptr, M, N, (float)eps);
  });
  return y;
}

struct RmsNorm : public torch::autograd::Function<RmsNorm> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w, double eps) {
    at::Tensor xc = x.contiguous(), wc = w.contiguous(), rs;
    at::Tensor y = rms_forward(xc, wc, eps, &rs);
    ctx->save_for_backward({xc, wc, rs});
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    variable_list s = ctx->get_saved_variables();
    const at::Tensor &x = s[0], &w = s[1], &rs = s[2];
    if (!g[0].defined()) return {at::Tensor(), at::Tensor(), at::Tensor()};
    const bool need_x = ctx->needs_input_grad(0), need_w = ctx->needs_input_grad(1);
    at::Tensor gy = g[0].to(x.scalar_type()).contiguous();
    at::Tensor gx = need_x ? at::empty(x.sizes(), x.options()) : at::Tensor();
    at::Tensor gw = need_w ? at::empty(w.sizes(), w.options().dtype(at::kFloat)) : at::Tensor();
    const int64_t N = x.size(-1), M = x.numel() / std::max<int64_t>(N, 1);
    by_dtype(x.scalar_type(), [&](auto z) {
      using T = decltype(z);
      rms_bwd_rows<T>(ptr<T>(gy), ptr<T>(x), ptr<T>(w), rs.data_ptr<float>(), need_x ? ptr<T>(gx) : nullptr,
                      need_w ? gw.data_ptr<float>() : nullptr, M, N);
    });
    if (need_w && gw.scalar_type() != w.scalar_type()) gw = gw.to(w.scalar_type());
    return {gx, gw, at::Tensor()};
  }
};

// ---- SwiGLU ----

// Rows a parallel task: at least 2^17 elements. Below that, waking the pool
// costs more than the second thread saves (2 cores, bf16 rows of 4,864 from
// Go: 8 rows 51 us a call on one thread against 61 on two, 32 rows 109
// against 93), so a decode step's 8 rows run on the calling thread.
int64_t swiglu_grain(int64_t I) { return std::max<int64_t>(1, (int64_t(1) << 17) / std::max<int64_t>(I, 1)); }

// one row of swiglu_fwd_rows 16 lanes at a time; returns where it stopped
template <class T>
TT_AVX512 int64_t swiglu_fwd16(const T* g, const T* u, T* o, int64_t I) {
  int64_t i = 0;
  for (; i + 16 <= I; i += 16) {
    __m512 gv = E16<T>::ld(g + i);
    __m512 s = E16<T>::rnd(_mm512_mul_ps(gv, sigmoid16(gv)));
    E16<T>::st(o + i, _mm512_mul_ps(s, E16<T>::ld(u + i)));
  }
  return i;
}

template <class T>
TT_AVX void swiglu_fwd_rows(const T* gu, T* y, int64_t M, int64_t I) {
  const int64_t I8 = I & ~int64_t(7);
  const bool wide = tt_cpu::cpu_has_avx512();
  at::parallel_for(0, M, swiglu_grain(I), [&](int64_t lo, int64_t hi) {
    for (int64_t m = lo; m < hi; m++) {
      const T *g = gu + m * 2 * I, *u = g + I;
      T* o = y + m * I;
      for (int64_t i = wide ? swiglu_fwd16<T>(g, u, o, I) : 0; i < I8; i += 8) {
        __m256 gv = E<T>::ld(g + i);
        __m256 s = E<T>::rnd(_mm256_mul_ps(gv, sigmoid8(gv)));
        E<T>::st(o + i, _mm256_mul_ps(s, E<T>::ld(u + i)));
      }
      for (int64_t i = I8; i < I; i++) {
        const float gv = E<T>::ld1(g + i);
        E<T>::st1(o + i, E<T>::rnd1(gv * sigmoid1(gv)) * E<T>::ld1(u + i));
      }
    }
  });
}

// one row of swiglu_bwd_rows 16 lanes at a time; returns where it stopped
template <class T>
TT_AVX512 int64_t swiglu_bwd16(const T* g, const T* u, const T* gr, T* og, T* ou, int64_t I) {
  const __m512 one = _mm512_set1_ps(1.f);
  int64_t i = 0;
  for (; i + 16 <= I; i += 16) {
    __m512 gv = E16<T>::ld(g + i), sg = sigmoid16(gv), d = E16<T>::ld(gr + i);
    __m512 ds = _mm512_mul_ps(sg, _mm512_fmadd_ps(gv, _mm512_sub_ps(one, sg), one));
    E16<T>::st(og + i, _mm512_mul_ps(_mm512_mul_ps(d, E16<T>::ld(u + i)), ds));
    E16<T>::st(ou + i, _mm512_mul_ps(d, E16<T>::rnd(_mm512_mul_ps(gv, sg))));
  }
  return i;
}

// d gate = gy u sig (1 + g (1 - sig)), d up = gy rnd(silu(g)).
template <class T>
TT_AVX void swiglu_bwd_rows(const T* gy, const T* gu, T* ggu, int64_t M, int64_t I) {
  const int64_t I8 = I & ~int64_t(7);
  const bool wide = tt_cpu::cpu_has_avx512();
  at::parallel_for(0, M, swiglu_grain(I), [&](int64_t lo, int64_t hi) {
    const __m256 one = _mm256_set1_ps(1.f);
    for (int64_t m = lo; m < hi; m++) {
      const T *g = gu + m * 2 * I, *u = g + I, *gr = gy + m * I;
      T *og = ggu + m * 2 * I, *ou = og + I;
      for (int64_t i = wide ? swiglu_bwd16<T>(g, u, gr, og, ou, I) : 0; i < I8; i += 8) {
        __m256 gv = E<T>::ld(g + i), sg = sigmoid8(gv), d = E<T>::ld(gr + i);
        __m256 ds = _mm256_mul_ps(sg, _mm256_fmadd_ps(gv, _mm256_sub_ps(one, sg), one));
        E<T>::st(og + i, _mm256_mul_ps(_mm256_mul_ps(d, E<T>::ld(u + i)), ds));
        E<T>::st(ou + i, _mm256_mul_ps(d, E<T>::rnd(_mm256_mul_ps(gv, sg))));
      }
      for (int64_t i = I8; i < I; i++) {
        const float gv = E<T>::ld1(g + i), sg = sigmoid1(gv), d = E<T>::ld1(gr + i);
        E<T>::st1(og + i, d * E<T>::ld1(u + i) * sg * (1.f + gv * (1.f - sg)));
        E<T>::st1(ou + i, d * E<T>::rnd1(gv * sg));
      }
    }
  });
}

at::Tensor swiglu_forward(const at::Tensor& gu) {
  const int64_t I = gu.size(-1) / 2, M = gu.numel() / std::max<int64_t>(2 * I, 1);
  std::vector<int64_t> sh = gu.sizes().vec();
  sh.back() = I;
  at::Tensor y = at::empty(sh, gu.options());
  by_dtype(gu.scalar_type(), [&](auto z) {
    using T = decltype(z);
    swiglu_fwd_rows<T>(ptr<T>(gu), ptr<T>(y), M, I);
  });
  return y;
}

struct SwiGLU : public torch::autograd::Function<SwiGLU> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& gu) {
    at::Tensor c = gu.contiguous();
    ctx->save_for_backward({c});
    return swiglu_forward(c);
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    at::Tensor gu = ctx->get_saved_variables()[0];
    if (!g[0].defined()) return {at::Tensor()};
    at::Tensor gy = g[0].to(gu.scalar_type()).contiguous();
    at::Tensor ggu = at::empty(gu.sizes(), gu.options());
    const int64_t I = gu.size(-1) / 2, M = gu.numel() / std::max<int64_t>(2 * I, 1);
    by_dtype(gu.scalar_type(), [&](auto z) {
      using T = decltype(z);
      swiglu_bwd_rows<T>(ptr<T>(gy), ptr<T>(gu), ptr<T>(ggu), M, I);
    });
    return {ggu};
  }
};

// ---- RoPE ----
//
// Rows are (b, n, t) of x (B,N,T,D); y[d] = rnd(rnd(x[d] c[d]) + rnd(rot[d] s[d])),
// rot = (-x[h:], x[:h]). The backward is the transposed rotation:
// gx[d] = g[d] c[d] + g[d+h] s[d+h] (d < h), g[d] c[d] - g[d-h] s[d-h] (d >= h).
template <class T>
TT_AVX void rope_rows(const T* x, int64_t sb, int64_t sn, int64_t st, const T* cs, const T* sn_, T* y, int64_t B,
                      int64_t N, int64_t Tn, int64_t D, bool backward) {
  const int64_t h = D / 2, h8 = h & ~int64_t(7);
  // at least ATen's grain (32,768 elements) a task: a decode step's few rows
  // (8 x 16 heads of 64) run on the calling thread, where waking the pool
  // cost more than the rotation (about 35 us a layer on the 2-core VM)
  const int64_t grain = std::max<int64_t>(64, 32768 / std::max<int64_t>(D, 1));
  at::parallel_for(0, B * N * Tn, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; r++) {
      const int64_t b = r / (N * Tn), n = r / Tn % N, t = r % Tn;
      const T* xr = x + b * sb + n * sn + t * st;
      const T *c = cs + (b * Tn + t) * D, *s = sn_ + (b * Tn + t) * D;
      T* yr = y + r * D;
      if (!backward) {
        for (int64_t d = 0; d < h8; d += 8) {
          __m256 a = E<T>::ld(xr + d), bb = E<T>::ld(xr + d + h);
          __m256 lo_ = _mm256_sub_ps(E<T>::rnd(_mm256_mul_ps(a, E<T>::ld(c + d))),
                                     E<T>::rnd(_mm256_mul_ps(bb, E<T>::ld(s + d))));
          __m256 hi_ = _mm256_add_ps(E<T>::rnd(_mm256_mul_ps(bb, E<T>::ld(c + d + h))),
                                     E<T>::rnd(_mm256_mul_ps(a, E<T>::ld(s + d + h))));
          E<T>::st(yr + d, lo_);
          E<T>::st(yr + d + h, hi_);
        }
        for (int64_t d = h8; d < h; d++) {
          const float a = E<T>::ld1(xr + d), bb = E<T>::ld1(xr + d + h);
          E<T>::st1(yr + d, E<T>::rnd1(a * E<T>::ld1(c + d)) - E<T>::rnd1(bb * E<T>::ld1(s + d)));
          E<T>::st1(yr + d + h, E<T>::rnd1(bb * E<T>::ld1(c + d + h)) + E<T>::rnd1(a * E<T>::ld1(s + d + h)));
        }
      } else {
        for (int64_t d = 0; d < h8; d += 8) {
          __m256 a = E<T>::ld(xr + d), bb = E<T>::ld(xr + d + h);
          E<T>::st(yr + d, _mm256_fmadd_ps(a, E<T>::ld(c + d), _mm256_mul_ps(bb, E<T>::ld(s + d + h))));
          E<T>::st(yr + d + h, _mm256_fmsub_ps(bb, E<T>::ld(c + d + h), _mm256_mul_ps(a, E<T>::ld(s + d))));
        }
        for (int64_t d = h8; d < h; d++) {
          const float a = E<T>::ld1(xr + d), bb = E<T>::ld1(xr + d + h);
          E<T>::st1(yr + d, a * E<T>::ld1(c + d) + bb * E<T>::ld1(s + d + h));
          E<T>::st1(yr + d + h, bb * E<T>::ld1(c + d + h) - a * E<T>::ld1(s + d));
        }
      }
    }
  });
}

at::Tensor rope_apply(const at::Tensor& x0, const at::Tensor& cs, const at::Tensor& sn, bool backward) {
  at::Tensor x = x0.stride(3) == 1 ? x0 : x0.contiguous();
  const int64_t B = x.size(0), N = x.size(1), Tn = x.size(2), D = x.size(3);
  at::Tensor y = at::empty({B, N, Tn, D}, x.options());
  by_dtype(x.scalar_type(), [&](auto z) {
    using T = decltype(z);
    rope_rows<T>(ptr<T>(x), x.stride(0), x.stride(1), x.stride(2), ptr<T>(cs), ptr<T>(sn), ptr<T>(y), B, N, Tn, D,
                 backward);
  });
  return y;
}

struct Rope : public torch::autograd::Function<Rope> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& cs, const at::Tensor& sn) {
    ctx->save_for_backward({cs, sn});
    return rope_apply(x, cs, sn, false);
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    variable_list s = ctx->get_saved_variables();
    if (!g[0].defined()) return {at::Tensor(), at::Tensor(), at::Tensor()};
    return {rope_apply(g[0].to(s[0].scalar_type()), s[0], s[1], true), at::Tensor(), at::Tensor()};
  }
};

// ---- attention ----

// first[b]: the first key j with an unmasked bias (Lk when none). Query t
// of row b has no key to attend when off + t < first[b].
std::vector<int64_t> first_keys(const float* kb, int64_t ldk, const Geometry& g) {
  std::vector<int64_t> f((size_t)g.B, g.Lk);
  for (int64_t b = 0; b < g.B; b++)
    for (int64_t j = 0; j < g.Lk; j++)
      if (kb[b * ldk + j] > kMasked) {
        f[(size_t)b] = j;
        break;
      }
  return f;
}

// Forward row pass over a block's scores S (rows r = gi*n + i, query time
// t0 + i, Lj columns, type T): P = softmax(S*scale + bias) over the keys
// query t may attend, written over S; lse gets the log-normaliser (+inf for
// a row without keys: P = 1/Lk over all Lk keys, then Lj == Lk).
template <class T>
TT_AVX void attn_fwd_rows(T* S, int64_t rows, int64_t n, int64_t Lj, int64_t t0, const float* kb, const Geometry& g,
                          int64_t first, float* lse, int64_t lse_ld) {
  at::parallel_for(0, rows, 8, [&](int64_t lo, int64_t hi) {
    std::vector<float> buf((size_t)Lj + 8);
    float* sr = buf.data();
    for (int64_t r = lo; r < hi; r++) {
      const int64_t i = r % n, gi = r / n, t = t0 + i;
      T* row = S + r * Lj;
      float* lrow = lse + gi * lse_ld + t;
      if (g.off + t < first) {  // no key to attend: uniform over all keys
        const __m256 u = _mm256_set1_ps(1.f / (float)g.Lk);
        int64_t j = 0;
        for (; j + 8 <= Lj; j += 8) E<T>::st(row + j, u);
        for (; j < Lj; j++) E<T>::st1(row + j, 1.f / (float)g.Lk);
        *lrow = INFINITY;
        continue;
      }
      const int64_t L = std::min(Lj, g.lim(t)), L8 = L & ~int64_t(7);
      const __m256 vs = _mm256_set1_ps(g.scale);
      __m256 vm = _mm256_set1_ps(-INFINITY);
      int64_t j = 0;
      for (; j < L8; j += 8) {
        __m256 s = _mm256_fmadd_ps(E<T>::ld(row + j), vs, _mm256_loadu_ps(kb + j));
        _mm256_storeu_ps(sr + j, s);
        vm = _mm256_max_ps(vm, s);
      }
      float mx = tt_cpu::hmax(vm);
      for (; j < L; j++) {
        sr[j] = E<T>::ld1(row + j) * g.scale + kb[j];
        mx = std::max(mx, sr[j]);
      }
      vm = _mm256_set1_ps(mx);
      const __m256 cut = _mm256_set1_ps(-87.f);
      __m256 acc = _mm256_setzero_ps();
      for (j = 0; j < L8; j += 8) {
        __m256 d = _mm256_sub_ps(_mm256_loadu_ps(sr + j), vm);
        __m256 e = _mm256_and_ps(tt_cpu::exp256(d), _mm256_cmp_ps(d, cut, _CMP_GT_OQ));
        _mm256_storeu_ps(sr + j, e);
        acc = _mm256_add_ps(acc, e);
      }
      float sum = tt_cpu::hsum(acc);
      for (; j < L; j++) {
        const float d = sr[j] - mx;
        sr[j] = d > -87.f ? std::exp(d) : 0.f;
        sum += sr[j];
      }
      const float inv = 1.f / sum;
      const __m256 vi = _mm256_set1_ps(inv);
      for (j = 0; j < L8; j += 8) E<T>::st(row + j, _mm256_mul_ps(_mm256_loadu_ps(sr + j), vi));
      for (; j < L; j++) E<T>::st1(row + j, sr[j] * inv);
      for (; j < Lj; j++) E<T>::st1(row + j, 0.f);
      *lrow = mx + std::log(sum);
    }
  });
}

// Backward row pass: S (recomputed scores) becomes P, dP becomes dS =
// P (dP - sum P dP) scale.
template <class T>
TT_AVX void attn_bwd_rows(T* S, T* dP, int64_t rows, int64_t n, int64_t Lj, int64_t t0, const float* kb,
                          const Geometry& g, const float* lse, int64_t lse_ld) {
  at::parallel_for(0, rows, 8, [&](int64_t lo, int64_t hi) {
    std::vector<float> buf((size_t)Lj + 8);
    float* pr = buf.data();
    for (int64_t r = lo; r < hi; r++) {
      const int64_t i = r % n, gi = r / n, t = t0 + i;
      T *srow = S + r * Lj, *drow = dP + r * Lj;
      const float l = lse[gi * lse_ld + t];
      const bool uniform = std::isinf(l);
      const int64_t L = uniform ? Lj : std::min(Lj, g.lim(t)), L8 = L & ~int64_t(7);
      const __m256 vs = _mm256_set1_ps(g.scale), vl = _mm256_set1_ps(l), cut = _mm256_set1_ps(-87.f);
      __m256 acc = _mm256_setzero_ps();
      int64_t j = 0;
      for (; j < L8; j += 8) {
        __m256 p;
        if (uniform) {
          p = _mm256_set1_ps(1.f / (float)g.Lk);
        } else {
          __m256 d = _mm256_sub_ps(_mm256_fmadd_ps(E<T>::ld(srow + j), vs, _mm256_loadu_ps(kb + j)), vl);
          p = _mm256_and_ps(tt_cpu::exp256(d), _mm256_cmp_ps(d, cut, _CMP_GT_OQ));
        }
        _mm256_storeu_ps(pr + j, p);
        acc = _mm256_fmadd_ps(p, E<T>::ld(drow + j), acc);
      }
      float di = tt_cpu::hsum(acc);
      for (; j < L; j++) {
        float p;
        if (uniform) {
          p = 1.f / (float)g.Lk;
        } else {
          const float d = E<T>::ld1(srow + j) * g.scale + kb[j] - l;
          p = d > -87.f ? std::exp(d) : 0.f;
        }
        pr[j] = p;
        di += p * E<T>::ld1(drow + j);
      }
      const __m256 vd = _mm256_set1_ps(di);
      for (j = 0; j < L8; j += 8) {
        __m256 p = _mm256_loadu_ps(pr + j);
        E<T>::st(srow + j, p);
        E<T>::st(drow + j, _mm256_mul_ps(_mm256_mul_ps(p, _mm256_sub_ps(E<T>::ld(drow + j), vd)), vs));
      }
      for (; j < L; j++) {
        E<T>::st1(srow + j, pr[j]);
        E<T>::st1(drow + j, pr[j] * (E<T>::ld1(drow + j) - di) * g.scale);
      }
      for (; j < Lj; j++) {
        E<T>::st1(srow + j, 0.f);
        E<T>::st1(drow + j, 0.f);
      }
    }
  });
}

// for_each_pair runs fn(b, kv) for every (batch row, KV head) pair. With at
// least as many pairs as intra-op threads the pairs are the parallel tasks
// and each block's GEMMs and row passes run on their task's thread (at a
// Qwen2.5-0.5B layer's 1 x 512, 14/2 heads, this measured 2-3x faster than
// threading each small GEMM: their inner dim is the head dim, 64); with
// fewer, one pair after another with threaded GEMMs and row passes. A pair
// writes only its own blocks (out, lse; gq, and its slices of gk and gv), so
// tasks share nothing. Grad and inference mode are thread-local, so the
// tasks run under the caller's (the workers' own would record autograd
// history, or refuse to write an inference tensor).
template <class F>
void for_each_pair(const Geometry& g, const F& fn) {
  const int64_t pairs = g.B * g.KV;
  if (pairs > 1 && pairs >= at::get_num_threads()) {
    const at::ThreadLocalState tls;
    at::parallel_for(0, pairs, 1, [&](int64_t lo, int64_t hi) {
      at::ThreadLocalStateGuard guard(tls);
      for (int64_t p = lo; p < hi; p++) fn(p / g.KV, p % g.KV);
    });
  } else {
    for (int64_t p = 0; p < pairs; p++) fn(p / g.KV, p % g.KV);
  }
}

// The keys block [0, Lj) of query times [t0, t0+n) for batch row with first key f.
int64_t block_keys(const Geometry& g, int64_t t0, int64_t n, int64_t f) {
  return g.off + t0 < f ? g.Lk : g.lim(t0 + n - 1);
}

// rows (G*n, D) of x (B,H,T,D) for batch b, heads of KV group kv, times [t0,t0+n)
at::Tensor q_block(const at::Tensor& x, const Geometry& g, int64_t b, int64_t kv, int64_t t0, int64_t n) {
  return x[b].narrow(0, kv * g.G, g.G).narrow(1, t0, n).reshape({g.G * n, g.D});
}

// the same rows of y (B,T,H*D) as a (G,n,D) view
at::Tensor o_block(const at::Tensor& y, const Geometry& g, int64_t b, int64_t kv, int64_t t0, int64_t n) {
  return y[b].narrow(0, t0, n).view({n, g.H, g.D}).narrow(1, kv * g.G, g.G).transpose(0, 1);
}

// Forward: out (B,T,H*D); lse (B,H,T) when not NULL.
at::Tensor attn_forward(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& kbias,
                        const Geometry& g, at::Tensor* lse_out) {
  at::Tensor out = at::empty({g.B, g.T, g.H * g.D}, q.options());
  at::Tensor lse = at::empty({g.B, g.H, g.T}, q.options().dtype(at::kFloat));
  at::Tensor kb = kbias.narrow(1, 0, g.Lk).to(at::kFloat).contiguous();
  const float* kbp = kb.data_ptr<float>();
  std::vector<int64_t> first = first_keys(kbp, g.Lk, g);
  for_each_pair(g, [&](int64_t b, int64_t kv) {
    const at::Tensor K = k[b][kv], V = v[b][kv];
    for (int64_t t0 = 0; t0 < g.T; t0 += kChunk) {
      const int64_t n = std::min(kChunk, g.T - t0), Lj = block_keys(g, t0, n, first[(size_t)b]);
      at::Tensor S = tt_gemm::mm(q_block(q, g, b, kv, t0, n), false, K.narrow(0, 0, Lj), true);
      by_dtype(S.scalar_type(), [&](auto z) {
        using T = decltype(z);
        attn_fwd_rows<T>(ptr<T>(S), g.G * n, n, Lj, t0, kbp + b * g.Lk, g, first[(size_t)b],
                         lse.data_ptr<float>() + (b * g.H + kv * g.G) * g.T, g.T);
      });
      o_block(out, g, b, kv, t0, n).copy_(tt_gemm::mm(S, false, V.narrow(0, 0, Lj), false).view({g.G, n, g.D}));
    }
  });
  if (lse_out) *lse_out = lse;
  return out;
}

struct Attention : public torch::autograd::Function<Attention> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            const at::Tensor& kbias, int64_t off, double scale) {
    Geometry g = geometry(q, k, off, scale);
    at::Tensor lse;
    at::Tensor out = attn_forward(q, k, v, kbias, g, &lse);
    ctx->save_for_backward({q, k, v, kbias, lse});
    ctx->saved_data["off"] = off;
    ctx->saved_data["scale"] = scale;
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    variable_list s = ctx->get_saved_variables();
    const at::Tensor &q = s[0], &k = s[1], &v = s[2], &lse = s[4];
    const Geometry g = geometry(q, k, ctx->saved_data["off"].toInt(), ctx->saved_data["scale"].toDouble());
    if (!grads[0].defined()) return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    const at::Tensor gO = grads[0].to(q.scalar_type()).contiguous();
    at::Tensor kb = s[3].narrow(1, 0, g.Lk).to(at::kFloat).contiguous();
    const float* kbp = kb.data_ptr<float>();
    std::vector<int64_t> first = first_keys(kbp, g.Lk, g);
    const bool f32 = q.scalar_type() == at::kFloat;
    at::Tensor gq = at::empty(q.sizes(), q.options());
    at::Tensor gk = at::zeros(k.sizes(), k.options().dtype(at::kFloat));
    at::Tensor gv = at::zeros(v.sizes(), v.options().dtype(at::kFloat));
    for_each_pair(g, [&](int64_t b, int64_t kv) {
      const at::Tensor K = k[b][kv], V = v[b][kv];
      at::Tensor gK = gk[b][kv], gV = gv[b][kv];
      for (int64_t t0 = 0; t0 < g.T; t0 += kChunk) {
        const int64_t n = std::min(kChunk, g.T - t0), Lj = block_keys(g, t0, n, first[(size_t)b]);
        const at::Tensor Q = q_block(q, g, b, kv, t0, n);
        const at::Tensor dO = o_block(gO, g, b, kv, t0, n).reshape({g.G * n, g.D});
        const at::Tensor Kj = K.narrow(0, 0, Lj), Vj = V.narrow(0, 0, Lj);
        at::Tensor S = tt_gemm::mm(Q, false, Kj, true);
        at::Tensor dP = tt_gemm::mm(dO, false, Vj, true);
        by_dtype(S.scalar_type(), [&](auto z) {
          using T = decltype(z);
          attn_bwd_rows<T>(ptr<T>(S), ptr<T>(dP), g.G * n, n, Lj, t0, kbp + b * g.Lk, g,
                           lse.data_ptr<float>() + (b * g.H + kv * g.G) * g.T, g.T);
        });
        at::Tensor gVj = gV.narrow(0, 0, Lj), gKj = gK.narrow(0, 0, Lj);
        if (f32) {
          tt_gemm::mm_into(S, true, dO, false, gVj, 1.f);
          tt_gemm::mm_into(dP, true, Q, false, gKj, 1.f);
        } else {
          gVj.add_(at::mm(S.t(), dO));
          gKj.add_(at::mm(dP.t(), Q));
        }
        gq[b].narrow(0, kv * g.G, g.G).narrow(1, t0, n).copy_(tt_gemm::mm(dP, false, Kj, false).view({g.G, n, g.D}));
      }
    });
    if (!f32) {
      gk = gk.to(k.scalar_type());
      gv = gv.to(v.scalar_type());
    }
    return {gq, gk, gv, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

#pragma GCC pop_options

namespace {

// ---- the ATen compositions the fused ops replace (CUDA, other dtypes) ----

at::Tensor rms_composite(const at::Tensor& x, const at::Tensor& w, double eps) {
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor var = xf.pow(2).mean({-1}, true);
  xf = xf.mul(var.add(eps).rsqrt());
  return w.mul(xf.to(x.scalar_type()));
}

at::Tensor rope_composite(const at::Tensor& x, const at::Tensor& cs, const at::Tensor& sn) {
  const int64_t h = x.size(-1) / 2;
  at::Tensor rot = at::cat({x.narrow(-1, h, h).neg(), x.narrow(-1, 0, h)}, -1);
  return x.mul(cs).add(rot.mul(sn));
}

// Scores plus an additive mask (B,1,1,T,Lk): the key bias, and the causal
// mask where query t could see keys past off + t.
at::Tensor attn_composite(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& kbias,
                          int64_t off, double scale) {
  const Geometry g = geometry(q, k, off, scale);
  const float lowest = std::numeric_limits<float>::lowest();
  at::Tensor bias = kbias.narrow(1, 0, g.Lk).to(at::kFloat).view({g.B, 1, 1, 1, g.Lk});
  if (off + 1 < g.Lk) {
    std::vector<float> cm((size_t)(g.T * g.Lk), 0.f);
    for (int64_t t = 0; t < g.T; t++)
      for (int64_t j = g.lim(t); j < g.Lk; j++) cm[(size_t)(t * g.Lk + j)] = lowest;
    at::Tensor causal = at::empty({g.T, g.Lk}, at::TensorOptions().dtype(at::kFloat));
    std::memcpy(causal.data_ptr<float>(), cm.data(), cm.size() * sizeof(float));
    bias = bias.add(causal.to(bias.device()).view({1, 1, 1, g.T, g.Lk})).clamp_min(lowest);
  }
  at::Tensor qg = q.reshape({g.B, g.KV, g.G * g.T, g.D});
  at::Tensor s = at::matmul(qg, k.transpose(2, 3)).mul(scale).view({g.B, g.KV, g.G, g.T, g.Lk});
  // in place only for float32 scores without autograd: bf16 cannot hold the
  // lowest float32 (it would become -inf and fully masked rows NaN)
  s = (!c10::GradMode::is_enabled() && s.scalar_type() == at::kFloat) ? s.add_(bias) : s.add(bias);
  s = s.softmax(-1, at::kFloat).to(q.scalar_type()).view({g.B, g.KV, g.G * g.T, g.Lk});
  return at::matmul(s, v).view({g.B, g.H, g.T, g.D}).transpose(1, 2).reshape({g.B, g.T, g.H * g.D});
}

#ifdef RAGEN_HAVE_SDPA
// ---- attention on a GPU: PyTorch's fused attention kernels ----

// keys_all_attended says whether the key bias attends every one of the
// first Lk keys of every row (no padding), which lets attention run as
// plain causal attention (FlashAttention) instead of with a mask. The
// answer reads the bias back from the device once per bias tensor: the
// layers of a forward share one, so the cache below remembers the answer by
// the tensor. It holds a weak reference to each: while held, no new tensor
// can take the address, and an entry whose tensor is gone (or whose data
// changed in place) is not used.
bool keys_all_attended(const at::Tensor& kbias, int64_t Lk) {
  struct Entry {
    c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl> t;
    int64_t version, Lk;
    bool all;
  };
  static std::mutex mu;
  static std::vector<Entry> cache;
  // (an inference tensor keeps no version counter)
  const int64_t ver = kbias.is_inference() ? -1 : (int64_t)kbias._version();
  {
    std::lock_guard<std::mutex> lk(mu);
    cache.erase(std::remove_if(cache.begin(), cache.end(), [](const Entry& e) { return e.t.expired(); }),
                cache.end());
    for (const Entry& e : cache)
      if (e.t._unsafe_get_target() == kbias.unsafeGetTensorImpl() && e.version == ver && e.Lk == Lk) return e.all;
  }
  bool all;
  {
    c10::InferenceMode im;
    all = kbias.narrow(1, 0, Lk).eq(0).all().item<bool>();
  }
  std::lock_guard<std::mutex> lk(mu);
  if (cache.size() >= 64) cache.erase(cache.begin());
  cache.push_back(Entry{c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(kbias.getIntrusivePtr()), ver, Lk, all});
  return all;
}

// The most negative finite value of a dtype: masked scores stay finite, so
// a query row with every key masked attends all keys uniformly, as the
// additive-mask softmax does (-inf would make it NaN).
double finite_lowest(at::ScalarType st) {
  switch (st) {
    case at::kBFloat16: return (double)std::numeric_limits<c10::BFloat16>::lowest();
    case at::kHalf: return -65504.0;
    default: return (double)std::numeric_limits<float>::lowest();
  }
}

// attn_sdpa is attention() through at::scaled_dot_product_attention, which
// on CUDA picks FlashAttention (causal, no mask) or the memory-efficient
// kernel (with a mask) and has its own backward.
//   - Causal without padding (training, a fresh prefill): K and V repeated
//     to the query heads (head h reads KV head h / G) and FlashAttention.
//   - Otherwise (padding, or queries after a KV cache, as in decoding): the
//     grouped form of attn_composite, the G query heads of a KV head
//     stacked as G*T rows with a mask of their own, so the KV cache is
//     never copied.
at::Tensor attn_sdpa(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& kbias,
                     int64_t off, double scale) {
  const Geometry g = geometry(q, k, off, scale);
  if (off == 0 && g.T == g.Lk && g.T > 1 && keys_all_attended(kbias, g.Lk)) {
    at::Tensor kk = g.G > 1 ? k.repeat_interleave(g.G, 1) : k;
    at::Tensor vv = g.G > 1 ? v.repeat_interleave(g.G, 1) : v;
    at::Tensor o = at::scaled_dot_product_attention(q, kk, vv, c10::nullopt, 0.0, true, scale);  // (B,H,T,D)
    return o.transpose(1, 2).reshape({g.B, g.T, g.H * g.D});
  }
  // attended: the key is not padding, and (where some query could see past
  // itself) j <= off + t for row r = g*T + t
  at::Tensor keep = kbias.narrow(1, 0, g.Lk).eq(0).view({g.B, 1, 1, g.Lk});
  if (off + 1 < g.Lk) {
    auto lo = at::TensorOptions().dtype(at::kLong).device(q.device());
    at::Tensor lim = at::arange(g.G * g.T, lo).remainder(g.T).add_(off).view({g.G * g.T, 1});
    keep = keep.logical_and(at::arange(g.Lk, lo).view({1, g.Lk}).le(lim).view({1, 1, g.G * g.T, g.Lk}));
  } else {
    keep = keep.expand({g.B, 1, g.G * g.T, g.Lk});
  }
  at::Tensor mask = at::zeros(keep.sizes(), q.options()).masked_fill_(keep.logical_not(), finite_lowest(q.scalar_type()));
  at::Tensor qg = q.reshape({g.B, g.KV, g.G * g.T, g.D});
  at::Tensor o = at::scaled_dot_product_attention(qg, k, v, mask, 0.0, false, scale);  // (B,KV,G*T,D)
  return o.view({g.B, g.H, g.T, g.D}).transpose(1, 2).reshape({g.B, g.T, g.H * g.D});
}

// RAGEN_ATTENTION=sdpa runs the CPU through it too (the tests of that path)
bool sdpa_forced() {
  static const bool on = [] {
    const char* e = std::getenv("RAGEN_ATTENTION");
    return e && std::strcmp(e, "sdpa") == 0;
  }();
  return on;
}
#endif

bool same_cpu(const at::Tensor& x, std::initializer_list<at::Tensor> ts) {
  for (const at::Tensor& t : ts)
    if (t.scalar_type() != x.scalar_type() || !t.device().is_cpu()) return false;
  return true;
}

}  // namespace

namespace tt_train {

bool supports(const at::Tensor& x) {
  return tt_cpu::cpu_has_avx2() && x.defined() && x.device().is_cpu() &&
         (x.scalar_type() == at::kFloat || x.scalar_type() == at::kBFloat16);
}

at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps) {
  if (!supports(x) || !same_cpu(x, {w})) return rms_composite(x, w, eps);
  if (needs_grad({x, w})) return RmsNorm::apply(x, w, eps);
  return rms_forward(x.contiguous(), w.contiguous(), eps, nullptr);
}

at::Tensor swiglu(const at::Tensor& gu) {
  if (!supports(gu)) {
    const int64_t I = gu.size(-1) / 2;
    return at::silu(gu.narrow(-1, 0, I)).mul(gu.narrow(-1, I, I));
  }
  if (needs_grad({gu})) return SwiGLU::apply(gu);
  return swiglu_forward(gu.contiguous());
}

at::Tensor rope(const at::Tensor& x, const at::Tensor& cs, const at::Tensor& sn) {
  if (!supports(x) || !same_cpu(x, {cs, sn})) return rope_composite(x, cs, sn);
  if (needs_grad({x})) return Rope::apply(x, cs.contiguous(), sn.contiguous());
  return rope_apply(x, cs.contiguous(), sn.contiguous(), false);
}

at::Tensor attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v, const at::Tensor& kbias,
                     int64_t off, double scale) {
#ifdef RAGEN_HAVE_SDPA
  if (!q.device().is_cpu() || sdpa_forced()) return attn_sdpa(q, k, v, kbias, off, scale);
#endif
  if (!supports(q) || !same_cpu(q, {k, v}) || !kbias.device().is_cpu()) return attn_composite(q, k, v, kbias, off, scale);
  if (needs_grad({q, k, v})) return Attention::apply(q, k, v, kbias, off, scale);
  return attn_forward(q, k, v, kbias, geometry(q, k, off, scale), nullptr);
}

}  // namespace tt_train

// ---- the C entry points ----

namespace {

bool is_float(const at::Tensor& t) { return at::isFloatingType(t.scalar_type()); }

}  // namespace

extern "C" {

tt_err tt_rms_norm(tt_tensor x, tt_tensor w, double eps, tt_tensor* out) {
  OP_TRY("rms_norm")
  OP_NEED(x && w && out, "missing input");
  const at::Tensor &X = x->t, &W = w->t;
  OP_NEED(X.dim() >= 1 && is_float(X), "x must be a floating tensor of at least one dim");
  OP_NEED(W.dim() == 1 && W.size(0) == X.size(-1), "w must be (N) for x (..., N)");
  OP_NEED(W.scalar_type() == X.scalar_type() && W.device() == X.device(), "w must have x's dtype and device");
  OP_NEED(eps >= 0, "eps must be >= 0");
  *out = tt_counted(tt_train::rms_norm(X, W, eps));
  OP_CATCH
}

tt_err tt_swiglu(tt_tensor gu, tt_tensor* out) {
  OP_TRY("swiglu")
  OP_NEED(gu && out, "missing input");
  const at::Tensor& G = gu->t;
  OP_NEED(G.dim() >= 1 && is_float(G), "gu must be a floating tensor of at least one dim");
  OP_NEED(G.size(-1) % 2 == 0, "gu's last dim must be even (gate and up halves)");
  *out = tt_counted(tt_train::swiglu(G));
  OP_CATCH
}

tt_err tt_rope(tt_tensor x, tt_tensor cos, tt_tensor sin, tt_tensor* out) {
  OP_TRY("rope")
  OP_NEED(x && cos && sin && out, "missing input");
  const at::Tensor &X = x->t, &C = cos->t, &S = sin->t;
  OP_NEED(X.dim() == 4 && is_float(X), "x must be a floating (B,N,T,D) tensor");
  OP_NEED(X.size(3) % 2 == 0, "the head dim must be even");
  OP_NEED(C.sizes() == at::IntArrayRef({X.size(0), 1, X.size(2), X.size(3)}) && S.sizes() == C.sizes(),
             "cos and sin must be (B,1,T,D) for x (B,N,T,D)");
  OP_NEED(C.scalar_type() == X.scalar_type() && S.scalar_type() == X.scalar_type(),
             "cos and sin must have x's dtype");
  *out = tt_counted(tt_train::rope(X, C, S));
  OP_CATCH
}

tt_err tt_gqa_attention(tt_tensor q, tt_tensor k, tt_tensor v, tt_tensor kbias, int64_t offset, double scale,
                        tt_tensor* out) {
  OP_TRY("gqa_attention")
  OP_NEED(q && k && v && kbias && out, "missing input");
  const at::Tensor &Q = q->t, &K = k->t, &V = v->t, &KB = kbias->t;
  OP_NEED(Q.dim() == 4 && K.dim() == 4 && V.dim() == 4, "q must be (B,H,T,D), k and v (B,KV,Lk,D)");
  OP_NEED(is_float(Q) && K.scalar_type() == Q.scalar_type() && V.scalar_type() == Q.scalar_type(),
             "q, k and v must share one floating dtype");
  OP_NEED(K.sizes() == V.sizes() && K.size(0) == Q.size(0) && K.size(3) == Q.size(3),
             "k and v must be (B,KV,Lk,D) for q (B,H,T,D)");
  OP_NEED(K.size(1) > 0 && Q.size(1) % K.size(1) == 0, "the query heads must be a multiple of the KV heads");
  OP_NEED(KB.dim() == 2 && KB.size(0) == Q.size(0) && KB.size(1) >= K.size(2) && KB.scalar_type() == at::kFloat,
             "kbias must be float32 (B, >= Lk)");
  OP_NEED(offset >= 0 && offset + Q.size(2) <= K.size(2), "need 0 <= offset and offset + T <= Lk");
  OP_NEED(scale > 0, "scale must be > 0");
  *out = tt_counted(tt_train::attention(Q, K, V, KB, offset, scale));
  OP_CATCH
}

}  // extern "C"
