package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Config is a Hugging Face config.json of a supported family (Families:
// qwen2, llama, qwen3). Unknown keys found when
// loading are kept in Extra and written back by Save.
type Config struct {
	Architectures         []string `json:"architectures,omitempty"`
	ModelType             string   `json:"model_type"`
	VocabSize             int      `json:"vocab_size"`
	HiddenSize            int      `json:"hidden_size"`
	IntermediateSize      int      `json:"intermediate_size"`
	NumHiddenLayers       int      `json:"num_hidden_layers"`
	NumAttentionHeads     int      `json:"num_attention_heads"`
	NumKeyValueHeads      int      `json:"num_key_value_heads"`
	HeadDim               int      `json:"head_dim,omitempty"` // 0: hidden_size / num_attention_heads
	MaxPositionEmbeddings int      `json:"max_position_embeddings"`
	RopeTheta             float64  `json:"rope_theta"`
	RMSNormEps            float64  `json:"rms_norm_eps"`
	TieWordEmbeddings     bool     `json:"tie_word_embeddings"`
	TorchDType            string   `json:"torch_dtype"`
	BOSTokenID            *int     `json:"bos_token_id,omitempty"`
	EOSTokenID            IDList   `json:"eos_token_id,omitempty"`
	PadTokenID            *int     `json:"pad_token_id,omitempty"`
	HiddenAct             string   `json:"hidden_act"`
	InitializerRange      float64  `json:"initializer_range"`
	AttentionDropout      float64  `json:"attention_dropout"`
	UseCache              bool     `json:"use_cache"`
	UseSlidingWindow      bool     `json:"use_sliding_window"`
	SlidingWindow         *int     `json:"sliding_window,omitempty"`
	MaxWindowLayers       int      `json:"max_window_layers,omitempty"`
	RopeScaling           any      `json:"rope_scaling"`
	AttentionBias         bool     `json:"attention_bias,omitempty"` // llama, qwen3: only false is supported
	MLPBias               bool     `json:"mlp_bias,omitempty"`       // llama: only false is supported
	TransformersVersion   string   `json:"transformers_version,omitempty"`

	// Extra holds config.json keys this struct does not name.
	Extra map[string]json.RawMessage `json:"-"`
}

// IDList is a token id or a list of ids (config.json allows both).
type IDList []int

// UnmarshalJSON accepts a number, a list of numbers or null.
func (l *IDList) UnmarshalJSON(b []byte) error {
	var one int
	if err := json.Unmarshal(b, &one); err == nil {
		*l = IDList{one}
		return nil
	}
	var many []int
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("token id must be an integer or a list of integers: %s", b)
	}
	*l = many
	return nil
}

// MarshalJSON writes a single id as a number, several as a list.
func (l IDList) MarshalJSON() ([]byte, error) {
	if len(l) == 1 {
		return json.Marshal(l[0])
	}
	return json.Marshal([]int(l))
}

// HeadDimension is head_dim, or hidden_size / num_attention_heads when unset.
func (c Config) HeadDimension() int {
	if c.HeadDim > 0 {
		return c.HeadDim
	}
	if c.NumAttentionHeads > 0 {
		return c.HiddenSize / c.NumAttentionHeads
	}
	return 0
}

