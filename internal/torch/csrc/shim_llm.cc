//go:build !torchshared

// shim_llm.cc - fused ops for the decoder models of package llm.
//
// The forward knows weight roles (shim.h's tt_llm_role), not model families:
// a family's Go file maps its Hugging Face names onto the roles, leaves the
// optional ones (qkv bias, q/k norms) NULL when it has none, and supplies the
// rotary tables, so RoPE variants and scaling live in Go.
//
// At the sizes ragen trains on a CPU, decoding is bound by per-op overhead,
// not by FLOPs: one C call per whole forward pass (all decoder layers, KV
// cache writes, rotary embeddings, grouped-query attention) replaces about a
// hundred cgo calls per step. The ops are composed from ATen calls, so
// autograd records them exactly as it would record the same calls made one
// by one: Forward keeps gradients unless grad mode is off on the calling
// thread (or no_grad is passed).
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <ATen/core/Tensor.h>
#include <ATen/core/Generator.h>
#include <ATen/Parallel.h>
#include <immintrin.h>
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>

#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/embedding.h>
#include <ATen/ops/full.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/multinomial.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>

#include <cmath>
#include <malloc.h>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "shim.h"
#include "tensor_impl.hpp"
#include "cpu_kernels.hpp"
#include "gemm.hpp"
#include "op_errors.hpp"
#include "train_ops.hpp"

// Same definition as in shim.cc (one definition per the ODR).
struct tt_gen_s {
  at::Generator g;
};

