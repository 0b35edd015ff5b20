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
#include <ATen/CPUGeneratorImpl.h>
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

#include <algorithm>
#include <atomic>
#include <cmath>
#include <malloc.h>
#include <mutex>
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
using tt_cpu::cpu_has_avx512;
using tt_cpu::exp256;
using tt_cpu::hmax;
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

// The AVX-512 forms, float32 (FMA) and bf16 (vdpbf16ps: 32 products per
// instruction, pairs summed exactly, round to nearest): up to 8 input rows
// against 3 weight rows at a time (24 zmm accumulators), so each weight
// vector is loaded once for all the rows; K in chunks whose 8 input rows fit
// in L1 (16 KiB: the down projection's 4864-wide rows would otherwise stream
// the input rows from L2, 8 loads per 3 weight loads); float32 partial sums
// per block of 24 weight rows; each weight row prefetched 6 rows (two tiles)
// ahead at the same offset. Measured on a 2-core Zen 5 (bf16, 8 rows, 2
// threads, weights from DRAM): 896-wide rows 45-47 GB/s of weights against
// 29-33 for 2 x 8 tiles with or without prefetching; 4864-wide rows 50 GB/s
// in chunks of 992, 32 GB/s without chunks, 31 for the 2 x 8 tiles.
// Every row's sums are added in the same order whatever the number of rows
// and its place among them: a row's result does not depend on the batch.
bool cpu_has_avx512bf16() {
  static const bool ok = cpu_has_avx512() && __builtin_cpu_supports("avx512bf16") &&
                         __builtin_cpu_supports("avx512bw") && isa_allows("avx512bf16");
  return ok;
}

constexpr int64_t kBlockRows = 24;      // weight rows per block (a multiple of the 3-row tile)
constexpr int64_t kChunkBytes = 16384;  // the K chunk of 8 input rows
constexpr int64_t kPrefetchRows = 6;

#pragma GCC push_options
#pragma GCC optimize("O3")
// a[j][0..7] -> part[i*ld + c0+j] += sum of a[j][i]'s lanes, for i < MT
template <int MT, int NT>
__attribute__((target("avx512f"), always_inline)) inline void ptile_add(__m512 (&a)[NT][8], float* part, int64_t ld,
                                                                        int64_t c0) {
  for (int j = 0; j < NT; j++) {
    __m256 s[8];
    for (int i = 0; i < 8; i++)
      s[i] = _mm256_add_ps(_mm512_castps512_ps256(a[j][i]),
                           _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a[j][i]), 1)));
    const __m256 t0 = _mm256_hadd_ps(s[0], s[1]), t1 = _mm256_hadd_ps(s[2], s[3]);
    const __m256 t2 = _mm256_hadd_ps(s[4], s[5]), t3 = _mm256_hadd_ps(s[6], s[7]);
    const __m256 u0 = _mm256_hadd_ps(t0, t1), u1 = _mm256_hadd_ps(t2, t3);
    alignas(32) float r[8];
    _mm256_store_ps(r, _mm256_add_ps(_mm256_permute2f128_ps(u0, u1, 0x20), _mm256_permute2f128_ps(u0, u1, 0x31)));
    for (int i = 0; i < MT; i++) part[i * ld + c0 + j] += r[i];
  }
}

// part[i*ld + c0+j] += sum over k in [k0,k1) of x[i,k] w[n0+j,k], i < MT, j < NT;
// xg: 8 input rows packed by vector, x[i, k..k+15] at xg + 8k + 16i (k a
// multiple of 16), zero past K, so one pointer and constant offsets address
// all the rows (row pointers of their own spill general registers, and the
// compiler then folds the row loads into each FMA: 24 loads a step, not 8).
template <int MT, int NT>
__attribute__((target("avx512f"))) void ptile_f32(const float* xg, int64_t K, const float* w, int64_t k0, int64_t k1,
                                                  int64_t n0, float* part, int64_t ld, int64_t c0) {
  __m512 acc[NT][8];
  for (int j = 0; j < NT; j++)
    for (int i = 0; i < 8; i++) acc[j][i] = _mm512_setzero_ps();
  const float* wr = w + n0 * K;
  int64_t k = k0;
  for (; k + 16 <= k1; k += 16) {
    __m512 wv[NT];
    for (int j = 0; j < NT; j++) {
      _mm_prefetch(reinterpret_cast<const char*>(wr + (j + kPrefetchRows) * K + k), _MM_HINT_T0);
      wv[j] = _mm512_loadu_ps(wr + j * K + k);
    }
    for (int i = 0; i < MT; i++) {
      __m512 xv = _mm512_loadu_ps(xg + 8 * k + 16 * i);
      __asm__("" : "+v"(xv));  // one load, in a register, for the NT products
      for (int j = 0; j < NT; j++) acc[j][i] = _mm512_fmadd_ps(xv, wv[j], acc[j][i]);
    }
  }
  if (k < k1) {
    const __mmask16 mk = static_cast<__mmask16>((1u << (k1 - k)) - 1);
    __m512 wv[NT];
    for (int j = 0; j < NT; j++) wv[j] = _mm512_maskz_loadu_ps(mk, wr + j * K + k);
    for (int i = 0; i < MT; i++) {
      const __m512 xv = _mm512_loadu_ps(xg + 8 * k + 16 * i);
      for (int j = 0; j < NT; j++) acc[j][i] = _mm512_fmadd_ps(xv, wv[j], acc[j][i]);
    }
  }
  ptile_add<MT, NT>(acc, part, ld, c0);
}

