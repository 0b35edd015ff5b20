//go:build !torchshared

// shim_ckpt.cc - a checkpointed decoder layer (tt_llm_ckpt_layer): one
// autograd node per layer whose forward runs the layer with autograd off and
// keeps only its inputs (the layer input, the rotary tables, the key bias
// and the weights, which live anyway), and whose backward runs the
// layer again with autograd on and back-propagates through that local graph.
// Between forward and backward a layer thus holds one (B,T,E) tensor instead
// of its attention scores, softmax, projections and MLP activations
// (activation recomputation; upstream's enable_gradient_checkpointing).
//
// The layer is shim_llm.cc's by-role layer (shim.h's tt_llm_role: optional
// qkv bias and q/k norms, rotary tables from the caller, LoRA deltas), written
// op for op as package llm's Go forward (llm/decoder.go) writes it, with the
// same fused ops (train_ops.hpp), so that the loss and gradients equal the
// Go forward's to float rounding of the same ops in the same order.
//
// It includes the autograd frontend headers, so it is a file of its own (as
// shim_head.cc).
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>

#include <ATen/ops/cat.h>
#include <ATen/ops/linear.h>

#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "gemm.hpp"
#include "shim.h"
#include "tensor_impl.hpp"
#include "train_ops.hpp"

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

constexpr int kRoles = TT_LLM_ROLES;
constexpr int kLoRA = 14;  // (A,B) for q k v o gate up down

tt_err ckpt_err(const char* msg) {
  const char* op = "llm_ckpt_layer: ";
  size_t a = strlen(op), b = strlen(msg);
  char* s = (char*)malloc(a + b + 1);
  memcpy(s, op, a);
  memcpy(s + a, msg, b + 1);
  return s;
}

struct Geo {
  int64_t H, KV, D;
  double eps, lora_scale;
};

// Weights of one layer by role (undefined where absent) and its LoRA tensors.
struct LayerW {
  std::array<at::Tensor, kRoles> w;
  std::array<at::Tensor, kLoRA> lo;
};

// add_lora as block.addLoRA: y + scale * B(A(x)) when target t is on.
at::Tensor add_lora(const at::Tensor& y, const at::Tensor& x, const LayerW& L, const Geo& g, int t) {
  if (t < 0 || !L.lo[2 * t].defined()) return y;
  at::Tensor d = at::linear(at::linear(x, L.lo[2 * t]), L.lo[2 * t + 1]);
  return y.add(d.mul(g.lora_scale));
}

// layer is one decoder layer, x (B,T,E) -> (B,T,E): qwen2Layer, llamaLayer
// and qwen3Layer of package llm, by role.
at::Tensor layer(const at::Tensor& x, const LayerW& L, const Geo& g, const at::Tensor& cs, const at::Tensor& sn,
                 const at::Tensor& kbias) {
  const int64_t B = x.size(0), T = x.size(1), H = g.H, KV = g.KV, D = g.D;
  const int64_t Q = H * D, K = KV * D;
  const auto& w = L.w;
  at::Tensor h = tt_train::rms_norm(x, w[TT_LLM_LN1], g.eps);
  at::Tensor y = tt_gemm::linear(h, w[TT_LLM_QKV], w[TT_LLM_QKV_BIAS]);
  at::Tensor q = add_lora(y.narrow(2, 0, Q), h, L, g, 0);
  at::Tensor k = add_lora(y.narrow(2, Q, K), h, L, g, 1);
  at::Tensor v = add_lora(y.narrow(2, Q + K, K), h, L, g, 2);
  at::Tensor qh = q.view({B, T, H, D}), kh = k.view({B, T, KV, D});
  if (w[TT_LLM_Q_NORM].defined()) qh = tt_train::rms_norm(qh, w[TT_LLM_Q_NORM], g.eps);
  if (w[TT_LLM_K_NORM].defined()) kh = tt_train::rms_norm(kh, w[TT_LLM_K_NORM], g.eps);
  qh = tt_train::rope(qh.transpose(1, 2), cs, sn);        // (B,H,T,D)
  kh = tt_train::rope(kh.transpose(1, 2), cs, sn);        // (B,KV,T,D)
  at::Tensor vh = v.view({B, T, KV, D}).transpose(1, 2);  // (B,KV,T,D)
  at::Tensor a = tt_train::attention(qh, kh, vh, kbias, 0, 1 / std::sqrt((double)D));  // (B,T,H*D)
  at::Tensor x1 = x.add(add_lora(tt_gemm::linear(a, w[TT_LLM_O], at::Tensor()), a, L, g, 3));
  // SwiGLU MLP as block.mlp
  at::Tensor h2 = tt_train::rms_norm(x1, w[TT_LLM_LN2], g.eps);
  const int64_t I = w[TT_LLM_GATE_UP].size(0) / 2;
  at::Tensor gu = tt_gemm::linear(h2, w[TT_LLM_GATE_UP], at::Tensor());
  const bool lora_mlp = L.lo[8].defined() || L.lo[10].defined();  // gate (4) or up (5)
  if (lora_mlp) gu = at::cat({add_lora(gu.narrow(2, 0, I), h2, L, g, 4), add_lora(gu.narrow(2, I, I), h2, L, g, 5)}, 2);
  at::Tensor act = tt_train::swiglu(gu);
  return x1.add(add_lora(tt_gemm::linear(act, w[TT_LLM_DOWN], at::Tensor()), act, L, g, 6));
}

