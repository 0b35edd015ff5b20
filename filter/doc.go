// Package filter implements RAGEN-2's rollout filtering ("SNR-adaptive
// filtering") and the gradient-analysis buckets, as pure Go over plain slices.
//
// A training step produces a batch of rows grouped into NumGroups groups of
// rollouts that share one initial state. The filter scores every group (by
// default the sample standard deviation of its members' rewards, the
// "reward variance"), chooses groups with one of four strategies (top_p,
// top_k, top_k_abs, min_p) and keeps only the rows of the chosen groups.
//
// The package mirrors upstream's ragen/trainer/rollout_filter.py (shared spec
// filter.md): group scores are float32 like upstream's tensors, ties are
// broken by the lower group index, the order of the returned groups is
// upstream's, and every metric upstream logs is produced under upstream's
// name (see the Metric* constants).
//
// Three entry points:
//   - Select chooses groups from one score per group.
//   - Apply filters a batch described by per-row slices (rewards, lengths or
//     entropies; optional group and episode ids) and returns the kept row
//     indices with the step's metrics. An empty selection is a value: Apply
//     returns a complete Result together with ErrNoneKept.
//   - SplitBuckets and GradientMetrics implement the gradient-analysis side:
//     bucket assignment by group reward std, and the grad_norm/<bucket>/...
//     metric names computed from the per-bucket numbers the trainer measures.
//
// Deliberate differences from upstream are listed in
// doc/divergences/filter-collapse.md.
package filter
