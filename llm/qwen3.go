package llm

import "ragen/torch"

// Qwen3 (dense): Qwen2 without q/k/v biases, with a per-head RMSNorm of q
// and k before RoPE, and head_dim set apart from hidden_size/heads (128 when
// config.json omits it). As transformers' modeling_qwen3.py.
func init() {
	register(&family{
		modelType: "qwen3",
		arch:      "Qwen3ForCausalLM",
		weights:   qwen3Weights,
		defaults: func(c *Config) {
			c.RopeTheta = 1000000
			c.HeadDim = 128
		},
		check:   qwen3Check,
		invFreq: ropeInvFreq,
		layer:   qwen3Layer,
	})
}

// qwen3Weights are one layer's HF parameters (under "model.layers.N.").
var qwen3Weights = []hfWeight{
	{"self_attn.q_proj.weight", rQKV, pQ},
	{"self_attn.k_proj.weight", rQKV, pK},
	{"self_attn.v_proj.weight", rQKV, pV},
	{"self_attn.o_proj.weight", rO, pAll},
	{"self_attn.q_norm.weight", rQNorm, pAll},
	{"self_attn.k_norm.weight", rKNorm, pAll},
	{"mlp.gate_proj.weight", rGateUp, pGate},
	{"mlp.up_proj.weight", rGateUp, pUp},
	{"mlp.down_proj.weight", rDown, pAll},
	{"input_layernorm.weight", rLn1, pAll},
	{"post_attention_layernorm.weight", rLn2, pAll},
}

func qwen3Check(c Config) []string {
	out := noRopeScaling(c)
	if c.AttentionBias {
		out = append(out, "attention_bias true is not supported for qwen3")
	}
	return out
}

// qwen3Layer is one decoder layer: x (B,T,E) -> (B,T,E).
func qwen3Layer(b *block, x *torch.Tensor) *torch.Tensor {
	s, w := b.s, b.w
	h := b.rmsNorm(x, w[rLn1])                                      // (B,T,E)
	q, k, v := b.qkv(h)                                             // (B,T,H*D), (B,T,KV*D), (B,T,KV*D); no bias
	qh := b.rmsNorm(b.heads(q, b.cfg.NumAttentionHeads), w[rQNorm]) // (B,T,H,D), normed per head
	kh := b.rmsNorm(b.heads(k, b.cfg.NumKeyValueHeads), w[rKNorm])  // (B,T,KV,D)
	qh, kh = b.rope(qh), b.rope(kh)                                 // (B,H,T,D), (B,KV,T,D)
	vh := s.Transpose(b.heads(v, b.cfg.NumKeyValueHeads), 1, 2)     // (B,KV,T,D)
	a := b.attend(qh, kh, vh)                                       // (B,T,H*D)
	x = s.Add(x, b.linear(a, w[rO], nil, 3))                        // (B,T,E)
	return s.Add(x, b.mlp(b.rmsNorm(x, w[rLn2])))                   // (B,T,E)
}
