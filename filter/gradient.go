package filter

import (
	"fmt"
	"math"
	"strings"
)

// Gradient-analysis metric prefixes: per-bucket metrics are named
// <prefix>/<bucket>/<name>.
const (
	PrefixGradNorm          = "grad_norm"           // post-filter analysis batch
	PrefixGradNormPrefilter = "grad_norm_prefilter" // pre-filter batch (trainer.gradient_analysis_log_prefilter)
)

// grad_analysis/* metric names (the trainer's gradient-analysis batch
// bookkeeping).
const (
	MetricGASourceEnvGroups          = "grad_analysis/source_env_groups"
	MetricGASourceGroupSize          = "grad_analysis/source_group_size"
	MetricGASourceBatchSize          = "grad_analysis/source_batch_size"
	MetricGAPrefilterSourceBatchSize = "grad_analysis_prefilter/source_batch_size"
	MetricGAEmptyAfterFilter         = "grad_analysis/empty_after_filter"
	MetricGAUsesTrainingBatch        = "grad_analysis/uses_training_batch"
	MetricGAAdjustedBatchSize        = "grad_analysis/adjusted_batch_size"
	MetricGAPrefilterAdjustedSize    = "grad_analysis_prefilter/adjusted_batch_size"
)

// Actor metric prefixes the no-step actor update reports per component
// (task, entropy, kl, ...).
const (
	ActorGradNormPrefix = "actor/grad_norm/"
	ActorLossPrefix     = "actor/loss/"
)

// AnalysisFilterMetrics renames the filter metrics of a separate
// gradient-analysis rollout: rollout/<name> → grad_analysis/<name>; private
// rollout/_* entries are skipped.
func AnalysisFilterMetrics(filterMetrics map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(filterMetrics))
	for k, v := range filterMetrics {
		if strings.HasPrefix(k, "rollout/_") {
			continue
		}
		name := k
		if i := strings.IndexByte(k, '/'); i >= 0 {
			name = k[i+1:]
		}
		out["grad_analysis/"+name] = v
	}
	return out
}

// DataParallelTrim returns how many leading rows of a bucket of count rows
// the gradient pass uses with dp data-parallel ranks: count rounded down to
// a multiple of dp. ok is false when the bucket must be skipped (empty, or
// smaller than dp).
func DataParallelTrim(count, dp int) (n int, ok bool) {
	if count <= 0 {
		return 0, false
	}
	if dp > 1 && count%dp != 0 {
		n = count - count%dp
		return n, n > 0
	}
	return count, true
}

// BucketGrad is what the trainer measured for one bucket: the bucket, the
// rows actually used and the actor's metrics from its no-step update.
type BucketGrad struct {
	Bucket Bucket
	// SampleCount is the number of rows used (after DataParallelTrim); the
	// first SampleCount rows of Bucket.Rows. 0 means all of them.
	SampleCount int
	// TotalSamples is the number of rows of the whole analysis batch.
	TotalSamples int
	// NumTokens is Σ response_mask over the used rows (0 if unknown).
	NumTokens float64
	// ActorMetrics are the raw metric lists of the update (one value per
	// micro- or mini-batch), e.g. actor/grad_norm/task, actor/loss/kl,
	// actor/pg_loss; each is reduced by its mean (veRL's reduce_metrics).
	ActorMetrics map[string][]float64
}

// GradientMetrics turns per-bucket gradient numbers into upstream's metrics
// (gradient_reporter._run_gradient_pass): for each bucket
// <prefix>/<bucket>/{sample_count, sample_pct, reward_std_mean,
// reward_std_min, reward_std_max, group_rv_count}, and for each actor
// metric: actor/grad_norm/<c> → <prefix>/<bucket>/<c>, .../per_sample/<c>
// (÷ sample count), .../per_token/<c> (÷ tokens, when known);
// actor/loss/<c> → <prefix>/<bucket>/loss/<c>; any other key k →
// <prefix>/<bucket>/<k>. With mirrorAllToRoot (the post-filter pass) the
// "all" bucket's reduced actor metrics are also stored under their own
// names. Buckets with no rows are skipped.
func GradientMetrics(prefix string, buckets []BucketGrad, mirrorAllToRoot bool) (map[string]float64, error) {
	out := map[string]float64{}
	for _, bg := range buckets {
		b := bg.Bucket
		count := bg.SampleCount
		if count == 0 {
			count = len(b.Rows)
		}
		if count == 0 {
			continue
		}
		if count > len(b.Rows) {
			return nil, fmt.Errorf("filter: gradient metrics: bucket %s uses %d rows but has %d", b.Name, count, len(b.Rows))
		}
		p := prefix + "/" + b.Name + "/"
		out[p+"sample_count"] = float64(count)
		if bg.TotalSamples > 0 {
			out[p+"sample_pct"] = float64(count) / float64(bg.TotalSamples)
		}
		out[p+"reward_std_mean"] = b.RewardStdMean
		if len(b.RowRewardStd) >= count {
			used := b.RowRewardStd[:count]
			mn, mx := used[0], used[0]
			for _, v := range used {
				if math.IsNaN(v) || math.IsNaN(mn) {
					mn, mx = math.NaN(), math.NaN()
					continue
				}
				mn = math.Min(mn, v)
				mx = math.Max(mx, v)
			}
			out[p+"reward_std_min"] = mn
			out[p+"reward_std_max"] = mx
		}
		if b.RewardStdValues != nil && b.GroupIDs != nil {
			out[p+"group_rv_count"] = float64(len(b.RewardStdValues))
		}
		for k, list := range bg.ActorMetrics {
			v := meanList(list)
			switch {
			case strings.HasPrefix(k, ActorGradNormPrefix):
				c := k[len(ActorGradNormPrefix):]
				out[p+c] = v
				out[p+"per_sample/"+c] = v / float64(count)
				if bg.NumTokens > 0 {
					out[p+"per_token/"+c] = v / bg.NumTokens
				}
			case strings.HasPrefix(k, ActorLossPrefix):
				out[p+"loss/"+k[len(ActorLossPrefix):]] = v
			default:
				out[p+k] = v
			}
			if mirrorAllToRoot && b.Name == BucketAll {
				out[k] = v
			}
		}
	}
	return out, nil
}

func meanList(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}
