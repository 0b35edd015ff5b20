package ragen

import (
	"bytes"
	"context"
	"encoding/gob"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

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
	// rollouts counts the rollouts begun (prefix keys of one rollout never
	// match another's)
	rollouts atomic.Uint64
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
		return SamplingParams{DoSample: v.DoSample, Temperature: v.Temperature, TopP: v.TopP, TopK: v.TopK, MaxNewTokens: r.ResponseLength,
			AllowedTokenIDs: r.AllowedTokenIDs}
	}
	return SamplingParams{DoSample: true, Temperature: r.Temperature, TopP: r.TopP, TopK: r.TopK, MaxNewTokens: r.ResponseLength,
		AllowedTokenIDs: r.AllowedTokenIDs}
}

// RolloutOptions tune one rollout.
type RolloutOptions struct {
	Seed *int64 // explicit base seed; nil = the manager's schedule
	// Collapse requests the collapse-diagnostics data (meta.compute_collapse);
	// ignored outside context_window_mode full.
	Collapse bool
	// Shard, if set, splits the rollout over the ranks of a data-parallel
	// run: this rank runs only its env groups, and the finished episodes of
	// every rank are gathered, so each rank returns the whole batch.
	Shard *Shard
}

// Shard is one rank's share of a data-parallel rollout. Env groups are
// split into contiguous blocks, rank r running groups [r·G/Size,
// (r+1)·G/Size) (a group never spans ranks). Every rank resets every env
// (so that seeds and env state stay those of one process) but generates
// and steps only its own; with per-trajectory sampling streams (StreamSeed)
// the gathered batch equals one process's for the same seed.
type Shard struct {
	Rank, Size int
	// AllGather exchanges bytes: every rank passes its own and gets every
	// rank's, in rank order (dist.Group.AllGatherBytes).
	AllGather func(ctx context.Context, b []byte) ([][]byte, error)
}

// owns reports whether group g of n belongs to this rank.
func (s *Shard) owns(g, n int) bool {
	if s == nil || s.Size <= 1 {
		return true
	}
	return s.Rank*n/s.Size <= g && g < (s.Rank+1)*n/s.Size
}

// validate checks the shard against the env set.
func (s *Shard) validate() error {
	if s == nil {
		return nil
	}
	if s.Size < 1 || s.Rank < 0 || s.Rank >= s.Size {
		return fmt.Errorf("ragen: rollout shard: rank %d of %d", s.Rank, s.Size)
	}
	if s.Size > 1 && s.AllGather == nil {
		return fmt.Errorf("ragen: rollout shard: rank %d of %d without AllGather", s.Rank, s.Size)
	}
	return nil
}

