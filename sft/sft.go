package sft

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"ragen/env"
	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/ragen"
	"ragen/torch"
)

// Config holds the SFT hyper-parameters.
type Config struct {
	Steps            int     `yaml:"steps"`              // optimizer steps
	LR               float64 `yaml:"lr"`                 // peak learning rate
	WarmupRatio      float64 `yaml:"warmup_ratio"`       // linear warm-up share of Steps
	MinLRRatio       float64 `yaml:"min_lr_ratio"`       // cosine decays to LR·MinLRRatio
	WeightDecay      float64 `yaml:"weight_decay"`       // AdamW decoupled weight decay
	GradClip         float64 `yaml:"grad_clip"`          // global-norm clip (0 = off)
	Noise            float64 `yaml:"noise"`              // share of random turns in the demonstrations
	MicroBatchTokens int     `yaml:"micro_batch_tokens"` // padded tokens per forward/backward
	Seed             uint64  `yaml:"seed"`               // demonstrator noise seed
	// Thought is what the demonstrations' <think> section says: "fixed"
	// (the default), "choices" (the state's options and the pick: reasoning
	// that depends on the input) or "templates" (sentences that never do);
	// see ragen.ThoughtFixed and its siblings.
	Thought string `yaml:"thought"`
}

// DefaultConfig returns the settings the CPU demo uses.
func DefaultConfig() Config {
	return Config{Steps: 300, LR: 1e-3, WarmupRatio: 0.1, MinLRRatio: 0.1, WeightDecay: 0.01, GradClip: 1,
		Noise: 0, MicroBatchTokens: 16384, Seed: 1}
}

// Validate reports every invalid field.
func (c Config) Validate() error {
	var errs []error
	if c.Steps < 1 {
		errs = append(errs, fmt.Errorf("sft: steps=%d must be >= 1", c.Steps))
	}
	if c.LR <= 0 {
		errs = append(errs, fmt.Errorf("sft: lr=%g must be > 0", c.LR))
	}
	if c.WarmupRatio < 0 || c.WarmupRatio > 1 {
		errs = append(errs, fmt.Errorf("sft: warmup_ratio=%g must be in [0, 1]", c.WarmupRatio))
	}
	if c.MinLRRatio < 0 || c.MinLRRatio > 1 {
		errs = append(errs, fmt.Errorf("sft: min_lr_ratio=%g must be in [0, 1]", c.MinLRRatio))
	}
	if c.Noise < 0 || c.Noise > 1 {
		errs = append(errs, fmt.Errorf("sft: noise=%g must be in [0, 1]", c.Noise))
	}
	if c.MicroBatchTokens < 1 {
		errs = append(errs, fmt.Errorf("sft: micro_batch_tokens=%d must be >= 1", c.MicroBatchTokens))
	}
	if c.Thought != "" && !slices.Contains(ragen.ThoughtStyles(), c.Thought) {
		errs = append(errs, fmt.Errorf("sft: thought=%q: want one of %s", c.Thought, strings.Join(ragen.ThoughtStyles(), ", ")))
	}
	if c.GradClip < 0 || c.WeightDecay < 0 {
		errs = append(errs, fmt.Errorf("sft: grad_clip=%g and weight_decay=%g must be >= 0", c.GradClip, c.WeightDecay))
	}
	return errors.Join(errs...)
}

// LR returns the learning rate of step (0-based): linear warm-up, then
// cosine decay to LR·MinLRRatio at the last step.
func (c Config) LRAt(step int) float64 {
	warm := int(math.Round(c.WarmupRatio * float64(c.Steps)))
	if step < warm {
		return c.LR * float64(step+1) / float64(warm)
	}
	span := max(c.Steps-warm-1, 1)
	p := math.Min(float64(step-warm)/float64(span), 1)
	lo := c.LR * c.MinLRRatio
	return lo + (c.LR-lo)*0.5*(1+math.Cos(math.Pi*p))
}

// Metric keys logged every step.
const (
	MetricLoss     = "sft/loss"
	MetricLR       = "sft/lr"
	MetricGradNorm = "sft/grad_norm"
	MetricTokens   = "sft/response_tokens"
	MetricSuccess  = "sft/demo_success"
	MetricStepTime = "timing_s/sft_step"
)

// Trainer runs supervised warm-up of a model on demonstrations.
type Trainer struct {
	cfg   Config
	model *llm.Model
	proxy *ragen.AgentProxy
	opt   *torch.AdamW
	step  int
}

// New builds the demonstration rollout (the train env set of rc) and the
// optimizer over model's trainable parameters.
func New(cfg Config, model *llm.Model, tok tokenizer.Tokenizer, rc ragen.Config, provider ragen.EnvProvider) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	t := &Trainer{cfg: cfg, model: model}
	demo, err := ragen.NewDemonstrator(ragen.DemonstratorConfig{
		Noise: cfg.Noise, MaxActions: rc.AgentProxy.MaxActionsPerTurn, Sep: rc.AgentProxy.ActionSep,
		EnableThink: rc.AgentProxy.EnableThink, Seed: cfg.Seed, Thought: cfg.Thought,
	}, func(id int) env.BaseEnv { return t.proxy.EnvManager(env.ModeTrain).Env(id) })
	if err != nil {
		return nil, err
	}
	if t.proxy, err = ragen.NewAgentProxy(rc, tok, provider, demo); err != nil {
		return nil, err
	}
	ac := torch.DefaultAdamW()
	ac.LR, ac.WeightDecay = cfg.LR, cfg.WeightDecay
	if t.opt, err = torch.NewAdamW(model.Trainable(), ac); err != nil {
		t.proxy.Close()
		return nil, err
	}
	return t, nil
}

