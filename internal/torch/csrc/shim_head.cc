//go:build !torchshared

// shim_head.cc - the LM head, log-softmax and entropy in time chunks, forward
// and backward, as one autograd node (tt_head_logprobs_chunked).
//
// Training the log-prob and entropy of every token through autograd keeps
// the (B,T,V) logits and their softmax alive until the backward: 8 x 1024
// tokens at a 151,936 vocabulary is 5 GB per copy. This node keeps only its
// inputs and one float per token (the log-normaliser); its backward
// recomputes each chunk's logits and applies the closed-form gradients
//   d logp_t / dz = onehot(id) - p
//   d H / dz      = -p * (log p + H)
// so at most one chunk of (B, chunk, V) exists at a time in either pass,
// unless all the logits fit in `keep` floats: then the forward keeps log p
// (one copy, not autograd's several) and the backward skips the recompute
// (what veRL's entropy_from_logits_with_chunking and entropy_checkpointing
// buy upstream, for the log-probs too).
//
// It includes the autograd frontend header (about 5 s of compile), so it is
// a file of its own.
#include <torch/csrc/autograd/custom_function.h>

#include <atomic>

#include <ATen/ops/empty.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/addmm.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include <ATen/Parallel.h>
#include <ATen/ops/mm.h>
#include <c10/core/GradMode.h>

#include <cmath>

#include "cpu_kernels.hpp"
#include "gemm.hpp"
#include "shim.h"
#include "tensor_impl.hpp"

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

tt_err head_err(const char* msg) {
  const char* op = "head_logprobs_chunked: ";
  size_t a = strlen(op), b = strlen(msg);
  char* s = (char*)malloc(a + b + 1);
  memcpy(s, op, a);
  memcpy(s + a, msg, b + 1);
  return s;
}

// z = hidden[:, t0:t0+n] @ W^T / temperature in float32, shape (B,n,V).
at::Tensor chunk_logits(const at::Tensor& h, const at::Tensor& w, int64_t t0, int64_t n, double temp) {
  at::Tensor z = at::linear(h.narrow(1, t0, n), w);
  if (z.scalar_type() != at::kFloat) z = z.to(at::kFloat);
  if (temp != 1.0) z.div_(temp);
  return z;
}

// ---- the float32 CPU fast path ----
//
// With float32 weights on a CPU with AVX2 the node works on rows
// r = b*(T-1) + t of the flattened (B*(T-1), V) logits: each chunk of rows
// is one GEMM written straight into its buffer (the kept log p, or one
// reused chunk buffer), then one parallel pass per row computes in place
// what ATen needs five or six passes and as many temporaries for:
//   forward:  z /= T; max; S = sum exp(z - max), Z = sum exp(z - max)(z - max)
//             lse = max + log S, logp = z[id] - lse, H = log S - Z/S,
//             and log p = z - lse when it is kept for the backward;
//   backward: gz = p (c - b log p) / T + [id] a / T, c = -a - b H, p = exp(log p)
// (a, b: the incoming gradients of logp and H of the row) written over log p,
// then gh = gz W and gW += gz^T h as GEMMs. A kept log p is consumed by the
// first backward; a second one (retain_graph) recomputes it.

// bfloat16 hidden states and head (mixed precision) take the same path: the
// GEMMs run in bfloat16 (oneDNN, AMX where the CPU has it) and the row
// passes in float32 on the logits converted to float32, as a GPU run's
// bf16 logits are upcast for the log-softmax; the gradient of the logits is
// rounded to bfloat16 for the two backward GEMMs, as autocast would.
bool head_fast_ok(const at::Tensor& h, const at::Tensor& w) {
  const at::ScalarType st = h.scalar_type();
  return tt_cpu::cpu_has_avx2() && h.device().is_cpu() && w.device().is_cpu() && w.scalar_type() == st &&
         (st == at::kFloat || st == at::kBFloat16);
}

