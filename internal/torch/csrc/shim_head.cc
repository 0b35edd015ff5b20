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

#include <ATen/ops/empty.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

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

struct HeadLogProbs : public torch::autograd::Function<HeadLogProbs> {
  // hidden (B,T,E), w (V,E), ids (B,T) int64. Returns logp (B,T) and, when
  // with_ent, the entropy (B,T), both float32, 0 at t = 0.
  static variable_list forward(AutogradContext* ctx, const at::Tensor& hidden, const at::Tensor& w,
                               const at::Tensor& ids, double temp, bool with_ent, int64_t chunk, int64_t keep) {
    const int64_t B = hidden.size(0), T = hidden.size(1);
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
