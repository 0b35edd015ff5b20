package filter

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"ragen/internal/pystr"
)

// BucketAll is the name of the bucket holding every row.
const BucketAll = "all"

// Bucket is one gradient-analysis bucket (upstream's split_into_buckets
// sub-batch and its meta_info).
type Bucket struct {
	// Name is "all" or "bucket_<i>" (1-based).
	Name string
	// Rows are the bucket's row indices in original order.
	Rows []int
	// RowRewardStd[k] is reward_std of row Rows[k].
	RowRewardStd []float64
	// RewardStdMean is the mean of the bucket's group values
	// (bucket_reward_std_mean).
	RewardStdMean float64
	// RewardStdValues are the group values in bucket order
	// (bucket_reward_std_values).
	RewardStdValues []float64
	// GroupIDs are the bucket's group ids in bucket order (bucket_group_ids):
	// the batch's group ids when given, else positional group indices.
	GroupIDs []int
}

// SplitBuckets assigns the rows of an (already filtered) batch to
// gradient-analysis buckets by their group's reward std. rewardStd is the
// per-row reward_std (Result.RewardStd); groupIDs are the per-row group ids
// (optional: without them rows are grouped positionally by cfg.GroupSize).
//
// The per-group value is the mean reward_std over the group's rows; groups
// are the sorted distinct ids. quantile mode sorts the groups by value
// (ascending, ties by index, NaN last) into min(BucketCount, G) buckets of
// G div nb groups, the last taking the remainder; fixed_rv puts a group in
// bucket_1..bucket_6 for values in [0,1), [1,2), ..., [5,∞). The result
// starts with "all" and lists only non-empty buckets.
func SplitBuckets(rewardStd []float64, groupIDs []int, cfg Config) ([]Bucket, error) {
	n := len(rewardStd)
	if groupIDs != nil && len(groupIDs) != n {
		return nil, fmt.Errorf("filter: buckets: %d group ids for %d rows", len(groupIDs), n)
	}
	cfg = cfg.normalized()
	if cfg.BucketCount < 1 {
		return nil, fmt.Errorf("filter: buckets: gradient_analysis_num_buckets must be ≥ 1, got %d", cfg.BucketCount)
	}
	rs := make([]float64, n)
	for i, v := range rewardStd {
		rs[i] = f32(v)
	}
	var ids []int // group id per group (sorted)
	rowGroup := make([]int, n)
	if groupIDs != nil {
		seen := map[int]bool{}
		for _, id := range groupIDs {
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
		sort.Ints(ids)
		pos := make(map[int]int, len(ids))
		for g, id := range ids {
			pos[id] = g
		}
		for r, id := range groupIDs {
			rowGroup[r] = pos[id]
		}
	} else {
		gs := cfg.GroupSize
		if gs < 1 || n%gs != 0 {
			return nil, fmt.Errorf("filter: Batch size (%d) must be divisible by group_size (%d) for bucketization.", n, gs)
		}
		ids = make([]int, n/gs)
		for g := range ids {
			ids[g] = g
		}
		for r := range n {
			rowGroup[r] = r / gs
		}
	}
	G := len(ids)
	sums := make([]float64, G)
	counts := make([]float64, G)
	for r, g := range rowGroup {
		sums[g] += rs[r]
		counts[g]++
	}
	val := make([]float64, G)
	for g := range val {
		val[g] = f32(sums[g] / math.Max(counts[g], 1))
	}

	all := make([]int, G)
	for g := range all {
		all[g] = g
	}
	type spec struct {
		name   string
		groups []int // in bucket order
	}
	specs := []spec{{BucketAll, all}}
	switch cfg.BucketMode {
	case BucketFixedRV:
		for i := range 6 {
			lo := float64(i)
			var gs []int
			for g, v := range val {
				if v >= lo && (i == 5 || v < lo+1) {
					gs = append(gs, g)
				}
			}
			specs = append(specs, spec{fmt.Sprintf("bucket_%d", i+1), gs})
		}
	case BucketQuantile:
		nb := min(cfg.BucketCount, G)
		v32 := make([]float32, G)
		for g, v := range val {
			v32[g] = float32(v)
		}
		order := sortOrder(v32, false)
		if nb > 0 {
			per, rem := G/nb, G%nb
			start := 0
			for i := range nb {
				size := per
				if i == nb-1 {
					size += rem
				}
				specs = append(specs, spec{fmt.Sprintf("bucket_%d", i+1), order[start : start+size]})
				start += size
			}
		}
	default:
		return nil, fmt.Errorf("filter: unknown gradient_analysis_bucket_mode %q (valid: %s)",
			cfg.BucketMode, strings.Join(validBucketModes, ", "))
	}

	var out []Bucket
	for _, s := range specs {
		in := make([]bool, G)
		for _, g := range s.groups {
			in[g] = true
		}
		b := Bucket{Name: s.name}
		for r := range n {
			if in[rowGroup[r]] {
				b.Rows = append(b.Rows, r)
				b.RowRewardStd = append(b.RowRewardStd, rs[r])
			}
		}
		if len(b.Rows) == 0 {
			continue
		}
		var sum float64
		for _, g := range s.groups {
			sum += val[g]
			b.RewardStdValues = append(b.RewardStdValues, val[g])
			b.GroupIDs = append(b.GroupIDs, ids[g])
		}
		b.RewardStdMean = f32(sum / float64(len(s.groups)))
		out = append(out, b)
	}
	return out, nil
}

// WriteBucketTable prints upstream's bucket distribution table
// ("[Gradient Analysis] Bucket Distribution ...") for the buckets of a batch
// of totalSamples rows.
func WriteBucketTable(w io.Writer, buckets []Bucket, totalSamples int) error {
	var sb strings.Builder
	line := strings.Repeat("-", 80)
	fmt.Fprintf(&sb, "\n[Gradient Analysis] Bucket Distribution (Total Samples: %d)\n", totalSamples)
	sb.WriteString(line + "\n")
	fmt.Fprintf(&sb, "%-20s | %-10s | %-12s | %-15s\n", "Bucket", "Count", "Percentage", "Avg Reward Std")
	sb.WriteString(line + "\n")
	hasAll := false
	for _, b := range buckets {
		if b.Name == BucketAll {
			hasAll = true
		}
		pct := 0.0
		if totalSamples > 0 {
			pct = float64(len(b.Rows)) / float64(totalSamples) * 100
		}
		fmt.Fprintf(&sb, "%-20s | %-10d | %10.2f%% | %12s\n", b.Name, len(b.Rows), pct, pyFixed(b.RewardStdMean, 4))
	}
	if !hasAll {
		fmt.Fprintf(&sb, "%-20s | %-10d | %10.2f%% | %12s\n", BucketAll, 0, 0.0, "N/A")
	}
	sb.WriteString(line + "\n\n")
	_, err := io.WriteString(w, sb.String())
	return err
}

// pyFixed formats x like Python's f"{x:.<prec>f}": non-finite values are
// written nan, inf and -inf (Go's %f writes NaN, +Inf, -Inf).
func pyFixed(x float64, prec int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return pystr.FloatRepr(x)
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}
