// Package starpo is ragen's StarPO trainer: RAGEN's training loop on veRL's
// PPO machinery (shared spec starpo.md), in Go over libtorch.
//
// # Tensor path
//
// AggLoss, PolicyLoss (decoupled clip ε_low/ε_high, dual clip c), KLPenalty
// (k1/abs/k2/k3 with veRL's clamps, "+" straight-through variants),
// ValueLoss (clipped) and ActorLoss (pg − entropy_coeff·H + kl_coef·KL) are
// the losses of package starpo/algo on (B, T) tensors with a 0/1 mask, built
// from scope-owned ops so autograd differentiates them. Metrics come back as
// scalar tensors under upstream's keys (MetricTensors.Read copies them in one
// call). Equivalence tests check values and autograd gradients against
// starpo/algo on random inputs. Advantages are computed in Go with
// starpo/algo (they are cheap and per batch) and uploaded per micro-batch.
//
// # Trainer
//
// NewTrainer(cfg, deps) takes a Config (upstream's key names as yaml tags,
// DefaultConfig = RAGEN's base.yaml) and the collaborators: the Actor
// (llm.Model implements it), an optional Critic (llm.Critic) and reference
// LogProber, a RolloutFunc ((*ragen.AgentProxy).RolloutWith), the rollout
// filter settings, an optional collapse.Detector with its Scorer, a Logger
// and extra Stateful state for checkpoints. Fit runs upstream's step order:
//
//	rollout (explicit seed.train + counter) → collapse metrics (unfiltered)
//	→ rollout filter (empty: count, maybe stop, no update) → batch-size adjust
//	(copy/delete to a multiple of lcm(env_groups, mini batch, GPUs)) →
//	reward-variance early stop → old log-probs + entropy → reference
//	log-probs → values → rewards (optional KL in reward) → advantages and
//	post-processing → critic update → gradient analysis / actor update (after
//	critic_warmup) → validation every test_freq (low-success early stop) →
//	checkpoint every save_freq → data, timing and throughput metrics → log.
//
// Updates split the batch into mini-batches of ppo_mini_batch_size rows per
// optimizer step and micro-batches of ppo_micro_batch_size_per_gpu rows (or,
// with use_dynamic_bsz, partitions under ppo_max_token_len_per_gpu tokens)
// with gradient accumulation, for ppo_epochs epochs, clipping the gradient
// norm to grad_clip (a non-finite norm skips the step) before AdamW. The
// actor's LR stays at its schedule's step-0 value as in RAGEN's worker
// (ragen_upstream_frozen_lr, default true; false advances veRL's constant or
// cosine schedule with warm-up and logs actor/lr); the critic's schedule
// advances every update. A batch without
// trainable tokens, or a filter that keeps nothing, skips the update and
// says so in the metrics.
//
// # Checkpoints
//
// Every save_freq steps the trainer writes global_step_N/ (actor and critic
// weights and AdamW moments as safetensors, trainer_state.json with the
// step, rollout seed counter, scheduler steps, KL coefficient, early-stop
// state and extra state) under a temporary name and renames it into place,
// then replaces latest_checkpointed_iteration.txt, keeping
// max_actor_ckpt_to_keep folders. resume_mode auto/disable/resume_path picks
// the checkpoint Fit starts from; a resumed run logs the metrics an
// uninterrupted one would (on CPU, to rounding). Export writes the policy as
// a Hugging Face folder through the actor's Save.
//
// # Extending the trainer
//
// Research code in another module plugs into the same loop:
//
//   - A custom objective: Deps.ActorLoss receives each micro-batch as an
//     ActorLossInput (per-token log-probs with their autograd graph, old and
//     reference log-probs, advantages, mask, optional rollout importance
//     weights) and returns a scalar loss and its metrics. DefaultActorLoss,
//     PolicyLossTokens, ValueLossTokens, AggLoss, KLPenalty and
//     TruncatedISWeights are the pieces RAGEN's own objective is made of.
//   - A custom advantage estimator: algo.RegisterEstimator, then select it
//     by name in Config.Algorithm.AdvEstimator (and in YAML configs).
//   - A custom actor: anything that implements Actor (TokenLogProbs and
//     Trainable) for the update and ragen.Policy for the rollout.
//   - Custom rewards and envs live in the rollout (ragen and env packages).
//
// Each has a runnable program under examples/ (customloss,
// customestimator, customactor, customenv).
//
// Deliberate differences from upstream are listed in
// doc/divergences/starpo.md.
package starpo