namespace {

using tt_cpu::cpu_has_avx2;
using tt_cpu::exp256;
using tt_cpu::hsum;
using tt_cpu::isa_allows;

tt_tensor wrap(at::Tensor t) { return tt_counted(std::move(t)); }

at::ScalarType st_of(int d) {
  switch (d) {
    case TT_F32: return at::kFloat;
    case TT_F64: return at::kDouble;
    case TT_BF16: return at::kBFloat16;
    case TT_F16: return at::kHalf;
  }
  throw std::invalid_argument("llm: unsupported float dtype code " + std::to_string(d));
}

struct LoRA {
  const tt_tensor* ab;  // 14 per layer: (A, B) for q k v o gate up down; NULL entries = off
  double scale;
  bool on(int li, int target) const { return ab && ab[li * 14 + 2 * target]; }
  at::Tensor delta(int li, int target, const at::Tensor& x) const {
    const at::Tensor& A = ab[li * 14 + 2 * target]->t;
    const at::Tensor& B = ab[li * 14 + 2 * target + 1]->t;
    return at::linear(at::linear(x, A), B).mul(scale);
  }
};

// adds LoRA deltas for targets t0.. (with output widths) onto y, a fused projection.
at::Tensor add_lora(at::Tensor y, const at::Tensor& x, const LoRA& lo, int li, int t0,
                    std::initializer_list<int64_t> widths) {
  bool any = false;
  int t = t0;
  for (size_t i = 0; i < widths.size(); i++, t++) any = any || lo.on(li, t);
  if (!any) return y;
  std::vector<at::Tensor> parts;
  t = t0;
  for (int64_t w : widths) {
    if (lo.on(li, t)) {
      parts.push_back(lo.delta(li, t, x));
    } else {
      std::vector<int64_t> sh = x.sizes().vec();
      sh.back() = w;
      parts.push_back(at::zeros(sh, y.options()));
    }
    t++;
  }
  return y.add(at::cat(parts, -1));
}

// ---- decode kernels (fp32, CPU, inference only) ----
//
// At decode time every projection multiplies a handful of rows by a large
// weight matrix. OpenBLAS packs (copies) the whole weight on every call,
// which costs as much as the multiply; skinny_linear reads each weight row
// once and keeps the few input rows in L1. decode_attention does one query
// step of attention over the KV cache in a single pass (scores, softmax,
// weighted sum) instead of two batched GEMMs that each pack the cache.

// O3 for the tiles below comes from a pragma, not an optimize("O3")
// attribute: GCC 14 refuses to inline the always_inline intrinsics into a
// function whose attributes carry optimize() next to target().
#pragma GCC push_options
#pragma GCC optimize("O3")
// One MT x NT tile: y[m0+i, n0+j] = b[n0+j] + sum_k x[m0+i,k] w[n0+j,k].
template <int MT, int NT>
__attribute__((target("avx2,fma"), always_inline)) inline void tile(
    const float* x, int64_t K, const float* w, const float* b, float* y, int64_t N, int64_t m0, int64_t n0) {
  const int64_t K8 = K & ~int64_t(7);
  __m256 acc[MT][NT];
  for (int i = 0; i < MT; i++)
    for (int j = 0; j < NT; j++) acc[i][j] = _mm256_setzero_ps();
  for (int64_t k = 0; k < K8; k += 8) {
    __m256 wv[NT];
    for (int j = 0; j < NT; j++) wv[j] = _mm256_loadu_ps(w + (n0 + j) * K + k);
    for (int i = 0; i < MT; i++) {
      __m256 xv = _mm256_loadu_ps(x + (m0 + i) * K + k);
      for (int j = 0; j < NT; j++) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MT; i++)
    for (int j = 0; j < NT; j++) {
      float r = hsum(acc[i][j]);
      for (int64_t k = K8; k < K; k++) r += x[(m0 + i) * K + k] * w[(n0 + j) * K + k];
      y[(m0 + i) * N + n0 + j] = r + (b ? b[n0 + j] : 0.f);
    }
}

template <int NT>
__attribute__((target("avx2,fma"))) void tile_col(const float* x, int64_t M, int64_t K, const float* w,
                                                                  const float* b, float* y, int64_t N, int64_t n0) {
  int64_t m = 0;
  for (; m + 3 <= M; m += 3) tile<3, NT>(x, K, w, b, y, N, m, n0);
  switch (M - m) {
    case 2: tile<2, NT>(x, K, w, b, y, N, m, n0); break;
    case 1: tile<1, NT>(x, K, w, b, y, N, m, n0); break;
  }
}

// y[m,n] = b[n] + sum_k x[m,k] w[n,k] for n in [n0,n1); x (M,K), w (N,K), y (M,N) row-major.
// Tiles of 3 rows x 3 weight rows keep 9 accumulators in registers: 6 loads per 9 FMAs.
void skinny_rows(const float* x, int64_t M, int64_t K, const float* w, const float* b, float* y, int64_t N,
                 int64_t n0, int64_t n1) {
  int64_t n = n0;
  for (; n + 3 <= n1; n += 3) tile_col<3>(x, M, K, w, b, y, N, n);
  for (; n < n1; n++) tile_col<1>(x, M, K, w, b, y, N, n);
}

// The AVX-512 form: 4 input rows x 6 weight rows (24 zmm accumulators), the
// K tail by masked loads, and a software prefetch 1 KiB ahead on each weight
// row (at decode the weights stream from DRAM; measured 12% faster than the
// AVX2 tiles on the 151,936 x 896 head at batch 8, 2 threads).
bool cpu_has_avx512() {
  static const bool ok = __builtin_cpu_supports("avx512f") && cpu_has_avx2() && isa_allows("avx512");
  return ok;
}

template <int MT, int NT>
__attribute__((target("avx512f"), always_inline)) inline void tile512(
    const float* x, int64_t K, const float* w, const float* b, float* y, int64_t N, int64_t m0, int64_t n0) {
  __m512 acc[MT][NT];
  for (int i = 0; i < MT; i++)
    for (int j = 0; j < NT; j++) acc[i][j] = _mm512_setzero_ps();
  const int64_t K16 = K & ~int64_t(15);
  int64_t k = 0;
  for (; k < K16; k += 16) {
    __m512 wv[NT];
    for (int j = 0; j < NT; j++) {
      _mm_prefetch(reinterpret_cast<const char*>(w + (n0 + j) * K + k + 256), _MM_HINT_T0);
      wv[j] = _mm512_loadu_ps(w + (n0 + j) * K + k);
    }
    for (int i = 0; i < MT; i++) {
      __m512 xv = _mm512_loadu_ps(x + (m0 + i) * K + k);
      for (int j = 0; j < NT; j++) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  if (k < K) {
    const __mmask16 mk = static_cast<__mmask16>((1u << (K - k)) - 1);
    __m512 wv[NT];
    for (int j = 0; j < NT; j++) wv[j] = _mm512_maskz_loadu_ps(mk, w + (n0 + j) * K + k);
    for (int i = 0; i < MT; i++) {
      __m512 xv = _mm512_maskz_loadu_ps(mk, x + (m0 + i) * K + k);
      for (int j = 0; j < NT; j++) acc[i][j] = _mm512_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MT; i++)
    for (int j = 0; j < NT; j++) y[(m0 + i) * N + n0 + j] = _mm512_reduce_add_ps(acc[i][j]) + (b ? b[n0 + j] : 0.f);
}

template <int NT>
__attribute__((target("avx512f"))) void tile512_col(const float* x, int64_t M, int64_t K,
                                                                      const float* w, const float* b, float* y,
                                                                      int64_t N, int64_t n0) {
  int64_t m = 0;
  for (; m + 4 <= M; m += 4) tile512<4, NT>(x, K, w, b, y, N, m, n0);
  switch (M - m) {
    case 3: tile512<3, NT>(x, K, w, b, y, N, m, n0); break;
    case 2: tile512<2, NT>(x, K, w, b, y, N, m, n0); break;
    case 1: tile512<1, NT>(x, K, w, b, y, N, m, n0); break;
  }
}

#pragma GCC pop_options

void skinny_rows512(const float* x, int64_t M, int64_t K, const float* w, const float* b, float* y, int64_t N,
                    int64_t n0, int64_t n1) {
  int64_t n = n0;
  for (; n + 6 <= n1; n += 6) tile512_col<6>(x, M, K, w, b, y, N, n);
  for (; n < n1; n++) tile512_col<1>(x, M, K, w, b, y, N, n);
}

// ---- bf16 decode projections ----
//
// The same few-row products for bf16 x and w (a bf16 model generating):
// float32 sums of the bf16 products, the bias added in float32 and the
// result rounded to bf16 once, as ATen's bf16 linear does. They stream the
// weights at half float32's bytes:
//   - AVX-512 BF16 (vdpbf16ps: 32 products per instruction, pairs summed
//     exactly, round to nearest), 2 input rows x 8 weight rows per tile
//     (eight weight streams in flight, each prefetched 4 KiB ahead);
//   - AVX2 otherwise: the weights widened to float32 in registers (a shift)
//     against input rows widened once per call, 3 x 3 tiles.
bool cpu_has_avx512bf16() {
  static const bool ok = cpu_has_avx512() && __builtin_cpu_supports("avx512bf16") &&
                         __builtin_cpu_supports("avx512bw") && isa_allows("avx512bf16");
  return ok;
}

#pragma GCC push_options
#pragma GCC optimize("O3")
template <int MT, int NT>
__attribute__((target("avx512f,avx512bw,avx512bf16"), always_inline)) inline void tile_bf16_512(
    const uint16_t* x, int64_t K, const uint16_t* w, const float* b, uint16_t* y, int64_t N, int64_t m0, int64_t n0) {
  __m512 acc[MT][NT];
  for (int i = 0; i < MT; i++)
    for (int j = 0; j < NT; j++) acc[i][j] = _mm512_setzero_ps();
  const int64_t K32 = K & ~int64_t(31);
  int64_t k = 0;
  for (; k < K32; k += 32) {
    __m512i wv[NT];
    for (int j = 0; j < NT; j++) {
      _mm_prefetch(reinterpret_cast<const char*>(w + (n0 + j) * K + k + 2048), _MM_HINT_T0);
      wv[j] = _mm512_loadu_si512(w + (n0 + j) * K + k);
    }
    for (int i = 0; i < MT; i++) {
      __m512i xv = _mm512_loadu_si512(x + (m0 + i) * K + k);
      for (int j = 0; j < NT; j++) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], (__m512bh)xv, (__m512bh)wv[j]);
    }
  }
  if (k < K) {
    const __mmask32 mk = static_cast<__mmask32>((K - k) >= 32 ? ~0u : ((1u << (K - k)) - 1));
    __m512i wv[NT];
    for (int j = 0; j < NT; j++) wv[j] = _mm512_maskz_loadu_epi16(mk, w + (n0 + j) * K + k);
    for (int i = 0; i < MT; i++) {
      __m512i xv = _mm512_maskz_loadu_epi16(mk, x + (m0 + i) * K + k);
      for (int j = 0; j < NT; j++) acc[i][j] = _mm512_dpbf16_ps(acc[i][j], (__m512bh)xv, (__m512bh)wv[j]);
    }
  }
  for (int i = 0; i < MT; i++)
    for (int j = 0; j < NT; j++) {
      const float r = _mm512_reduce_add_ps(acc[i][j]) + (b ? b[n0 + j] : 0.f);
      y[(m0 + i) * N + n0 + j] = c10::BFloat16(r).x;
    }
}

template <int NT>
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void tile_bf16_512_col(const uint16_t* x, int64_t M,
                                                                             int64_t K, const uint16_t* w,
                                                                             const float* b, uint16_t* y, int64_t N,
                                                                             int64_t n0) {
  int64_t m = 0;
  for (; m + 2 <= M; m += 2) tile_bf16_512<2, NT>(x, K, w, b, y, N, m, n0);
  if (m < M) tile_bf16_512<1, NT>(x, K, w, b, y, N, m, n0);
}

// xf: the input rows widened to float32 (M,K); w bf16 (N,K)
template <int MT, int NT>
__attribute__((target("avx2,fma"), always_inline)) inline void tile_bf16_avx2(
    const float* xf, int64_t K, const uint16_t* w, const float* b, uint16_t* y, int64_t N, int64_t m0, int64_t n0) {
  const int64_t K8 = K & ~int64_t(7);
  __m256 acc[MT][NT];
  for (int i = 0; i < MT; i++)
    for (int j = 0; j < NT; j++) acc[i][j] = _mm256_setzero_ps();
  for (int64_t k = 0; k < K8; k += 8) {
    __m256 wv[NT];
    for (int j = 0; j < NT; j++) {
      __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w + (n0 + j) * K + k));
      wv[j] = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    }
    for (int i = 0; i < MT; i++) {
      __m256 xv = _mm256_loadu_ps(xf + (m0 + i) * K + k);
      for (int j = 0; j < NT; j++) acc[i][j] = _mm256_fmadd_ps(xv, wv[j], acc[i][j]);
    }
  }
  for (int i = 0; i < MT; i++)
    for (int j = 0; j < NT; j++) {
      float r = hsum(acc[i][j]);
      for (int64_t k = K8; k < K; k++) {
        uint32_t u = (uint32_t)w[(n0 + j) * K + k] << 16;
        float wf;
        std::memcpy(&wf, &u, 4);
        r += xf[(m0 + i) * K + k] * wf;
      }
      y[(m0 + i) * N + n0 + j] = c10::BFloat16(r + (b ? b[n0 + j] : 0.f)).x;
    }
}

template <int NT>
__attribute__((target("avx2,fma"))) void tile_bf16_avx2_col(const float* xf, int64_t M, int64_t K,
                                                             const uint16_t* w, const float* b, uint16_t* y,
                                                             int64_t N, int64_t n0) {
  int64_t m = 0;
  for (; m + 3 <= M; m += 3) tile_bf16_avx2<3, NT>(xf, K, w, b, y, N, m, n0);
  switch (M - m) {
    case 2: tile_bf16_avx2<2, NT>(xf, K, w, b, y, N, m, n0); break;
    case 1: tile_bf16_avx2<1, NT>(xf, K, w, b, y, N, m, n0); break;
  }
}
#pragma GCC pop_options

void skinny_rows_bf16(const uint16_t* x, const float* xf, int64_t M, int64_t K, const uint16_t* w, const float* b,
                      uint16_t* y, int64_t N, int64_t n0, int64_t n1) {
  int64_t n = n0;
  if (xf == nullptr) {
    for (; n + 8 <= n1; n += 8) tile_bf16_512_col<8>(x, M, K, w, b, y, N, n);
    for (; n < n1; n++) tile_bf16_512_col<1>(x, M, K, w, b, y, N, n);
    return;
  }
  for (; n + 3 <= n1; n += 3) tile_bf16_avx2_col<3>(xf, M, K, w, b, y, N, n);
  for (; n < n1; n++) tile_bf16_avx2_col<1>(xf, M, K, w, b, y, N, n);
}

constexpr int64_t kSkinnyMaxRows = 16;

bool skinny_bf16_ok(const at::Tensor& x, const at::Tensor& w) {
  return cpu_has_avx2() && x.device().is_cpu() && w.device().is_cpu() && x.scalar_type() == at::kBFloat16 &&
         w.scalar_type() == at::kBFloat16 && w.dim() == 2 && w.is_contiguous() && x.size(-1) == w.size(1) &&
         x.numel() / std::max<int64_t>(x.size(-1), 1) <= kSkinnyMaxRows && !c10::GradMode::is_enabled();
}

at::Tensor dec_linear_bf16(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  const int64_t K = w.size(1), N = w.size(0);
  at::Tensor xc = x.contiguous();
  const int64_t M = xc.numel() / K;
  std::vector<int64_t> sh = x.sizes().vec();
  sh.back() = N;
  at::Tensor y = at::empty(sh, x.options());
  const uint16_t* xp = reinterpret_cast<const uint16_t*>(xc.data_ptr<at::BFloat16>());
  const uint16_t* wp = reinterpret_cast<const uint16_t*>(w.data_ptr<at::BFloat16>());
  uint16_t* yp = reinterpret_cast<uint16_t*>(y.data_ptr<at::BFloat16>());
  at::Tensor bf = b.defined() ? b.to(at::kFloat).contiguous() : at::Tensor();
  const float* bp = bf.defined() ? bf.data_ptr<float>() : nullptr;
  at::Tensor xw;  // the AVX2 form's float32 rows
  if (!cpu_has_avx512bf16()) xw = xc.view({M, K}).to(at::kFloat).contiguous();
  const float* xf = xw.defined() ? xw.data_ptr<float>() : nullptr;
  at::parallel_for(0, (N + 47) / 48, 1, [&](int64_t lo, int64_t hi) {
    skinny_rows_bf16(xp, xf, M, K, wp, bp, yp, N, lo * 48, std::min(N, hi * 48));
  });
  return y;
}

bool skinny_ok(const at::Tensor& x, const at::Tensor& w) {
  return cpu_has_avx2() && x.device().is_cpu() && w.device().is_cpu() && x.scalar_type() == at::kFloat &&
         w.scalar_type() == at::kFloat && w.dim() == 2 && w.is_contiguous() && x.size(-1) == w.size(1) &&
         x.numel() / std::max<int64_t>(x.size(-1), 1) <= kSkinnyMaxRows && !c10::GradMode::is_enabled();
}

// linear for the decode path: skinny kernel when it applies, else at::linear.
at::Tensor dec_linear(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  if (skinny_bf16_ok(x, w) && (!b.defined() || b.device().is_cpu())) return dec_linear_bf16(x, w, b);
  if (!skinny_ok(x, w) || (b.defined() && (b.scalar_type() != at::kFloat || !b.is_contiguous()))) {
    return tt_gemm::linear(x, w, b);
  }
  const int64_t K = w.size(1), N = w.size(0);
  at::Tensor xc = x.contiguous();
  const int64_t M = xc.numel() / K;
  std::vector<int64_t> sh = x.sizes().vec();
  sh.back() = N;
  at::Tensor y = at::empty(sh, x.options());
  const float* xp = xc.data_ptr<float>();
  const float* wp = w.data_ptr<float>();
  const float* bp = b.defined() ? b.data_ptr<float>() : nullptr;
  float* yp = y.data_ptr<float>();
  // blocks of 48 output features (a multiple of the 3- and 6-row tiles) per task
  const bool wide = cpu_has_avx512();
  at::parallel_for(0, (N + 47) / 48, 1, [&](int64_t lo, int64_t hi) {
    if (wide)
      skinny_rows512(xp, M, K, wp, bp, yp, N, lo * 48, std::min(N, hi * 48));
    else
      skinny_rows(xp, M, K, wp, bp, yp, N, lo * 48, std::min(N, hi * 48));
  });
  return y;
}

// 8 cache entries as float32: float as is, bfloat16 (raw uint16) widened.
__attribute__((target("avx2,fma"), always_inline)) inline __m256 ld8(const float* p) { return _mm256_loadu_ps(p); }
__attribute__((target("avx2,fma"), always_inline)) inline __m256 ld8(const uint16_t* p) {
  __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}
inline float ld1(const float* p) { return *p; }
inline float ld1(const uint16_t* p) {
  uint32_t u = uint32_t(*p) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// One decode step of attention for query heads [h0,h1) of batch row b.
// q: (B,H,D) contiguous float32; K,V caches (B,KV,Lmax,D) contiguous, float32
// or bfloat16 (CT uint16_t); bias row (Lk).
template <class CT>
__attribute__((target("avx2,fma"))) void attend_rows(const float* q, const CT* kc, const CT* vc,
                                                     const float* bias, float* out, int64_t H, int64_t KV,
                                                     int64_t Lmax, int64_t Lk, int64_t D, float scale,
                                                     int64_t b, int64_t h, float* sc) {
  const int64_t G = H / KV, kv = h / G;
  const float* qv = q + (b * H + h) * D;
  const CT* K = kc + (b * KV + kv) * Lmax * D;
  const CT* V = vc + (b * KV + kv) * Lmax * D;
  const int64_t D8 = D & ~int64_t(7);
  float mx = -std::numeric_limits<float>::infinity();
  for (int64_t l = 0; l < Lk; l++) {
    const CT* kr = K + l * D;
    __m256 a = _mm256_setzero_ps();
    for (int64_t d = 0; d < D8; d += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(qv + d), ld8(kr + d), a);
    float s = hsum(a);
    for (int64_t d = D8; d < D; d++) s += qv[d] * ld1(kr + d);
    s = s * scale + bias[l];
    s = std::max(s, std::numeric_limits<float>::lowest());
    sc[l] = s;
    mx = std::max(mx, s);
  }
  const int64_t L8 = Lk & ~int64_t(7);
  __m256 vm = _mm256_set1_ps(mx), vs = _mm256_setzero_ps();
  for (int64_t l = 0; l < L8; l += 8) {
    __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(sc + l), vm));
    _mm256_storeu_ps(sc + l, e);
    vs = _mm256_add_ps(vs, e);
  }
  float sum = hsum(vs);
  for (int64_t l = L8; l < Lk; l++) {
    sc[l] = std::exp(sc[l] - mx);
    sum += sc[l];
  }
  const float inv = 1.f / sum;
  float* o = out + (b * H + h) * D;
  for (int64_t d = 0; d < D; d++) o[d] = 0.f;
  for (int64_t l = 0; l < Lk; l++) {
    const float p = sc[l] * inv;
    const CT* vr = V + l * D;
    __m256 pv = _mm256_set1_ps(p);
    for (int64_t d = 0; d < D8; d += 8)
      _mm256_storeu_ps(o + d, _mm256_fmadd_ps(pv, ld8(vr + d), _mm256_loadu_ps(o + d)));
    for (int64_t d = D8; d < D; d++) o[d] += p * ld1(vr + d);
  }
}

