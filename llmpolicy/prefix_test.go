package llmpolicy

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"ragen/internal/testranks"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ragen/dist"
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

// rollouts runs two train rollouts of FrozenLake groups on world ranks
// (goroutines, each with its own copy of m) and returns every generation,
// rank 0's batches' input ids and the ranks' generation metrics summed.
func rollouts(t *testing.T, m *llm.Model, rc ragen.Config, world int) (map[string]ragen.Generation, string, map[string]float64) {
	t.Helper()
	shards := ragen.LocalShards(world)
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
				sh = shards[r]
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

// prefixModes are the context-window settings the equality tests cover.
var prefixModes = []struct {
	name, window string
	k            int
	temp         float64
}{
	{"full", ragen.ModeFull, -1, 0},
	{"full sampled", ragen.ModeFull, -1, 1},
	{"limited k=1", ragen.ModeLimitedMultiTurn, 1, 0},
	{"single", ragen.ModeSingleTurn, -1, 0},
}

// prefixModel is the tiny model the equality tests roll out (the same in
// every process: seeded).
func prefixModel(t testing.TB) *llm.Model {
	cfg := llm.TinyConfig(tokenizer.NewByte().VocabSize())
	cfg.MaxPositionEmbeddings = 4096
	m, err := llm.New(cfg, llm.Options{DType: torch.Float32, Device: torch.CPU, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// prefixConfig is 2 FrozenLake groups of 2, 3 turns of 10 tokens, in
// context mode i, prefix caching on or off.
func prefixConfig(t testing.TB, i int, reuse bool) ragen.Config {
	tags, err := env.DefaultTags()
	if err != nil {
		t.Fatal(err)
	}
	md := prefixModes[i]
	rc := ragen.DefaultConfig()
	rc.CustomEnvs = ragen.SpecsFromTags(tags)
	set := ragen.EnvSetConfig{EnvGroups: 2, GroupSize: 2, EnvConfigs: ragen.EnvConfigs{Tags: []string{"FrozenLake"}, NGroups: []int{2}}}
	rc.ESManager.Train, rc.ESManager.Val = set, set
	rc.AgentProxy.MaxTurn = 3
	rc.AgentProxy.ContextWindowMode, rc.AgentProxy.MaxContextWindow = md.window, md.k
	rc.Rollout.ResponseLength = 10
	rc.Rollout.Temperature = md.temp
	rc.Rollout.EnablePrefixCaching = reuse
	return rc
}

// sameGens requires the same generations: ids exactly, log-probs to 1e-4.
func sameGens(t *testing.T, what string, got, want map[string]ragen.Generation) {
	t.Helper()
	require.Len(t, got, len(want), what)
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		a, b := got[k], want[k]
		require.Equal(t, b.IDs, a.IDs, "%s %s: ids", what, k)
		require.Len(t, a.LogProbs, len(b.LogProbs), "%s %s", what, k)
		for j := range a.LogProbs {
			require.LessOrEqual(t, math.Abs(a.LogProbs[j]-b.LogProbs[j]), 1e-4, "%s %s token %d", what, k, j)
		}
	}
}

// lessPrefill requires that prefix caching on prefilled fewer tokens of
// the same prompts, reusing earlier turns and sharing group prompts.
func lessPrefill(t *testing.T, what string, on, off map[string]float64) {
	t.Helper()
	require.Equal(t, off[MetricPromptTokens], on[MetricPromptTokens], what)
	require.Less(t, on[MetricPrefillTokens], off[MetricPrefillTokens], what)
	require.Greater(t, on[MetricReusedTokens], 0.0, what)
	require.Greater(t, on[MetricSharedTokens], 0.0, what)
	require.Zero(t, off[MetricReusedTokens]+off[MetricSharedTokens], what)
	t.Logf("%s: prefilled %.0f of %.0f prompt tokens (reused %.0f, shared %.0f); off %.0f",
		what, on[MetricPrefillTokens], on[MetricPromptTokens], on[MetricReusedTokens], on[MetricSharedTokens], off[MetricPrefillTokens])
}

// With rollout.enable_prefix_caching on and off, a rollout of a tiny model
// generates the same tokens (greedy, and sampled from per-trajectory
// streams) with log-probs equal to float rounding, in every context-window
// mode, in one process and on 2 data-parallel ranks (goroutines here;
// TestPrefixCachingTwoProcesses runs them as processes); with it on, the
// prefill computes fewer tokens, reusing earlier turns' KV and the groups'
// first prompts.
func TestPrefixCachingRolloutEquality(t *testing.T) {
	m := prefixModel(t)
	defer m.Close()
	for i, md := range prefixModes {
		for _, world := range []int{1, 2} {
			offGens, offFP, offMet := rollouts(t, m, prefixConfig(t, i, false), world)
			onGens, onFP, onMet := rollouts(t, m, prefixConfig(t, i, true), world)
			what := fmt.Sprintf("%s, %d rank(s)", md.name, world)
			require.Equal(t, offFP, onFP, "%s: batches differ", what)
			sameGens(t, what, onGens, offGens)
			lessPrefill(t, what, onMet, offMet)
		}
	}
}

// A copy of the test binary with RAGEN_LLMPOLICY_DP_WORKER=on|off is one
// rank of a data-parallel rollout of every prefixModes entry (prefix
// caching on or off), writing its generations and metrics to
// RAGEN_LLMPOLICY_DP_OUT/rank<r>.json.
func init() {
	reuse := os.Getenv("RAGEN_LLMPOLICY_DP_WORKER")
	if reuse == "" {
		return
	}
	torch.SetNumThreads(1)
	if err := dpWorker(reuse == "on"); err != nil {
		fmt.Fprintf(os.Stderr, "rank %s: %v\n", os.Getenv("RANK"), err)
		os.Exit(1)
	}
	os.Exit(0)
}

// workerTB lets the test helpers run outside a test.
type workerTB struct{ testing.TB }

func (workerTB) Helper()                   {}
func (workerTB) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (workerTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

type dpOut struct {
	Gens    []map[string]ragen.Generation // per mode
	Metrics []map[string]float64
}

func dpWorker(reuse bool) error {
	cfg, _, err := dist.FromEnv()
	if err != nil {
		return err
	}
	cfg.Timeout = 60 * time.Second
	g, err := dist.Init(context.Background(), cfg)
	if err != nil {
		return err
	}
	defer g.Close()
	m := prefixModel(workerTB{})
	defer m.Close()
	sh := &ragen.Shard{Rank: g.Rank(), Size: g.Size(), AllGather: g.AllGatherBytes}
	var out dpOut
	for i := range prefixModes {
		rec := &recorder{inner: New(m, tokenizer.NewByte(), Options{Seed: 3}), gens: map[string]ragen.Generation{}}
		a, err := ragen.NewAgentProxy(prefixConfig(workerTB{}, i, reuse), tokenizer.NewByte(), ragen.DefaultProvider(), rec)
		if err != nil {
			return err
		}
		for range 2 {
			if _, err := a.RolloutWith(context.Background(), env.ModeTrain, ragen.RolloutOptions{Shard: sh}); err != nil {
				a.Close()
				return err
			}
		}
		a.Close()
		met := map[string]float64{}
		for _, mm := range rec.met {
			for k, v := range mm {
				met[k] += v
			}
		}
		out.Gens, out.Metrics = append(out.Gens, rec.gens), append(out.Metrics, met)
	}
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(os.Getenv("RAGEN_LLMPOLICY_DP_OUT"), fmt.Sprintf("rank%d.json", g.Rank())), b, 0o644)
}

// runRanks runs n worker processes and merges their generations and
// metrics per mode.
func runRanks(t *testing.T, n int, reuse bool) ([]map[string]ragen.Generation, []map[string]float64) {
	t.Helper()
	dir := t.TempDir()
	flag := map[bool]string{true: "on", false: "off"}[reuse]
	testranks.SpawnOK(t, n, 120*time.Second, "RAGEN_LLMPOLICY_DP_WORKER="+flag, "RAGEN_LLMPOLICY_DP_OUT="+dir)
	gens := make([]map[string]ragen.Generation, len(prefixModes))
	met := make([]map[string]float64, len(prefixModes))
	for i := range prefixModes {
		gens[i], met[i] = map[string]ragen.Generation{}, map[string]float64{}
	}
	for r := range n {
		b, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("rank%d.json", r)))
		require.NoError(t, err)
		var o dpOut
		require.NoError(t, json.Unmarshal(b, &o))
		require.Len(t, o.Gens, len(prefixModes))
		for i := range prefixModes {
			maps.Copy(gens[i], o.Gens[i])
			for k, v := range o.Metrics[i] {
				met[i][k] += v
			}
		}
	}
	return gens, met
}

// Two data-parallel processes (dist over TCP, each rank rolling out its own
// groups) generate with prefix caching on what one process generates with
// it off, in every context-window mode, and prefill fewer tokens.
func TestPrefixCachingTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	m := prefixModel(t)
	defer m.Close()
	onGens, onMet := runRanks(t, 2, true)
	offGens, offMet := runRanks(t, 2, false)
	for i, md := range prefixModes {
		one, _, _ := rollouts(t, m, prefixConfig(t, i, false), 1)
		what := fmt.Sprintf("%s, 2 processes", md.name)
		sameGens(t, what+" on vs one process off", onGens[i], one)
		sameGens(t, what+" off vs one process off", offGens[i], one)
		lessPrefill(t, what, onMet[i], offMet[i])
	}
}

// rollout.allowed_token_ids reaches the model: a sampled rollout whose
// tokens are restricted to printable bytes writes replies of those bytes
// only, which the next turn's prompt carries back verbatim, and it
// generates the same tokens with prefix caching on and off.
func TestAllowedTokenIDsRollout(t *testing.T) {
	m := prefixModel(t)
	defer m.Close()
	allowed := []int{'\n'}
	for b := ' '; b <= '~'; b++ {
		allowed = append(allowed, int(b))
	}
	var gens [2]map[string]ragen.Generation
	var met [2]map[string]float64
	for i, reuse := range []bool{false, true} {
		rc := prefixConfig(t, 1, reuse)
		rc.Rollout.AllowedTokenIDs = allowed
		gens[i], _, met[i] = rollouts(t, m, rc, 1)
	}
	sameGens(t, "printable replies", gens[1], gens[0])
	lessPrefill(t, "printable replies", met[1], met[0])
	for k, g := range gens[1] {
		require.Len(t, g.IDs, 10, k)
		for _, id := range g.IDs {
			require.True(t, id == '\n' || id >= ' ' && id <= '~', "%s: id %d", k, id)
		}
		require.Equal(t, tokenizer.NewByte().Decode(g.IDs), g.Text, k)
	}
}
