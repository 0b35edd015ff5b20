//go:build !torchshared

// shim_llm.cc - fused ops for the Qwen2-family model in package llm.
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
#include <c10/core/GradMode.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>

#include <ATen/ops/cat.h>
#include <ATen/ops/embedding.h>
#include <ATen/ops/full.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/multinomial.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/zeros.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "shim.h"
#include "tensor_impl.hpp"

// Same definition as in shim.cc (one definition per the ODR).
struct tt_gen_s {
  at::Generator g;
};

namespace {

tt_err llm_err(const char* op, const char* msg) {
  size_t a = strlen(op), b = strlen(msg);
  char* s = (char*)malloc(a + b + 3);
  memcpy(s, op, a);
  s[a] = ':';
  s[a + 1] = ' ';
  memcpy(s + a + 2, msg, b + 1);
  return s;
}

// wrap returns a handle counted by tt_live: the handle comes from tt_full
// (which counts it) and then holds t instead of the placeholder scalar.
tt_tensor wrap(at::Tensor t) {
  tt_tensor h = nullptr;
  tt_err e = tt_full(nullptr, 0, 0.0, TT_F32, TT_CPU, &h);
  if (e) {
    std::string m(e);
    free(e);
    throw std::runtime_error(m);
  }
  h->t = std::move(t);
  return h;
}

at::ScalarType st_of(int d) {
  switch (d) {
    case TT_F32: return at::kFloat;
    case TT_F64: return at::kDouble;
    case TT_BF16: return at::kBFloat16;
    case TT_F16: return at::kHalf;
  }
  throw std::invalid_argument("llm: unsupported float dtype code " + std::to_string(d));
}

at::Tensor rotate_half(const at::Tensor& x) {
  int64_t h = x.size(-1) / 2;
  return at::cat({x.narrow(-1, h, h).neg(), x.narrow(-1, 0, h)}, -1);
}

// rms_norm is Qwen2RMSNorm: normalise in float32, cast back, scale.
at::Tensor rms_norm(const at::Tensor& x, const at::Tensor& w, double eps) {
  at::Tensor xf = x.to(at::kFloat);
  at::Tensor var = xf.pow(2).mean({-1}, true);
  xf = xf.mul(var.add(eps).rsqrt());
  return w.mul(xf.to(x.scalar_type()));
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

}  // namespace

// tt_get_num_threads applies the process-wide thread count on this OS thread.
#define LLM_TRY(opname)       \
  const char* tt_op = opname; \
  tt_get_num_threads();       \
  try {
#define LLM_CATCH                                                                       \
  }                                                                                     \
  catch (const c10::Error& e) { return llm_err(tt_op, e.what_without_backtrace()); }    \
  catch (const std::exception& e) { return llm_err(tt_op, e.what()); }                  \
  catch (...) { return llm_err(tt_op, "unknown C++ exception"); }                       \
  return nullptr;
#define LLM_NEED(cond, msg) \
  if (!(cond)) return llm_err(tt_op, msg);

extern "C" {

tt_err tt_llm_forward(const tt_tensor* w, int n_layers, const tt_tensor* lora, double lora_scale, int n_heads,
                      int n_kv, int head_dim, double eps, tt_tensor ids, tt_tensor pos, tt_tensor cos_table,
                      tt_tensor sin_table, tt_tensor kbias, const tt_tensor* kv, int64_t cache_pos, int last_only,
                      int no_grad, tt_tensor* out) {
  LLM_TRY("llm_forward")
  LLM_NEED(w && ids && pos && cos_table && sin_table && kbias, "missing input");
  LLM_NEED(n_layers >= 0 && n_heads > 0 && n_kv > 0 && head_dim > 0 && n_heads % n_kv == 0, "bad shape config");
  // inference mode skips autograd and version-counter bookkeeping per op
  c10::optional<c10::InferenceMode> im;
  if (no_grad) im.emplace();
  const at::Tensor& I = ids->t;
  LLM_NEED(I.dim() == 2, "ids must be (B,T)");
  LLM_NEED(pos->t.sizes() == I.sizes(), "positions must have the shape of ids");
  const int64_t B = I.size(0), T = I.size(1);
  const int64_t H = n_heads, KV = n_kv, D = head_dim, G = H / KV;
  const int64_t Lk = kv ? cache_pos + T : T;
  LLM_NEED(kbias->t.dim() == 2 && kbias->t.size(0) == B && kbias->t.size(1) >= Lk,
           "key bias must be (B, >= cache_pos+T)");
  LoRA lo{lora, lora_scale};

  at::Tensor x = at::embedding(w[0]->t, I);  // (B,T,E)
  const at::ScalarType dt = x.scalar_type();
  // rotary tables gathered at the positions: (B,1,T,D)
  at::Tensor p = pos->t.reshape({-1});
  at::Tensor cs = cos_table->t.index_select(0, p).view({B, 1, T, D}).to(dt);
  at::Tensor sn = sin_table->t.index_select(0, p).view({B, 1, T, D}).to(dt);
  // additive mask (B,1,1,T,Lk): key padding plus causal when T > 1
  at::Tensor bias = kbias->t.narrow(1, 0, Lk).view({B, 1, 1, 1, Lk});
  if (T > 1) {
    const float lowest = std::numeric_limits<float>::lowest();
    std::vector<float> cm((size_t)(T * Lk), 0.f);
    const int64_t off = kv ? cache_pos : 0;
    for (int64_t t = 0; t < T; t++)
      for (int64_t j = off + t + 1; j < Lk; j++) cm[(size_t)(t * Lk + j)] = lowest;
    at::Tensor causal = at::zeros({T, Lk}, at::TensorOptions().dtype(at::kFloat));
    std::memcpy(causal.data_ptr<float>(), cm.data(), cm.size() * sizeof(float));
    causal = causal.to(kbias->t.device());
    bias = bias.add(causal.view({1, 1, 1, T, Lk})).clamp_min(lowest);
  }
  const double scale = 1.0 / std::sqrt((double)D);
  const int64_t qw = H * D, kw = KV * D;

  for (int li = 0; li < n_layers; li++) {
    const tt_tensor* lw = w + 1 + 7 * li;
    const at::Tensor &ln1 = lw[0]->t, &wqkv = lw[1]->t, &bqkv = lw[2]->t, &wo = lw[3]->t, &ln2 = lw[4]->t,
                     &wgu = lw[5]->t, &wd = lw[6]->t;
    at::Tensor h = rms_norm(x, ln1, eps);
    at::Tensor qkv = add_lora(at::linear(h, wqkv, bqkv), h, lo, li, 0, {qw, kw, kw});
    // rotary embedding of q and k in one pass: (B,H+KV,T,D)
    at::Tensor qk = qkv.narrow(-1, 0, qw + kw).view({B, T, H + KV, D}).transpose(1, 2);
    qk = qk.mul(cs).add(rotate_half(qk).mul(sn));
    at::Tensor q = qk.narrow(1, 0, H);
    at::Tensor k = qk.narrow(1, H, KV);
    at::Tensor v = qkv.narrow(-1, qw + kw, kw).view({B, T, KV, D}).transpose(1, 2);
    if (kv) {
      at::Tensor& kc = kv[2 * li]->t;
      at::Tensor& vc = kv[2 * li + 1]->t;
      kc.narrow(2, cache_pos, T).copy_(k);
      vc.narrow(2, cache_pos, T).copy_(v);
      k = kc.narrow(2, 0, Lk);
      v = vc.narrow(2, 0, Lk);
    }
    // grouped-query attention without copying K/V: query heads of one KV
    // group are stacked along the time axis.
    at::Tensor qg = q.reshape({B, KV, G * T, D});
    at::Tensor s = at::matmul(qg, k.transpose(2, 3)).mul(scale).view({B, KV, G, T, Lk});
    s = no_grad ? s.add_(bias) : s.add(bias);
    s = s.softmax(-1, at::kFloat).to(dt).view({B, KV, G * T, Lk});
    at::Tensor a = at::matmul(s, v).view({B, H, T, D}).transpose(1, 2).reshape({B, T, H * D});
    at::Tensor o = at::linear(a, wo);
    if (lo.on(li, 3)) o = o.add(lo.delta(li, 3, a));
    x = no_grad ? x.add_(o) : x.add(o);
    h = rms_norm(x, ln2, eps);
    const int64_t I2 = wgu.size(0) / 2;
    at::Tensor gu = add_lora(at::linear(h, wgu), h, lo, li, 4, {I2, I2});
    at::Tensor act = at::silu(gu.narrow(-1, 0, I2)).mul(gu.narrow(-1, I2, I2));
    at::Tensor d = at::linear(act, wd);
    if (lo.on(li, 6)) d = d.add(lo.delta(li, 6, act));
    x = no_grad ? x.add_(d) : x.add(d);
  }
  if (last_only) x = x.narrow(1, T - 1, 1);
  x = rms_norm(x, w[1 + 7 * n_layers]->t, eps);
  tt_tensor head = w[2 + 7 * n_layers];
  if (head) x = at::linear(x, head->t);
  *out = wrap(std::move(x));
  LLM_CATCH
}

// (B,L) 0/1 attention -> additive float32 bias: 0 where attended, lowest float elsewhere.
tt_err tt_llm_key_bias(tt_tensor attn, tt_tensor* out) {
  LLM_TRY("llm_key_bias")
  at::NoGradGuard ng;
  at::Tensor m = attn->t.eq(0);
  at::Tensor b = at::zeros(attn->t.sizes(), attn->t.options().dtype(at::kFloat));
  *out = wrap(b.masked_fill(m, std::numeric_limits<float>::lowest()));
  LLM_CATCH
}

// logp[b,t] = log_softmax(logits[b,t-1]/temp)[ids[b,t]] (0 at t=0); entropy likewise.
tt_err tt_llm_token_logprobs(tt_tensor logits, tt_tensor ids, double temperature, int with_entropy, int64_t chunk,
                             tt_tensor* logp, tt_tensor* ent) {
  LLM_TRY("llm_token_logprobs")
  const at::Tensor& L = logits->t;
  const at::Tensor& I = ids->t;
  LLM_NEED(L.dim() == 3 && I.dim() == 2 && L.size(0) == I.size(0) && L.size(1) == I.size(1),
           "logits must be (B,T,V) and ids (B,T)");
  LLM_NEED(temperature > 0, "temperature must be > 0");
  const int64_t B = L.size(0), T = L.size(1);
  if (chunk < 1) chunk = T;
  std::vector<at::Tensor> lps{at::zeros({B, 1}, L.options().dtype(at::kFloat))};
  std::vector<at::Tensor> ens{lps[0]};
  for (int64_t t0 = 0; t0 < T - 1; t0 += chunk) {
    int64_t n = std::min(chunk, T - 1 - t0);
    at::Tensor z = L.narrow(1, t0, n).to(at::kFloat);
    if (temperature != 1.0) z = z.div(temperature);
    at::Tensor ls = z.log_softmax(-1);
    lps.push_back(ls.gather(-1, I.narrow(1, t0 + 1, n).unsqueeze(-1)).squeeze(-1));
    if (with_entropy) {
      // H = logsumexp(z) - sum softmax(z) * z  (veRL's entropy_from_logits)
      at::Tensor pz = z.softmax(-1);
      ens.push_back(z.logsumexp({-1}, false).sub(pz.mul(z).sum({-1}, false)));
    }
  }
  *logp = wrap(at::cat(lps, 1));
  *ent = with_entropy ? wrap(at::cat(ens, 1)) : nullptr;
  LLM_CATCH
}

// Samples one token per row from logits (B,V) or the last step of (B,T,V).
// temperature <= 0 is greedy. logp is the log-probability of the chosen id
// under softmax(logits/temperature) (raw logits when greedy), before top-k/top-p.
tt_err tt_llm_sample(tt_tensor logits, double temperature, int64_t top_k, double top_p, tt_gen g, tt_tensor* ids,
                     tt_tensor* logp) {
  LLM_TRY("llm_sample")
  at::NoGradGuard ng;
  at::Tensor z = logits->t;
  if (z.dim() == 3) z = z.select(1, z.size(1) - 1);
  LLM_NEED(z.dim() == 2, "logits must be (B,V) or (B,T,V)");
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
  LLM_CATCH
}

// Replaces each non-NULL ts[i] by ts[i].index_select(dim, idx), keeping the handles.
tt_err tt_llm_select_rows(tt_tensor* ts, int n, int64_t dim, tt_tensor idx) {
  LLM_TRY("llm_select_rows")
  at::NoGradGuard ng;
  for (int i = 0; i < n; i++)
    if (ts[i]) ts[i]->t = ts[i]->t.index_select(dim, idx->t);
  LLM_CATCH
}

}  // extern "C"
