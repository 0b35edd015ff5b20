package ragen

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"ragen/env"
	"ragen/llm/tokenizer"
)

// AgentProxy runs the multi-turn rollout loop (spec §4): reset the envs,
// then up to max_turn times prompt every unfinished env, generate, parse
// and step, and finally build the training batch.
type AgentProxy struct {
	cfg    Config
	policy Policy
	tok    tokenizer.Tokenizer
	sets   map[env.Mode]*rolloutSet
}

type rolloutSet struct {
	es *EnvStateManager
	cm *ContextManager
}

// NewAgentProxy builds the train and validation env managers and context
// managers. Close releases the envs.
func NewAgentProxy(cfg Config, tok tokenizer.Tokenizer, p EnvProvider, policy Policy) (*AgentProxy, error) {
	return newAgentProxy(cfg, tok, p, policy, env.ModeTrain, env.ModeVal)
}

func newAgentProxy(cfg Config, tok tokenizer.Tokenizer, p EnvProvider, policy Policy, modes ...env.Mode) (*AgentProxy, error) {
	if policy == nil {
		return nil, fmt.Errorf("ragen: agent proxy: nil policy")
	}
	a := &AgentProxy{cfg: cfg, policy: policy, tok: tok, sets: map[env.Mode]*rolloutSet{}}
	for _, m := range modes {
		es, err := NewEnvStateManager(cfg, m, p)
		if err != nil {
			a.Close()
			return nil, err
		}
		cm, err := NewContextManager(cfg, m, tok, p)
		if err != nil {
			es.Close()
			a.Close()
			return nil, err
		}
		a.sets[m] = &rolloutSet{es: es, cm: cm}
	}
	return a, nil
}

// Close closes every env.
func (a *AgentProxy) Close() error {
	var errs []error
	for _, s := range a.sets {
		errs = append(errs, s.es.Close())
	}
	return errors.Join(errs...)
}

// EnvManager returns the env manager of a mode (nil if not built).
func (a *AgentProxy) EnvManager(mode env.Mode) *EnvStateManager {
	if s := a.sets[mode]; s != nil {
		return s.es
	}
	return nil
}

// ContextManager returns the context manager of a mode (nil if not built).
func (a *AgentProxy) ContextManager(mode env.Mode) *ContextManager {
	if s := a.sets[mode]; s != nil {
		return s.cm
	}
	return nil
}

// Sampling returns the generation settings of a mode: rollout.* for train,
// rollout.val_kwargs for val; max new tokens = rollout.response_length.
func (c Config) Sampling(mode env.Mode) SamplingParams {
	r := c.Rollout
	if mode == env.ModeVal {
		v := r.ValKwargs
		return SamplingParams{DoSample: v.DoSample, Temperature: v.Temperature, TopP: v.TopP, TopK: v.TopK, MaxNewTokens: r.ResponseLength}
	}
	return SamplingParams{DoSample: true, Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK, MaxNewTokens: r.ResponseLength}
}

// RolloutOptions tune one rollout.
type RolloutOptions struct {
	Seed *int64 // explicit base seed; nil = the manager's schedule
	// Collapse requests the collapse-diagnostics data (meta.compute_collapse);
	// ignored outside context_window_mode full.
	Collapse bool
}

// Rollout runs one rollout of the mode's envs with the manager's seed
// schedule and returns the batch.
func (a *AgentProxy) Rollout(ctx context.Context, mode env.Mode) (*Batch, error) {
	return a.RolloutWith(ctx, mode, RolloutOptions{})
}