// ptile_f32 for bf16 x and w (raw uint16): x[i, k..k+31] at xg + 8k + 32i
template <int MT, int NT>
__attribute__((target("avx512f,avx512bw,avx512bf16"))) void ptile_bf16(const uint16_t* xg, int64_t K, const uint16_t* w,
                                                                      int64_t k0, int64_t k1, int64_t n0, float* part,
                                                                      int64_t ld, int64_t c0) {
  __m512 acc[NT][8];
  for (int j = 0; j < NT; j++)
    for (int i = 0; i < 8; i++) acc[j][i] = _mm512_setzero_ps();
  const uint16_t* wr = w + n0 * K;
  int64_t k = k0;
  for (; k + 32 <= k1; k += 32) {
    __m512i wv[NT];
    for (int j = 0; j < NT; j++) {
      _mm_prefetch(reinterpret_cast<const char*>(wr + (j + kPrefetchRows) * K + k), _MM_HINT_T0);
      wv[j] = _mm512_loadu_si512(wr + j * K + k);
    }
    for (int i = 0; i < MT; i++) {
      __m512i xv = _mm512_loadu_si512(xg + 8 * k + 32 * i);
      __asm__("" : "+v"(xv));
      for (int j = 0; j < NT; j++) acc[j][i] = _mm512_dpbf16_ps(acc[j][i], (__m512bh)xv, (__m512bh)wv[j]);
    }
  }
  if (k < k1) {
    const __mmask32 mk = static_cast<__mmask32>((1u << (k1 - k)) - 1);
    __m512i wv[NT];
    for (int j = 0; j < NT; j++) wv[j] = _mm512_maskz_loadu_epi16(mk, wr + j * K + k);
    for (int i = 0; i < MT; i++) {
      const __m512i xv = _mm512_loadu_si512(xg + 8 * k + 32 * i);
      for (int j = 0; j < NT; j++) acc[j][i] = _mm512_dpbf16_ps(acc[j][i], (__m512bh)xv, (__m512bh)wv[j]);
    }
  }
  ptile_add<MT, NT>(acc, part, ld, c0);
}
#pragma GCC pop_options

template <class T>
using PTile = void (*)(const T*, int64_t, const T*, int64_t, int64_t, int64_t, float*, int64_t, int64_t);
#define TT_PTILES(f, NT) {f<1, NT>, f<2, NT>, f<3, NT>, f<4, NT>, f<5, NT>, f<6, NT>, f<7, NT>, f<8, NT>}
// the tile for mt input rows (1..8) and 3 weight rows (else 1)
PTile<float> ptile_of(const float*, int mt, bool three) {
  static const PTile<float> t[2][8] = {TT_PTILES(ptile_f32, 1), TT_PTILES(ptile_f32, 3)};
  return t[three][mt - 1];
}
PTile<uint16_t> ptile_of(const uint16_t*, int mt, bool three) {
  static const PTile<uint16_t> t[2][8] = {TT_PTILES(ptile_bf16, 1), TT_PTILES(ptile_bf16, 3)};
  return t[three][mt - 1];
}
#undef TT_PTILES

// The input rows packed for the tiles: groups of 8 rows (the last padded
// with zero rows), each group's rows interleaved by vector of V elements,
// K padded with zeros to a multiple of V.
template <class T>
std::vector<T> ptile_pack(const T* x, int64_t M, int64_t K) {
  constexpr int64_t V = 64 / int64_t(sizeof(T));
  const int64_t Kp = (K + V - 1) / V * V;
  std::vector<T> p(size_t((M + 7) / 8 * 8 * Kp), T(0));
  for (int64_t m = 0; m < M; m++) {
    T* g = p.data() + (m / 8) * 8 * Kp + (m % 8) * V;
    for (int64_t k = 0; k < K; k += V) std::memcpy(g + 8 * k, x + m * K + k, size_t(std::min(V, K - k)) * sizeof(T));
  }
  return p;
}