// q (B,H,1,D) any layout; caches contiguous (B,KV,Lmax,D) of q's dtype,
// float32 or bfloat16 (q is widened, the output rounded back); kbias
// (B, >=Lk) float. Returns (B,H,1,D).
at::Tensor decode_attention(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc, const at::Tensor& kbias,
                            int64_t Lk, double scale) {
  const int64_t B = q.size(0), H = q.size(1), D = q.size(3), KV = kc.size(1), Lmax = kc.size(2);
  at::Tensor qc = q.to(at::kFloat).contiguous();
  at::Tensor bc = kbias.narrow(1, 0, Lk).contiguous();
  at::Tensor out = at::empty({B, H, 1, D}, qc.options());
  const float *qp = qc.data_ptr<float>(), *bp = bc.data_ptr<float>();
  float* op = out.data_ptr<float>();
  auto run = [&](const auto* kp, const auto* vp) {
    at::parallel_for(0, B * H, 1, [&](int64_t lo, int64_t hi) {
      std::vector<float> sc((size_t)Lk);
      for (int64_t i = lo; i < hi; i++)
        attend_rows(qp, kp, vp, bp + (i / H) * Lk, op, H, KV, Lmax, Lk, D, (float)scale, i / H, i % H, sc.data());
    });
  };
  if (kc.scalar_type() != at::kBFloat16) {
    run(kc.data_ptr<float>(), vc.data_ptr<float>());
    return out;
  }
  run(reinterpret_cast<const uint16_t*>(kc.data_ptr()), reinterpret_cast<const uint16_t*>(vc.data_ptr()));
  return out.to(at::kBFloat16);
}

