package starpo

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"ragen/collapse"
	"ragen/env"
	"ragen/filter"
	"ragen/internal/pyrand"
	"ragen/ragen"
	"ragen/starpo/algo"
	"ragen/torch"
)

// smallConfig is a CPU-sized run: 2 groups × 4 bandit envs, mini-batches of
// 4 rows in micro-batches of 2.
func smallConfig(dir string) Config {
	c := DefaultConfig()
	c.ESManager.Train = EnvSetConfig{EnvGroups: 2, GroupSize: 4}
	c.ActorRolloutRef.Actor.PPOMiniBatchSize = 4
	c.ActorRolloutRef.Actor.PPOMicroBatchSizePerGPU = 2
	c.ActorRolloutRef.Actor.Optim.LR = 1e-2
	c.ActorRolloutRef.Rollout.LogProbMicroBatchSizePerGPU = 4
	c.Critic.PPOMiniBatchSize = 4
	c.Critic.PPOMicroBatchSizePerGPU = 2
	c.Critic.Optim.LR = 1e-2
	c.Trainer.TotalTrainingSteps = 3
	c.Trainer.TestFreq = 2
	c.Trainer.SaveFreq = 0
	c.Trainer.DefaultLocalDir = dir
	c.Trainer.ResumeMode = ResumeDisable
	return c
}

type models struct {
	actor, ref *tinyLM
	critic     *tinyCritic
}

func newModels(seed uint64) *models {
	return &models{actor: newTinyLM(seed, tinyVocab, 8), ref: newTinyLM(99, tinyVocab, 8), critic: newTinyCritic(seed+1, tinyVocab, 8)}
}

func (m *models) Close() { m.actor.Close(); m.ref.Close(); m.critic.Close() }

func snapshot(t *testing.T, ps []*torch.Tensor) [][]float64 {
	t.Helper()
	var out [][]float64
	for _, p := range ps {
		v, err := torch.Data[float64](p)
		require.NoError(t, err)
		out = append(out, v)
	}
	return out
}

func newTestTrainer(t *testing.T, cfg Config, m *models, proxy *ragen.AgentProxy, log Logger) *Trainer {
	t.Helper()
	tr, err := NewTrainer(cfg, Deps{Actor: m.actor, Critic: m.critic, Ref: m.ref, Rollout: proxy.RolloutWith,
		Filter: filter.DefaultConfig(), Logger: log})
	require.NoError(t, err)
	t.Cleanup(tr.Close)
	return tr
}

// A few GAE steps on the real Bandit env: every loss is finite and every
// trained parameter (actor and critic) moved.
func TestSmokeBanditGAE(t *testing.T) {
	m := newModels(1)
	defer m.Close()
	cfg := smallConfig(t.TempDir())
	cfg.ActorRolloutRef.Actor.UseKLLoss = true
	cfg.ActorRolloutRef.Actor.KLLossCoef = 0.01
	cfg.ActorRolloutRef.Actor.KLLossType = "low_var_kl"
	before := snapshot(t, m.actor.Trainable())
	cbefore := snapshot(t, m.critic.Trainable())
	log := &recLogger{}
	live := torch.Live()
	tr := newTestTrainer(t, cfg, m, banditProxy(t, 2, 4, 4), log)
	stop, err := tr.Fit(context.Background())
	require.NoError(t, err)
	assert.Equal(t, StopFinished, stop)
	tr.Close()
	assert.Equal(t, live, torch.Live(), "tensors leaked by a training run")
	assert.Equal(t, []int{0, 1, 2, 3}, log.steps)
	for step := 1; step <= 3; step++ {
		met := log.byStep(step)
		for _, k := range []string{algo.MetricPGLoss, algo.MetricVFLoss, algo.MetricEntropy, algo.MetricKLLoss,
			MetricActorGradNorm, MetricCriticGradNorm, MetricRefLogProb, "critic/advantages/mean", "timing_s/update_actor"} {
			v, ok := met[k]
			if assert.True(t, ok, "step %d: %s missing", step, k) {
				assert.False(t, math.IsNaN(v) || math.IsInf(v, 0), "step %d: %s = %v", step, k, v)
			}
		}
		assert.Equal(t, 8.0, met[MetricBatchSize])
		assert.Equal(t, 2.0, met[MetricNumMiniBatches])
		// Logged on every non-empty step (0 here), as upstream.
		assert.Equal(t, 0.0, met[MetricGAOnly], "step %d", step)
		assert.Contains(t, met, "train/Bandit/success")
		for _, k := range []string{MetricTimingTrainStep, MetricTimingEvalStep, MetricTimingTrainTotal, MetricTimingEvalTotal,
			MetricTimingCollapseTotal, MetricTimingCollapseFirstTotal, MetricTimingCollapseMultiTotal, MetricTimingTotal,
			"timing_s/collapse_metrics", "timing_s/step"} {
			assert.Contains(t, met, k, "step %d", step)
		}
		// train_step = step − testing − save_checkpoint − collapse_metrics.
		assert.InDelta(t, met["timing_s/step"]-met["timing_s/testing"]-met["timing_s/collapse_metrics"], met[MetricTimingTrainStep], 1e-9)
		assert.Equal(t, met["timing_s/testing"], met[MetricTimingEvalStep])
	}
	assert.NotContains(t, log.byStep(1), MetricActorLR, "RAGEN's actor worker logs no actor/lr")
	assert.Contains(t, log.byStep(2), "val-env/Bandit/success")
	assert.Contains(t, log.byStep(0), "val-core/unknown/reward/mean@4")
	after := snapshot(t, m.actor.Trainable())
	for i := range before {
		assert.NotEqual(t, before[i], after[i], "actor parameter %d did not move", i)
	}
	cafter := snapshot(t, m.critic.Trainable())
	for i := range cbefore {
		assert.NotEqual(t, cbefore[i], cafter[i], "critic parameter %d did not move", i)
	}
}