// unpack rebuilds a layer's weights from the present tensors ps (in role
// order, then LoRA order) and the bit mask of which are present.
LayerW unpack(const at::Tensor* ps, size_t n, int64_t mask) {
  LayerW L;
  size_t j = 0;
  for (int i = 0; i < kRoles + kLoRA; i++) {
    if (!(mask >> i & 1)) continue;
    if (j >= n) throw std::runtime_error("llm_ckpt_layer: weight mask and list disagree");
    (i < kRoles ? L.w[i] : L.lo[i - kRoles]) = ps[j++];
  }
  return L;
}

// Inputs: x, cos, sin, the key bias, then the present weights; the rest are not tensors.
constexpr size_t kFixed = 4;
constexpr size_t kScalars = 6;  // mask, lora_scale, H, KV, D, eps

struct CkptLayer : public torch::autograd::Function<CkptLayer> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& cs, const at::Tensor& sn,
                            const at::Tensor& bias, at::TensorList ps, int64_t mask, double lora_scale, int64_t H,
                            int64_t KV, int64_t D, double eps) {
    Geo g{H, KV, D, eps, lora_scale};
    LayerW L = unpack(ps.data(), ps.size(), mask);
    at::Tensor y = layer(x, L, g, cs, sn, bias);  // autograd is off here (Function::apply)
    std::vector<at::Tensor> save{x, cs, sn, bias};
    save.insert(save.end(), ps.begin(), ps.end());
    ctx->save_for_backward(save);
    ctx->saved_data["mask"] = mask;
    ctx->saved_data["scale"] = lora_scale;
    ctx->saved_data["H"] = H;
    ctx->saved_data["KV"] = KV;
    ctx->saved_data["D"] = D;
    ctx->saved_data["eps"] = eps;
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    variable_list s = ctx->get_saved_variables();
    const size_t n = s.size();
    variable_list out(n + kScalars);
    if (grads.empty() || !grads[0].defined()) return out;
    // fresh leaves sharing storage with the saved inputs: the recomputed
    // graph reaches no node outside this layer
    std::vector<at::Tensor> in(n);
    variable_list want;
    std::vector<size_t> idx;
    for (size_t i = 0; i < n; i++) {
      in[i] = s[i].detach();
      if (ctx->needs_input_grad(i) && in[i].is_floating_point()) {
        in[i].requires_grad_(true);
        want.push_back(in[i]);
        idx.push_back(i);
      }
    }
    if (want.empty()) return out;
    Geo g{ctx->saved_data["H"].toInt(), ctx->saved_data["KV"].toInt(), ctx->saved_data["D"].toInt(),
          ctx->saved_data["eps"].toDouble(), ctx->saved_data["scale"].toDouble()};
    LayerW L = unpack(in.data() + kFixed, n - kFixed, ctx->saved_data["mask"].toInt());
    at::Tensor y;
    {
      at::AutoGradMode on(true);
      y = layer(in[0], L, g, in[1], in[2], in[3]);
    }
    variable_list gs = torch::autograd::grad({y}, want, {grads[0]}, /*retain_graph=*/false,
                                             /*create_graph=*/false, /*allow_unused=*/true);
    for (size_t j = 0; j < idx.size(); j++) out[idx[j]] = gs[j];
    return out;
  }
};


}  // namespace