bool decode_attention_ok(const at::Tensor& q, const at::Tensor& kc, const at::Tensor& vc, const at::Tensor& kb) {
  const at::ScalarType st = q.scalar_type();
  return cpu_has_avx2() && q.device().is_cpu() && (st == at::kFloat || st == at::kBFloat16) &&
         kc.scalar_type() == st && vc.scalar_type() == st && kb.scalar_type() == at::kFloat && kc.is_contiguous() &&
         vc.is_contiguous() && q.size(2) == 1 && !c10::GradMode::is_enabled();
}

// Per-token log-probs from logits chunks. logits_at(t0, n) returns the
// logits predicting tokens t0+1 .. t0+n, shape (B,n,V).
template <class F>
void token_logprobs(F logits_at, const at::Tensor& I, int64_t B, int64_t T, const at::TensorOptions& o,
                    double temperature, bool with_entropy, int64_t chunk, at::Tensor* logp, at::Tensor* ent) {
  if (chunk < 1) chunk = T;
  std::vector<at::Tensor> lps{at::zeros({B, 1}, o.dtype(at::kFloat))};
  std::vector<at::Tensor> ens{lps[0]};
  for (int64_t t0 = 0; t0 < T - 1; t0 += chunk) {
    int64_t n = std::min(chunk, T - 1 - t0);
    at::Tensor z = logits_at(t0, n).to(at::kFloat);
    if (temperature != 1.0) z = z.div(temperature);
    at::Tensor ls = z.log_softmax(-1);
    lps.push_back(ls.gather(-1, I.narrow(1, t0 + 1, n).unsqueeze(-1)).squeeze(-1));
    if (with_entropy) {
      // H = logsumexp(z) - sum softmax(z) * z  (veRL's entropy_from_logits)
      at::Tensor pz = z.softmax(-1);
      ens.push_back(z.logsumexp({-1}, false).sub(pz.mul(z).sum({-1}, false)));
    }
  }
  *logp = at::cat(lps, 1);
  if (with_entropy) *ent = at::cat(ens, 1);
}

}  // namespace

