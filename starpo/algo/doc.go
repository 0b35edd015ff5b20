// Package algo is the plain-Go float64 reference of StarPO's RL math: the
// advantage estimators, advantage post-processing, KL penalties and
// controllers, the PPO policy loss with decoupled and dual clipping, the
// entropy bonus and the clipped critic loss, all as pure functions over
// (B, T) data with masks. It follows RAGEN 20daedc on veRL d62da495
// (shared spec starpo.md §3–§6) and is the reference the libtorch tensor path
// is tested against.
//
// # Layout
//
// A batch is a set of Mat values of shape (B, T): B rows (trajectories or
// turn samples), T response positions, row-major float64. Masks are Mats of
// 0/1 with the same shape (mask = response_mask = loss_mask). Per-row
// metadata travels as slices: UIDs (group ids), EpisodeIDs (turn-level
// modes), RewardBaselines (ReMax).
//
// # Estimators
//
// Estimator(name) returns one of gae (optionally bi-level), grpo (RAGEN's,
// with episode de-duplication and Dr. GRPO switch), rloo,
// reinforce_plus_plus, reinforce_plus_plus_baseline and remax. PostProcess
// then applies soft advantage reweighting, filter loss scaling, the GRPO
// length weight and the zero-task ablation in upstream's order.
//
// # Losses and gradients
//
// PolicyLoss, KLLoss, EntropyLoss, ActorLoss and ValueLoss return the loss
// value, its gradient with respect to their differentiable input (log-probs,
// entropies or value predictions) exactly as PyTorch autograd computes it
// (clamps pass the gradient on their closed interval, max/min split it on
// ties), and a map of metrics under upstream's keys (actor/pg_clipfrac,
// critic/vf_clipfrac, ...). AggLoss implements the four loss_agg_modes.
// MiniBatchActorLoss and MiniBatchValueLoss reproduce upstream's split of a
// mini-batch into micro-batches (aggregation per micro-batch, loss ÷
// grad_accum), which makes token-mean act as seq-mean-token-mean when the
// micro-batch size is 1.
//
// # Metrics
//
// KL-in-reward (ApplyKLPenalty with a fixed or adaptive KLController),
// PostProcess (train/soft_reweight_*) and DataMetrics (veRL's critic/score,
// critic/advantages, critic/vf_explained_var, response_length, …) log under
// upstream's keys; the Metric* constants name them.
//
// # Precision
//
// Everything is float64. Upstream computes in float32 tensors, so results
// agree to float32 rounding (≈1e-6 relative), not bit for bit.
//
// Errors name the offending input; nothing panics on data.
package algo
