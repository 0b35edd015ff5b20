package llm

import (
	"fmt"

	"ragen/internal/torch"
)

// Critic is the PPO value model: a Qwen2 trunk and a Linear(hidden, 1) value
// head ("score", as in Qwen2ForTokenClassification with one label).
type Critic struct {
	trunk *Model
	w, b  *torch.Tensor // (1,E), (1)
}

// NewCritic builds a critic whose trunk is a copy of actor's weights and
// whose head is N(0, initializer_range²) with a zero bias (seeded by the
// actor's seed + 1).
func NewCritic(actor *Model) (*Critic, error) {
	trunk, err := actor.Clone()
	if err != nil {
		return nil, err
	}
	c := &Critic{trunk: trunk}
	g, err := torch.NewGenerator(actor.opt.Seed+1, torch.CPU)
	if err != nil {
		trunk.Close()
		return nil, fmt.Errorf("llm: critic: %w", err)
	}
	defer g.Close()
	s := torch.NewScope()
	defer s.Close()
	ir := actor.cfg.InitializerRange
	if ir == 0 {
		ir = 0.02
	}
	E := int64(actor.cfg.HiddenSize)
	w := s.To(s.MulS(s.Randn(g, []int64{1, E}, torch.Float32, torch.CPU), ir), actor.opt.DType, actor.opt.Device)
	b := s.Zeros([]int64{1}, actor.opt.DType, actor.opt.Device)
	if err := s.Err(); err != nil {
		trunk.Close()
		return nil, fmt.Errorf("llm: critic: %w", err)
	}
	c.w, c.b = s.Escape(w), s.Escape(b)
	for _, t := range []*torch.Tensor{c.w, c.b} {
		if err := t.SetRequiresGrad(true); err != nil {
			c.Close()
			return nil, fmt.Errorf("llm: critic: %w", err)
		}
	}
	return c, nil
}

// Trunk is the critic's language-model trunk.
func (c *Critic) Trunk() *Model { return c.trunk }

// Values returns float32 (B,T) values V[b,t] = head(h[b,t]) from the final
// normalised hidden states.
func (c *Critic) Values(s *torch.Scope, ids, positions, attn *torch.Tensor) *torch.Tensor {
	h := c.trunk.Hidden(s, ids, positions, attn)
	v := s.Linear(h, c.w, c.b)
	if v == nil {
		return nil
	}
	return s.Cast(s.Squeeze(v, -1), torch.Float32)
}

// Head returns the value head weight (1,E) and bias (1).
func (c *Critic) Head() (w, b *torch.Tensor) { return c.w, c.b }

// Trainable is the trunk's trainable tensors (without its unused LM head)
// and the value head.
func (c *Critic) Trainable() []*torch.Tensor {
	var out []*torch.Tensor
	for _, t := range c.trunk.Trainable() {
		if t != c.trunk.head {
			out = append(out, t)
		}
	}
	return append(out, c.w, c.b)
}

// Close frees the critic.
func (c *Critic) Close() {
	c.trunk.Close()
	c.w.Free()
	c.b.Free()
}