// Close frees the optimizer state and the envs.
func (t *Trainer) Close() error {
	t.opt.Close()
	return t.proxy.Close()
}

// Step makes one batch of demonstrations and takes one optimizer step.
func (t *Trainer) Step(ctx context.Context) (map[string]float64, error) {
	start := time.Now()
	b, err := t.proxy.Rollout(ctx, env.ModeTrain)
	if err != nil {
		return nil, fmt.Errorf("sft: step %d: demonstrations: %w", t.step, err)
	}
	params := t.model.Trainable()
	if err := torch.ZeroGrad(params); err != nil {
		return nil, err
	}
	loss, ntok, err := Backward(t.model, b, t.cfg.MicroBatchTokens)
	if err != nil {
		return nil, fmt.Errorf("sft: step %d: %w", t.step, err)
	}
	var gn float64
	if t.cfg.GradClip > 0 {
		if gn, err = torch.ClipGradNorm(params, t.cfg.GradClip); err != nil {
			return nil, err
		}
	}
	lr := t.cfg.LRAt(t.step)
	if err := t.opt.Step(lr); err != nil {
		return nil, err
	}
	t.step++
	m := map[string]float64{MetricLoss: loss, MetricLR: lr, MetricGradNorm: gn, MetricTokens: float64(ntok),
		MetricStepTime: time.Since(start).Seconds()}
	// demonstration success: the mean of the per-tag "<tag>/success"
	// (not the "<tag>/non-zero/success" variants)
	var sum float64
	n := 0
	for k, v := range b.Metrics {
		if strings.HasSuffix(k, "/success") && strings.Count(k, "/") == 1 {
			sum += v
			n++
		}
	}
	if n > 0 {
		m[MetricSuccess] = sum / float64(n)
	}
	return m, nil
}

// Backward accumulates the gradient of the token-mean negative
// log-likelihood of the batch's loss-masked tokens and returns the loss and
// the number of masked tokens. Rows are processed in micro-batches of at
// most tokenBudget padded tokens.
func Backward(m *llm.Model, b *ragen.Batch, tokenBudget int) (float64, int, error) {
	B := b.Len()
	if B == 0 {
		return 0, 0, fmt.Errorf("empty batch")
	}
	total := 0
	starts := make([]int, B) // first real column of each left-padded row
	lens := make([]int, B)
	for i := range B {
		for _, v := range b.LossMask[i] {
			total += v
		}
		for starts[i] < len(b.AttentionMask[i]) && b.AttentionMask[i][starts[i]] == 0 {
			starts[i]++
		}
		lens[i] = len(b.InputIDs[i]) - starts[i]
	}
	if total == 0 {
		return 0, 0, fmt.Errorf("no loss-masked tokens in the batch")
	}
	groups, err := llm.MicroBatches(lens, tokenBudget)
	if err != nil {
		return 0, 0, err
	}
	var loss float64
	L := len(b.InputIDs[0])
	for _, g := range groups {
		first := L
		for _, i := range g {
			first = min(first, starts[i])
		}
		T := L - first
		ids := make([]int64, 0, len(g)*T)
		pos := make([]int64, 0, len(g)*T)
		att := make([]int64, 0, len(g)*T)
		mask := make([]float32, 0, len(g)*T)
		for _, i := range g {
			for t := first; t < L; t++ {
				ids = append(ids, int64(b.InputIDs[i][t]))
				pos = append(pos, int64(b.PositionIDs[i][t]))
				att = append(att, int64(b.AttentionMask[i][t]))
				if t == 0 {
					mask = append(mask, 0)
				} else {
					mask = append(mask, float32(b.LossMask[i][t-1])) // LossMask[t-1] scores the token at t
				}
			}
		}
		s := torch.NewScope()
		shape := []int64{int64(len(g)), int64(T)}
		dev := m.Options().Device
		up := func(t *torch.Tensor) *torch.Tensor {
			if dev != torch.CPU {
				return s.To(t, t.DType(), dev)
			}
			return t
		}
		it := up(s.Own(torch.From(ids, shape...)))
		pt := up(s.Own(torch.From(pos, shape...)))
		at := up(s.Own(torch.From(att, shape...)))
		mt := up(s.Own(torch.From(mask, shape...)))
		logp, _ := m.TokenLogProbs(s, it, pt, at, 1, false)
		part := s.DivS(s.Neg(s.Sum(s.Mul(logp, mt), false)), float64(total))
		if err := s.Err(); err != nil {
			s.Close()
			return 0, 0, err
		}
		if err := part.Backward(nil); err != nil {
			s.Close()
			return 0, 0, err
		}
		loss += s.Item(part)
		if err := s.Close(); err != nil {
			return 0, 0, err
		}
	}
	return loss, total, nil
}

// Run takes cfg.Steps steps, calling log after each (log may be nil).
func (t *Trainer) Run(ctx context.Context, log func(step int, m map[string]float64) error) error {
	for t.step < t.cfg.Steps {
		if err := ctx.Err(); err != nil {
			return err
		}
		m, err := t.Step(ctx)
		if err != nil {
			return err
		}
		if log != nil {
			if err := log(t.step, m); err != nil {
				return err
			}
		}
	}
	return nil
}