// GRPO without a critic, with dynamic micro-batches by token budget.
func TestSmokeBanditGRPODynamicBsz(t *testing.T) {
	m := newModels(2)
	defer m.Close()
	cfg := smallConfig(t.TempDir())
	cfg.Algorithm.AdvEstimator = algo.EstGRPO
	cfg.ActorRolloutRef.Actor.UseDynamicBsz = true
	cfg.ActorRolloutRef.Actor.PPOMaxTokenLenPerGPU = 4000
	cfg.ActorRolloutRef.Actor.LossAggMode = algo.SeqMeanTokenMean
	cfg.Trainer.TestFreq = 0
	cfg.Trainer.ValBeforeTrain = false
	log := &recLogger{}
	before := snapshot(t, m.actor.Trainable())
	tr, err := NewTrainer(cfg, Deps{Actor: m.actor, Rollout: banditProxy(t, 2, 4, 2).RolloutWith, Filter: filter.DefaultConfig(), Logger: log})
	require.NoError(t, err)
	defer tr.Close()
	_, err = tr.Fit(context.Background())
	require.NoError(t, err)
	require.Len(t, log.metrics, 3)
	assert.NotContains(t, log.metrics[0], algo.MetricVFLoss)
	assert.NotContains(t, log.metrics[0], MetricRefLogProb) // no reference given
	after := snapshot(t, m.actor.Trainable())
	for i := range before {
		assert.NotEqual(t, before[i], after[i], "actor parameter %d did not move", i)
	}
}

// comparable drops the wall-clock metrics.
func comparable(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		if strings.HasPrefix(k, "timing_") || strings.HasPrefix(k, "perf/") {
			continue
		}
		out[k] = v
	}
	return out
}

// A run killed after step 2 and resumed from its checkpoint logs exactly the
// metrics of an uninterrupted run (cosine LR with warm-up, critic, KL loss).
func TestResumeEqualsUninterrupted(t *testing.T) {
	const total = 4
	cfgFor := func(dir string) Config {
		c := smallConfig(dir)
		c.Trainer.TotalTrainingSteps = total
		c.Trainer.SaveFreq = 1
		c.Trainer.ResumeMode = ResumeAuto
		c.ActorRolloutRef.Actor.UseKLLoss = true
		c.ActorRolloutRef.Actor.KLLossCoef = 0.05
		c.ActorRolloutRef.Actor.Optim.WarmupStyle = WarmupCosine
		c.ActorRolloutRef.Actor.Optim.LRWarmupStepsRatio = 0.5
		c.ActorRolloutRef.Actor.Optim.MinLRRatio = 0.1
		return c
	}
	// Uninterrupted.
	full := &recLogger{}
	m1 := newModels(7)
	defer m1.Close()
	tr1 := newTestTrainer(t, cfgFor(t.TempDir()), m1, banditProxy(t, 2, 4, 2), full)
	_, err := tr1.Fit(context.Background())
	require.NoError(t, err)

	// Killed after step 2 (the context is cancelled while logging step 2).
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	part := &recLogger{onLog: func(step int) {
		if step == 2 {
			cancel()
		}
	}}
	m2 := newModels(7)
	defer m2.Close()
	tr2 := newTestTrainer(t, cfgFor(dir), m2, banditProxy(t, 2, 4, 2), part)
	_, err = tr2.Fit(ctx)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 2, tr2.Step())

	// Resumed with differently initialised models: the checkpoint restores them.
	rest := &recLogger{}
	m3 := newModels(1234)
	defer m3.Close()
	tr3 := newTestTrainer(t, cfgFor(dir), m3, banditProxy(t, 2, 4, 2), rest)
	_, err = tr3.Fit(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []int{2, 3, 4}, rest.steps) // val_before_train at the resumed step, then 3, 4
	for step := 1; step <= total; step++ {
		want := comparable(full.byStep(step))
		var got map[string]float64
		if step <= 2 {
			got = comparable(part.byStep(step))
		} else {
			got = comparable(rest.byStep(step))
		}
		require.NotEmpty(t, want)
		assertSameMetrics(t, want, got, step)
	}
	// BLAS kernels may round differently with another memory alignment, so
	// parameters agree to the last bits rather than bit for bit.
	assertSameParams(t, snapshot(t, m1.actor.Trainable()), snapshot(t, m3.actor.Trainable()))
	assertSameParams(t, snapshot(t, m1.critic.Trainable()), snapshot(t, m3.critic.Trainable()))
	steps, err := listSteps(dir)
	require.NoError(t, err)
	assert.Equal(t, []int{4}, steps, "max_actor_ckpt_to_keep=1 keeps only the newest")
}