// Sums float lanes into a double every 4096 elements so a 150k-wide row
// keeps float32 logsumexp accuracy.
struct RowSums {
  double s = 0, z = 0;
};

// O3 for the hand-vectorised loops below comes from a pragma, not an
// optimize("O3") attribute: GCC 14 refuses to inline the always_inline
// intrinsics into a function whose attributes carry optimize() next to
// target() ("target specific option mismatch").
#pragma GCC push_options
#pragma GCC optimize("O3")
// Scales row z (length V) by inv_t in place and returns its max.
__attribute__((target("avx2,fma"))) float row_scale_max(float* z, int64_t V, float inv_t) {
  const int64_t V8 = V & ~int64_t(7);
  __m256 m = _mm256_set1_ps(-INFINITY);
  const __m256 it = _mm256_set1_ps(inv_t);
  const bool scale = inv_t != 1.f;
  for (int64_t i = 0; i < V8; i += 8) {
    __m256 v = _mm256_loadu_ps(z + i);
    if (scale) {
      v = _mm256_mul_ps(v, it);
      _mm256_storeu_ps(z + i, v);
    }
    m = _mm256_max_ps(m, v);
  }
  float mx = tt_cpu::hmax(m);
  for (int64_t i = V8; i < V; i++) {
    if (scale) z[i] *= inv_t;
    mx = std::max(mx, z[i]);
  }
  return mx;
}

// S = sum exp(z - mx) and, with ent, Z = sum exp(z - mx) * (z - mx).
__attribute__((target("avx2,fma"))) RowSums row_exp_sums(const float* z, int64_t V, float mx, bool ent) {
  RowSums r;
  const __m256 vm = _mm256_set1_ps(mx);
  const int64_t V8 = V & ~int64_t(7);
  int64_t i = 0;
  while (i < V8) {
    const int64_t end = std::min(V8, i + 4096);
    __m256 s = _mm256_setzero_ps(), zz = _mm256_setzero_ps();
    for (; i < end; i += 8) {
      __m256 d = _mm256_sub_ps(_mm256_loadu_ps(z + i), vm);
      __m256 e = tt_cpu::exp256(d);
      s = _mm256_add_ps(s, e);
      if (ent) zz = _mm256_fmadd_ps(e, d, zz);
    }
    r.s += tt_cpu::hsum(s);
    if (ent) r.z += tt_cpu::hsum(zz);
  }
  for (; i < V; i++) {
    const double d = (double)z[i] - mx, e = std::exp(d);
    r.s += e;
    if (ent) r.z += e * d;
  }
  return r;
}

__attribute__((target("avx2,fma"))) void row_sub(float* z, int64_t V, float c) {
  const __m256 vc = _mm256_set1_ps(c);
  const int64_t V8 = V & ~int64_t(7);
  for (int64_t i = 0; i < V8; i += 8) _mm256_storeu_ps(z + i, _mm256_sub_ps(_mm256_loadu_ps(z + i), vc));
  for (int64_t i = V8; i < V; i++) z[i] -= c;
}

// z = z * inv_t - c in place.
__attribute__((target("avx2,fma"))) void row_scale_sub(float* z, int64_t V, float inv_t, float c) {
  const __m256 vt = _mm256_set1_ps(inv_t), vc = _mm256_set1_ps(c);
  const int64_t V8 = V & ~int64_t(7);
  for (int64_t i = 0; i < V8; i += 8) _mm256_storeu_ps(z + i, _mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(z + i), vt), vc));
  for (int64_t i = V8; i < V; i++) z[i] = z[i] * inv_t - c;
}

