// Package collapse implements RAGEN-2's template-collapse diagnostics: it
// estimates, on a training batch, how much the model's reasoning Z depends
// on its input X (the mutual information I(X;Z); near zero means the
// reasoning has collapsed to an input-independent template) and how variable
// the reasoning is per input (H(Z|X)).
//
// The estimate rests on a cross log-probability matrix: every sampled
// reasoning z_i is scored under every column prompt x_j by the current
// policy. This package builds the pairs, sends them to a Scorer in
// micro-batches, and computes from the matrix the MI estimate (per-token
// mean and sequence-sum variants), the ln N upper bound, retrieval accuracy
// (top-1 and @2/@4/@8, with prompt-signature equivalence and chance levels),
// conditional and reasoning entropy estimates, the marginal std, z-scores
// and their EMA across steps. It mirrors upstream's
// ragen/trainer/collapse_metrics.py (shared spec collapse.md) and logs under
// upstream's names: collapse_first_turn_sample/<name>,
// collapse_trajectory_sample/<name> and collapse/*.
//
// The package does no tensor work itself. The llm package implements Scorer
// (teacher-forced log-probs of the reasoning tokens given the prompt, logits
// divided by the rollout temperature); tests use fakes.
//
// Deliberate differences from upstream are listed in
// doc/divergences/filter-collapse.md.
package collapse