// A filter that keeps nothing skips the update and logs the empty step;
// rollout_filter_empty_stop_steps consecutive empty steps stop training.
func TestEmptyFilterSkipsAndStops(t *testing.T) {
	m := newModels(3)
	defer m.Close()
	cfg := smallConfig(t.TempDir())
	cfg.Trainer.TotalTrainingSteps = 10
	cfg.Trainer.ValBeforeTrain = false
	cfg.ActorRolloutRef.Rollout.EmptyStopSteps = 2
	// Every episode scores 0, so every group has reward std 0; with
	// include_zero=false the filter drops all groups.
	fc := filter.DefaultConfig()
	fc.Value, fc.IncludeZero = 0.9, false
	proxy := banditProxy(t, 2, 4, 2)
	rollout := func(ctx context.Context, mode env.Mode, opt ragen.RolloutOptions) (*ragen.Batch, error) {
		b, err := proxy.RolloutWith(ctx, mode, opt)
		if err != nil {
			return nil, err
		}
		for i := range b.RMScores {
			clear(b.RMScores[i])
			clear(b.OriginalRMScores[i])
		}
		return b, nil
	}
	before := snapshot(t, m.actor.Trainable())
	log := &recLogger{}
	tr, err := NewTrainer(cfg, Deps{Actor: m.actor, Critic: m.critic, Rollout: rollout, Filter: fc, Logger: log})
	require.NoError(t, err)
	defer tr.Close()
	stop, err := tr.Fit(context.Background())
	require.NoError(t, err)
	assert.Equal(t, StopEmptyFilteredSteps, stop)
	require.Equal(t, []int{1, 2}, log.steps)
	assert.Equal(t, 1.0, log.metrics[0][MetricEmptyAfterFilter])
	assert.Equal(t, 1.0, log.metrics[0][MetricConsecutiveEmpty])
	assert.Equal(t, 2.0, log.metrics[1][MetricConsecutiveEmpty])
	assert.Equal(t, 1.0, log.metrics[1][MetricEarlyEmpty])
	assert.NotContains(t, log.metrics[0], algo.MetricPGLoss)
	// Upstream logs only collapse/filter metrics and the three empty-step
	// keys on an empty step: no train/ copies of the rollout metrics, no
	// timing.
	for _, met := range log.metrics {
		for k := range met {
			assert.False(t, strings.HasPrefix(k, "timing_s/"), "empty step logged %s", k)
			if strings.HasPrefix(k, "train/") {
				assert.Equal(t, MetricRolloutAttempts, k, "empty step logged %s", k)
			}
		}
	}
	assert.Equal(t, before, snapshot(t, m.actor.Trainable()))
}