// StreamSeed is the sampling stream of one trajectory turn: a SplitMix64
// hash of the mode, the env's reset seed, the env id and the turn, so that
// a run's samples depend on its seed only, never on the rank, batch or row
// that decodes them.
func StreamSeed(mode env.Mode, envSeed int64, envID, turn int) uint64 {
	h := uint64(0x52414745_4e000000) // "RAGEN"
	for _, c := range []byte(mode) {
		h = splitmix(h ^ uint64(c))
	}
	for _, x := range []uint64{uint64(envSeed), uint64(envID), uint64(turn)} {
		h = splitmix(h ^ x)
	}
	return h
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
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
	if err := opt.Shard.validate(); err != nil {
		return nil, err
	}
	outs, err := s.es.Reset(ctx, seed)
	if err != nil {
		return nil, err
	}
	sharded := opt.Shard != nil && opt.Shard.Size > 1
	if sharded {
		n := s.es.set.EnvGroups
		mine := outs[:0:0]
		for _, o := range outs {
			if opt.Shard.owns(o.GroupID, n) {
				mine = append(mine, o)
			}
		}
		outs = mine
	}
	parts := a.cfg.AgentProxy.PipelineParts
	if parts > len(outs) {
		parts = len(outs)
	}
	sp := a.cfg.Sampling(mode)
	keys := "" // prefix of the trajectories' prefix keys; "" = off
	if a.cfg.Rollout.EnablePrefixCaching {
		keys = fmt.Sprintf("%s/%d/", mode, a.rollouts.Add(1))
	}
	genMet, err := a.turns(ctx, s, outs, parts, sp, keys)
	if err != nil {
		return nil, err
	}
	states := s.es.GetRolloutStates()
	if sharded {
		if states, err = gatherStates(ctx, opt.Shard, states, s.es.set.EnvGroups); err != nil {
			return nil, err
		}
	}
	b, err := s.cm.BuildBatch(states)
	if err != nil {
		return nil, err
	}
	b.GenMetrics = genMet
	if opt.Collapse && a.cfg.AgentProxy.ContextWindowMode == ModeFull {
		if b.Collapse, err = s.cm.Collapse(states); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// turns runs the turn loops of this rank's envs (pipelined in parts when
// asked) and then ends the policy's rollout state (RolloutScoped), failed
// or not, returning the policy's metrics of it.
func (a *AgentProxy) turns(ctx context.Context, s *rolloutSet, outs []*EnvOutput, parts int, sp SamplingParams, keys string) (met map[string]float64, err error) {
	if rs, ok := a.policy.(RolloutScoped); ok {
		defer func() { met = rs.EndRollout() }()
	}
	switch {
	case len(outs) == 0:
		// this rank owns no group (fewer groups than ranks)
	case parts <= 1:
		err = a.turnLoop(ctx, s, outs, sp, keys)
	default:
		err = a.pipelined(ctx, s, outs, parts, sp, keys)
	}
	return met, err
}

type shardEpisodes struct{ Envs []EnvOutput }

// gatherStates exchanges the finished episodes of each rank's own groups
// (gob, which keeps every float bit, NaN included) and returns every env's
// entry in env-id order: the rank's own, the others' as gathered.
func gatherStates(ctx context.Context, sh *Shard, states []*EnvOutput, groups int) ([]*EnvOutput, error) {
	var mine shardEpisodes
	for _, o := range states {
		if sh.owns(o.GroupID, groups) {
			mine.Envs = append(mine.Envs, *o)
		}
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&mine); err != nil {
		return nil, fmt.Errorf("ragen: rollout shard: encode episodes: %w", err)
	}
	parts, err := sh.AllGather(ctx, buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("ragen: rollout shard: gather episodes: %w", err)
	}
	if len(parts) != sh.Size {
		return nil, fmt.Errorf("ragen: rollout shard: gathered %d parts from %d ranks", len(parts), sh.Size)
	}
	out := make([]*EnvOutput, len(states))
	for r, p := range parts {
		if r == sh.Rank {
			for _, o := range states {
				if sh.owns(o.GroupID, groups) {
					out[o.EnvID] = o
				}
			}
			continue
		}
		var theirs shardEpisodes
		if err := gob.NewDecoder(bytes.NewReader(p)).Decode(&theirs); err != nil {
			return nil, fmt.Errorf("ragen: rollout shard: episodes of rank %d: %w", r, err)
		}
		other := &Shard{Rank: r, Size: sh.Size}
		for i := range theirs.Envs {
			o := &theirs.Envs[i]
			if o.EnvID < 0 || o.EnvID >= len(out) || !other.owns(o.GroupID, groups) || states[o.EnvID].GroupID != o.GroupID {
				return nil, fmt.Errorf("ragen: rollout shard: rank %d sent env %d (group %d), which is not its own", r, o.EnvID, o.GroupID)
			}
			out[o.EnvID] = o
		}
	}
	for i, o := range out {
		if o == nil {
			return nil, fmt.Errorf("ragen: rollout shard: no rank sent env %d", i)
		}
	}
	return out, nil
}

// pipelined splits the envs into parts that run their turn loops
// concurrently: while the model generates for one part, the envs of another
// part step. Each env's trajectory depends only on its own prompts and
// responses, so the result equals the plain loop for a deterministic policy.
func (a *AgentProxy) pipelined(ctx context.Context, s *rolloutSet, outs []*EnvOutput, parts int, sp SamplingParams, keys string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for k := 0; k < parts; k++ {
		lo, hi := k*len(outs)/parts, (k+1)*len(outs)/parts
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := a.turnLoop(ctx, s, outs[lo:hi], sp, keys); err != nil {
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

// turnLoop runs up to max_turn turns for the given (active) envs. A
// request's prefix key is keys + its env id (none when keys is empty).
func (a *AgentProxy) turnLoop(ctx context.Context, s *rolloutSet, active []*EnvOutput, sp SamplingParams, keys string) error {
	for turn := 0; turn < a.cfg.AgentProxy.MaxTurn && len(active) > 0; turn++ {
		prompts, err := s.cm.Prompts(active)
		if err != nil {
			return err
		}
		reqs := make([]GenRequest, len(prompts))
		for i, p := range prompts {
			reqs[i] = GenRequest{EnvID: p.EnvID, Turn: p.Turn, Messages: p.Messages, Prompt: p.Text, IDs: p.IDs, Sampling: sp}
			envSeed, err := s.es.Seed(p.EnvID)
			if err != nil {
				return err
			}
			reqs[i].Seed, reqs[i].Seeded = StreamSeed(s.es.mode, envSeed, p.EnvID, p.Turn), true
			if keys != "" {
				reqs[i].PrefixKey = keys + strconv.Itoa(p.EnvID)
			}
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