// part (M x kBlockRows) = the sums of the packed rows xp against weight rows [n0,n1)
template <class T>
void ptile_block(const T* xp, int64_t M, int64_t K, const T* w, int64_t n0, int64_t n1, float* part) {
  std::fill(part, part + M * kBlockRows, 0.f);
  constexpr int64_t V = 64 / int64_t(sizeof(T)), per = kChunkBytes / (8 * int64_t(sizeof(T)));
  const int64_t nch = (K + per - 1) / per, Kp = (K + V - 1) / V * V;
  const int64_t chunk = ((K + nch - 1) / nch + V - 1) / V * V;
  for (int64_t m = 0; m < M; m += 8) {
    const int mt = int(std::min<int64_t>(8, M - m));
    const PTile<T> t3 = ptile_of(xp, mt, true), t1 = ptile_of(xp, mt, false);
    const T* xg = xp + m * Kp;
    float* pm = part + m * kBlockRows;
    for (int64_t k0 = 0; k0 < K; k0 += chunk) {
      const int64_t k1 = std::min(K, k0 + chunk);
      int64_t n = n0;
      for (; n + 3 <= n1; n += 3) t3(xg, K, w, k0, k1, n, pm, kBlockRows, n - n0);
      for (; n < n1; n++) t1(xg, K, w, k0, k1, n, pm, kBlockRows, n - n0);
    }
  }
}

// y[0,nb) = s + b (b may be NULL), float32 or rounded to bf16 as
// c10::BFloat16 rounds (to nearest even, NaN to 0x7fc0)
__attribute__((target("avx512f"))) void ptile_store(const float* s, const float* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; i += 16) {
    const __mmask16 mk = nb - i >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (nb - i)) - 1);
    __m512 v = _mm512_maskz_loadu_ps(mk, s + i);
    if (b) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk, b + i));
    _mm512_mask_storeu_ps(y + i, mk, v);
  }
}
__attribute__((target("avx512f"))) void ptile_store(const float* s, const float* b, uint16_t* y, int64_t nb) {
  const __m512i half = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1), qnan = _mm512_set1_epi32(0x7fc0);
  for (int64_t i = 0; i < nb; i += 16) {
    const __mmask16 mk = nb - i >= 16 ? __mmask16(0xffff) : static_cast<__mmask16>((1u << (nb - i)) - 1);
    __m512 v = _mm512_maskz_loadu_ps(mk, s + i);
    if (b) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(mk, b + i));
    const __m512i u = _mm512_castps_si512(v);
    __m512i r = _mm512_add_epi32(_mm512_add_epi32(u, half), _mm512_and_si512(_mm512_srli_epi32(u, 16), one));
    r = _mm512_mask_mov_epi32(_mm512_srli_epi32(r, 16), _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), qnan);
    _mm512_mask_cvtepi32_storeu_epi16(y + i, mk, r);
  }
}

// y (M,N) = x (M,K) w (N,K)^T + b (b float32 or NULL; y float32 or bf16),
// in parallel blocks of weight rows.
template <class T, class Y>
void skinny512(const T* x, int64_t M, int64_t K, const T* w, const float* b, Y* y, int64_t N) {
  const std::vector<T> xp = ptile_pack(x, M, K);
  at::parallel_for(0, (N + kBlockRows - 1) / kBlockRows, 1, [&](int64_t lo, int64_t hi) {
    std::vector<float> part(size_t(M * kBlockRows));
    for (int64_t bl = lo; bl < hi; bl++) {
      const int64_t n0 = bl * kBlockRows, n1 = std::min(N, n0 + kBlockRows);
      ptile_block(xp.data(), M, K, w, n0, n1, part.data());
      for (int64_t m = 0; m < M; m++)
        ptile_store(part.data() + m * kBlockRows, b ? b + n0 : nullptr, y + m * N + n0, n1 - n0);
    }
  });
}

// ---- bf16 decode projections ----
//
// The same few-row products for bf16 x and w (a bf16 model generating):
// float32 sums of the bf16 products, the bias added in float32 and the
// result rounded to bf16 once, as ATen's bf16 linear does. They stream the
// weights at half float32's bytes:
//   - AVX-512 BF16: ptile_bf16 above;
//   - AVX2 otherwise: the weights widened to float32 in registers (a shift)
//     against input rows widened once per call, 3 x 3 tiles.
#pragma GCC push_options
#pragma GCC optimize("O3")
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