// gz = exp(ls) * (c - b * ls) * inv_t in place of ls; then gz[id] += a * inv_t.
__attribute__((target("avx2,fma"))) void row_grad(float* ls, int64_t V, float a, float b, float c,
                                                                  float inv_t, int64_t id) {
  const __m256 vc = _mm256_set1_ps(c), vb = _mm256_set1_ps(b), vt = _mm256_set1_ps(inv_t);
  const int64_t V8 = V & ~int64_t(7);
  for (int64_t i = 0; i < V8; i += 8) {
    __m256 l = _mm256_loadu_ps(ls + i);
    __m256 p = tt_cpu::exp256(l);
    _mm256_storeu_ps(ls + i, _mm256_mul_ps(_mm256_mul_ps(p, _mm256_fnmadd_ps(vb, l, vc)), vt));
  }
  for (int64_t i = V8; i < V; i++) ls[i] = std::exp(ls[i]) * (c - b * ls[i]) * inv_t;
  ls[id] += a * inv_t;
}

#pragma GCC pop_options

// Rows per GEMM: every chunk's GEMM streams (and OpenBLAS packs) the whole
// head again, so chunks cost time: none when all the logits are kept anyway,
// else at least 128M logits (512 MiB) per chunk, however small the caller's.
std::atomic<int64_t> g_min_chunk_elems{int64_t(1) << 27};  // tests lower it to reach several chunks

int64_t fast_chunk_rows(int64_t chunk_rows, int64_t R, int64_t V, bool all) {
  if (all) return std::max<int64_t>(R, 1);
  return std::max<int64_t>(1, std::min(R, std::max(chunk_rows, g_min_chunk_elems.load() / std::max<int64_t>(V, 1))));
}

// The forward pass over rows [r0, r0+n) whose logits z (n,V) are already in
// place: fills lse, lp (and ent) at those rows, and leaves log p in z when
// keep_logp.
void fast_rows_forward(float* z, int64_t r0, int64_t n, int64_t V, float inv_t, const int64_t* tgt, float* lse,
                       float* lp, float* ent, bool keep_logp) {
  at::parallel_for(0, n, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; i++) {
      float* zr = z + i * V;
      const int64_t r = r0 + i;
      const float mx = row_scale_max(zr, V, inv_t);
      const RowSums sm = row_exp_sums(zr, V, mx, ent != nullptr);
      const double logs = std::log(sm.s);
      const float l = (float)(mx + logs);
      lse[r] = l;
      lp[r] = zr[tgt[r]] - l;
      if (ent) ent[r] = (float)(logs - sm.z / sm.s);
      if (keep_logp) row_sub(zr, V, l);
    }
  });
}

// The rows both passes work on: hidden states h[:, :-1] as (R,E), the head
// contiguous, and each row's target id ids[:, 1:] as (R).
struct FastRows {
  at::Tensor hc, wc, tgt;
  FastRows(const at::Tensor& hidden, const at::Tensor& w, const at::Tensor& ids) {
    const int64_t B = hidden.size(0), T = hidden.size(1), E = hidden.size(2);
    hc = hidden.narrow(1, 0, T - 1).reshape({B * (T - 1), E}).contiguous();
    wc = w.contiguous();
    tgt = ids.narrow(1, 1, T - 1).reshape({B * (T - 1)}).contiguous();
  }
};

// z (n,V) float32 = h (n,E) w^T, in h's dtype (float32 or bfloat16).
void head_logits(at::Tensor& z, const at::Tensor& h, const at::Tensor& w) {
  if (h.scalar_type() == at::kFloat) {
    at::mm_out(z, h, w.t());
  } else {
    z.copy_(at::mm(h, w.t()));
  }
}

