package ragen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"ragen/env"
	"ragen/llm/tokenizer"
)

// PartialPolicy is a Policy that can report failures per request (an API
// reply that was truncated or exhausted its retries) instead of failing
// the whole batch. OpenAIPolicy implements it.
type PartialPolicy interface {
	Policy
	GenerateEach(ctx context.Context, reqs []GenRequest) ([]Generation, []error)
}

// EvalOptions tune EvaluateStream.
type EvalOptions struct {
	// ChunkGroups is how many env groups one rollout runs; episodes are
	// written and dropped from memory after each. 0 means 64.
	ChunkGroups int
	// MaxFailures is how many failed episodes the run tolerates; one more
	// stops it (the finished episodes stay written). Negative: no limit.
	MaxFailures int
	// CloseTimeout bounds closing a chunk's envs (in parallel, honouring
	// ctx). 0 means 10 s.
	CloseTimeout time.Duration
	// Export tunes the records.
	Export ExportOptions
	// Progress, if set, is called after each chunk.
	Progress func(done, total, failed int)
}

// EvalSummary is what EvaluateStream keeps of a run: counts and the means of
// the per-episode metrics over the finished (not failed) episodes.
type EvalSummary struct {
	Episodes    int                // records written (finished + failed)
	Failed      int                // episodes recorded as failed
	Failures    map[string]int     // failure reason -> episodes
	Metrics     map[string]float64 // mean of each per-episode metric over finished episodes
	Interrupted bool               // ctx ended the run early
}

// ErrFailureBudget is returned (wrapped) when more episodes failed than
// EvalOptions.MaxFailures allows.
var ErrFailureBudget = errors.New("failure budget exhausted")