// RolloutWith is Rollout with options.
func (a *AgentProxy) RolloutWith(ctx context.Context, mode env.Mode, opt RolloutOptions) (*Batch, error) {
	seed := opt.Seed
	s := a.sets[mode]
	if s == nil {
		return nil, fmt.Errorf("ragen: rollout: no env manager for mode %q", mode)
	}
	outs, err := s.es.Reset(ctx, seed)
	if err != nil {
		return nil, err
	}
	parts := a.cfg.AgentProxy.PipelineParts
	if parts > len(outs) {
		parts = len(outs)
	}
	sp := a.cfg.Sampling(mode)
	if parts <= 1 {
		if err := a.turnLoop(ctx, s, outs, sp); err != nil {
			return nil, err
		}
	} else if err := a.pipelined(ctx, s, outs, parts, sp); err != nil {
		return nil, err
	}
	states := s.es.GetRolloutStates()
	b, err := s.cm.BuildBatch(states)
	if err != nil {
		return nil, err
	}
	if opt.Collapse && a.cfg.AgentProxy.ContextWindowMode == ModeFull {
		if b.Collapse, err = s.cm.Collapse(states); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// pipelined splits the envs into parts that run their turn loops
// concurrently: while the model generates for one part, the envs of another
// part step. Each env's trajectory depends only on its own prompts and
// responses, so the result equals the plain loop for a deterministic policy.
func (a *AgentProxy) pipelined(ctx context.Context, s *rolloutSet, outs []*EnvOutput, parts int, sp SamplingParams) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for k := 0; k < parts; k++ {
		lo, hi := k*len(outs)/parts, (k+1)*len(outs)/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.turnLoop(ctx, s, outs[lo:hi], sp); err != nil {
				errs[k] = err
				cancel()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return errors.Join(errs...)
}

// turnLoop runs up to max_turn turns for the given (active) envs.
func (a *AgentProxy) turnLoop(ctx context.Context, s *rolloutSet, active []*EnvOutput, sp SamplingParams) error {
	for turn := 0; turn < a.cfg.AgentProxy.MaxTurn && len(active) > 0; turn++ {
		prompts, err := s.cm.Prompts(active)
		if err != nil {
			return err
		}
		reqs := make([]GenRequest, len(prompts))
		for i, p := range prompts {
			reqs[i] = GenRequest{EnvID: p.EnvID, Turn: p.Turn, Messages: p.Messages, Prompt: p.Text, IDs: p.IDs, Sampling: sp}
		}
		gens, err := a.policy.Generate(ctx, reqs)
		if err != nil {
			return fmt.Errorf("ragen: rollout turn %d: generate: %w", turn, err)
		}
		if len(gens) != len(reqs) {
			return fmt.Errorf("ragen: rollout turn %d: policy returned %d generations for %d requests", turn, len(gens), len(reqs))
		}
		inputs := make([]EnvInput, len(gens))
		for i, g := range gens {
			inputs[i] = s.cm.ParseResponse(g.Text)
			inputs[i].EnvID = prompts[i].EnvID
		}
		if active, err = s.es.Step(ctx, inputs); err != nil {
			return fmt.Errorf("ragen: rollout turn %d: %w", turn, err)
		}
	}
	return nil
}

// EvalResult is what Evaluate returns.
type EvalResult struct {
	// Success is the mean success per tag ("{tag}/success" of Metrics).
	Success map[string]float64
	// Metrics are the batch metrics (spec §3.9).
	Metrics map[string]float64
	// Batch is the full validation batch (histories in Batch.Episodes).
	Batch *Batch
}

// Evaluate runs the validation env set end to end with the val sampling
// settings and returns per-tag success and the batch metrics.
func Evaluate(ctx context.Context, cfg Config, policy Policy, tok tokenizer.Tokenizer, p EnvProvider) (*EvalResult, error) {
	a, err := newAgentProxy(cfg, tok, p, policy, env.ModeVal)
	if err != nil {
		return nil, err
	}
	b, err := a.Rollout(ctx, env.ModeVal)
	cerr := a.Close()
	if err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, cerr
	}
	res := &EvalResult{Success: map[string]float64{}, Metrics: b.Metrics, Batch: b}
	for k, v := range b.Metrics {
		if tag, ok := strings.CutSuffix(k, "/success"); ok && !strings.Contains(tag, "/") {
			res.Success[tag] = v
		}
	}
	return res, nil
}

// SortedKeys returns the keys of a metric map in order.
func SortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