// The fast forward: returns {lp (B,T), ent (B,T) or undefined} and sets
// lse (R), the entropy per row (R, when with_ent) and, when keep, log p (R,V).
std::vector<at::Tensor> fast_forward(const at::Tensor& hidden, const at::Tensor& w, const at::Tensor& ids,
                                     double temp, bool with_ent, int64_t chunk_rows, bool keep, at::Tensor* lse,
                                     at::Tensor* ent_rows, at::Tensor* saved) {
  const int64_t B = hidden.size(0), T = hidden.size(1), V = w.size(0), R = B * (T - 1);
  at::TensorOptions f = hidden.options().dtype(at::kFloat);
  const FastRows fr(hidden, w, ids);
  const at::Tensor &hc = fr.hc, &wc = fr.wc, &tgt = fr.tgt;
  for (int64_t r = 0; r < R; r++) {
    const int64_t id = tgt.data_ptr<int64_t>()[r];
    if (id < 0 || id >= V) throw std::runtime_error("token id " + std::to_string(id) + " outside the head's vocabulary");
  }
  *lse = at::empty({R}, f);
  at::Tensor lpr = at::empty({R}, f);
  *ent_rows = with_ent ? at::empty({R}, f) : at::Tensor();
  *saved = keep ? at::empty({R, V}, f) : at::Tensor();
  chunk_rows = fast_chunk_rows(chunk_rows, R, V, keep);
  at::Tensor buf = keep ? at::Tensor() : at::empty({std::min(R, chunk_rows), V}, f);
  for (int64_t r0 = 0; r0 < R; r0 += chunk_rows) {
    const int64_t n = std::min(chunk_rows, R - r0);
    at::Tensor z = keep ? saved->narrow(0, r0, n) : buf.narrow(0, 0, n);
    head_logits(z, hc.narrow(0, r0, n), wc);
    fast_rows_forward(z.data_ptr<float>(), r0, n, V, (float)(1.0 / temp), tgt.data_ptr<int64_t>(),
                      lse->data_ptr<float>(), lpr.data_ptr<float>(), with_ent ? ent_rows->data_ptr<float>() : nullptr,
                      keep);
  }
  at::Tensor lp = at::zeros({B, T}, f);
  lp.narrow(1, 1, T - 1).copy_(lpr.view({B, T - 1}));
  at::Tensor en;
  if (with_ent) {
    en = at::zeros({B, T}, f);
    en.narrow(1, 1, T - 1).copy_(ent_rows->view({B, T - 1}));
  }
  return {lp, en};
}

