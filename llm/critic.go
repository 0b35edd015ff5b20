package llm

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"ragen/llm/safetensors"
	"ragen/torch"
)

// Critic is the PPO value model: a Qwen2 trunk and a Linear(hidden, 1) value
// head ("score", as in Hugging Face's Qwen2ForTokenClassification with one
// label, which veRL's critic uses).
type Critic struct {
	trunk *Model        // tied config: no LM head
	w, b  *torch.Tensor // (1,E), (1)
}

// trunkConfig is cfg without an LM head of its own.
func trunkConfig(cfg Config) Config {
	cfg.TieWordEmbeddings = true
	return cfg
}

// NewCritic builds a critic whose trunk holds a copy of actor's current
// weights (LoRA merged; the critic trains all its weights) and whose head
// is N(0, initializer_range²) with a zero bias (seeded by the actor's seed + 1).
func NewCritic(actor *Model) (*Critic, error) {
	trunk, err := alloc(trunkConfig(actor.cfg), actor.opt)
	if err != nil {
		return nil, err
	}
	trunk.genConfig = append([]byte(nil), actor.genConfig...)
	err = torch.NoGrad(func() error {
		s := torch.NewScope()
		defer s.Close()
		src := map[string]*torch.Tensor{}
		for _, p := range actor.mergedParams(s) {
			src[p.Name] = p.T
		}
		for _, p := range trunk.named {
			s.CopyInto(p.T, src[p.Name])
		}
		return s.Err()
	})
	if err != nil {
		trunk.Close()
		return nil, fmt.Errorf("llm: critic: %w", err)
	}
	c := &Critic{trunk: trunk}
	if err := c.initHead(actor.opt.Seed + 1); err != nil {
		trunk.Close()
		return nil, err
	}
	return c, nil
}

func (c *Critic) initHead(seed uint64) error {
	g, err := torch.NewGenerator(seed, torch.CPU)
	if err != nil {
		return fmt.Errorf("llm: critic: %w", err)
	}
	defer g.Close()
	s := torch.NewScope()
	defer s.Close()
	ir := c.trunk.cfg.InitializerRange
	if ir == 0 {
		ir = 0.02
	}
	o := c.trunk.opt
	E := int64(c.trunk.cfg.HiddenSize)
	w := s.To(s.MulS(s.Randn(g, []int64{1, E}, torch.Float32, torch.CPU), ir), o.DType, o.Device)
	b := s.Zeros([]int64{1}, o.DType, o.Device)
	if err := s.Err(); err != nil {
		return fmt.Errorf("llm: critic: %w", err)
	}
	c.w, c.b = s.Escape(w), s.Escape(b)
	for _, t := range []*torch.Tensor{c.w, c.b} {
		if err := t.SetRequiresGrad(true); err != nil {
			return fmt.Errorf("llm: critic: %w", err)
		}
	}
	return nil
}

// Trunk is the critic's Qwen2 trunk (its config is tied: it has no LM head).
func (c *Critic) Trunk() *Model { return c.trunk }

// Values returns float32 (B,T) values V[b,t] = head(h[b,t]) from the final
// normalised hidden states.
func (c *Critic) Values(s *torch.Scope, ids, positions, attn *torch.Tensor) *torch.Tensor {
	h := c.trunk.Hidden(s, ids, positions, attn)
	w, b := c.w, c.b
	if dt := c.trunk.ComputeDType(); dt != c.trunk.opt.DType { // mixed precision
		w, b = s.Cast(w, dt), s.Cast(b, dt)
	}
	v := s.Linear(h, w, b)
	if v == nil {
		return nil
	}
	return s.Cast(s.Squeeze(v, -1), torch.Float32)
}

// Head returns the value head weight (1,E) and bias (1).
func (c *Critic) Head() (w, b *torch.Tensor) { return c.w, c.b }

// Trainable is the trunk's trainable tensors and the value head.
func (c *Critic) Trainable() []*torch.Tensor {
	return append(c.trunk.Trainable(), c.w, c.b)
}

// Save writes the critic as a Hugging Face Qwen2ForTokenClassification
// folder (num_labels 1): the trunk's tensors plus score.weight and
// score.bias, no lm_head.
func (c *Critic) Save(dir string) error {
	extra := []NamedParam{{"score.weight", c.w}, {"score.bias", c.b}}
	return c.trunk.save(dir, DefaultMaxShardBytes, extra, func(cfg *Config) {
		cfg.Architectures = []string{"Qwen2ForTokenClassification"}
		if cfg.Extra == nil {
			cfg.Extra = map[string]json.RawMessage{}
		}
		cfg.Extra["num_labels"] = json.RawMessage("1")
		cfg.Extra["id2label"] = json.RawMessage(`{"0": "LABEL_0"}`)
		cfg.Extra["label2id"] = json.RawMessage(`{"LABEL_0": 0}`)
	})
}

// LoadCritic reads a folder written by Critic.Save (or by transformers for
// Qwen2ForTokenClassification with one label).
func LoadCritic(dir string, opt Options) (*Critic, error) {
	cfg, err := ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("llm: %s: %w", filepath.Join(dir, ConfigFile), err)
	}
	trunk, err := alloc(trunkConfig(cfg), opt)
	if err != nil {
		return nil, err
	}
	if err := trunk.loadWeights(dir); err != nil {
		trunk.Close()
		return nil, err
	}
	c := &Critic{trunk: trunk}
	if err := c.initHead(0); err != nil {
		trunk.Close()
		return nil, err
	}
	where, err := sources(dir)
	if err != nil {
		c.Close()
		return nil, err
	}
	err = torch.NoGrad(func() error {
		for _, p := range []NamedParam{{"score.weight", c.w}, {"score.bias", c.b}} {
			file := WeightsFile
			if where != nil {
				f, ok := where[p.Name]
				if !ok {
					return fmt.Errorf("llm: %s: tensor %q missing from the weight map", filepath.Join(dir, WeightsIndexFile), p.Name)
				}
				file = f
			}
			f, err := safetensors.Open(filepath.Join(dir, file))
			if err != nil {
				return fmt.Errorf("llm: %w", err)
			}
			err = loadInto(f, p)
			f.Close()
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close frees the critic.
func (c *Critic) Close() {
	c.trunk.Close()
	c.w.Free()
	c.b.Free()
}
