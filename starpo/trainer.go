package starpo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"time"

	"ragen/collapse"
	"ragen/env"
	"ragen/filter"
	"ragen/internal/pyrand"
	"ragen/ragen"
	"ragen/starpo/algo"
	"ragen/torch"
)

// LogProber computes per-token log-probabilities: logp[b,t] = log p(ids[b,t]
// | ids[b,<t]) with logits ÷ temperature (0 at t = 0), shape (B, L), and,
// when withEntropy, the entropy of that same distribution (B, L). The
// reference model implements it; failures are recorded on s.
type LogProber interface {
	TokenLogProbs(s *torch.Scope, ids, pos, attn *torch.Tensor, temperature float64, withEntropy bool) (logp, entropy *torch.Tensor)
}

// Actor is the trained policy model (llm.Model implements it).
type Actor interface {
	LogProber
	// Trainable returns the parameters the optimizer updates, in a fixed
	// order (checkpoints store them by index).
	Trainable() []*torch.Tensor
}

// Critic is the value model: Values returns v[b,t] = V(ids[b,≤t]) of shape
// (B, L); the value of response position j (token j+1) is v[:, j].
type Critic interface {
	Values(s *torch.Scope, ids, pos, attn *torch.Tensor) *torch.Tensor
	Trainable() []*torch.Tensor
}

// Saver writes a model as a Hugging Face folder (llm.Model implements it).
type Saver interface {
	Save(dir string) error
}

// Stateful is extra state a checkpoint carries (e.g. the sampling
// generator of the rollout policy), so that a resumed run continues as an
// uninterrupted one would.
type Stateful interface {
	MarshalState() ([]byte, error)
	UnmarshalState([]byte) error
}

// Logger receives the metrics of every step (the track package implements
// it: console, JSONL, W&B).
type Logger interface {
	Log(step int, metrics map[string]float64) error
	Close() error
}

// Resumer is an optional Logger method: after choosing the checkpoint to
// resume from (or none), Fit reports its step (0 for none), so a logger
// that keeps records across runs (track's JSONL and TensorBoard) drops
// those of later steps.
type Resumer interface {
	Resumed(step int) error
}

// RolloutFunc runs one rollout; (*ragen.AgentProxy).RolloutWith has this
// signature. The trainer passes an explicit seed for training rollouts
// (seed.train advanced by env_groups per step), so that it can checkpoint
// the schedule.
type RolloutFunc func(ctx context.Context, mode env.Mode, opt ragen.RolloutOptions) (*ragen.Batch, error)

// Deps are the trainer's collaborators.
type Deps struct {
	Actor  Actor     // required
	Critic Critic    // required iff cfg.CriticEnabled()
	Ref    LogProber // reference policy; nil: no reference log-probs, KL terms off
	// Rollout produces training and validation batches (required).
	Rollout RolloutFunc
	// Filter is the rollout filter configuration (NumGroups and GroupSize
	// are set from es_manager.train).
	Filter filter.Config
	// Collapse and Scorer compute the collapse diagnostics (optional).
	Collapse *collapse.Detector
	Scorer   collapse.Scorer
	// Logger receives every step's metrics (optional).
	Logger Logger
	// State is extra checkpointed state by name (optional).
	State map[string]Stateful
	// OnFilter, if set, receives the rollout filter's decision of every
	// training step (per-group rewards, reward std, selected groups) before
	// the update; an error stops training. ragen dash reads its export.
	OnFilter func(step int, res filter.Result) error
	// ActorLoss replaces the actor objective of every micro-batch
	// (optional; nil is DefaultActorLoss, RAGEN's PPO-clip objective).
	ActorLoss ActorLossFunc
}

