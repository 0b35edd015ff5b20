package llm

import (
	"ragen/internal/torch/fused"
	"ragen/torch"
)

// Activation checkpointing (upstream's enable_gradient_checkpointing).
//
// With it on, a forward that records gradients runs each decoder layer as
// one autograd node (fused.CheckpointLayer, csrc/shim_ckpt.cc) that keeps
// only the layer's input between forward and backward and recomputes the
// layer in backward: per layer one (B,T,E) tensor is kept instead of its
// projections, attention scores and probabilities, and MLP activations, for
// one more layer forward per backward. The recomputed layer is the fused
// by-role layer written op for op as the Go layer functions of the
// families, so loss and gradients equal those without checkpointing to
// float rounding (TestCheckpointMatchesPlain). Without gradients (scoring,
// generation) it changes nothing.

// SetGradientCheckpointing turns activation checkpointing of the decoder
// layers on or off for later forwards (Options.GradientCheckpointing).
func (m *Model) SetGradientCheckpointing(on bool) { m.opt.GradientCheckpointing = on }

// GradientCheckpointing reports whether activation checkpointing is on.
func (m *Model) GradientCheckpointing() bool { return m.opt.GradientCheckpointing }

// checkpointing reports whether this forward checkpoints its layers: on,
// and recording gradients.
func (m *Model) checkpointing() bool { return m.opt.GradientCheckpointing && torch.GradEnabled() }

// checkpointLayer is the block's layer (its weights and LoRA as the Go
// forward uses them, cast to the compute dtype when that differs) as one
// checkpointed node.
func (m *Model) checkpointLayer(b *block, x *torch.Tensor) *torch.Tensor {
	l := fusedLayers([]layer{*b.w})[0]
	return fused.CheckpointLayer(b.s, x, &l, b.lora, b.scale, m.shape(), b.cos, b.sin, b.kb)
}
