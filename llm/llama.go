package llm

import (
	"fmt"
	"math"

	"ragen/torch"
)

// Llama 3.x (Llama-3.2-1B/3B-Instruct, Llama-3.1-8B): pre-norm decoder,
// grouped-query attention without biases, RoPE with the "llama3" frequency
// scaling, SwiGLU MLP, RMSNorm, tied or untied LM head. As transformers'
// modeling_llama.py and _compute_llama3_parameters.
func init() {
	register(&family{
		modelType: "llama",
		arch:      "LlamaForCausalLM",
		weights:   llamaWeights,
		defaults:  func(c *Config) { c.RopeTheta = 10000 },
		check:     llamaCheck,
		invFreq:   llamaInvFreq,
		layer:     llamaLayer,
	})
}

// llamaWeights are one layer's HF parameters (under "model.layers.N.").
var llamaWeights = []hfWeight{
	{"self_attn.q_proj.weight", rQKV, pQ},
	{"self_attn.k_proj.weight", rQKV, pK},
	{"self_attn.v_proj.weight", rQKV, pV},
	{"self_attn.o_proj.weight", rO, pAll},
	{"mlp.gate_proj.weight", rGateUp, pGate},
	{"mlp.up_proj.weight", rGateUp, pUp},
	{"mlp.down_proj.weight", rDown, pAll},
	{"input_layernorm.weight", rLn1, pAll},
	{"post_attention_layernorm.weight", rLn2, pAll},
}

// llama3Scaling is rope_scaling with rope_type "llama3".
type llama3Scaling struct {
	factor, low, high, origMax float64
}

// parseLlama3Scaling reads rope_scaling (nil: none).
func parseLlama3Scaling(v any) (*llama3Scaling, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("rope_scaling must be an object, got %v", v)
	}
	typ, _ := m["rope_type"].(string)
	if typ == "" {
		typ, _ = m["type"].(string)
	}
	if typ == "default" {
		return nil, nil
	}
	if typ != "llama3" {
		return nil, fmt.Errorf("rope_scaling rope_type %q is not supported for llama (valid: llama3, default)", typ)
	}
	num := func(k string) (float64, error) {
		f, ok := m[k].(float64)
		if !ok || !(f > 0) {
			return 0, fmt.Errorf("rope_scaling.%s must be a number > 0, got %v", k, m[k])
		}
		return f, nil
	}
	var sc llama3Scaling
	var err error
	for _, f := range []struct {
		k string
		p *float64
	}{{"factor", &sc.factor}, {"low_freq_factor", &sc.low}, {"high_freq_factor", &sc.high},
		{"original_max_position_embeddings", &sc.origMax}} {
		if *f.p, err = num(f.k); err != nil {
			return nil, err
		}
	}
	if sc.high <= sc.low {
		return nil, fmt.Errorf("rope_scaling: high_freq_factor %g must exceed low_freq_factor %g", sc.high, sc.low)
	}
	return &sc, nil
}

func llamaCheck(c Config) []string {
	var out []string
	if _, err := parseLlama3Scaling(c.RopeScaling); err != nil {
		out = append(out, err.Error())
	}
	if c.AttentionBias {
		out = append(out, "attention_bias true is not supported for llama")
	}
	if c.MLPBias {
		out = append(out, "mlp_bias true is not supported for llama")
	}
	return out
}

// llamaInvFreq is the rotary table with llama3 scaling: wavelengths longer
// than origMax/low are slowed by factor, shorter than origMax/high kept, and
// the band between interpolated smoothly.
func llamaInvFreq(c Config) []float64 {
	inv := ropeInvFreq(c)
	sc, _ := parseLlama3Scaling(c.RopeScaling) // checked by Validate
	if sc == nil {
		return inv
	}
	lowWave, highWave := sc.origMax/sc.low, sc.origMax/sc.high
	for j, f := range inv {
		wave := 2 * math.Pi / f
		switch {
		case wave < highWave: // high frequency: unchanged
		case wave > lowWave: // low frequency: slowed down
			inv[j] = f / sc.factor
		default:
			smooth := (sc.origMax/wave - sc.low) / (sc.high - sc.low)
			inv[j] = (1-smooth)*f/sc.factor + smooth*f
		}
	}
	return inv
}

// llamaLayer is one decoder layer: x (B,T,E) -> (B,T,E).
func llamaLayer(b *block, x *torch.Tensor) *torch.Tensor {
	s, w := b.s, b.w
	h := b.rmsNorm(x, w[rLn1])                                  // (B,T,E)
	q, k, v := b.qkv(h)                                         // (B,T,H*D), (B,T,KV*D), (B,T,KV*D); no bias
	qh := b.rope(b.heads(q, b.cfg.NumAttentionHeads))           // (B,H,T,D)
	kh := b.rope(b.heads(k, b.cfg.NumKeyValueHeads))            // (B,KV,T,D)
	vh := s.Transpose(b.heads(v, b.cfg.NumKeyValueHeads), 1, 2) // (B,KV,T,D)
	a := b.attend(qh, kh, vh)                                   // (B,T,H*D)
	x = s.Add(x, b.linear(a, w[rO], nil, 3))                    // (B,T,E)
	return s.Add(x, b.mlp(b.rmsNorm(x, w[rLn2])))               // (B,T,E)
}
