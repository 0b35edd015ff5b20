package starpo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"ragen/internal/testranks"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"ragen/dist"
	"ragen/env"
	"ragen/env/bandit"
	"ragen/filter"
	"ragen/llm/tokenizer"
	"ragen/ragen"
	"ragen/torch"
)

// A copy of the test binary with RAGEN_STARPO_DP_WORKER set is one rank of
// a data-parallel run (dpConfig for RAGEN_STARPO_DP_STEPS steps in
// RAGEN_STARPO_DP_DIR); rank 0 writes its logged metrics and final
// parameters to RAGEN_STARPO_DP_OUT.
func init() {
	if os.Getenv("RAGEN_STARPO_DP_WORKER") == "" {
		return
	}
	torch.SetNumThreads(1)
	if err := dpWorker(); err != nil {
		fmt.Fprintf(os.Stderr, "rank %s: %v\n", os.Getenv("RANK"), err)
		os.Exit(1)
	}
	os.Exit(0)
}

// workerTB lets the test helpers run outside a test.
type workerTB struct {
	testing.TB
	cleanups []func()
}

func (w *workerTB) Helper()                   {}
func (w *workerTB) Cleanup(f func())          { w.cleanups = append(w.cleanups, f) }
func (w *workerTB) Fatal(args ...any)         { panic(fmt.Sprint(args...)) }
func (w *workerTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

// dpConfig: GAE with a critic and the KL loss, checkpoints every step.
func dpConfig(dir string, steps int) Config {
	c := smallConfig(dir)
	c.Trainer.TotalTrainingSteps = steps
	c.Trainer.SaveFreq = 1
	c.Trainer.ResumeMode = ResumeAuto
	c.ActorRolloutRef.Actor.UseKLLoss = true
	c.ActorRolloutRef.Actor.KLLossCoef = 0.05
	c.ActorRolloutRef.Actor.Optim.WarmupStyle = WarmupCosine
	c.ActorRolloutRef.Actor.Optim.LRWarmupStepsRatio = 0.5
	return c
}

type dpResult struct {
	Steps   []int
	Metrics []map[string]float64
	Actor   [][]float64
	Critic  [][]float64
	OptB    int64
}

func params(ps []*torch.Tensor) ([][]float64, error) {
	var out [][]float64
	for _, p := range ps {
		v, err := torch.Data[float64](p)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func dpWorker() error {
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
	tb := &workerTB{}
	defer func() {
		for _, f := range tb.cleanups {
			f()
		}
	}()
	steps, _ := strconv.Atoi(os.Getenv("RAGEN_STARPO_DP_STEPS"))
	m := newModels(7)
	defer m.Close()
	log := &recLogger{}
	// RAGEN_STARPO_DP_KILL=k: every rank fails its training rollout k+1,
	// as a run killed after step k (its checkpoint written).
	kill, _ := strconv.Atoi(os.Getenv("RAGEN_STARPO_DP_KILL"))
	proxy, trains := seededBanditProxy(tb), 0
	rollout := func(ctx context.Context, mode env.Mode, opt ragen.RolloutOptions) (*ragen.Batch, error) {
		if mode == env.ModeTrain {
			if trains++; kill > 0 && trains > kill {
				return nil, errKilled
			}
		}
		return proxy.RolloutWith(ctx, mode, opt)
	}
	tr, err := NewTrainer(dpConfig(os.Getenv("RAGEN_STARPO_DP_DIR"), steps), Deps{Actor: m.actor, Critic: m.critic, Ref: m.ref,
		Rollout: rollout, Filter: filter.DefaultConfig(), Logger: log})
	if err != nil {
		return err
	}
	defer tr.Close()
	if err := tr.EnableDataParallel(g); err != nil {
		return err
	}
	if _, err := tr.Fit(context.Background()); err != nil {
		if kill > 0 && errors.Is(err, errKilled) {
			return nil
		}
		return err
	}
	if kill > 0 {
		return errors.New("not killed")
	}
	if g.Rank() != 0 {
		if len(log.steps) != 0 {
			return fmt.Errorf("rank %d logged steps %v", g.Rank(), log.steps)
		}
		return nil
	}
	res := dpResult{Steps: log.steps, OptB: tr.ShardedOptimizerBytes()}
	for _, mt := range log.metrics {
		res.Metrics = append(res.Metrics, comparable(mt))
	}
	if res.Actor, err = params(m.actor.Trainable()); err != nil {
		return err
	}
	if res.Critic, err = params(m.critic.Trainable()); err != nil {
		return err
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return os.WriteFile(os.Getenv("RAGEN_STARPO_DP_OUT"), b, 0o644)
}

var errKilled = errors.New("killed (test)")

// seededBanditProxy is banditProxy(2 groups x 4, 2 val envs) whose policy
// samples like a model: each answer (either arm, or no answer) is drawn
// from the request's own stream (ragen.StreamSeed), so the data-parallel
// runs below roll out identical batches only if every trajectory keeps its
// stream whichever rank generates it.
func seededBanditProxy(t testing.TB) *ragen.AgentProxy {
	t.Helper()
	tags, err := env.DefaultTags()
	if err != nil {
		t.Fatal(err)
	}
	cfg := ragen.DefaultConfig()
	cfg.CustomEnvs = ragen.SpecsFromTags(tags)
	cfg.ESManager.Train = ragen.EnvSetConfig{EnvGroups: 2, GroupSize: 4, EnvConfigs: ragen.EnvConfigs{Tags: []string{"Bandit"}, NGroups: []int{2}}}
	cfg.ESManager.Val = ragen.EnvSetConfig{EnvGroups: 2, GroupSize: 1, EnvConfigs: ragen.EnvConfigs{Tags: []string{"Bandit"}, NGroups: []int{2}}}
	cfg.AgentProxy.MaxTurn = 1
	cfg.AgentProxy.MaxActionsPerTurn = 1
	var next int64 // internal env seeds from 0 in every process (see banditProxy)
	prov := ragen.ProviderFuncs{New: func(tag string, spec ragen.EnvSpec) (env.BaseEnv, error) {
		next++
		return bandit.NewWithInternalSeed(bandit.DefaultConfig(), next-1)
	}}
	script := func(envID, turn int, req ragen.GenRequest) (string, error) {
		if !req.Seeded {
			return "", fmt.Errorf("env %d: request without a sampling stream", envID)
		}
		m := armNames.FindStringSubmatch(req.Prompt)
		if m == nil {
			return "", fmt.Errorf("no arm names in prompt %q", req.Prompt)
		}
		switch k := rand.New(rand.NewPCG(req.Seed, 7)).IntN(5); k {
		case 0:
			return "thinking </think> no answer", nil
		default:
			arm := m[1+k%2]
			return "pick " + arm + " </think><answer> " + arm + " </answer>", nil
		}
	}
	a, err := ragen.NewAgentProxy(cfg, tokenizer.NewByte(), prov, &ragen.ScriptedPolicy{Func: script})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close() })
	return a
}

// runRanks runs the data-parallel worker on n ranks and returns rank 0's
// result (none when kill > 0).
func runRanks(t *testing.T, n, steps int, dir string, kill int) dpResult {
	t.Helper()
	out := filepath.Join(t.TempDir(), "rank0.json")
	testranks.SpawnOK(t, n, 90*time.Second, "RAGEN_STARPO_DP_WORKER=1", "RAGEN_STARPO_DP_STEPS="+strconv.Itoa(steps),
		"RAGEN_STARPO_DP_DIR="+dir, "RAGEN_STARPO_DP_OUT="+out, "RAGEN_STARPO_DP_KILL="+strconv.Itoa(kill))
	var res dpResult
	if kill > 0 {
		return res
	}
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &res))
	return res
}