// EvaluateStream runs every validation episode of cfg (es_manager.val) in
// chunks of ChunkGroups groups, writing each chunk's trajectory records to
// w as soon as it finishes, and keeping only metric sums in memory. Each
// env gets the seed it has in one rollout of the whole set (seed.val +
// its group index), and records carry its env and group ids in that
// layout, so the output equals one big rollout's for a deterministic
// policy, except that reward normalisation (agent_proxy.reward_normalization)
// with grouping batch or inductive and a method other than identity
// normalises each chunk, one tag at a time, on its own; use Evaluate for
// whole-set normalisation.
//
// newPolicy builds the policy of one chunk; lookup finds the chunk's envs
// by (chunk-local) env id, for policies that look at them (the
// demonstrator). A policy failure fails only the episodes it hit (per
// request for a PartialPolicy, else the requests of that call); an env
// error fails the chunk's episodes. Failed episodes are written with
// metadata.failure. When ctx ends, EvaluateStream stops after closing the
// current chunk's envs and returns the summary with Interrupted set and
// ctx's error.
func EvaluateStream(ctx context.Context, cfg Config, tok tokenizer.Tokenizer, p EnvProvider,
	newPolicy func(lookup func(envID int) env.BaseEnv) (Policy, error), w io.Writer, opt EvalOptions) (EvalSummary, error) {
	if opt.ChunkGroups <= 0 {
		opt.ChunkGroups = 64
	}
	if opt.CloseTimeout <= 0 {
		opt.CloseTimeout = 10 * time.Second
	}
	sum := EvalSummary{Failures: map[string]int{}, Metrics: map[string]float64{}}
	val := cfg.ESManager.Val
	if len(val.EnvConfigs.Tags) != len(val.EnvConfigs.NGroups) {
		return sum, fmt.Errorf("ragen: evaluate: es_manager.val has %d tags and %d n_groups", len(val.EnvConfigs.Tags), len(val.EnvConfigs.NGroups))
	}
	if val.GroupSize < 1 {
		return sum, fmt.Errorf("ragen: evaluate: es_manager.val.group_size=%d must be >= 1", val.GroupSize)
	}
	base := int64(123)
	if cfg.Seed.Val != nil {
		base = *cfg.Seed.Val
	}
	type chunk struct {
		tag        string
		first, num int // global first group, groups
	}
	var chunks []chunk
	g0 := 0
	for k, tag := range val.EnvConfigs.Tags {
		n := val.EnvConfigs.NGroups[k]
		for a := 0; a < n; a += opt.ChunkGroups {
			chunks = append(chunks, chunk{tag: tag, first: g0 + a, num: min(opt.ChunkGroups, n-a)})
		}
		g0 += n
	}
	totalEpisodes := g0 * val.GroupSize
	msum, mcount := map[string]float64{}, map[string]int{}
	// proxies are reused across chunks of the same tag and size.
	type key struct {
		tag string
		num int
	}
	proxies := map[key]*AgentProxy{}
	trackers := map[key]*failTracker{}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), opt.CloseTimeout)
		defer cancel()
		for _, a := range proxies {
			_ = a.closeEnvs(cctx)
		}
	}()
	for _, c := range chunks {
		if ctx.Err() != nil {
			sum.Interrupted = true
			break
		}
		k := key{c.tag, c.num}
		a, ft := proxies[k], trackers[k]
		if a == nil {
			cc := cfg
			cc.ESManager.Val = EnvSetConfig{EnvGroups: c.num, GroupSize: val.GroupSize, EnvConfigs: EnvConfigs{Tags: []string{c.tag}, NGroups: []int{c.num}}}
			ft = &failTracker{failed: map[int]string{}}
			var err error
			a, err = newAgentProxy(cc, tok, p, ft, env.ModeVal)
			if err != nil {
				return sum, err
			}
			proxies[k], trackers[k] = a, ft
			inner, err := newPolicy(func(id int) env.BaseEnv { return a.EnvManager(env.ModeVal).Env(id) })
			if err != nil {
				return sum, err
			}
			ft.inner = inner
		}
		ft.reset()
		seed := base + int64(c.first)
		b, err := a.RolloutWith(ctx, env.ModeVal, RolloutOptions{Seed: &seed})
		var recs []TrajectoryRecord
		if err != nil {
			if ctx.Err() != nil {
				sum.Interrupted = true
				break
			}
			// An env failed: every episode of the chunk is lost.
			for i := 0; i < c.num*val.GroupSize; i++ {
				recs = append(recs, TrajectoryRecord{Metadata: TrajectoryMetadata{EnvID: i, GroupID: i / val.GroupSize, Failure: err.Error()}})
			}
		} else {
			recs = TrajectoryRecords(b, opt.Export)
		}
		for i := range recs {
			md := &recs[i].Metadata
			if reason, ok := ft.failed[md.EnvID]; ok && md.Failure == "" {
				md.Failure = reason
			}
			md.EnvID += c.first * val.GroupSize
			md.GroupID += c.first
			recs[i].CustomID = fmt.Sprintf("traj_%d", md.EnvID)
			if md.Failure != "" {
				sum.Failed++
				sum.Failures[md.Failure]++
				continue
			}
			for m, v := range md.Metrics {
				msum[m] += v
				mcount[m]++
			}
		}
		if err := WriteJSONL(w, recs); err != nil {
			return sum, err
		}
		sum.Episodes += len(recs)
		if opt.Progress != nil {
			opt.Progress(sum.Episodes, totalEpisodes, sum.Failed)
		}
		if opt.MaxFailures >= 0 && sum.Failed > opt.MaxFailures {
			finish(&sum, msum, mcount)
			return sum, fmt.Errorf("ragen: evaluate: %w: %d episodes failed (max_failures %d); most common: %s",
				ErrFailureBudget, sum.Failed, opt.MaxFailures, topReason(sum.Failures))
		}
	}
	finish(&sum, msum, mcount)
	if sum.Interrupted {
		return sum, fmt.Errorf("ragen: evaluate: interrupted after %d of %d episodes: %w", sum.Episodes, totalEpisodes, context.Cause(ctx))
	}
	return sum, nil
}

func finish(sum *EvalSummary, msum map[string]float64, mcount map[string]int) {
	for m, s := range msum {
		sum.Metrics[m] = s / float64(mcount[m])
	}
}