// Validate reports every problem of the config at once.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("llm: config: "+format, args...)) }
	fam, err := familyOf(c)
	if err != nil {
		errs = append(errs, err)
	}
	if c.VocabSize < 1 {
		bad("vocab_size must be >= 1, got %d", c.VocabSize)
	}
	if c.HiddenSize < 1 {
		bad("hidden_size must be >= 1, got %d", c.HiddenSize)
	}
	if c.IntermediateSize < 1 {
		bad("intermediate_size must be >= 1, got %d", c.IntermediateSize)
	}
	if c.NumHiddenLayers < 1 {
		bad("num_hidden_layers must be >= 1, got %d", c.NumHiddenLayers)
	}
	if c.NumAttentionHeads < 1 {
		bad("num_attention_heads must be >= 1, got %d", c.NumAttentionHeads)
	}
	if c.NumKeyValueHeads < 1 {
		bad("num_key_value_heads must be >= 1, got %d", c.NumKeyValueHeads)
	} else if c.NumAttentionHeads > 0 && c.NumAttentionHeads%c.NumKeyValueHeads != 0 {
		bad("num_attention_heads %d is not a multiple of num_key_value_heads %d", c.NumAttentionHeads, c.NumKeyValueHeads)
	}
	if c.HeadDim == 0 && c.NumAttentionHeads > 0 && c.HiddenSize%c.NumAttentionHeads != 0 {
		bad("hidden_size %d is not a multiple of num_attention_heads %d", c.HiddenSize, c.NumAttentionHeads)
	}
	if d := c.HeadDimension(); d%2 != 0 {
		bad("head dimension %d must be even for rotary embeddings", d)
	}
	if c.MaxPositionEmbeddings < 1 {
		bad("max_position_embeddings must be >= 1, got %d", c.MaxPositionEmbeddings)
	}
	if !(c.RopeTheta > 0) {
		bad("rope_theta must be > 0, got %g", c.RopeTheta)
	}
	if !(c.RMSNormEps > 0) {
		bad("rms_norm_eps must be > 0, got %g", c.RMSNormEps)
	}
	if c.HiddenAct != "silu" {
		bad("hidden_act %q is not supported (valid: silu)", c.HiddenAct)
	}
	if c.UseSlidingWindow {
		bad("use_sliding_window is not supported")
	}
	if fam != nil {
		for _, p := range fam.check(c) {
			bad("%s", p)
		}
	}
	if c.TorchDType != "" {
		switch c.TorchDType {
		case "float32", "bfloat16", "float16":
		default:
			bad("torch_dtype %q is not supported (valid: float32, bfloat16, float16)", c.TorchDType)
		}
	}
	for _, id := range c.EOSTokenID {
		if id < 0 || id >= c.VocabSize {
			bad("eos_token_id %d outside the vocabulary (size %d)", id, c.VocabSize)
		}
	}
	return errors.Join(errs...)
}

// TinyConfig is a tiny Qwen2-shaped config for tests and demos: 2 layers,
// hidden 64, 4 heads over 2 KV heads (head dim 16), intermediate 128, tied
// embeddings, float32.
func TinyConfig(vocab int) Config {
	c, _ := TinyConfigFor("qwen2", vocab)
	return c
}

// TinyConfigFor is TinyConfig for another family (Families): the same sizes,
// with the family's defaults (qwen3: head_dim 32, set apart from
// hidden/heads; llama: llama3 rope_scaling as Llama-3.2 has it, scaled down
// to max_position_embeddings 1024).
func TinyConfigFor(modelType string, vocab int) (Config, error) {
	c, err := familyConfig(modelType)
	if err != nil {
		return Config{}, err
	}
	c.VocabSize = vocab
	c.HiddenSize = 64
	c.IntermediateSize = 128
	c.NumHiddenLayers = 2
	c.NumAttentionHeads = 4
	c.NumKeyValueHeads = 2
	c.MaxPositionEmbeddings = 1024
	c.TieWordEmbeddings = true
	c.TorchDType = "float32"
	switch modelType {
	case "qwen3":
		c.HeadDim = 32
	case "llama":
		c.RopeTheta = 500000
		c.RMSNormEps = 1e-5
		c.RopeScaling = map[string]any{"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
			"high_freq_factor": 4.0, "original_max_position_embeddings": 64.0}
	}
	return c, nil
}

// familyConfig holds a family's defaults for everything but the sizes.
func familyConfig(modelType string) (Config, error) {
	f, err := familyOf(Config{ModelType: modelType})
	if err != nil {
		return Config{}, err
	}
	c := Config{
		Architectures:    []string{f.arch},
		ModelType:        f.modelType,
		RMSNormEps:       1e-6,
		HiddenAct:        "silu",
		InitializerRange: 0.02,
		UseCache:         true,
		TorchDType:       "float32",
	}
	f.defaults(&c)
	return c, nil
}