// Metric names the trainer writes itself (upstream's keys).
const (
	MetricBatchSize          = "train/batch_size"
	MetricNumMiniBatches     = "train/num_mini_batches"
	MetricRolloutAttempts    = "train/rollout_attempts"
	MetricEmptyAfterFilter   = "rollout/empty_after_filter"
	MetricConsecutiveEmpty   = "rollout/consecutive_empty_after_filter_steps"
	MetricRefLogProb         = "rollout/ref_log_prob"
	MetricActorGradNorm      = "actor/grad_norm"
	MetricActorLR            = "actor/lr"
	MetricCriticGradNorm     = "critic/grad_norm"
	MetricCriticLR           = "critic/lr"
	MetricSkippedUpdate      = "train/skipped_update" // ragen: 1 when a batch had no trainable token
	MetricGradNonFinite      = "actor/grad_norm_nonfinite"
	MetricGAOnly             = "trainer/gradient_analysis_only"
	MetricCriticSkippedGA    = "critic/skipped_for_gradient_analysis_only"
	MetricActorSkippedGA     = "actor/skipped_for_gradient_analysis_only"
	MetricEarlyEmpty         = "early_stopped/empty_filtered_steps"
	MetricEarlyRewardVar     = "early_stopped/reward_variance_collapse"
	MetricEarlyLowValSuccess = "early_stopped/low_validation_success"
	MetricTotalTokens        = "perf/total_num_tokens"
	MetricTimePerStep        = "perf/time_per_step"
	MetricThroughput         = "perf/throughput"
	MetricTokensPerS         = "perf/tokens_per_s"
	MetricMFUActor           = "perf/mfu/actor"
	MetricMFUCritic          = "perf/mfu/critic"
	MetricExitedAfterGA      = "trainer/exited_after_gradient_analysis"

	// RAGEN's own timing keys (per step and running totals since Fit).
	MetricTimingTrainStep          = "timing_s/train_step"
	MetricTimingEvalStep           = "timing_s/eval_step"
	MetricTimingTrainTotal         = "timing_s/train_total"
	MetricTimingEvalTotal          = "timing_s/eval_total"
	MetricTimingCollapseTotal      = "timing_s/collapse_total"
	MetricTimingCollapseFirstTotal = "timing_s/collapse_first_turn_total"
	MetricTimingCollapseMultiTotal = "timing_s/collapse_multi_turn_total"
	MetricTimingTotal              = "timing_s/total"
)

// Trainer runs StarPO: rollout, filter, advantages, PPO updates,
// validation, checkpoints. It is used by one goroutine.
type Trainer struct {
	cfg  Config
	deps Deps
	dev  torch.Device

	actorOpt, criticOpt *torch.AdamW
	actorLR, criticLR   LRSchedule
	klCtrl              *algo.KLController

	st trainState // everything a checkpoint restores besides tensors

	actorParams, criticParams int64 // parameter counts (MFU)

	analysis *analysisSource // separate gradient-analysis rollout (analysis.go); nil: the training batch

	dp *dataParallel // data-parallel rank state (dist.go); nil in one process

	// totals are RAGEN's running timing sums (not checkpointed, as upstream).
	totals struct {
		start                                               time.Time
		train, eval, collapse, collapseFirst, collapseMulti float64
	}
}

// trainState is the Go-side state that checkpoints carry.
type trainState struct {
	Step             int            `json:"global_step"`      // last finished step
	SeedCounter      int64          `json:"train_seed_count"` // training rollouts' seed offset
	ConsecutiveEmpty int            `json:"consecutive_empty"`
	ActorSchedSteps  int            `json:"actor_scheduler_steps"`
	CriticSchedSteps int            `json:"critic_scheduler_steps"`
	KLCoef           jsonFloat      `json:"kl_coef"`
	RVBase           []jsonFloat    `json:"reward_std_base"`   // first 10 non-empty steps
	RVRecent         []jsonFloat    `json:"reward_std_recent"` // last 10 afterwards
	LowVal           map[string]int `json:"low_val_success_streak"`
}