// The fast backward: {grad hidden, grad w} (either undefined when not needed).
std::vector<at::Tensor> fast_backward(const at::Tensor& hidden, const at::Tensor& w, const at::Tensor& ids,
                                      const at::Tensor& lse, const at::Tensor& ent_rows, at::Tensor saved, double temp,
                                      int64_t chunk_rows, const at::Tensor& g_lp, const at::Tensor& g_en, bool need_h,
                                      bool need_w) {
  const int64_t B = hidden.size(0), T = hidden.size(1), E = hidden.size(2), V = w.size(0), R = B * (T - 1);
  at::TensorOptions f = hidden.options().dtype(at::kFloat);
  const FastRows fr(hidden, w, ids);
  const at::Tensor &hc = fr.hc, &wc = fr.wc, &tgt = fr.tgt;
  const at::Tensor a = g_lp.defined() ? g_lp.narrow(1, 1, T - 1).to(at::kFloat).reshape({R}).contiguous() : at::Tensor();
  const at::Tensor b = g_en.defined() ? g_en.narrow(1, 1, T - 1).to(at::kFloat).reshape({R}).contiguous() : at::Tensor();
  const float inv_t = (float)(1.0 / temp);
  const bool bf = hidden.scalar_type() == at::kBFloat16;
  chunk_rows = fast_chunk_rows(chunk_rows, R, V, saved.defined());
  // grad w in w's dtype, accumulated in float32 over several bfloat16 chunks
  const bool gw_f32 = bf && chunk_rows < R;
  at::Tensor ghr = need_h ? at::empty({R, E}, hidden.options()) : at::Tensor();
  at::Tensor gw = need_w ? at::empty({V, E}, gw_f32 ? f : w.options()) : at::Tensor();
  at::Tensor buf = saved.defined() ? at::Tensor() : at::empty({std::min(R, chunk_rows), V}, f);
  const float *ap = a.defined() ? a.data_ptr<float>() : nullptr, *bp = b.defined() ? b.data_ptr<float>() : nullptr;
  const float *lsep = lse.data_ptr<float>(), *hp = ent_rows.defined() ? ent_rows.data_ptr<float>() : nullptr;
  const int64_t* tp = tgt.data_ptr<int64_t>();
  for (int64_t r0 = 0; r0 < R; r0 += chunk_rows) {
    const int64_t n = std::min(chunk_rows, R - r0);
    at::Tensor gz;
    if (saved.defined()) {
      gz = saved.narrow(0, r0, n);
    } else {
      gz = buf.narrow(0, 0, n);
      head_logits(gz, hc.narrow(0, r0, n), wc);
    }
    float* zp = gz.data_ptr<float>();
    const bool recomputed = !saved.defined();
    at::parallel_for(0, n, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; i++) {
        const int64_t r = r0 + i;
        float* row = zp + i * V;
        if (recomputed) row_scale_sub(row, V, inv_t, lsep[r]);  // log p = z / T - lse
        const float ar = ap ? ap[r] : 0.f, br = bp ? bp[r] : 0.f, hr = (bp && hp) ? hp[r] : 0.f;
        row_grad(row, V, ar, br, -ar - br * hr, inv_t, tp[r]);
      }
    });
    const at::Tensor gm = bf ? gz.to(at::kBFloat16) : gz;  // the GEMMs' operand
    if (need_h) {
      at::Tensor out = ghr.narrow(0, r0, n);
      tt_gemm::mm_into(gm, false, wc, false, out, 0.f);
    }
    if (need_w) {
      const at::Tensor hn = hc.narrow(0, r0, n);
      if (gw_f32)
        r0 == 0 ? gw.copy_(at::mm(gm.t(), hn)) : gw.add_(at::mm(gm.t(), hn));
      else
        tt_gemm::mm_into(gm, true, hn, false, gw, r0 == 0 ? 0.f : 1.f);
    }
  }
  if (gw_f32) gw = gw.to(w.scalar_type());
  at::Tensor gh;
  if (need_h) {
    gh = at::zeros_like(hidden);
    gh.narrow(1, 0, T - 1).copy_(ghr.view({B, T - 1, E}));
  }
  return {gh, gw};
}

