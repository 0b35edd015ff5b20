package llm

import "ragen/torch"

// Qwen2 (Qwen2.5-Instruct): pre-norm decoder, grouped-query attention with
// q/k/v biases, RoPE, SwiGLU MLP, RMSNorm. As transformers'
// modeling_qwen2.py.
func init() {
	register(&family{
		modelType: "qwen2",
		arch:      "Qwen2ForCausalLM",
		weights:   qwen2Weights,
		defaults:  func(c *Config) { c.RopeTheta = 1000000 },
		check:     noRopeScaling,
		invFreq:   ropeInvFreq,
		layer:     qwen2Layer,
	})
}

// qwen2Weights are one layer's HF parameters (under "model.layers.N.").
var qwen2Weights = []hfWeight{
	{"self_attn.q_proj.weight", rQKV, pQ},
	{"self_attn.q_proj.bias", rQKVBias, pQ},
	{"self_attn.k_proj.weight", rQKV, pK},
	{"self_attn.k_proj.bias", rQKVBias, pK},
	{"self_attn.v_proj.weight", rQKV, pV},
	{"self_attn.v_proj.bias", rQKVBias, pV},
	{"self_attn.o_proj.weight", rO, pAll},
	{"mlp.gate_proj.weight", rGateUp, pGate},
	{"mlp.up_proj.weight", rGateUp, pUp},
	{"mlp.down_proj.weight", rDown, pAll},
	{"input_layernorm.weight", rLn1, pAll},
	{"post_attention_layernorm.weight", rLn2, pAll},
}

// qwen2Layer is one decoder layer: x (B,T,E) -> (B,T,E).
func qwen2Layer(b *block, x *torch.Tensor) *torch.Tensor {
	s, w := b.s, b.w
	h := b.rmsNorm(x, w[rLn1])                        // (B,T,E)
	q, k, v := b.qkv(h)                               // (B,T,H*D), (B,T,KV*D), (B,T,KV*D); with bias
	qh := b.rope(b.heads(q, b.cfg.NumAttentionHeads)) // (B,H,T,D)
	kh := b.rope(b.heads(k, b.cfg.NumKeyValueHeads))  // (B,KV,T,D)
	vh := s.Transpose(b.heads(v, b.cfg.NumKeyValueHeads), 1, 2)
	a := b.attend(qh, kh, vh)                     // (B,T,H*D)
	x = s.Add(x, b.linear(a, w[rO], nil, 3))      // (B,T,E)
	return s.Add(x, b.mlp(b.rmsNorm(x, w[rLn2]))) // (B,T,E)
}