// A batch whose loss mask is all zero skips both updates (logged), no crash.
func TestNoTrainableTokensSkips(t *testing.T) {
	m := newModels(4)
	defer m.Close()
	cfg := smallConfig(t.TempDir())
	cfg.Trainer.TotalTrainingSteps = 1
	cfg.Trainer.ValBeforeTrain = false
	cfg.Trainer.TestFreq = 0
	proxy := banditProxy(t, 2, 4, 2)
	rollout := func(ctx context.Context, mode env.Mode, opt ragen.RolloutOptions) (*ragen.Batch, error) {
		b, err := proxy.RolloutWith(ctx, mode, opt)
		if err != nil {
			return nil, err
		}
		for _, row := range b.LossMask {
			clear(row)
		}
		return b, nil
	}
	before := snapshot(t, m.actor.Trainable())
	log := &recLogger{}
	tr, err := NewTrainer(cfg, Deps{Actor: m.actor, Critic: m.critic, Rollout: rollout, Filter: filter.DefaultConfig(), Logger: log})
	require.NoError(t, err)
	defer tr.Close()
	_, err = tr.Fit(context.Background())
	require.NoError(t, err)
	require.Len(t, log.metrics, 1)
	assert.Equal(t, 1.0, log.metrics[0][MetricSkippedUpdate])
	assert.Equal(t, before, snapshot(t, m.actor.Trainable()))
}

func TestNewTrainerErrors(t *testing.T) {
	m := newModels(5)
	defer m.Close()
	cfg := smallConfig(t.TempDir())
	_, err := NewTrainer(cfg, Deps{Actor: m.actor})
	require.Error(t, err)
	assert.ErrorContains(t, err, "deps.Rollout is nil")
	assert.ErrorContains(t, err, "deps.Critic is nil")
	cfg.ActorRolloutRef.Actor.PPOMiniBatchSize = 3
	_, err = NewTrainer(cfg, Deps{Actor: m.actor, Critic: m.critic, Rollout: func(context.Context, env.Mode, ragen.RolloutOptions) (*ragen.Batch, error) {
		return nil, errors.New("unused")
	}})
	assert.ErrorContains(t, err, "actor_rollout_ref.actor.ppo_mini_batch_size: 3 is not a multiple")
}

// assertSameMetrics requires the same keys and values equal to 1e-12
// relative (NaN equals NaN).
func assertSameMetrics(t *testing.T, want, got map[string]float64, step int) {
	t.Helper()
	assert.ElementsMatch(t, sortedKeys(want), sortedKeys(got), "step %d: metric names", step)
	for k, w := range want {
		g := got[k]
		if math.IsNaN(w) {
			assert.True(t, math.IsNaN(g), "step %d: %s = %v, want NaN", step, k, g)
			continue
		}
		assert.InDelta(t, w, g, 1e-12*math.Max(1, math.Abs(w)), "step %d: %s", step, k)
	}
}

func assertSameParams(t *testing.T, want, got [][]float64) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.Len(t, got[i], len(want[i]))
		for j := range want[i] {
			if math.Abs(want[i][j]-got[i][j]) > 1e-12 {
				t.Fatalf("parameter %d[%d]: %v vs %v", i, j, want[i][j], got[i][j])
			}
		}
	}
}

// Gradient analysis only: per-bucket gradient norms of the task and entropy
// terms are logged, and neither model takes a step.
func TestGradientAnalysisOnly(t *testing.T) {
	m := newModels(6)
	defer m.Close()
	cfg := smallConfig(t.TempDir())
	cfg.Trainer.TotalTrainingSteps = 1
	cfg.Trainer.ValBeforeTrain = false
	cfg.Trainer.TestFreq = 0
	cfg.Trainer.GradientAnalysisMode = true
	cfg.Trainer.GradientAnalysisEvery = 1
	cfg.Trainer.GradientAnalysisOnly = true
	before := snapshot(t, m.actor.Trainable())
	cbefore := snapshot(t, m.critic.Trainable())
	log := &recLogger{}
	tr := newTestTrainer(t, cfg, m, banditProxy(t, 2, 4, 2), log)
	_, err := tr.Fit(context.Background())
	require.NoError(t, err)
	require.Len(t, log.metrics, 1)
	met := log.metrics[0]
	for _, k := range []string{"grad_norm/all/task", "grad_norm/all/entropy", "grad_norm/all/sample_count",
		"grad_norm/all/per_sample/task", "grad_norm/all/loss/policy", "grad_norm/all/loss/entropy", "grad_norm/all/loss/total", MetricGAOnly, MetricActorSkippedGA, MetricCriticSkippedGA} {
		v, ok := met[k]
		if assert.True(t, ok, "%s missing", k) {
			assert.False(t, math.IsNaN(v), k)
		}
	}
	assert.Equal(t, 8.0, met["grad_norm/all/sample_count"])
	assert.Greater(t, met["grad_norm/all/task"], 0.0)
	// total = policy + entropy term per micro-batch; upstream's analysis
	// pass logs no pg_clipfrac etc. (those come from a real update only).
	assert.InDelta(t, met["grad_norm/all/loss/policy"]+met["grad_norm/all/loss/entropy"], met["grad_norm/all/loss/total"], 1e-12)
	assert.NotContains(t, met, "grad_norm/all/actor/pg_clipfrac")
	assert.Equal(t, 1.0, met[filter.MetricGAUsesTrainingBatch])
	assert.NotContains(t, met, algo.MetricVFLoss)
	assert.Equal(t, before, snapshot(t, m.actor.Trainable()))
	assert.Equal(t, cbefore, snapshot(t, m.critic.Trainable()))
}