void skinny_rows_bf16(const float* xf, int64_t M, int64_t K, const uint16_t* w, const float* b, uint16_t* y,
                      int64_t N, int64_t n0, int64_t n1) {
  int64_t n = n0;
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
  if (cpu_has_avx512bf16()) {
    skinny512(xp, M, K, wp, bp, yp, N);
    return y;
  }
  // the AVX2 form: float32 input rows
  at::Tensor xw = xc.view({M, K}).to(at::kFloat).contiguous();
  const float* xf = xw.data_ptr<float>();
  at::parallel_for(0, (N + 47) / 48, 1, [&](int64_t lo, int64_t hi) {
    skinny_rows_bf16(xf, M, K, wp, bp, yp, N, lo * 48, std::min(N, hi * 48));
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
  if (cpu_has_avx512()) {
    skinny512(xp, M, K, wp, bp, yp, N);
    return y;
  }
  // blocks of 48 output features (a multiple of the 3-row tiles) per task
  at::parallel_for(0, (N + 47) / 48, 1, [&](int64_t lo, int64_t hi) {
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

// s[l] = exp(s[l] - mx) for l < n (mx: the largest s); returns their sum:
// a softmax's numerators and denominator.
__attribute__((target("avx2,fma"))) float exp_minus_max(float* s, int64_t n, float mx) {
  const int64_t n8 = n & ~int64_t(7);
  const __m256 vm = _mm256_set1_ps(mx);
  __m256 vs = _mm256_setzero_ps();
  for (int64_t l = 0; l < n8; l += 8) {
    const __m256 e = exp256(_mm256_sub_ps(_mm256_loadu_ps(s + l), vm));
    _mm256_storeu_ps(s + l, e);
    vs = _mm256_add_ps(vs, e);
  }
  float sum = hsum(vs);
  for (int64_t l = n8; l < n; l++) {
    s[l] = std::exp(s[l] - mx);
    sum += s[l];
  }
  return sum;
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
  const float inv = 1.f / exp_minus_max(sc, Lk, mx);
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

// The AVX-512 form for head sizes of 16, 32, 64 or 128 (DV vectors of 16):
// the G = H/KV query heads that share a KV head attend together, so each key
// and value row is read once for all of them (grouped-query attention: 7
// heads a KV head at Qwen2.5-0.5B's shape, whose cache at a few thousand
// tokens of context no longer fits in L2). Scores 16 keys at a time, their
// dot products summed across lanes by one transposing reduction; the
// weighted sum of values accumulates in registers, up to 24 vectors of heads
// x head size at a time, and is scaled by the softmax's 1/sum once.

// 16 vectors -> one whose lane i is the sum of a[i]'s lanes
__attribute__((target("avx512f"), always_inline)) inline __m512 reduce16(const __m512* a) {
  __m512 b[8], c[4], d[2];
  for (int i = 0; i < 8; i++)
    b[i] = _mm512_add_ps(_mm512_unpacklo_ps(a[2 * i], a[2 * i + 1]), _mm512_unpackhi_ps(a[2 * i], a[2 * i + 1]));
  for (int i = 0; i < 4; i++) {
    const __m512d x = _mm512_castps_pd(b[2 * i]), y = _mm512_castps_pd(b[2 * i + 1]);
    c[i] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(x, y)), _mm512_castpd_ps(_mm512_unpackhi_pd(x, y)));
  }
  for (int i = 0; i < 2; i++)
    d[i] = _mm512_add_ps(_mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0x88),
                         _mm512_shuffle_f32x4(c[2 * i], c[2 * i + 1], 0xdd));
  return _mm512_add_ps(_mm512_shuffle_f32x4(d[0], d[1], 0x88), _mm512_shuffle_f32x4(d[0], d[1], 0xdd));
}

// 16 cache entries as float32
__attribute__((target("avx512f"), always_inline)) inline __m512 ld16(const float* p) { return _mm512_loadu_ps(p); }
__attribute__((target("avx512f"), always_inline)) inline __m512 ld16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// Attention of query heads [kv*G, kv*G+G) of batch row b over keys [0,Lk)
// of KV head kv. q, out (B,H,D) float32; caches (B,KV,Lmax,D); bias row
// (Lk); sc: G x Lp scratch (Lp = Lk rounded up to 16); kf: 16 x D scratch.
template <class CT, int DV>
__attribute__((target("avx512f"))) void attend_group(const float* q, const CT* kc, const CT* vc, const float* bias,
                                                     float* out, int64_t H, int64_t KV, int64_t Lmax, int64_t Lk,
                                                     float scale, int64_t b, int64_t kv, float* sc, float* kf) {
  constexpr int64_t D = 16 * DV;
  constexpr int HB = DV >= 8 ? 3 : DV == 4 ? 6 : 8;  // heads per pass over the values
  const int64_t G = H / KV, Lp = (Lk + 15) / 16 * 16;
  const float* qg = q + (b * H + kv * G) * D;
  float* og = out + (b * H + kv * G) * D;
  const CT* K = kc + (b * KV + kv) * Lmax * D;
  const CT* V = vc + (b * KV + kv) * Lmax * D;
  const __m512 lowest = _mm512_set1_ps(std::numeric_limits<float>::lowest()), vscale = _mm512_set1_ps(scale);
  for (int64_t l0 = 0; l0 < Lk; l0 += 16) {
    const int64_t nl = std::min<int64_t>(16, Lk - l0);
    // the block's keys as float32, zero rows past Lk
    for (int64_t r = 0; r < 16; r++)
      for (int c = 0; c < DV; c++)
        _mm512_storeu_ps(kf + r * D + 16 * c, r < nl ? ld16(K + (l0 + r) * D + 16 * c) : _mm512_setzero_ps());
    const __mmask16 mk = static_cast<__mmask16>((1u << nl) - 1);
    const __m512 bv = _mm512_maskz_loadu_ps(mk, bias + l0);
    for (int64_t h = 0; h < G; h++) {
      __m512 qv[DV], acc[16];
      for (int c = 0; c < DV; c++) qv[c] = _mm512_loadu_ps(qg + h * D + 16 * c);
      for (int r = 0; r < 16; r++) {
        acc[r] = _mm512_mul_ps(qv[0], _mm512_loadu_ps(kf + r * D));
        for (int c = 1; c < DV; c++) acc[r] = _mm512_fmadd_ps(qv[c], _mm512_loadu_ps(kf + r * D + 16 * c), acc[r]);
      }
      const __m512 s = _mm512_max_ps(_mm512_fmadd_ps(reduce16(acc), vscale, bv), lowest);
      _mm512_mask_storeu_ps(sc + h * Lp + l0, mk, s);
    }
  }
  // softmax numerators and their sums, per head
  float inv[64];
  for (int64_t h = 0; h < G; h++) {
    float* sh = sc + h * Lp;
    inv[h] = 1.f / exp_minus_max(sh, Lk, *std::max_element(sh, sh + Lk));
  }
  // out[h] = inv[h] * sum_l e[h,l] V[l], HB heads a pass
  for (int64_t h0 = 0; h0 < G; h0 += HB) {
    const int64_t hb = std::min<int64_t>(HB, G - h0);
    __m512 acc[HB][DV];
    for (int i = 0; i < HB; i++)
      for (int c = 0; c < DV; c++) acc[i][c] = _mm512_setzero_ps();
    for (int64_t l = 0; l < Lk; l++) {
      __m512 vr[DV];
      for (int c = 0; c < DV; c++) vr[c] = ld16(V + l * D + 16 * c);
      for (int i = 0; i < HB; i++) {
        if (i >= hb) break;
        const __m512 p = _mm512_set1_ps(sc[(h0 + i) * Lp + l]);
        for (int c = 0; c < DV; c++) acc[i][c] = _mm512_fmadd_ps(p, vr[c], acc[i][c]);
      }
    }
    for (int i = 0; i < hb; i++)
      for (int c = 0; c < DV; c++)
        _mm512_storeu_ps(og + (h0 + i) * D + 16 * c, _mm512_mul_ps(acc[i][c], _mm512_set1_ps(inv[h0 + i])));
  }
}

// attend_group for every batch row and KV head, in parallel
template <class CT>
void attend_groups(const float* q, const CT* kc, const CT* vc, const float* bias, float* out, int64_t B, int64_t H,
                   int64_t KV, int64_t Lmax, int64_t Lk, int64_t D, float scale) {
  const int64_t G = H / KV;
  at::parallel_for(0, B * KV, 1, [&](int64_t lo, int64_t hi) {
    std::vector<float> sc(size_t(G * ((Lk + 15) / 16 * 16))), kf(size_t(16 * D));
    for (int64_t i = lo; i < hi; i++) {
      const int64_t b = i / KV, kv = i % KV;
      auto one = [&](auto f) { f(q, kc, vc, bias + b * Lk, out, H, KV, Lmax, Lk, scale, b, kv, sc.data(), kf.data()); };
      switch (D) {
        case 16: one(attend_group<CT, 1>); break;
        case 32: one(attend_group<CT, 2>); break;
        case 64: one(attend_group<CT, 4>); break;
        default: one(attend_group<CT, 8>); break;
      }
    }
  });
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
  const int64_t G = H / KV;
  const bool grouped = cpu_has_avx512() && (D == 16 || D == 32 || D == 64 || D == 128) && G <= 64;
  auto run = [&](const auto* kp, const auto* vp) {
    if (grouped) {
      attend_groups(qp, kp, vp, bp, op, B, H, KV, Lmax, Lk, D, (float)scale);
      return;
    }
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

// ---- sampling ----
//
// One categorical draw from softmax(z) for a row of V logits (already divided
// by the temperature; -inf for excluded ids) by an exponential race, as
// ATen's multinomial draws: the id with the largest exp(z - max) / q, each q
// an independent Exp(1) variate. ATen draws those with its Mersenne Twister
// and a libm log per id: at Qwen's 151,936 ids a third of a 16-row decode
// step. Here they come from a counter-based hash of the id under a 64-bit
// key drawn from the row's generator (one draw a row), and are computed 8
// at a time. A race, unlike an inverse-CDF draw, keeps its winner when the
// logits move by rounding (prefill paths, bf16), unless the two best
// ratios were that close. Exponents below -87 (exp < 1.2e-38, and -inf)
// count as 0, so an excluded id never wins. Greedy (sample false) picks the
// first maximum. logp is the id's log-probability, z[id] - max - log(total),
// the total added per block of kDrawBlock in double. Returns false, leaving
// the row to ATen, when it has no finite maximum or holds NaN or +inf.
constexpr int64_t kDrawBlock = 64;

// a bijective 32-bit mixer (xor-shift-multiply)
inline uint32_t mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  return x ^ (x >> 16);
}
__attribute__((target("avx2,fma"), always_inline)) inline __m256i mix256(__m256i x) {
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(int32_t(0x7feb352du)));
  x = _mm256_xor_si256(x, _mm256_srli_epi32(x, 15));
  x = _mm256_mullo_epi32(x, _mm256_set1_epi32(int32_t(0x846ca68bu)));
  return _mm256_xor_si256(x, _mm256_srli_epi32(x, 16));
}

// id i's Exp(1) variate under key k: q = -log(1 - w), w = (h + 1/2) / 2^32
// for the hash h of i, so small q (the race's winners) keep full relative
// precision: a series below w = 1/64, else log (race_q8: relative error
// under 5e-6 against log1p, checked over 50M ids).
inline float race_q(uint64_t k, int64_t i) {
  const uint32_t h = mix32(mix32(uint32_t(i) + uint32_t(k)) ^ uint32_t(k >> 32));
  const double w = (double(h) + 0.5) * 0x1p-32;
  return float(-std::log1p(-w));
}
// race_q's w for ids i..i+7
__attribute__((target("avx2,fma"), always_inline)) inline __m256 race_w8(uint64_t k, int64_t i) {
  const __m256i idx =
      _mm256_add_epi32(_mm256_set1_epi32(int32_t(uint32_t(i) + uint32_t(k))), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  const __m256i h = mix256(_mm256_xor_si256(mix256(idx), _mm256_set1_epi32(int32_t(uint32_t(k >> 32)))));
  // h as an unsigned float: its top 31 bits converted, times 2, plus the low bit
  const __m256 hf = _mm256_fmadd_ps(_mm256_cvtepi32_ps(_mm256_srli_epi32(h, 1)), _mm256_set1_ps(2.f),
                                    _mm256_cvtepi32_ps(_mm256_and_si256(h, _mm256_set1_epi32(1))));
  return _mm256_mul_ps(_mm256_add_ps(hf, _mm256_set1_ps(0.5f)), _mm256_set1_ps(0x1p-32f));
}
// race_q from race_w8's w (q >= w)
__attribute__((target("avx2,fma"), always_inline)) inline __m256 race_q8(__m256 w) {
  // series: w (1 + w/2 + w^2/3 + w^3/4)
  __m256 ser = _mm256_fmadd_ps(w, _mm256_set1_ps(0.25f), _mm256_set1_ps(1.f / 3));
  ser = _mm256_fmadd_ps(w, ser, _mm256_set1_ps(0.5f));
  ser = _mm256_mul_ps(w, _mm256_fmadd_ps(w, ser, _mm256_set1_ps(1.f)));
  // -log(x), x = 1 - w = m 2^e, m in [sqrt(1/2), sqrt(2)): log m = 2 atanh(s), s = (m-1)/(m+1)
  const __m256 x = _mm256_sub_ps(_mm256_set1_ps(1.f), w);
  const __m256i xb = _mm256_castps_si256(x);
  __m256i e = _mm256_sub_epi32(_mm256_srli_epi32(xb, 23), _mm256_set1_epi32(127));
  __m256 m = _mm256_castsi256_ps(_mm256_or_si256(_mm256_and_si256(xb, _mm256_set1_epi32(0x007fffff)),
                                                 _mm256_set1_epi32(0x3f800000)));
  const __m256 big = _mm256_cmp_ps(m, _mm256_set1_ps(1.41421356f), _CMP_GT_OQ);
  m = _mm256_blendv_ps(m, _mm256_mul_ps(m, _mm256_set1_ps(0.5f)), big);
  e = _mm256_sub_epi32(e, _mm256_castps_si256(big));  // big lanes are -1: e + 1
  const __m256 sv = _mm256_div_ps(_mm256_sub_ps(m, _mm256_set1_ps(1.f)), _mm256_add_ps(m, _mm256_set1_ps(1.f)));
  const __m256 s2 = _mm256_mul_ps(sv, sv);
  __m256 t = _mm256_fmadd_ps(s2, _mm256_set1_ps(2.f / 9), _mm256_set1_ps(2.f / 7));
  t = _mm256_fmadd_ps(s2, t, _mm256_set1_ps(2.f / 5));
  t = _mm256_fmadd_ps(s2, t, _mm256_set1_ps(2.f / 3));
  t = _mm256_fmadd_ps(s2, t, _mm256_set1_ps(2.f));
  const __m256 lg = _mm256_fmadd_ps(_mm256_cvtepi32_ps(e), _mm256_set1_ps(0.69314718f), _mm256_mul_ps(sv, t));
  const __m256 small = _mm256_cmp_ps(w, _mm256_set1_ps(1.f / 64), _CMP_LT_OQ);
  return _mm256_blendv_ps(_mm256_sub_ps(_mm256_setzero_ps(), lg), ser, small);
}

__attribute__((target("avx2,fma"))) bool draw_row(const float* z, int64_t V, bool sample, uint64_t key,
                                                  int64_t* id, float* logp) {
  const float ninf = -std::numeric_limits<float>::infinity();
  const int64_t V8 = V & ~int64_t(7);
  __m256 vm = _mm256_set1_ps(ninf), bad = _mm256_setzero_ps();
  for (int64_t i = 0; i < V8; i += 8) {
    const __m256 v = _mm256_loadu_ps(z + i);
    bad = _mm256_or_ps(bad, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    vm = _mm256_max_ps(vm, v);
  }
  if (_mm256_movemask_ps(bad)) return false;
  float mx = V8 ? hmax(vm) : ninf;
  for (int64_t i = V8; i < V; i++) {
    if (std::isnan(z[i])) return false;
    mx = std::max(mx, z[i]);
  }
  if (!std::isfinite(mx)) return false;
  const __m256 vmx = _mm256_set1_ps(mx), lo = _mm256_set1_ps(-87.f);
  // the race's best ratio and its id, per lane, and in the scalar tail
  // (the ids past the last multiple of 8)
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  __m256 best = _mm256_set1_ps(-1.f);
  __m256i bid = _mm256_setzero_si256();
  float tb = -1.f;
  int64_t tid = -1;
  double total = 0;
  for (int64_t b0 = 0; b0 < V; b0 += kDrawBlock) {
    const int64_t i1 = std::min(V, b0 + kDrawBlock);
    __m256 acc = _mm256_setzero_ps();
    int64_t i = b0;
    for (; i + 8 <= i1; i += 8) {
      const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(z + i), vmx);
      const __m256 x = _mm256_and_ps(exp256(d), _mm256_cmp_ps(d, lo, _CMP_GE_OQ));
      acc = _mm256_add_ps(acc, x);
      if (!sample) continue;
      // q >= w: a lane with x <= best w cannot win, and most lanes are out
      // once the race has a good leader, so their logs are skipped
      const __m256 w = race_w8(key, i);
      if (_mm256_movemask_ps(_mm256_cmp_ps(x, _mm256_mul_ps(best, w), _CMP_GT_OQ))) {
        const __m256 r = _mm256_div_ps(x, race_q8(w));
        const __m256 gt = _mm256_cmp_ps(r, best, _CMP_GT_OQ);
        best = _mm256_blendv_ps(best, r, gt);
        bid = _mm256_blendv_epi8(bid, _mm256_add_epi32(_mm256_set1_epi32(int32_t(i)), lane), _mm256_castps_si256(gt));
      }
    }
    float sb = hsum(acc);
    for (; i < i1; i++) {
      const float d = z[i] - mx, x = d >= -87.f ? std::exp(d) : 0.f;
      sb += x;
      if (!sample) continue;
      const float r = x / race_q(key, i);
      if (r > tb) tb = r, tid = i;
    }
    total += sb;
  }
  int64_t k;
  if (!sample) {
    k = std::find(z, z + V, mx) - z;
  } else {  // the best lane (the lowest id among equal ratios), then the tail (higher ids)
    alignas(32) float bl[8];
    alignas(32) int32_t il[8];
    _mm256_store_ps(bl, best);
    _mm256_store_si256(reinterpret_cast<__m256i*>(il), bid);
    int j = 0;
    for (int l = 1; l < 8; l++)
      if (bl[l] > bl[j] || (bl[l] == bl[j] && il[l] < il[j])) j = l;
    k = tid >= 0 && tb > bl[j] ? tid : il[j];
  }
  *id = k;
  *logp = float(double(z[k] - mx) - std::log(total));
  return true;
}

// draw_row for each row of z (B,V) float32 on the CPU, sampled with keys[b]
// where drawn[b], else greedy, in parallel over rows. False when a row is
// not drawable.
bool draw_rows(const at::Tensor& z, const std::vector<uint64_t>& keys, const std::vector<char>& drawn, at::Tensor* ids,
               at::Tensor* logp) {
  const int64_t B = z.size(0), V = z.size(1);
  at::Tensor zc = z.contiguous();
  at::Tensor id = at::empty({B}, z.options().dtype(at::kLong)), lp = at::empty({B}, z.options());
  const float* zp = zc.data_ptr<float>();
  int64_t* idp = id.data_ptr<int64_t>();
  float* lpp = lp.data_ptr<float>();
  std::atomic<bool> ok{true};
  at::parallel_for(0, B, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; b++)
      if (!draw_row(zp + b * V, V, drawn[size_t(b)], drawn[size_t(b)] ? keys[size_t(b)] : 0, idp + b, lpp + b))
        ok = false;
  });
  if (!ok) return false;
  *ids = id;
  *logp = lp;
  return true;
}

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
// gens: one generator for every row, drawn in row order, or one per row
// (per_row; an undefined one: the row is not drawn, its id the greedy one);
// an undefined shared generator is the default one.
static tt_err sample_logits(const char* tt_op, at::Tensor z, double temperature, int64_t top_k, double top_p,
                     const std::vector<c10::optional<at::Generator>>& gens, bool per_row, tt_tensor* ids,
                     tt_tensor* logp) {
  at::NoGradGuard ng;
  if (z.dim() == 3) z = z.select(1, z.size(1) - 1);
  OP_NEED(z.dim() == 2, "logits must be (B,V) or (B,T,V)");
  OP_NEED(!per_row || int64_t(gens.size()) == z.size(0), "one generator per row of logits");
  z = z.to(at::kFloat);
  if (temperature > 0 && temperature != 1.0) z = z.div(temperature);
  at::Tensor f = z;  // z restricted to the top-k and the top-p nucleus
  const double ninf = -std::numeric_limits<double>::infinity();
  const int64_t B = z.size(0), V = z.size(-1);
  if (temperature > 0 && top_k > 0 && top_k < V) {
    at::Tensor kth = std::get<0>(f.topk(top_k, -1, true, true)).narrow(-1, top_k - 1, 1);
    f = f.masked_fill(f.lt(kth), ninf);
  }
  if (temperature > 0 && top_p > 0 && top_p < 1) {
    auto sorted = f.sort(-1, true);
    at::Tensor sv = std::get<0>(sorted), si = std::get<1>(sorted);
    at::Tensor pr = sv.softmax(-1);
    // drop a token when the mass before it already exceeds top_p (the top token always stays)
    at::Tensor remove = pr.cumsum(-1).sub(pr).gt(top_p);
    f = f.scatter(-1, si, sv.masked_fill(remove, ninf));
  }
  bool cpu_gens = true;
  for (const auto& g : gens) cpu_gens = cpu_gens && (!g || g->device().is_cpu());
  // on the CPU one key a row drawn from its generator (draw_rows)
  if (z.device().is_cpu() && cpu_gens && cpu_has_avx2() && V > 0 && V < (int64_t(1) << 31)) {
    std::vector<uint64_t> keys;
    std::vector<char> drawn(size_t(B), temperature > 0);
    if (temperature > 0) {
      keys.resize(size_t(B));
      for (int64_t r = 0; r < B; r++) {
        const c10::optional<at::Generator>& g = gens[per_row ? size_t(r) : 0];
        if (per_row && !g) {
          drawn[size_t(r)] = 0;
          continue;
        }
        auto* cg = at::get_generator_or_default<at::CPUGeneratorImpl>(g, at::detail::getDefaultCPUGenerator());
        std::lock_guard<std::mutex> lock(cg->mutex_);
        keys[size_t(r)] = cg->random64();
      }
    }
    at::Tensor id, lp;
    if (draw_rows(f, keys, drawn, &id, &lp)) {
      // logp is under z, before top-k/top-p
      if (!f.is_same(z)) lp = z.log_softmax(-1).gather(-1, id.unsqueeze(-1)).squeeze(-1);
      *ids = wrap(id);
      *logp = wrap(lp);
      return nullptr;
    }
  }
  at::Tensor chosen;
  if (temperature <= 0) {
    chosen = z.argmax(-1, false);
  } else if (!per_row) {
    chosen = at::multinomial(f.softmax(-1), 1, false, gens[0]).squeeze(-1);
  } else {
    chosen = f.argmax(-1, false);
    for (int64_t r = 0; r < B; r++)
      if (gens[size_t(r)]) chosen[r].copy_(at::multinomial(f[r].softmax(-1), 1, false, gens[size_t(r)]).squeeze(-1));
  }
  at::Tensor lp = z.log_softmax(-1).gather(-1, chosen.unsqueeze(-1)).squeeze(-1);
  *ids = wrap(chosen);
  *logp = wrap(lp);
  return nullptr;
}

tt_err tt_llm_sample(tt_tensor logits, double temperature, int64_t top_k, double top_p, tt_gen g, tt_tensor* ids,
                     tt_tensor* logp) {
  OP_TRY("llm_sample")
  std::vector<c10::optional<at::Generator>> gens(1);
  if (g) gens[0] = g->g;
  return sample_logits(tt_op, logits->t, temperature, top_k, top_p, gens, false, ids, logp);
  OP_CATCH
}

tt_err tt_llm_sample_rows(tt_tensor logits, double temperature, int64_t top_k, double top_p, const tt_gen* gens,
                          int n_gens, tt_tensor* ids, tt_tensor* logp) {
  OP_TRY("llm_sample_rows")
  std::vector<c10::optional<at::Generator>> gv(size_t(std::max(n_gens, 0)));
  for (int i = 0; i < n_gens; i++)
    if (gens[i]) gv[size_t(i)] = gens[i]->g;
  return sample_logits(tt_op, logits->t, temperature, top_k, top_p, gv, true, ids, logp);
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