// dpTol: float64 gradients summed in another order (micro-batches on
// different ranks, then a reduce) agree to ~1e-16 relative; after a few
// AdamW steps 1e-9 relative is ample and still catches any real difference.
const dpTol = 1e-9

func sameDP(t *testing.T, what string, want, got [][]float64) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i := range want {
		require.Len(t, got[i], len(want[i]), what)
		for j := range want[i] {
			if math.Abs(want[i][j]-got[i][j]) > dpTol*math.Max(1, math.Abs(want[i][j])) {
				t.Fatalf("%s %d[%d]: %v vs one process %v", what, i, j, got[i][j], want[i][j])
			}
		}
	}
}

func sameMetricsDP(t *testing.T, want map[string]float64, got map[string]float64, step int) {
	t.Helper()
	require.ElementsMatch(t, sortedKeys(want), sortedKeys(got), "step %d", step)
	for k, w := range want {
		g := got[k]
		if math.IsNaN(w) && math.IsNaN(g) {
			continue
		}
		tol := dpTol
		if strings.HasSuffix(k, "/grad_norm") {
			// one process reports torch.ClipGradNorm's norm, computed in
			// float32; the sharded update computes it in float64.
			tol = 1e-6
		}
		if math.Abs(w-g) > tol*math.Max(1, math.Abs(w)) {
			t.Errorf("step %d: %s = %v, one process %v", step, k, g, w)
		}
	}
}

// oneProcess is the reference run.
func oneProcess(t *testing.T, steps int) (*recLogger, *models) {
	m := newModels(7)
	t.Cleanup(m.Close)
	log := &recLogger{}
	tr := newTestTrainer(t, dpConfig(t.TempDir(), steps), m, seededBanditProxy(t), log)
	_, err := tr.Fit(context.Background())
	require.NoError(t, err)
	return log, m
}