// Gradient analysis runs on steps where (step−1) % every == 0 (1, 3, … for
// every = 2); exit_after_gradient_analysis stops right after it, before the
// actor update, and logs trainer/exited_after_gradient_analysis.
func TestGradientAnalysisCadenceAndExit(t *testing.T) {
	m := newModels(6)
	defer m.Close()
	cfg := smallConfig(t.TempDir())
	cfg.Trainer.TotalTrainingSteps = 3
	cfg.Trainer.ValBeforeTrain = false
	cfg.Trainer.TestFreq = 0
	cfg.Trainer.GradientAnalysisMode = true
	cfg.Trainer.GradientAnalysisEvery = 2
	log := &recLogger{}
	tr := newTestTrainer(t, cfg, m, banditProxy(t, 2, 4, 2), log)
	stop, err := tr.Fit(context.Background())
	require.NoError(t, err)
	assert.Equal(t, StopFinished, stop)
	require.Len(t, log.metrics, 3)
	assert.Contains(t, log.byStep(1), "grad_norm/all/task")
	assert.NotContains(t, log.byStep(2), "grad_norm/all/task")
	assert.Contains(t, log.byStep(3), "grad_norm/all/task")
	assert.Contains(t, log.byStep(2), algo.MetricPGLoss)

	m2 := newModels(7)
	defer m2.Close()
	cfg.Trainer.ExitAfterGradientAnalysis = true
	cfg.Trainer.GradientAnalysisEvery = 1
	before := snapshot(t, m2.actor.Trainable())
	log2 := &recLogger{}
	tr2 := newTestTrainer(t, cfg, m2, banditProxy(t, 2, 4, 2), log2)
	stop, err = tr2.Fit(context.Background())
	require.NoError(t, err)
	assert.Equal(t, StopGradientAnalysis, stop)
	require.Len(t, log2.metrics, 1)
	assert.Equal(t, 1.0, log2.metrics[0][MetricExitedAfterGA])
	assert.NotContains(t, log2.metrics[0], algo.MetricPGLoss)
	assert.Equal(t, before, snapshot(t, m2.actor.Trainable()))
}

// val_only stops after the val_before_train validation; without
// val_before_train upstream never reaches the val_only check and trains.
func TestValOnlyNeedsValBeforeTrain(t *testing.T) {
	m := newModels(9)
	defer m.Close()
	cfg := smallConfig(t.TempDir())
	cfg.Trainer.TotalTrainingSteps = 1
	cfg.Trainer.TestFreq = 0
	cfg.Trainer.ValOnly = true
	log := &recLogger{}
	stop, err := newTestTrainer(t, cfg, m, banditProxy(t, 2, 4, 2), log).Fit(context.Background())
	require.NoError(t, err)
	assert.Equal(t, StopValOnly, stop)
	assert.Equal(t, []int{0}, log.steps)

	cfg.Trainer.ValBeforeTrain = false
	log = &recLogger{}
	stop, err = newTestTrainer(t, cfg, m, banditProxy(t, 2, 4, 2), log).Fit(context.Background())
	require.NoError(t, err)
	assert.Equal(t, StopFinished, stop)
	assert.Equal(t, []int{1}, log.steps)
}

