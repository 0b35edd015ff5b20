package csrc

/*
#include "shim.h"
*/
import "C"

import "fmt"

// LLMCheckpointLayer runs one decoder layer as a checkpointed autograd node
// (tt_llm_ckpt_layer, shim_ckpt.cc): its forward keeps only the inputs, its
// backward recomputes the layer. w holds LLMRoles handles by role (NULL for
// an absent optional role); lora is nil or 14 handles (NULL where off).
// Runs on the torch thread.
func LLMCheckpointLayer(x Tensor, w, lora []Tensor, loraScale float64, nHeads, nKV, headDim int, eps float64,
	cos, sin, bias Tensor) (Tensor, error) {
	switch {
	case len(w) != LLMRoles:
		return Tensor{}, &Error{Op: "llm_ckpt_layer", Msg: fmt.Sprintf("%d weights, want %d roles", len(w), LLMRoles)}
	case lora != nil && len(lora) != 14:
		return Tensor{}, &Error{Op: "llm_ckpt_layer", Msg: fmt.Sprintf("%d LoRA tensors, want 14", len(lora))}
	}
	var h C.tt_tensor
	var e C.tt_err
	Heavy(func() { // worker.go
		e = C.tt_llm_ckpt_layer(x.p, list(w), list(lora), C.double(loraScale), C.int(nHeads), C.int(nKV),
			C.int(headDim), C.double(eps), cos.p, sin.p, bias.p, &h)
	})
	return out1(e, h)
}
