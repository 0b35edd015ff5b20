package fused

import (
	"ragen/internal/torch/bridge"
	"ragen/internal/torch/csrc"
	"ragen/torch"
)

// CheckpointLayer runs one decoder layer, x (B,T,E) -> (B,T,E), as a single
// autograd node that keeps only its inputs between forward and backward and
// recomputes the layer in backward (activation checkpointing;
// csrc/shim_ckpt.cc). The layer is the by-role layer of Forward, written op
// for op as package llm's Go forward. lora is nil or the layer's (A,B) pairs
// for q,k,v,o,gate,up,down (nil where off). cos and sin are the rotary
// tables gathered at the positions, (B,1,T,D) in the model dtype; bias is
// the (B,T) float32 additive key bias (Scope.KeyBias); the layer adds the
// causal mask.
func CheckpointLayer(s *torch.Scope, x *torch.Tensor, l *Layer, lora *[14]*torch.Tensor, loraScale float64,
	sh Shape, cos, sin, bias *torch.Tensor) *torch.Tensor {
	if s.Err() != nil {
		return nil
	}
	if l == nil || l.Ln1 == nil || l.QKV == nil || l.O == nil || l.Ln2 == nil || l.GateUp == nil || l.Down == nil {
		s.Errorf("llm_ckpt_layer", "the layer lacks a required weight (Ln1, QKV, O, Ln2, GateUp or Down)")
		return nil
	}
	if !ok(s, x, cos, sin, bias, l.Ln1, l.QKV, l.O, l.Ln2, l.GateUp, l.Down) {
		return nil
	}
	roles := l.roles()
	if len(roles) != csrc.LLMRoles {
		s.Errorf("llm_ckpt_layer", "fused.Layer has %d roles, the shim %d", len(roles), csrc.LLMRoles)
		return nil
	}
	w := make([]csrc.Tensor, len(roles))
	for i, t := range roles {
		if t != nil && h(t).IsNil() {
			bridge.Fail(s, torch.ErrFreed)
			return nil
		}
		w[i] = h(t) // nil -> NULL
	}
	var lo []csrc.Tensor
	if lora != nil {
		lo = make([]csrc.Tensor, len(lora))
		for i, t := range lora {
			if t != nil && h(t).IsNil() {
				bridge.Fail(s, torch.ErrFreed)
				return nil
			}
			lo[i] = h(t)
		}
	}
	out, err := csrc.LLMCheckpointLayer(h(x), w, lo, loraScale, sh.Heads, sh.KVHeads, sh.HeadDim, sh.Eps,
		h(cos), h(sin), h(bias))
	return put(s, out, err)
}