// Collapse metrics are computed on the unfiltered batch at step 1 and join
// the step's metrics; their time is excluded from timing_s/train_step.
func TestCollapseHook(t *testing.T) {
	m := newModels(8)
	defer m.Close()
	cfg := smallConfig(t.TempDir())
	cfg.Trainer.TotalTrainingSteps = 2
	cfg.Trainer.ValBeforeTrain = false
	cfg.Trainer.TestFreq = 0
	cc := collapse.DefaultConfig()
	cc.ComputeFreq = 5
	cc.ContextWindowMode = "full"
	rng, err := pyrand.NewLegacy(1)
	require.NoError(t, err)
	det, err := collapse.NewDetector(cc, rng)
	require.NoError(t, err)
	calls := 0
	scorer := collapse.ScorerFunc(func(ctx context.Context, pairs []collapse.Pair) ([]collapse.Score, error) {
		calls++
		out := make([]collapse.Score, len(pairs))
		for i, p := range pairs { // a deterministic stand-in: longer prompts score higher
			out[i] = collapse.Score{SumLogProb: -float64(len(p.Reasoning)) + 1e-3*float64(len(p.Prompt)), Tokens: len(p.Reasoning)}
		}
		return out, nil
	})
	log := &recLogger{}
	tr, err := NewTrainer(cfg, Deps{Actor: m.actor, Critic: m.critic, Rollout: banditProxy(t, 2, 4, 2).RolloutWith,
		Filter: filter.DefaultConfig(), Collapse: det, Scorer: scorer, Logger: log})
	require.NoError(t, err)
	defer tr.Close()
	_, err = tr.Fit(context.Background())
	require.NoError(t, err)
	require.Len(t, log.metrics, 2)
	assert.Positive(t, calls)
	found := false
	for k := range log.metrics[0] {
		if strings.HasPrefix(k, "collapse") {
			found = true
		}
	}
	assert.True(t, found, "no collapse metric at step 1")
	assert.Contains(t, log.metrics[0], "timing_s/collapse_metrics")
	for k := range log.metrics[1] {
		assert.False(t, strings.HasPrefix(k, "collapse"), "step 2 computed %s (compute_freq 5)", k)
	}
}

// counterState is extra checkpointed state.
type counterState struct{ n int }

func (c *counterState) MarshalState() ([]byte, error) { return []byte(strconv.Itoa(c.n)), nil }
func (c *counterState) UnmarshalState(b []byte) error {
	n, err := strconv.Atoi(string(b))
	c.n = n
	return err
}

// Extra state round-trips through a checkpoint; resume_path picks a folder;
// a bad folder name is an error naming it.
func TestCheckpointExtraStateAndResumePath(t *testing.T) {
	m := newModels(9)
	defer m.Close()
	dir := t.TempDir()
	cfg := smallConfig(dir)
	cfg.Trainer.TotalTrainingSteps = 2
	cfg.Trainer.SaveFreq = 1
	keep := 0
	cfg.Trainer.MaxActorCkptToKeep, cfg.Trainer.MaxCriticCkptToKeep = &keep, &keep // keep all
	cfg.Trainer.ValBeforeTrain = false
	cfg.Trainer.TestFreq = 0
	st := &counterState{n: 41}
	proxy := banditProxy(t, 2, 4, 2)
	tr, err := NewTrainer(cfg, Deps{Actor: m.actor, Critic: m.critic, Rollout: proxy.RolloutWith, Filter: filter.DefaultConfig(),
		State: map[string]Stateful{"counter": st}})
	require.NoError(t, err)
	defer tr.Close()
	_, err = tr.Fit(context.Background())
	require.NoError(t, err)
	steps, err := listSteps(dir)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2}, steps)
	tracker, err := os.ReadFile(filepath.Join(dir, TrackerFile))
	require.NoError(t, err)
	assert.Equal(t, "2", string(tracker))

	st2 := &counterState{}
	cfg.Trainer.ResumeMode = ResumePath
	cfg.Trainer.ResumeFromPath = tr.StepDir(1)
	tr2, err := NewTrainer(cfg, Deps{Actor: m.actor, Critic: m.critic, Rollout: proxy.RolloutWith, Filter: filter.DefaultConfig(),
		State: map[string]Stateful{"counter": st2}})
	require.NoError(t, err)
	defer tr2.Close()
	require.NoError(t, tr2.resume())
	assert.Equal(t, 1, tr2.Step())
	assert.Equal(t, 41, st2.n)

	// Fit tells a Resumer logger the step it resumed from (the logger was
	// opened before the checkpoint was chosen)
	cfg.Trainer.TotalTrainingSteps = 1
	rl := &resumeLogger{resumed: -1}
	trR, err := NewTrainer(cfg, Deps{Actor: m.actor, Critic: m.critic, Rollout: proxy.RolloutWith, Filter: filter.DefaultConfig(), Logger: rl})
	require.NoError(t, err)
	defer trR.Close()
	_, err = trR.Fit(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1, rl.resumed)
	cfg.Trainer.TotalTrainingSteps = 2

	cfg.Trainer.ResumeFromPath = dir
	tr3, err := NewTrainer(cfg, Deps{Actor: m.actor, Critic: m.critic, Rollout: proxy.RolloutWith, Filter: filter.DefaultConfig()})
	require.NoError(t, err)
	defer tr3.Close()
	assert.ErrorContains(t, tr3.resume(), "must name a global_step_N folder")
}