// 2 ranks log the same metrics and end with the same actor and critic
// as one process (GAE, critic, KL loss, checkpoints every step).
func TestDataParallelEqualsOneProcess(t *testing.T) {
	log, m := oneProcess(t, 2)
	wantA, err := params(m.actor.Trainable())
	require.NoError(t, err)
	wantC, err := params(m.critic.Trainable())
	require.NoError(t, err)
	for _, n := range []int{2} { // 3 ranks: TestDataParallelResumeAtOtherWorldSize
		res := runRanks(t, n, 2, t.TempDir(), 0)
		require.Equal(t, log.steps, res.Steps, "world %d", n)
		for i, st := range res.Steps {
			sameMetricsDP(t, comparable(log.metrics[i]), res.Metrics[i], st)
		}
		sameDP(t, fmt.Sprintf("world %d actor", n), wantA, res.Actor)
		sameDP(t, fmt.Sprintf("world %d critic", n), wantC, res.Critic)
		var numel int64
		for _, p := range append(m.actor.Trainable(), m.critic.Trainable()...) {
			numel += p.Numel()
		}
		t.Logf("world %d: rank 0 optimizer state %d B (one process: %d B)", n, res.OptB, 3*8*numel)
		// 3 x float64 per element of this rank's shard (actor and critic each padded to a multiple of n)
		require.LessOrEqual(t, res.OptB, 3*8*(numel/int64(n)+2), "world %d: optimizer state not sharded", n)
	}
}

// A checkpoint written by 2 ranks resumes under 3 ranks and under 1
// process with the continuation of an uninterrupted run.
func TestDataParallelResumeAtOtherWorldSize(t *testing.T) {
	log, m := oneProcess(t, 3)
	wantA, err := params(m.actor.Trainable())
	require.NoError(t, err)
	dir2 := t.TempDir()
	runRanks(t, 2, 3, dir2, 1) // killed after step 1
	// the checkpoint is sharded: one optimizer shard per rank and role,
	// a manifest, everything checksummed
	step1 := filepath.Join(dir2, "global_step_1")
	require.NoError(t, VerifyCheckpoint(step1))
	mb, err := os.ReadFile(filepath.Join(step1, ShardManifestFile))
	require.NoError(t, err)
	var man shardManifest
	require.NoError(t, json.Unmarshal(mb, &man))
	require.Equal(t, 2, man.WorldSize)
	for _, role := range []string{"actor", "critic"} {
		r := man.Roles[role]
		require.NotNil(t, r, role)
		require.Equal(t, []string{role + "/optim_shard_0_of_2.safetensors", role + "/optim_shard_1_of_2.safetensors"}, r.Files)
		require.Equal(t, (r.Numel+1)/2, r.ShardElems)
		require.NoFileExists(t, filepath.Join(step1, role, optimFile))
		for _, f := range r.Files {
			st, err := ReadSafetensors(filepath.Join(step1, f))
			require.NoError(t, err)
			require.Equal(t, []int64{r.ShardElems}, st["exp_avg"].Shape)
		}
	}
	sums, err := os.ReadFile(filepath.Join(step1, ChecksumFile))
	require.NoError(t, err)
	require.Contains(t, string(sums), "actor/optim_shard_1_of_2.safetensors")
	require.Contains(t, string(sums), ShardManifestFile)
	// a damaged shard is caught before loading
	bad := t.TempDir()
	require.NoError(t, os.CopyFS(bad, os.DirFS(step1)))
	sf := filepath.Join(bad, "critic", "optim_shard_1_of_2.safetensors")
	fb, err := os.ReadFile(sf)
	require.NoError(t, err)
	fb[len(fb)-1] ^= 1
	require.NoError(t, os.WriteFile(sf, fb, 0o644))
	require.ErrorContains(t, VerifyCheckpoint(bad), "critic/optim_shard_1_of_2.safetensors")
	// the same checkpoint twice: resumed by 3 ranks and by one process
	dir3 := t.TempDir()
	require.NoError(t, os.CopyFS(dir3, os.DirFS(dir2)))
	res := runRanks(t, 3, 3, dir3, 0)
	sameDP(t, "resumed on 3 ranks: actor", wantA, res.Actor)
	for i, st := range res.Steps {
		if st > 1 {
			sameMetricsDP(t, comparable(log.byStep(st)), res.Metrics[i], st)
		}
	}
	m1 := newModels(1234) // restored from the checkpoint
	defer m1.Close()
	tr := newTestTrainer(t, dpConfig(dir2, 3), m1, seededBanditProxy(t), &recLogger{})
	_, err = tr.Fit(context.Background())
	require.NoError(t, err)
	got, err := params(m1.actor.Trainable())
	require.NoError(t, err)
	sameDP(t, "resumed in one process: actor", wantA, got)
}