extern "C" {

tt_err tt_llm_ckpt_layer(tt_tensor x, const tt_tensor* w, const tt_tensor* lora, double lora_scale, int n_heads,
                         int n_kv, int head_dim, double eps, tt_tensor cos, tt_tensor sin, tt_tensor bias,
                         tt_tensor* out) {
  try {
    tt_get_num_threads();  // applies the process-wide thread count on this OS thread
    if (!x || !w || !cos || !sin || !bias || !out) return ckpt_err("missing input");
    for (int r : {TT_LLM_LN1, TT_LLM_QKV, TT_LLM_O, TT_LLM_LN2, TT_LLM_GATE_UP, TT_LLM_DOWN})
      if (!w[r]) return ckpt_err("the layer lacks a required weight (ln1, qkv, o, ln2, gate_up or down)");
    if (!(n_heads > 0 && n_kv > 0 && head_dim > 0 && n_heads % n_kv == 0 && head_dim % 2 == 0))
      return ckpt_err("bad shape config (heads, kv heads, head dim)");
    const at::Tensor& X = x->t;
    if (X.dim() != 3) return ckpt_err("x must be (B,T,E)");
    const int64_t B = X.size(0), T = X.size(1), D = head_dim;
    if (cos->t.sizes() != at::IntArrayRef({B, 1, T, D}) || sin->t.sizes() != cos->t.sizes())
      return ckpt_err("cos and sin must be (B,1,T,D)");
    if (bias->t.sizes() != at::IntArrayRef({B, T}) || bias->t.scalar_type() != at::kFloat)
      return ckpt_err("key bias must be float32 (B,T)");
    const int64_t qkv_rows = (int64_t)(n_heads + 2 * n_kv) * D;
    if (w[TT_LLM_QKV]->t.dim() != 2 || w[TT_LLM_QKV]->t.size(0) != qkv_rows ||
        w[TT_LLM_QKV]->t.size(1) != X.size(2))
      return ckpt_err("qkv weight must be ((H+2KV)*D, E)");
    if (w[TT_LLM_GATE_UP]->t.dim() != 2 || w[TT_LLM_GATE_UP]->t.size(0) % 2 != 0)
      return ckpt_err("gate_up weight must be (2I, E)");
    std::vector<at::Tensor> ps;
    int64_t mask = 0;
    for (int i = 0; i < kRoles; i++)
      if (w[i]) {
        ps.push_back(w[i]->t);
        mask |= int64_t(1) << i;
      }
    if (lora) {
      for (int t = 0; t < kLoRA; t += 2) {
        if (!lora[t] != !lora[t + 1]) return ckpt_err("a LoRA target has A without B (or B without A)");
        if (!lora[t]) continue;
        ps.push_back(lora[t]->t);
        ps.push_back(lora[t + 1]->t);
        mask |= (int64_t(1) << (kRoles + t)) | (int64_t(1) << (kRoles + t + 1));
      }
    }
    at::Tensor y = CkptLayer::apply(X, cos->t, sin->t, bias->t, at::TensorList(ps), mask, lora_scale,
                                    (int64_t)n_heads, (int64_t)n_kv, (int64_t)head_dim, eps);
    *out = tt_counted(std::move(y));
    return nullptr;
  } catch (const c10::Error& e) {
    return ckpt_err(e.what_without_backtrace());
  } catch (const std::exception& e) {
    return ckpt_err(e.what());
  } catch (...) {
    return ckpt_err("unknown C++ exception");
  }
}

}  // extern "C"