// KL in reward (upstream crashes; we run the intended penalty) with GRPO.
func TestKLInRewardGRPO(t *testing.T) {
	m := newModels(10)
	defer m.Close()
	cfg := smallConfig(t.TempDir())
	cfg.Algorithm.AdvEstimator = algo.EstGRPO
	cfg.Algorithm.UseKLInReward = true
	cfg.Algorithm.KLCtrl = KLCtrlConfig{Type: algo.KLCtrlAdaptive, KLCoef: 0.1, TargetKL: 0.1, Horizon: 100}
	cfg.Trainer.TotalTrainingSteps = 2
	cfg.Trainer.ValBeforeTrain = false
	cfg.Trainer.TestFreq = 0
	log := &recLogger{}
	tr, err := NewTrainer(cfg, Deps{Actor: m.actor, Ref: m.ref, Rollout: banditProxy(t, 2, 4, 2).RolloutWith, Filter: filter.DefaultConfig(), Logger: log})
	require.NoError(t, err)
	defer tr.Close()
	_, err = tr.Fit(context.Background())
	require.NoError(t, err)
	require.Len(t, log.metrics, 2)
	assert.Equal(t, 0.1, log.metrics[0][algo.MetricRewardKLPenaltyCoeff])
	assert.NotEqual(t, 0.1, log.metrics[1][algo.MetricRewardKLPenaltyCoeff], "the adaptive controller moved β")
	assert.Contains(t, log.metrics[0], algo.MetricRewardKLPenalty)
}