// ParseConfig decodes config.json bytes; missing keys take the defaults of
// the model_type's family (Qwen2's when model_type is missing).
func ParseConfig(data []byte) (Config, error) {
	var probe struct {
		ModelType string `json:"model_type"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return Config{}, fmt.Errorf("llm: config.json: %w", err)
	}
	c, err := familyConfig(probe.ModelType)
	if probe.ModelType == "" || err != nil {
		c, _ = familyConfig("qwen2") // an unknown model_type is reported by Validate
	}
	c.TorchDType = ""
	c.MaxWindowLayers = 0
	if err := json.Unmarshal(data, &c); err != nil {
		return Config{}, fmt.Errorf("llm: config.json: %w", err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return Config{}, fmt.Errorf("llm: config.json: %w", err)
	}
	known := map[string]bool{}
	for _, k := range configKeys() {
		known[k] = true
	}
	for k, v := range all {
		if !known[k] {
			if c.Extra == nil {
				c.Extra = map[string]json.RawMessage{}
			}
			c.Extra[k] = v
		}
	}
	if c.NumKeyValueHeads == 0 {
		c.NumKeyValueHeads = c.NumAttentionHeads
	}
	return c, nil
}

func configKeys() []string {
	b, _ := json.Marshal(Config{BOSTokenID: new(int), PadTokenID: new(int), SlidingWindow: new(int), EOSTokenID: IDList{0, 1},
		Architectures: []string{""}, HeadDim: 1, MaxWindowLayers: 1, TransformersVersion: "x", AttentionBias: true, MLPBias: true})
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// MarshalConfig renders config.json (indented, Extra keys merged in).
func MarshalConfig(c Config) ([]byte, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return nil, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range c.Extra {
		if _, ok := m[k]; !ok {
			m[k] = v
		}
	}
	// use_sliding_window is a key of Qwen2Config and Qwen3Config only
	if c.ModelType != "qwen2" && c.ModelType != "qwen3" && !c.UseSlidingWindow {
		delete(m, "use_sliding_window")
	}
	if rs, ok := c.RopeScaling.(map[string]any); ok {
		if m["rope_scaling"], err = marshalRopeScaling(rs); err != nil {
			return nil, err
		}
	}
	out, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

// ropeFloatKeys are the rope_scaling fields transformers wants as floats
// (it warns on every load when factor, low_freq_factor or high_freq_factor
// is an integer).
var ropeFloatKeys = map[string]bool{"factor": true, "low_freq_factor": true, "high_freq_factor": true,
	"attention_factor": true, "beta_fast": true, "beta_slow": true, "mscale": true, "mscale_all_dim": true}

// marshalRopeScaling writes rope_scaling with its float fields as JSON
// floats (32.0, not 32), as transformers writes them.
func marshalRopeScaling(rs map[string]any) (json.RawMessage, error) {
	out := make(map[string]any, len(rs))
	for k, v := range rs {
		out[k] = v
		if !ropeFloatKeys[k] {
			continue
		}
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case int:
			f = float64(x)
		case json.Number:
			var err error
			if f, err = x.Float64(); err != nil {
				continue
			}
		default:
			continue
		}
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("llm: rope_scaling.%s is %v", k, f)
		}
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eE") {
			s += ".0"
		}
		out[k] = json.Number(s)
	}
	return json.Marshal(out)
}

// ReadConfig reads dir/config.json.
func ReadConfig(dir string) (Config, error) {
	p := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(p)
	if err != nil {
		return Config{}, fmt.Errorf("llm: %w", err)
	}
	c, err := ParseConfig(b)
	if err != nil {
		return Config{}, fmt.Errorf("llm: %s: %w", p, err)
	}
	return c, nil
}

// GenerationConfig is generation_config.json.
type GenerationConfig struct {
	BOSTokenID  *int     `json:"bos_token_id,omitempty"`
	EOSTokenID  IDList   `json:"eos_token_id,omitempty"`
	PadTokenID  *int     `json:"pad_token_id,omitempty"`
	DoSample    *bool    `json:"do_sample,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	TopK        *int     `json:"top_k,omitempty"`
	// Extra holds keys not named above.
	Extra map[string]json.RawMessage `json:"-"`
}
