// cpu_kernels.hpp - CPU feature checks and AVX2 / AVX-512 helpers shared by the
// shim's hand-written kernels (shim_llm.cc: decode projections and
// attention; shim_head.cc: the LM head's log-softmax rows; shim_train.cc:
// the fused decoder ops). Included only
// from this directory.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace tt_cpu {

// RAGEN_CPU_ISA=avx512 (or avx2, or generic) keeps the hand-written kernels
// at or below that instruction set (generic < avx2 < avx512 < avx512bf16):
// for tests of the narrower paths on a wider CPU.
inline int isa_rank(const char* isa) {
  static const char* const order[] = {"generic", "avx2", "avx512", "avx512bf16"};
  for (int i = 0; i < 4; i++)
    if (std::strcmp(isa, order[i]) == 0) return i;
  return -1;
}
inline bool isa_allows(const char* isa) {
  const char* cap = std::getenv("RAGEN_CPU_ISA");
  if (!cap || !*cap) return true;
  return isa_rank(isa) <= isa_rank(cap);
}

inline bool cpu_has_avx2() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && isa_allows("avx2");
  return ok;
}

inline bool cpu_has_avx512() {
  static const bool ok = __builtin_cpu_supports("avx512f") && cpu_has_avx2() && isa_allows("avx512");
  return ok;
}

__attribute__((target("avx2,fma"))) inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_hadd_ps(lo, lo);
  lo = _mm_hadd_ps(lo, lo);
  return _mm_cvtss_f32(lo);
}

// The largest of v's eight lanes.
__attribute__((target("avx2,fma"))) inline float hmax(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  float mx = lanes[0];
  for (int j = 1; j < 8; j++) mx = std::max(mx, lanes[j]);
  return mx;
}

// exp for x <= 0 (softmax after subtracting the max), Cephes-style polynomial.
__attribute__((target("avx2,fma"))) inline __m256 exp256(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-87.3f));
  __m256 fx = _mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), _mm256_set1_ps(0.5f));
  fx = _mm256_floor_ps(fx);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 z = _mm256_mul_ps(x, x);
  __m256 y = _mm256_set1_ps(1.9875691500E-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507E-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073E-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894E-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459E-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201E-1f));
  y = _mm256_fmadd_ps(y, z, x);
  y = _mm256_add_ps(y, _mm256_set1_ps(1.0f));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(fx), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

// exp256 on 16 lanes: the same operations lane by lane, so the same bits.
__attribute__((target("avx512f"))) inline __m512 exp512(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(-87.3f));
  __m512 fx = _mm512_fmadd_ps(x, _mm512_set1_ps(1.44269504088896341f), _mm512_set1_ps(0.5f));
  fx = _mm512_roundscale_ps(fx, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(0.693359375f), x);
  x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(-2.12194440e-4f), x);
  __m512 z = _mm512_mul_ps(x, x);
  __m512 y = _mm512_set1_ps(1.9875691500E-4f);
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.3981999507E-3f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(8.3334519073E-3f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(4.1665795894E-2f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(1.6666665459E-1f));
  y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(5.0000001201E-1f));
  y = _mm512_fmadd_ps(y, z, x);
  y = _mm512_add_ps(y, _mm512_set1_ps(1.0f));
  __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(fx), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(y, _mm512_castsi512_ps(e));
}

}  // namespace tt_cpu