// Malformed rollouts are errors that name the problem, never panics.
func TestMalformedRolloutIsAnError(t *testing.T) {
	m := newModels(12)
	defer m.Close()
	cfg := smallConfig(t.TempDir())
	cfg.Trainer.ValBeforeTrain = false
	for name, tc := range map[string]struct {
		batch *ragen.Batch
		want  string
	}{
		"nil":    {nil, "rollout returned no batch"},
		"ragged": {&ragen.Batch{InputIDs: [][]int{{1, 2, 3}, {1, 2}}, AttentionMask: [][]int{{1, 1, 1}, {1, 1}}, PositionIDs: [][]int{{0, 1, 2}, {0, 1}}, LossMask: [][]int{{1, 1}, {1}}, RMScores: [][]float32{{0, 1}, {1}}, GroupIDs: []int{0, 1}}, "batch row 1"},
		"short":  {&ragen.Batch{InputIDs: [][]int{{1}}, AttentionMask: [][]int{{1}}, PositionIDs: [][]int{{0}}, LossMask: [][]int{{}}, RMScores: [][]float32{{}}, GroupIDs: []int{0}}, "need at least 2"},
		"groups": {&ragen.Batch{InputIDs: [][]int{{1, 2}}, AttentionMask: [][]int{{1, 1}}, PositionIDs: [][]int{{0, 1}}, LossMask: [][]int{{1}}, RMScores: [][]float32{{1}}}, "group_ids"},
	} {
		t.Run(name, func(t *testing.T) {
			rollout := func(context.Context, env.Mode, ragen.RolloutOptions) (*ragen.Batch, error) { return tc.batch, nil }
			tr, err := NewTrainer(cfg, Deps{Actor: m.actor, Critic: m.critic, Rollout: rollout, Filter: filter.DefaultConfig()})
			require.NoError(t, err)
			defer tr.Close()
			_, err = tr.Fit(context.Background())
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// poisonLM returns NaN-laden log-probs once poisonAfter calls have been
// made, so the update sees a non-finite gradient norm.
type poisonLM struct {
	*tinyLM
	calls, poisonAfter int
}

func (p *poisonLM) TokenLogProbs(s *torch.Scope, ids, pos, attn *torch.Tensor, temp float64, withEntropy bool) (*torch.Tensor, *torch.Tensor) {
	lp, h := p.tinyLM.TokenLogProbs(s, ids, pos, attn, temp, withEntropy)
	p.calls++
	if p.calls > p.poisonAfter {
		lp = s.Add(lp, s.MulS(s.Sum(p.emb, false), math.NaN()))
	}
	return lp, h
}

// A non-finite gradient norm skips the optimizer step (veRL) and is logged.
func TestNonFiniteGradNormSkipsStep(t *testing.T) {
	m := newModels(13)
	defer m.Close()
	cfg := smallConfig(t.TempDir())
	cfg.Algorithm.AdvEstimator = algo.EstGRPO
	cfg.Trainer.TotalTrainingSteps = 1
	cfg.Trainer.ValBeforeTrain = false
	cfg.Trainer.TestFreq = 0
	actor := &poisonLM{tinyLM: m.actor, poisonAfter: 2} // 8 rows / log-prob micro 4 = 2 clean calls
	before := snapshot(t, m.actor.Trainable())
	log := &recLogger{}
	tr, err := NewTrainer(cfg, Deps{Actor: actor, Rollout: banditProxy(t, 2, 4, 2).RolloutWith, Filter: filter.DefaultConfig(), Logger: log})
	require.NoError(t, err)
	defer tr.Close()
	_, err = tr.Fit(context.Background())
	require.NoError(t, err)
	require.Len(t, log.metrics, 1)
	assert.True(t, math.IsNaN(log.metrics[0][MetricActorGradNorm]))
	assert.Equal(t, 1.0, log.metrics[0][MetricGradNonFinite])
	assert.Equal(t, before, snapshot(t, m.actor.Trainable()))
	assert.Equal(t, int64(0), tr.actorOpt.StepCount())
}

// ragen_global_token_mean: the accumulated actor gradient of a mini-batch is
// the token-mean over the whole mini-batch whatever the micro-batch size
// (grad_norm with micro 1 equals micro = mini). Upstream's default
// aggregates every micro-batch on its own, so micro 1 differs.
func TestGlobalTokenMeanOption(t *testing.T) {
	gradNorm := func(micro int, global bool) float64 {
		m := newModels(11)
		defer m.Close()
		cfg := smallConfig(t.TempDir())
		cfg.Trainer.TotalTrainingSteps = 1
		cfg.Trainer.ValBeforeTrain = false
		cfg.Trainer.TestFreq = 0
		cfg.Algorithm.AdvEstimator = algo.EstGRPO
		cfg.ActorRolloutRef.Actor.PPOMicroBatchSizePerGPU = micro
		cfg.GlobalTokenMean = global
		log := &recLogger{}
		_, err := newTestTrainer(t, cfg, m, banditProxy(t, 2, 4, 2), log).Fit(context.Background())
		require.NoError(t, err)
		require.Len(t, log.metrics, 1)
		return log.metrics[0][MetricActorGradNorm]
	}
	whole := gradNorm(4, false)
	assert.InDelta(t, whole, gradNorm(4, true), 1e-9*whole)
	assert.InDelta(t, whole, gradNorm(1, true), 1e-6*whole)
	assert.Greater(t, math.Abs(gradNorm(1, false)-whole), 1e-4*whole, "upstream's per-micro-batch token-mean should differ")
}

// resumeLogger records the step Fit reports through Resumer.
type resumeLogger struct {
	recLogger
	resumed int
}

func (r *resumeLogger) Resumed(step int) error { r.resumed = step; return nil }

// ragen_fresh_val_seeds (overview quirk 5): each validation rollout gets
// seed.val + (step·validation_steps + i)·val env_groups; by default
// (upstream) seed.val every time.
func TestFreshValSeeds(t *testing.T) {
	m := newModels(12)
	defer m.Close()
	for _, fresh := range []bool{false, true} {
		cfg := smallConfig(t.TempDir())
		cfg.Trainer.TotalTrainingSteps = 2
		cfg.Trainer.TestFreq = 1
		cfg.Trainer.ValBeforeTrain = true
		cfg.Trainer.ValidationSteps = 2
		cfg.ESManager.Val = ragen.EnvSetConfig{EnvGroups: 3, GroupSize: 1}
		cfg.Seed.Val = 100
		cfg.FreshValSeeds = fresh
		proxy := banditProxy(t, 2, 4, 3)
		var seeds []int64
		rollout := func(ctx context.Context, mode env.Mode, opt ragen.RolloutOptions) (*ragen.Batch, error) {
			if mode == env.ModeVal {
				seeds = append(seeds, *opt.Seed)
			}
			return proxy.RolloutWith(ctx, mode, opt)
		}
		tr, err := NewTrainer(cfg, Deps{Actor: m.actor, Critic: m.critic, Rollout: rollout, Filter: filter.DefaultConfig()})
		require.NoError(t, err)
		_, err = tr.Fit(context.Background())
		tr.Close()
		require.NoError(t, err)
		want := []int64{100, 100, 100, 100, 100, 100} // steps 0, 1, 2; 2 rollouts each
		if fresh {
			want = []int64{100, 103, 106, 109, 112, 115}
		}
		assert.Equal(t, want, seeds, "fresh %v", fresh)
	}
}