struct HeadLogProbs : public torch::autograd::Function<HeadLogProbs> {
  // hidden (B,T,E), w (V,E), ids (B,T) int64. Returns logp (B,T) and, when
  // with_ent, the entropy (B,T), both float32, 0 at t = 0.
  static variable_list forward(AutogradContext* ctx, const at::Tensor& hidden, const at::Tensor& w,
                               const at::Tensor& ids, double temp, bool with_ent, int64_t chunk, int64_t keep) {
    const int64_t B = hidden.size(0), T = hidden.size(1);
    if (T > 1 && head_fast_ok(hidden, w)) {
      at::Tensor lse, ent_rows, saved;
      const bool keep_lp = B * (T - 1) * w.size(0) <= keep;
      std::vector<at::Tensor> out = fast_forward(hidden, w, ids, temp, with_ent, std::max<int64_t>(1, B * chunk),
                                                 keep_lp, &lse, &ent_rows, &saved);
      ctx->save_for_backward({hidden, w, ids, lse, saved, ent_rows});
      ctx->saved_data["temp"] = temp;
      ctx->saved_data["chunk"] = chunk;
      ctx->saved_data["ent"] = with_ent;
      ctx->saved_data["fast"] = true;
      ctx->saved_data["consumed"] = false;
      if (with_ent) return {out[0], out[1]};
      return {out[0]};
    }
    at::TensorOptions f = hidden.options().dtype(at::kFloat);
    at::Tensor lp = at::zeros({B, T}, f);
    at::Tensor en = with_ent ? at::zeros({B, T}, f) : at::Tensor();
    const int64_t V = w.size(0);
    at::Tensor lse = at::empty({B, std::max<int64_t>(T - 1, 0)}, f);
    // small enough: keep log p for the backward instead of recomputing the head
    const bool keep_lp = T > 1 && B * (T - 1) * V <= keep;
    at::Tensor saved = keep_lp ? at::empty({B, T - 1, V}, f) : at::Tensor();
    for (int64_t t0 = 0; t0 < T - 1; t0 += chunk) {
      const int64_t n = std::min(chunk, T - 1 - t0);
      at::Tensor z = chunk_logits(hidden, w, t0, n, temp);
      at::Tensor l = z.logsumexp({-1}, false);  // (B,n)
      lse.narrow(1, t0, n).copy_(l);
      at::Tensor tgt = z.gather(-1, ids.narrow(1, t0 + 1, n).unsqueeze(-1)).squeeze(-1);
      lp.narrow(1, t0 + 1, n).copy_(tgt.sub(l));
      if (with_ent || keep_lp) {
        at::Tensor ls = z.sub_(l.unsqueeze(-1));  // log p, in place of z
        if (keep_lp) saved.narrow(1, t0, n).copy_(ls);
        if (with_ent) {
          at::Tensor p = ls.exp();
          en.narrow(1, t0 + 1, n).copy_(p.mul_(ls).sum({-1}, false).neg_());
        }
      }
    }
    ctx->save_for_backward({hidden, w, ids, lse, saved});
    ctx->saved_data["temp"] = temp;
    ctx->saved_data["chunk"] = chunk;
    ctx->saved_data["ent"] = with_ent;
    if (with_ent) return {lp, en};
    return {lp};
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    variable_list s = ctx->get_saved_variables();
    const at::Tensor &hidden = s[0], &w = s[1], &ids = s[2], &lse = s[3], &saved = s[4];
    const double temp = ctx->saved_data["temp"].toDouble();
    const int64_t chunk = ctx->saved_data["chunk"].toInt();
    const bool with_ent = ctx->saved_data["ent"].toBool();
    const at::Tensor g_lp = grads[0];
    const at::Tensor g_en = with_ent && grads.size() > 1 ? grads[1] : at::Tensor();
    const bool need_h = ctx->needs_input_grad(0), need_w = ctx->needs_input_grad(1);
    const int64_t B = hidden.size(0), T = hidden.size(1), E = hidden.size(2), V = w.size(0);
    if (ctx->saved_data.count("fast")) {
      if ((!g_lp.defined() && !g_en.defined()) || (!need_h && !need_w))
        return {need_h ? at::zeros_like(hidden) : at::Tensor(), need_w ? at::zeros_like(w) : at::Tensor(),
                at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
      // the kept log p becomes the gradient in place: a second backward recomputes
      const bool use_saved = saved.defined() && !ctx->saved_data["consumed"].toBool();
      ctx->saved_data["consumed"] = true;
      std::vector<at::Tensor> g = fast_backward(hidden, w, ids, lse, s[5], use_saved ? saved : at::Tensor(), temp,
                                                std::max<int64_t>(1, B * chunk), g_lp, g_en, need_h, need_w);
      return {g[0], g[1], at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    }
    at::Tensor gh = need_h ? at::zeros_like(hidden) : at::Tensor();
    at::Tensor gw = need_w ? at::zeros({V, E}, w.options().dtype(at::kFloat)) : at::Tensor();
    if ((!g_lp.defined() && !g_en.defined()) || (!need_h && !need_w)) {
      return {gh, gw.defined() ? gw.to(w.scalar_type()) : gw, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(),
              at::Tensor()};
    }
    for (int64_t t0 = 0; t0 < T - 1; t0 += chunk) {
      const int64_t n = std::min(chunk, T - 1 - t0);
      at::Tensor ls = saved.defined() ? saved.narrow(1, t0, n).clone()
                                      : chunk_logits(hidden, w, t0, n, temp).sub_(lse.narrow(1, t0, n).unsqueeze(-1));  // log p
      at::Tensor p = ls.exp();
      at::Tensor gz;  // d loss / d z, (B,n,V)
      if (g_lp.defined()) {
        at::Tensor a = g_lp.narrow(1, t0 + 1, n).to(at::kFloat).unsqueeze(-1);  // (B,n,1)
        gz = p.mul(a.neg());
        gz.scatter_add_(-1, ids.narrow(1, t0 + 1, n).unsqueeze(-1), a);
      }
      if (g_en.defined()) {
        at::Tensor b = g_en.narrow(1, t0 + 1, n).to(at::kFloat).unsqueeze(-1);
        at::Tensor H = p.mul(ls).sum({-1}, true).neg_();  // (B,n,1)
        at::Tensor ge = ls.add_(H).mul_(p).mul_(b.neg());  // -b * p * (log p + H), in place of ls
        gz = gz.defined() ? gz.add_(ge) : ge;
      }
      p = at::Tensor();
      if (temp != 1.0) gz.div_(temp);
      if (gz.scalar_type() != w.scalar_type()) gz = gz.to(w.scalar_type());
      if (need_h) gh.narrow(1, t0, n).copy_(at::matmul(gz, w));
      if (need_w) {
        at::Tensor hc = hidden.narrow(1, t0, n).reshape({-1, E});
        if (hc.scalar_type() != at::kFloat) hc = hc.to(at::kFloat);
        gw.addmm_(gz.reshape({-1, V}).to(at::kFloat).t(), hc);
      }
    }
    if (gw.defined() && gw.scalar_type() != w.scalar_type()) gw = gw.to(w.scalar_type());
    return {gh, gw, at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};


}  // namespace

extern "C" {

int64_t tt_head_min_chunk(int64_t elems) { return g_min_chunk_elems.exchange(std::max<int64_t>(elems, 1)); }

tt_err tt_head_logprobs_chunked(tt_tensor hidden, tt_tensor head, tt_tensor ids, double temperature,
                                int with_entropy, int64_t chunk, int64_t keep, tt_tensor* logp, tt_tensor* ent) {
  try {
    tt_get_num_threads();  // applies the process-wide thread count on this OS thread
    if (!hidden || !head || !ids) return head_err("missing input");
    const at::Tensor& H = hidden->t;
    const at::Tensor& W = head->t;
    const at::Tensor& I = ids->t;
    if (H.dim() != 3 || I.dim() != 2 || H.size(0) != I.size(0) || H.size(1) != I.size(1))
      return head_err("hidden must be (B,T,E) and ids (B,T)");
    if (W.dim() != 2 || W.size(1) != H.size(2)) return head_err("head must be (V,E)");
    if (I.scalar_type() != at::kLong) return head_err("ids must be int64");
    if (!(temperature > 0)) return head_err("temperature must be > 0");
    if (chunk < 1) chunk = std::max<int64_t>(H.size(1), 1);
    // log p is kept only for a backward that can happen
    if (!c10::GradMode::is_enabled() || !(H.requires_grad() || W.requires_grad())) keep = 0;
    variable_list out = HeadLogProbs::apply(H, W, I, temperature, with_entropy != 0, chunk, keep);
    tt_tensor a = tt_counted(out[0]);
    if (with_entropy) {
      try {
        *ent = tt_counted(out[1]);
      } catch (...) {
        tt_free(a);
        throw;
      }
    } else {
      *ent = nullptr;
    }
    *logp = a;
    return nullptr;
  } catch (const c10::Error& e) {
    return head_err(e.what_without_backtrace());
  } catch (const std::exception& e) {
    return head_err(e.what());
  } catch (...) {
    return head_err("unknown C++ exception");
  }
}

}  // extern "C"