// NewTrainer validates the configuration against the dependencies and
// creates the optimizers.
func NewTrainer(cfg Config, deps Deps) (*Trainer, error) {
	var errs []error
	if err := cfg.Validate(); err != nil {
		errs = append(errs, err)
	}
	if deps.Actor == nil {
		errs = append(errs, errors.New("deps.Actor is nil"))
	}
	if deps.Rollout == nil {
		errs = append(errs, errors.New("deps.Rollout is nil"))
	}
	if cfg.CriticEnabled() && deps.Critic == nil {
		errs = append(errs, fmt.Errorf("the critic is enabled (adv_estimator=%s, critic.enable=%v) but deps.Critic is nil", cfg.Algorithm.AdvEstimator, cfg.Critic.Enable))
	}
	if deps.Collapse != nil && deps.Scorer == nil {
		errs = append(errs, errors.New("deps.Collapse is set but deps.Scorer is nil"))
	}
	if cfg.Algorithm.UseKLInReward && deps.Ref == nil {
		errs = append(errs, errors.New("algorithm.use_kl_in_reward needs deps.Ref"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("starpo: %w", err)
	}
	// No reference model (use_ref=false or none given): the KL loss is off,
	// as upstream's Derive forces use_kl_loss=false.
	if deps.Ref == nil || !cfg.ActorRolloutRef.Actor.UseRef {
		cfg.ActorRolloutRef.Actor.UseRef = false
		cfg.ActorRolloutRef.Actor.UseKLLoss = false
		deps.Ref = nil
	}
	if !cfg.CriticEnabled() {
		deps.Critic = nil
	}
	fc := deps.Filter
	fc.NumGroups, fc.GroupSize = cfg.ESManager.Train.EnvGroups, cfg.ESManager.Train.GroupSize
	if err := fc.Validate(); err != nil {
		return nil, fmt.Errorf("starpo: filter: %w", err)
	}
	deps.Filter = fc
	t := &Trainer{cfg: cfg, deps: deps, st: trainState{LowVal: map[string]int{}}}
	params := deps.Actor.Trainable()
	if len(params) == 0 {
		return nil, errors.New("starpo: the actor has no trainable parameters")
	}
	t.dev = params[0].Device()
	for _, p := range params {
		t.actorParams += p.Numel()
	}
	a := cfg.ActorRolloutRef.Actor.Optim
	var err error
	if t.actorOpt, err = torch.NewAdamW(params, adamw(a)); err != nil {
		return nil, fmt.Errorf("starpo: actor optimizer: %w", err)
	}
	t.actorLR = NewLRSchedule(a, cfg.Trainer.TotalTrainingSteps)
	if deps.Critic != nil {
		cp := deps.Critic.Trainable()
		for _, p := range cp {
			t.criticParams += p.Numel()
		}
		if t.criticOpt, err = torch.NewAdamW(cp, adamw(cfg.Critic.Optim)); err != nil {
			t.actorOpt.Close()
			return nil, fmt.Errorf("starpo: critic optimizer: %w", err)
		}
		t.criticLR = NewLRSchedule(cfg.Critic.Optim, cfg.Trainer.TotalTrainingSteps)
	}
	if cfg.Algorithm.UseKLInReward {
		if t.klCtrl, err = algo.NewKLController(cfg.KLControlConfig()); err != nil {
			t.Close()
			return nil, fmt.Errorf("starpo: %w", err)
		}
	}
	return t, nil
}

func adamw(o OptimConfig) torch.AdamWConfig {
	c := torch.DefaultAdamW()
	c.LR, c.WeightDecay = o.LR, o.WeightDecay
	if len(o.Betas) == 2 {
		c.Beta1, c.Beta2 = o.Betas[0], o.Betas[1]
	}
	return c
}

// Close frees the optimizer state (not the models).
func (t *Trainer) Close() {
	if t.actorOpt != nil {
		t.actorOpt.Close()
		t.actorOpt = nil
	}
	if t.criticOpt != nil {
		t.criticOpt.Close()
		t.criticOpt = nil
	}
	t.dp.close()
}

// Step is the last finished training step (0 before training).
func (t *Trainer) Step() int { return t.st.Step }

// ErrEarlyStop is wrapped by nothing: Fit returns nil after an early stop;
// StopReason tells why it ended.
type StopReason string

// Reasons Fit returns.
const (
	StopFinished             StopReason = "finished"
	StopValOnly              StopReason = "val_only"
	StopEmptyFilteredSteps   StopReason = "empty_filtered_steps"
	StopRewardVariance       StopReason = "reward_variance_collapse"
	StopLowValidationSuccess StopReason = "low_validation_success"
	StopGradientAnalysis     StopReason = "exit_after_gradient_analysis"
)

// Fit runs training to total_training_steps (or an early stop) and returns
// why it ended. It resumes from a checkpoint as trainer.resume_mode says,
// validates before training when val_before_train, and logs every step.
func (t *Trainer) Fit(ctx context.Context) (StopReason, error) {
	if err := t.resume(); err != nil {
		return "", err
	}
	tr := t.cfg.Trainer
	if r, ok := t.deps.Logger.(Resumer); ok && tr.ResumeMode != ResumeDisable {
		// the logger opened before the checkpoint was chosen: it keeps only
		// the records up to the step resumed from
		if err := r.Resumed(t.st.Step); err != nil {
			return "", fmt.Errorf("starpo: logger: %w", err)
		}
	}
	t.totals.start = time.Now()
	// Upstream checks val_only only after a val_before_train validation;
	// with val_before_train false it trains normally.
	if tr.ValBeforeTrain && tr.ValidationSteps > 0 {
		met, err := t.Validate(ctx)
		if err != nil {
			return "", err
		}
		if err := t.log(t.st.Step, met); err != nil {
			return "", err
		}
		if tr.ValOnly {
			return StopValOnly, nil
		}
	}
	for t.st.Step < tr.TotalTrainingSteps {
		if err := ctx.Err(); err != nil {
			return "", fmt.Errorf("starpo: step %d: %w", t.st.Step+1, err)
		}
		met, stop, err := t.trainStep(ctx, t.st.Step+1)
		if err != nil {
			return "", fmt.Errorf("starpo: step %d: %w", t.st.Step+1, err)
		}
		if err := t.log(t.st.Step, met); err != nil {
			return "", err
		}
		if stop != "" {
			return stop, nil
		}
	}
	return StopFinished, nil
}

func (t *Trainer) log(step int, met map[string]float64) error {
	if t.deps.Logger == nil {
		return nil
	}
	if err := t.deps.Logger.Log(step, met); err != nil {
		return fmt.Errorf("starpo: log step %d: %w", step, err)
	}
	return nil
}

// timer accumulates timing_s/* per stage.
type timer map[string]float64

func (tm timer) do(name string, f func() error) error {
	start := time.Now()
	err := f()
	tm[name] += time.Since(start).Seconds()
	return err
}

// trainStep runs one step (starpo.md §2) and returns its metrics; a non-empty
// StopReason ends training after this step. The state's Step advances to
// step when it returns without error.
func (t *Trainer) trainStep(ctx context.Context, step int) (map[string]float64, StopReason, error) {
	cfg := t.cfg
	met := map[string]float64{}
	tm := timer{}
	stepStart := time.Now()

	// 1–2. rollout with the next training seed.
	collapseOn := t.deps.Collapse != nil && t.deps.Collapse.ShouldCompute(step)
	seed := cfg.Seed.Train + t.st.SeedCounter
	var batch *ragen.Batch
	if err := tm.do("gen", func() (err error) {
		batch, err = t.deps.Rollout(ctx, env.ModeTrain, ragen.RolloutOptions{Seed: &seed, Collapse: collapseOn, Shard: t.dp.shard()})
		return err
	}); err != nil {
		return nil, "", fmt.Errorf("rollout: %w", err)
	}
	if batch == nil {
		return nil, "", errors.New("rollout returned no batch")
	}
	// the policy's own timings and counters of the rollout (this rank's:
	// timing_s/gen_prefill, perf/prefill_tokens, ...)
	maps.Copy(met, batch.GenMetrics)
	t.st.SeedCounter += int64(cfg.ESManager.Train.EnvGroups)
	// 3. collapse metrics on the unfiltered batch (upstream times this
	// stage every step, also when nothing is computed).
	if err := tm.do("collapse_metrics", func() error {
		if !collapseOn || batch.Collapse == nil {
			return nil
		}
		res, err := t.deps.Collapse.Compute(ctx, collapseBatch(batch), t.deps.Scorer, step)
		if err != nil {
			return err
		}
		maps.Copy(met, res.Metrics)
		return nil
	}); err != nil {
		return nil, "", fmt.Errorf("collapse metrics: %w", err)
	}
	r, err := fromBatchMode(batch, cfg.AgentProxy.TurnLevel())
	if err != nil {
		return nil, "", err
	}
	if err := t.dp.checkRows(r); err != nil {
		return nil, "", err
	}
	// 4. rollout filter.
	var kept *rows
	var keptRatio float64
	empty := false
	if err := tm.do("filter", func() error {
		var err error
		kept, keptRatio, empty, err = t.filter(ctx, r, batch, met)
		return err
	}); err != nil {
		return nil, "", err
	}
	// 5. empty batch: no update, no validation, no checkpoint. Upstream
	// logs the collapse and filter metrics and these three, nothing else
	// (no train/ copies, no timing).
	if empty || kept.B == 0 {
		t.st.ConsecutiveEmpty++
		met[MetricRolloutAttempts] = 1
		met[MetricEmptyAfterFilter] = 1
		met[MetricConsecutiveEmpty] = float64(t.st.ConsecutiveEmpty)
		t.st.Step = step
		if n := cfg.ActorRolloutRef.Rollout.EmptyStopSteps; n > 0 && t.st.ConsecutiveEmpty >= n {
			met[MetricEarlyEmpty] = 1
			return met, StopEmptyFilteredSteps, nil
		}
		return met, "", nil
	}
	t.st.ConsecutiveEmpty = 0
	met[MetricRolloutAttempts] = 1
	met[MetricEmptyAfterFilter] = 0
	met[MetricConsecutiveEmpty] = 0

	// 6–7. batch size adjust (NumPy's global RNG, reseeded per step so that
	// a resumed run draws the same rows).
	rng, err := pyrand.NewLegacy((cfg.Seed.Train + int64(step)) & 0xffffffff)
	if err != nil {
		return nil, "", err
	}
	b := kept.adjust(cfg.BatchDivisor(), cfg.AgentProxy.BatchAdjustMode, rng)
	met[MetricBatchSize] = float64(b.B)
	met[MetricNumMiniBatches] = float64(b.B / cfg.ActorRolloutRef.Actor.PPOMiniBatchSize)
	// train/ copies of the rollout metrics, only on non-empty steps and
	// after the batch keys, as upstream.
	for k, v := range batch.Metrics {
		met["train/"+k] = v
	}
	if b.B == 0 {
		t.st.Step = step
		met[MetricSkippedUpdate] = 1
		return met, "", nil
	}
	// 8. reward-variance early stop.
	if v, ok := met[filter.MetricInGroupRewardStd]; ok {
		if t.rewardVarianceCollapsed(v) {
			met[MetricEarlyRewardVar] = 1
			t.st.Step = step
			return met, StopRewardVariance, nil
		}
	}
	// 11–13. old log-probs (+ entropy), reference log-probs, values.
	if err := tm.do("old_log_prob", func() error { return t.logProbs(b, met) }); err != nil {
		return nil, "", err
	}
	if t.deps.Ref != nil {
		if err := tm.do("ref", func() error { return t.refLogProbs(b, met) }); err != nil {
			return nil, "", err
		}
	}
	if t.deps.Critic != nil {
		if err := tm.do("values", func() error { return t.computeValues(b) }); err != nil {
			return nil, "", err
		}
	}
	// 14. rewards, advantages, post-processing.
	trainable := algoSum(b.mask.Data) > 0
	if err := tm.do("adv", func() error { return t.advantages(b, keptRatio, met, &trainable) }); err != nil {
		return nil, "", err
	}
	// Upstream logs trainer/gradient_analysis_only (0 or 1) on every
	// non-empty step, before the critic update.
	gaOnly := cfg.Trainer.GradientAnalysisOnly
	met[MetricGAOnly] = boolMetric(gaOnly)
	if !trainable {
		// No token carries a loss: skip both updates (logged), never crash.
		met[MetricSkippedUpdate] = 1
	} else {
		// 15. critic update.
		if t.deps.Critic != nil {
			if gaOnly {
				met[MetricCriticSkippedGA] = 1
			} else if err := tm.do("update_critic", func() error { return t.updateCritic(b, met) }); err != nil {
				return nil, "", err
			}
		}
		// 16. actor update after the critic warm-up; gradient analysis on
		// steps 1, 1+every, 1+2·every, … ((step−1) % every == 0; every ≤ 0
		// never).
		if cfg.Trainer.CriticWarmup <= step {
			if every := cfg.Trainer.GradientAnalysisEvery; cfg.Trainer.GradientAnalysisMode && every > 0 && (step-1)%every == 0 {
				if err := tm.do("gradient_analysis", func() error { return t.runGradientAnalysis(ctx, step, b, met) }); err != nil {
					return nil, "", err
				}
				if cfg.Trainer.ExitAfterGradientAnalysis {
					met[MetricExitedAfterGA] = 1
					t.st.Step = step
					return met, StopGradientAnalysis, nil
				}
			}
			if gaOnly {
				met[MetricActorSkippedGA] = 1
			} else if err := tm.do("update_actor", func() error { return t.updateActor(b, met) }); err != nil {
				return nil, "", err
			}
		}
	}
	t.st.Step = step
	last := step >= cfg.Trainer.TotalTrainingSteps
	// 18. validation, then the low-success early stop: upstream logs the
	// metrics gathered so far and stops at once (no checkpoint, no data or
	// timing metrics).
	if tf := cfg.Trainer.TestFreq; tf > 0 && cfg.Trainer.ValidationSteps > 0 && (last || step%tf == 0) {
		var vm map[string]float64
		if err := tm.do("testing", func() (err error) { vm, err = t.Validate(ctx); return err }); err != nil {
			return nil, "", err
		}
		maps.Copy(met, vm)
		if t.lowValidationSuccess(vm) {
			met[MetricEarlyLowValSuccess] = 1
			return met, StopLowValidationSuccess, nil
		}
	}
	// 19. checkpoint.
	if sf := cfg.Trainer.SaveFreq; sf > 0 && (last || step%sf == 0) {
		if err := tm.do("save_checkpoint", func() error { return t.dpSave() }); err != nil {
			return nil, "", err
		}
	}
	tm["step"] = time.Since(stepStart).Seconds()
	// 20. data, timing, throughput.
	if err := t.dataMetrics(b, met); err != nil {
		return nil, "", err
	}
	t.perfMetrics(b, tm, met)
	t.addTiming(met, tm)
	return met, "", nil
}

func boolMetric(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func algoSum(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s
}

// addTiming writes timing_s/<stage> for every timed stage and RAGEN's
// step and running totals: train_step = step − testing − save_checkpoint −
// collapse_metrics (≥ 0), eval_step = testing, the *_total sums since Fit
// started (not checkpointed, as upstream), collapse_{first,multi}_turn_total
// from the detector's per-step timings, and total = wall time since Fit
// started.
func (t *Trainer) addTiming(met map[string]float64, tm timer) {
	for k, v := range tm {
		met["timing_s/"+k] = v
	}
	eval, save, coll := tm["testing"], tm["save_checkpoint"], tm["collapse_metrics"]
	train := max(tm["step"]-eval-save-coll, 0)
	t.totals.train += train
	t.totals.eval += eval
	t.totals.collapse += coll
	t.totals.collapseFirst += met[collapse.MetricTimingFirstTurn]
	t.totals.collapseMulti += met[collapse.MetricTimingMultiTurn]
	met[MetricTimingTrainStep] = train
	met[MetricTimingEvalStep] = eval
	met[MetricTimingTrainTotal] = t.totals.train
	met[MetricTimingEvalTotal] = t.totals.eval
	met[MetricTimingCollapseTotal] = t.totals.collapse
	met[MetricTimingCollapseFirstTotal] = t.totals.collapseFirst
	met[MetricTimingCollapseMultiTotal] = t.totals.collapseMulti
	if !t.totals.start.IsZero() {
		met[MetricTimingTotal] = time.Since(t.totals.start).Seconds()
	}
}

// collapseBatch maps the rollout's collapse data onto the detector's batch.
func collapseBatch(b *ragen.Batch) collapse.Batch {
	c := b.Collapse
	gids := make([]int, len(c.FirstTurnPromptIDs))
	for i := range gids {
		if i < len(b.Episodes) && b.Episodes[i] != nil {
			gids[i] = b.Episodes[i].GroupID
		} else if i < len(b.GroupIDs) {
			gids[i] = b.GroupIDs[i]
		}
	}
	return collapse.Batch{GroupIDs: gids, FirstTurnPrompts: c.FirstTurnPromptIDs, FirstTurnReasoning: c.FirstTurnReasoningIDs,
		AllTurnsPrompts: c.AllTurnsPromptIDs, AllTurnsReasoning: c.AllTurnsReasoningIDs,
		TurnCounts: c.TurnCounts, TurnCountsTotal: c.TurnCountsTotal}
}

// filter applies the rollout filter and returns the kept rows, the kept
// ratio (1 when the filter logged none) and whether nothing was kept.
func (t *Trainer) filter(ctx context.Context, r *rows, batch *ragen.Batch, met map[string]float64) (*rows, float64, bool, error) {
	if r.B == 0 {
		return r, 1, true, nil
	}
	fb := filter.Batch{GroupIDs: r.uids, EpisodeIDs: r.episodeIDs}
	// Per-row reward = Σ original_rm_scores (rm_scores when the rollout
	// gave no copy).
	fb.Rewards = make([]float64, r.B)
	for i := range fb.Rewards {
		if len(batch.OriginalRMScores) == r.B {
			for _, v := range batch.OriginalRMScores[i] {
				fb.Rewards[i] += float64(v)
			}
		} else {
			fb.Rewards[i] = algoSum(r.scores.Row(i))
		}
	}
	fb.Lengths = make([]float64, r.B)
	for i := range fb.Lengths {
		fb.Lengths[i] = algoSum(r.mask.Row(i))
	}
	metric, err := filter.NormalizeMetric(t.deps.Filter.Metric)
	if err != nil {
		return nil, 0, false, err
	}
	if metric == filter.MetricNameEntropy || metric == filter.MetricNameEntropyVariance {
		if err := t.logProbsWith(r, true); err != nil {
			return nil, 0, false, err
		}
		fb.Entropies = make([]float64, r.B)
		for i := range fb.Entropies {
			h, m := r.entropy.Row(i), r.mask.Row(i)
			s, n := 0.0, 0.0
			for j := range h {
				s += h[j] * m[j]
				n += m[j]
			}
			fb.Entropies[i] = s / math.Max(n, 1)
		}
	}
	res, err := filter.Apply(fb, t.deps.Filter)
	maps.Copy(met, publicMetrics(res.Metrics))
	if t.deps.OnFilter != nil && (err == nil || errors.Is(err, filter.ErrNoneKept)) {
		// trainStep sets st.Step only when the step is done
		if herr := t.deps.OnFilter(t.st.Step+1, res); herr != nil {
			return nil, 0, false, fmt.Errorf("rollout filter hook: %w", herr)
		}
	}
	if errors.Is(err, filter.ErrNoneKept) {
		return &rows{L: r.L}, 0, true, nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("rollout filter: %w", err)
	}
	ratio := 1.0
	if v, ok := res.Metrics[filter.MetricKeptRatio]; ok {
		ratio = v
	}
	kept := r
	if !res.Unchanged {
		kept = r.selectRows(res.Kept)
	}
	if len(res.RewardStd) == kept.B {
		kept.rewardStd = res.RewardStd
	}
	return kept, ratio, false, nil
}

// publicMetrics drops upstream's private rollout/_* entries.
func publicMetrics(m map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(m))
	for k, v := range m {
		if len(k) > 9 && k[:9] == "rollout/_" {
			continue
		}
		out[k] = v
	}
	return out
}

// rewardVarianceCollapsed implements the reward-variance early stop: the
// first 10 non-empty steps define base = mean; afterwards the last 10 values
// are kept and training stops when all 10 are < 0.1·base.
func (t *Trainer) rewardVarianceCollapsed(v float64) bool {
	const window = 10
	if len(t.st.RVBase) < window {
		t.st.RVBase = append(t.st.RVBase, jsonFloat(v))
		return false
	}
	base := 0.0
	for _, x := range t.st.RVBase {
		base += float64(x)
	}
	base /= window
	t.st.RVRecent = append(t.st.RVRecent, jsonFloat(v))
	if len(t.st.RVRecent) > window {
		t.st.RVRecent = t.st.RVRecent[len(t.st.RVRecent)-window:]
	}
	if len(t.st.RVRecent) < window {
		return false
	}
	for _, x := range t.st.RVRecent {
		if !(float64(x) < 0.1*base) {
			return false
		}
	}
	return true
}

// lowValidationSuccess tracks, per val-env/…/success key, the streak of
// in-loop validations below 0.01; 5 in a row stops training.
func (t *Trainer) lowValidationSuccess(vm map[string]float64) bool {
	stop := false
	for k, v := range vm {
		if len(k) < len("val-env/")+len("/success") || k[:8] != "val-env/" || k[len(k)-8:] != "/success" {
			continue
		}
		if v < 0.01 {
			t.st.LowVal[k]++
		} else {
			t.st.LowVal[k] = 0
		}
		if t.st.LowVal[k] >= 5 {
			stop = true
		}
	}
	return stop
}

// jsonFloat is a float64 that survives JSON with NaN and ±Inf (as strings).
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte(`"` + strconv.FormatFloat(v, 'g', -1, 64) + `"`), nil
	}
	return []byte(strconv.FormatFloat(v, 'g', -1, 64)), nil
}

func (f *jsonFloat) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("starpo: bad number %s in checkpoint state", b)
	}
	*f = jsonFloat(v)
	return nil
}