func topReason(f map[string]int) string {
	reasons := make([]string, 0, len(f))
	for r := range f {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool {
		if f[reasons[i]] != f[reasons[j]] {
			return f[reasons[i]] > f[reasons[j]]
		}
		return reasons[i] < reasons[j]
	})
	if len(reasons) == 0 {
		return "none"
	}
	return fmt.Sprintf("%q (%d)", reasons[0], f[reasons[0]])
}

// failTracker wraps a chunk's policy so that a failed request fails its
// episode only: the env gets an empty response for the rest of the
// episode (no further requests), and the reason is kept for the record.
type failTracker struct {
	inner  Policy
	mu     sync.Mutex
	failed map[int]string // chunk-local env id -> reason
}

func (f *failTracker) reset() {
	f.mu.Lock()
	f.failed = map[int]string{}
	f.mu.Unlock()
}

func (f *failTracker) fail(envID int, err error) {
	f.mu.Lock()
	if _, ok := f.failed[envID]; !ok {
		f.failed[envID] = err.Error()
	}
	f.mu.Unlock()
}

// EndRollout passes the end of a rollout on to the wrapped policy when it
// keeps state over a rollout (RolloutScoped).
func (f *failTracker) EndRollout() map[string]float64 {
	if rs, ok := f.inner.(RolloutScoped); ok {
		return rs.EndRollout()
	}
	return nil
}

// Generate implements Policy; it fails only when ctx ends.
func (f *failTracker) Generate(ctx context.Context, reqs []GenRequest) ([]Generation, error) {
	out := make([]Generation, len(reqs))
	var live []GenRequest
	var idx []int
	f.mu.Lock()
	for i, r := range reqs {
		if _, dead := f.failed[r.EnvID]; !dead {
			live = append(live, r)
			idx = append(idx, i)
		}
	}
	f.mu.Unlock()
	if len(live) == 0 {
		return out, nil
	}
	var gens []Generation
	var errs []error
	if pp, ok := f.inner.(PartialPolicy); ok {
		gens, errs = pp.GenerateEach(ctx, live)
	} else {
		var err error
		gens, err = f.inner.Generate(ctx, live)
		if err == nil && len(gens) != len(live) {
			err = fmt.Errorf("policy returned %d generations for %d requests", len(gens), len(live))
		}
		if err != nil {
			gens, errs = make([]Generation, len(live)), make([]error, len(live))
			for i := range errs {
				errs[i] = err
			}
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	for j, i := range idx {
		if errs != nil && errs[j] != nil {
			f.fail(live[j].EnvID, errs[j])
			continue
		}
		out[i] = gens[j]
	}
	return out, nil
}

// closeEnvs closes every env of the proxy in parallel, through
// CloseContext(ctx) when an env has it, and returns when all are closed or
// ctx ends (envs still closing are then left to finish on their own).
func (a *AgentProxy) closeEnvs(ctx context.Context) error {
	var all []env.BaseEnv
	for _, s := range a.sets {
		for _, e := range s.es.envs {
			all = append(all, e.env)
		}
	}
	return CloseEnvs(ctx, all)
}

// CloseEnvs closes envs in parallel, through CloseContext(ctx) when an env
// has it, and returns when all are closed or ctx ends; the error joins the
// Close errors and, on an early return, ctx's error with how many envs
// were still closing.
func CloseEnvs(ctx context.Context, envs []env.BaseEnv) error {
	type ctxCloser interface {
		CloseContext(context.Context) error
	}
	errc := make(chan error, len(envs))
	for _, e := range envs {
		go func() {
			if cc, ok := e.(ctxCloser); ok {
				errc <- cc.CloseContext(ctx)
				return
			}
			errc <- e.Close()
		}()
	}
	var errs []error
	for n := 0; n < len(envs); n++ {
		select {
		case err := <-errc:
			if err != nil {
				errs = append(errs, err)
			}
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("ragen: %d of %d envs still closing: %w", len(envs)-n, len(envs), ctx.Err()))
			return errors.Join(errs...)
		}
	}
	return errors.Join(errs...)
}
