package llmpolicy

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"ragen/env"
	_ "ragen/env/frozenlake"
	"ragen/llm"
	"ragen/llm/tokenizer"
	"ragen/ragen"
	"ragen/torch"
)

// recorder keeps every generation of a rollout by (env, turn) and passes
// EndRollout on, so the policy under it frees its cache.
type recorder struct {
	inner ragen.Policy
	mu    sync.Mutex
	gens  map[string]ragen.Generation
	met   []map[string]float64
}

func (r *recorder) Generate(ctx context.Context, reqs []ragen.GenRequest) ([]ragen.Generation, error) {
	out, err := r.inner.Generate(ctx, reqs)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, q := range reqs {
		r.gens[fmt.Sprintf("env %d turn %d", q.EnvID, q.Turn)] = out[i]
	}
	return out, nil
}

func (r *recorder) EndRollout() map[string]float64 {
	m := r.inner.(ragen.RolloutScoped).EndRollout()
	r.mu.Lock()
	r.met = append(r.met, m)
	r.mu.Unlock()
	return m
}

// memGather is an in-process all-gather among n ranks (one round at a time).
type memGather struct {
	mu    sync.Mutex
	cond  *sync.Cond
	n     int
	round int
	parts [][]byte
	got   int
	done  [][]byte
}

func (g *memGather) shard(rank int) *ragen.Shard {
	return &ragen.Shard{Rank: rank, Size: g.n, AllGather: func(ctx context.Context, b []byte) ([][]byte, error) {
		g.mu.Lock()
		defer g.mu.Unlock()
		round := g.round
		g.parts[rank] = append([]byte(nil), b...)
		if g.got++; g.got == g.n {
			g.done, g.parts, g.got = g.parts, make([][]byte, g.n), 0
			g.round++
			g.cond.Broadcast()
		}
		for g.round == round {
			g.cond.Wait()
		}
		return g.done, nil
	}}
}

// rollouts runs two train rollouts of FrozenLake groups on world ranks
// (goroutines, each with its own copy of m) and returns every generation,
// rank 0's batches' input ids and the ranks' generation metrics summed.
func rollouts(t *testing.T, m *llm.Model, rc ragen.Config, world int) (map[string]ragen.Generation, string, map[string]float64) {
	t.Helper()
	g := &memGather{n: world, parts: make([][]byte, world)}
	g.cond = sync.NewCond(&g.mu)
	recs := make([]*recorder, world)
	fps := make([]string, world)
	errs := make([]error, world)
	var wg sync.WaitGroup
	for r := range world {
		mr, err := m.Clone()
		require.NoError(t, err)
		defer mr.Close()
		recs[r] = &recorder{inner: New(mr, tokenizer.NewByte(), Options{Seed: 3}), gens: map[string]ragen.Generation{}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var sh *ragen.Shard
			if world > 1 {
				sh = g.shard(r)
			}
			a, err := ragen.NewAgentProxy(rc, tokenizer.NewByte(), ragen.DefaultProvider(), recs[r])
			if err != nil {
				errs[r] = err
				return
			}
			defer a.Close()
			for range 2 {
				b, err := a.RolloutWith(context.Background(), env.ModeTrain, ragen.RolloutOptions{Shard: sh})
				if err != nil {
					errs[r] = err
					return
				}
				fps[r] += fmt.Sprint(b.InputIDs, b.LossMask, b.EnvIDs)
			}
		}()
	}
	wg.Wait()
	gens := map[string]ragen.Generation{}
	met := map[string]float64{}
	for r := range world {
		require.NoError(t, errs[r], "rank %d", r)
		require.Equal(t, fps[0], fps[r], "rank %d batch differs from rank 0's", r)
		for k, v := range recs[r].gens {
			gens[k] = v
		}
		for _, mm := range recs[r].met {
			for k, v := range mm {
				met[k] += v
			}
		}
	}
	return gens, fps[0], met
}

// With rollout.enable_prefix_caching on and off, a rollout of a tiny model
// generates the same tokens (greedy, and sampled from per-trajectory
// streams) with log-probs equal to float rounding, in every context-window
// mode and on 1 and 2 data-parallel ranks; with it on, the prefill computes
// fewer tokens, reusing earlier turns' KV and the groups' first prompts.
func TestPrefixCachingRolloutEquality(t *testing.T) {
	cfg := llm.TinyConfig(tokenizer.NewByte().VocabSize())
	cfg.MaxPositionEmbeddings = 4096
	m, err := llm.New(cfg, llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 7})
	require.NoError(t, err)
	defer m.Close()
	tags, err := env.DefaultTags()
	require.NoError(t, err)
	type mode struct {
		name, window string
		k            int
		temp         float64
	}
	modes := []mode{
		{"full", ragen.ModeFull, -1, 0},
		{"full sampled", ragen.ModeFull, -1, 1},
		{"limited k=1", ragen.ModeLimitedMultiTurn, 1, 0},
		{"single", ragen.ModeSingleTurn, -1, 0},
	}
	for _, md := range modes {
		for _, world := range []int{1, 2} {
			rc := ragen.DefaultConfig()
			rc.CustomEnvs = ragen.SpecsFromTags(tags)
			set := ragen.EnvSetConfig{EnvGroups: 2, GroupSize: 2, EnvConfigs: ragen.EnvConfigs{Tags: []string{"FrozenLake"}, NGroups: []int{2}}}
			rc.ESManager.Train, rc.ESManager.Val = set, set
			rc.AgentProxy.MaxTurn = 3
			rc.AgentProxy.ContextWindowMode, rc.AgentProxy.MaxContextWindow = md.window, md.k
			rc.Rollout.ResponseLength = 10
			rc.Rollout.Temperature = md.temp
			rc.Rollout.EnablePrefixCaching = false
			offGens, offFP, offMet := rollouts(t, m, rc, world)
			rc.Rollout.EnablePrefixCaching = true
			onGens, onFP, onMet := rollouts(t, m, rc, world)
			what := fmt.Sprintf("%s, %d rank(s)", md.name, world)
			require.Equal(t, offFP, onFP, "%s: batches differ", what)
			require.Len(t, onGens, len(offGens), what)
			keys := make([]string, 0, len(offGens))
			for k := range offGens {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				a, b := onGens[k], offGens[k]
				require.Equal(t, b.IDs, a.IDs, "%s %s: ids", what, k)
				require.Len(t, a.LogProbs, len(b.LogProbs))
				for j := range a.LogProbs {
					require.LessOrEqual(t, math.Abs(a.LogProbs[j]-b.LogProbs[j]), 1e-4, "%s %s token %d", what, k, j)
				}
			}
			// the same prompts, less prefill: earlier turns and groups reused
			require.Equal(t, offMet[MetricPromptTokens], onMet[MetricPromptTokens], what)
			require.Less(t, onMet[MetricPrefillTokens], offMet[MetricPrefillTokens], what)
			require.Greater(t, onMet[MetricReusedTokens], 0.0, what)
			require.Greater(t, onMet[MetricSharedTokens], 0.0, what)
			require.Zero(t, offMet[MetricReusedTokens]+offMet[MetricSharedTokens], what)
			t.Logf("%s: prefilled %.0f of %.0f prompt tokens (reused %.0f, shared %.0f); off %.0f",
				what, onMet[MetricPrefillTokens], onMet[MetricPromptTokens], onMet[MetricReusedTokens], onMet[MetricSharedTokens], offMet[MetricPrefillTokens])
		}
	}
}