extern "C" {

tt_err tt_llm_forward(const tt_tensor* w, int n_layers, const tt_tensor* lora, double lora_scale, int n_heads,
                      int n_kv, int head_dim, double eps, tt_tensor ids, tt_tensor pos, tt_tensor cos_table,
                      tt_tensor sin_table, tt_tensor kbias, const tt_tensor* kv, int64_t cache_pos, int last_only,
                      int no_grad, tt_tensor* out) {
  OP_TRY("llm_forward")
  OP_NEED(w && ids && pos && cos_table && sin_table && kbias && w[0] && w[1 + TT_LLM_ROLES * n_layers], "missing input");
  for (int li = 0; li < n_layers; li++)
    for (int r : {TT_LLM_LN1, TT_LLM_QKV, TT_LLM_O, TT_LLM_LN2, TT_LLM_GATE_UP, TT_LLM_DOWN})
      OP_NEED(w[1 + TT_LLM_ROLES * li + r], "a layer lacks a required weight (ln1, qkv, o, ln2, gate_up or down)");
  OP_NEED(n_layers >= 0 && n_heads > 0 && n_kv > 0 && head_dim > 0 && n_heads % n_kv == 0, "bad shape config");
  // inference mode skips autograd and version-counter bookkeeping per op
  c10::optional<c10::InferenceMode> im;
  if (no_grad) im.emplace();
  const at::Tensor& I = ids->t;
  OP_NEED(I.dim() == 2, "ids must be (B,T)");
  OP_NEED(pos->t.sizes() == I.sizes(), "positions must have the shape of ids");
  const int64_t B = I.size(0), T = I.size(1);
  const int64_t H = n_heads, KV = n_kv, D = head_dim;
  const int64_t Lk = kv ? cache_pos + T : T;
  OP_NEED(kbias->t.dim() == 2 && kbias->t.size(0) == B && kbias->t.size(1) >= Lk,
           "key bias must be (B, >= cache_pos+T)");
  LoRA lo{lora, lora_scale};

  at::Tensor x = at::embedding(w[0]->t, I);  // (B,T,E)
  const at::ScalarType dt = x.scalar_type();
  // rotary tables gathered at the positions: (B,1,T,D)
  at::Tensor p = pos->t.reshape({-1});
  at::Tensor cs = cos_table->t.index_select(0, p).view({B, 1, T, D}).to(dt);
  at::Tensor sn = sin_table->t.index_select(0, p).view({B, 1, T, D}).to(dt);
  const int64_t off = kv ? cache_pos : 0;  // query t sits at position off + t
  const double scale = 1.0 / std::sqrt((double)D);
  const int64_t qw = H * D, kw = KV * D;

  for (int li = 0; li < n_layers; li++) {
    const tt_tensor* lw = w + 1 + TT_LLM_ROLES * li;
    auto opt = [&](int role) { return lw[role] ? lw[role]->t : at::Tensor(); };
    const at::Tensor &ln1 = lw[TT_LLM_LN1]->t, &wqkv = lw[TT_LLM_QKV]->t, &wo = lw[TT_LLM_O]->t,
                     &ln2 = lw[TT_LLM_LN2]->t, &wgu = lw[TT_LLM_GATE_UP]->t, &wd = lw[TT_LLM_DOWN]->t;
    const at::Tensor bqkv = opt(TT_LLM_QKV_BIAS), qnorm = opt(TT_LLM_Q_NORM), knorm = opt(TT_LLM_K_NORM);
    at::Tensor h = tt_train::rms_norm(x, ln1, eps);
    at::Tensor qkv = add_lora(dec_linear(h, wqkv, bqkv), h, lo, li, 0, {qw, kw, kw});
    // q and k as (B,T,H+KV,D); per-head RMSNorm of q and k when the layer has one
    at::Tensor qk = qkv.narrow(-1, 0, qw + kw).view({B, T, H + KV, D});
    if (qnorm.defined() || knorm.defined()) {
      at::Tensor qh = qk.narrow(2, 0, H), kh = qk.narrow(2, H, KV);
      if (qnorm.defined()) qh = tt_train::rms_norm(qh, qnorm, eps);
      if (knorm.defined()) kh = tt_train::rms_norm(kh, knorm, eps);
      qk = at::cat({qh, kh}, 2);
    }
    // rotary embedding of q and k in one pass: (B,H+KV,T,D)
    qk = tt_train::rope(qk.transpose(1, 2), cs, sn);
    at::Tensor q = qk.narrow(1, 0, H);
    at::Tensor k = qk.narrow(1, H, KV);
    at::Tensor v = qkv.narrow(-1, qw + kw, kw).view({B, T, KV, D}).transpose(1, 2);
    at::Tensor a;
    if (kv && T == 1 && decode_attention_ok(q, kv[2 * li]->t, kv[2 * li + 1]->t, kbias->t)) {
      at::Tensor& kc = kv[2 * li]->t;
      at::Tensor& vc = kv[2 * li + 1]->t;
      kc.narrow(2, cache_pos, 1).copy_(k);
      vc.narrow(2, cache_pos, 1).copy_(v);
      a = decode_attention(q, kc, vc, kbias->t, Lk, scale).view({B, H, D}).reshape({B, 1, H * D});
    } else {
      if (kv) {
        at::Tensor& kc = kv[2 * li]->t;
        at::Tensor& vc = kv[2 * li + 1]->t;
        kc.narrow(2, cache_pos, T).copy_(k);
        vc.narrow(2, cache_pos, T).copy_(v);
        k = kc.narrow(2, 0, Lk);
        v = vc.narrow(2, 0, Lk);
      }
      a = tt_train::attention(q, k, v, kbias->t, off, scale);
    }
    at::Tensor o = dec_linear(a, wo, at::Tensor());
    if (lo.on(li, 3)) o = o.add(lo.delta(li, 3, a));
    x = no_grad ? x.add_(o) : x.add(o);
    h = tt_train::rms_norm(x, ln2, eps);
    const int64_t I2 = wgu.size(0) / 2;
    at::Tensor gu = add_lora(dec_linear(h, wgu, at::Tensor()), h, lo, li, 4, {I2, I2});
    at::Tensor act = tt_train::swiglu(gu);
    at::Tensor d = dec_linear(act, wd, at::Tensor());
    if (lo.on(li, 6)) d = d.add(lo.delta(li, 6, act));
    x = no_grad ? x.add_(d) : x.add(d);
  }
  if (last_only) x = x.narrow(1, T - 1, 1);
  x = tt_train::rms_norm(x, w[1 + TT_LLM_ROLES * n_layers]->t, eps);
  tt_tensor head = w[2 + TT_LLM_ROLES * n_layers];
  if (head) x = dec_linear(x, head->t, at::Tensor());
  *out = wrap(std::move(x));
  OP_CATCH
}

// (B,L) 0/1 attention -> additive float32 bias: 0 where attended, lowest float elsewhere.
tt_err tt_llm_key_bias(tt_tensor attn, tt_tensor* out) {
  OP_TRY("llm_key_bias")
  at::NoGradGuard ng;
  at::Tensor m = attn->t.eq(0);
  at::Tensor b = at::zeros(attn->t.sizes(), attn->t.options().dtype(at::kFloat));
  *out = wrap(b.masked_fill(m, std::numeric_limits<float>::lowest()));
  OP_CATCH
}

// logp[b,t] = log_softmax(logits[b,t-1]/temp)[ids[b,t]] (0 at t=0); entropy likewise.
tt_err tt_llm_token_logprobs(tt_tensor logits, tt_tensor ids, double temperature, int with_entropy, int64_t chunk,
                             tt_tensor* logp, tt_tensor* ent) {
  OP_TRY("llm_token_logprobs")
  const at::Tensor& L = logits->t;
  const at::Tensor& I = ids->t;
  OP_NEED(L.dim() == 3 && I.dim() == 2 && L.size(0) == I.size(0) && L.size(1) == I.size(1),
           "logits must be (B,T,V) and ids (B,T)");
  OP_NEED(temperature > 0, "temperature must be > 0");
  at::Tensor lp, en;
  token_logprobs([&](int64_t t0, int64_t n) { return L.narrow(1, t0, n); }, I, L.size(0), L.size(1), L.options(),
                 temperature, with_entropy != 0, chunk, &lp, &en);
  *logp = wrap(lp);
  *ent = with_entropy ? wrap(en) : nullptr;
  OP_CATCH
}

// Same from hidden states (B,T,E) and the LM head (V,E): the logits exist
// one time chunk at a time.
tt_err tt_llm_head_logprobs(tt_tensor hidden, tt_tensor head, tt_tensor ids, double temperature, int with_entropy,
                            int64_t chunk, tt_tensor* logp, tt_tensor* ent) {
  OP_TRY("llm_head_logprobs")
  const at::Tensor& Hd = hidden->t;
  const at::Tensor& W = head->t;
  const at::Tensor& I = ids->t;
  OP_NEED(Hd.dim() == 3 && I.dim() == 2 && Hd.size(0) == I.size(0) && Hd.size(1) == I.size(1),
           "hidden must be (B,T,E) and ids (B,T)");
  OP_NEED(W.dim() == 2 && W.size(1) == Hd.size(2), "head must be (V,E)");
  OP_NEED(temperature > 0, "temperature must be > 0");
  at::Tensor lp, en;
  token_logprobs([&](int64_t t0, int64_t n) { return at::linear(Hd.narrow(1, t0, n), W); }, I, Hd.size(0),
                 Hd.size(1), Hd.options(), temperature, with_entropy != 0, chunk, &lp, &en);
  *logp = wrap(lp);
  *ent = with_entropy ? wrap(en) : nullptr;
  OP_CATCH
}

// Samples one token per row from logits (B,V) or the last step of (B,T,V).
// temperature <= 0 is greedy. logp is the log-probability of the chosen id
// under softmax(logits/temperature) (raw logits when greedy), before top-k/top-p.
tt_err tt_llm_sample(tt_tensor logits, double temperature, int64_t top_k, double top_p, tt_gen g, tt_tensor* ids,
                     tt_tensor* logp) {
  OP_TRY("llm_sample")
  at::NoGradGuard ng;
  at::Tensor z = logits->t;
  if (z.dim() == 3) z = z.select(1, z.size(1) - 1);
  OP_NEED(z.dim() == 2, "logits must be (B,V) or (B,T,V)");
  z = z.to(at::kFloat);
  at::Tensor chosen;
  if (temperature <= 0) {
    chosen = z.argmax(-1, false);
  } else {
    if (temperature != 1.0) z = z.div(temperature);
    at::Tensor f = z;
    const double ninf = -std::numeric_limits<double>::infinity();
    const int64_t V = z.size(-1);
    if (top_k > 0 && top_k < V) {
      at::Tensor kth = std::get<0>(f.topk(top_k, -1, true, true)).narrow(-1, top_k - 1, 1);
      f = f.masked_fill(f.lt(kth), ninf);
    }
    if (top_p > 0 && top_p < 1) {
      auto sorted = f.sort(-1, true);
      at::Tensor sv = std::get<0>(sorted), si = std::get<1>(sorted);
      at::Tensor pr = sv.softmax(-1);
      // drop a token when the mass before it already exceeds top_p (the top token always stays)
      at::Tensor remove = pr.cumsum(-1).sub(pr).gt(top_p);
      f = f.scatter(-1, si, sv.masked_fill(remove, ninf));
    }
    at::Tensor probs = f.softmax(-1);
    c10::optional<at::Generator> gen;
    if (g) gen = g->g;
    chosen = at::multinomial(probs, 1, false, gen).squeeze(-1);
  }
  at::Tensor lp = z.log_softmax(-1).gather(-1, chosen.unsqueeze(-1)).squeeze(-1);
  *ids = wrap(chosen);
  *logp = wrap(lp);
  OP_CATCH
}

// Keeps freed tensor memory in the C heap instead of returning it to the OS:
// training allocates and frees the same large buffers (logits, activations)
// every step, and fresh mmap'd pages cost a page fault each.
void tt_llm_malloc_tune(int64_t bytes) {
#ifdef M_MMAP_THRESHOLD
  if (bytes > 0) {
    int v = (int)std::min<int64_t>(bytes, 1 << 30);
    mallopt(M_MMAP_THRESHOLD, v);
    // no trimming: a step frees more than any threshold at its end, and the
    // next step would fault the same pages in again (a 0.5B training step
    // faulted 1.7 GB a step with a 1 GiB threshold)
    mallopt(M_TRIM_THRESHOLD, -1);
    // one arena: a thread's own arena grows in 64 MiB heaps, so its larger
    // blocks are mmap'd (and page-faulted) afresh on every allocation
    mallopt(M_ARENA_MAX, 1);
  }
#endif
}

// Returns the C heap's free memory to the OS (glibc malloc_trim).
void tt_llm_malloc_release(void) {
#ifdef M_MMAP_THRESHOLD
  malloc_trim(0);
#endif
}

// Keeping freed memory is the default, applied when the program loads,
// before any thread exists: a thread that mallocs first gets an arena of its
// own and keeps it, whatever M_ARENA_MAX says later (the torch thread did,
// and its blocks over 64 MiB were mmap'd afresh on every allocation).
// RAGEN_KEEP_FREED_MEMORY=0 turns it off.
__attribute__((constructor)) static void tt_llm_malloc_default() {
  const char* v = std::getenv("RAGEN_KEEP_FREED_MEMORY");
  if (v && std::strcmp(v, "0") == 0) return;
  tt_llm_malloc_tune(int64_t(1) << 30);
}

// Replaces each non-NULL ts[i] by ts[i].index_select(dim, idx), keeping the handles.
tt_err tt_llm_select_rows(tt_tensor* ts, int n, int64_t dim, tt_tensor idx) {
  OP_TRY("llm_select_rows")
  at::NoGradGuard ng;
  for (int i = 0; i < n; i++)
    if (ts[i]) ts[i]->t = ts[i]->t.index_select(dim, idx->t);
  OP_CATCH
}

}  // extern "C"
