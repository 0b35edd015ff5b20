package algo

import (
	"errors"
	"fmt"
	"math"
)

// DataMetricsInput is the batch data veRL's compute_data_metrics reads.
type DataMetricsInput struct {
	Scores     Mat // token_level_scores [B,T]
	Rewards    Mat // token_level_rewards [B,T]
	Advantages Mat // [B,T]
	Returns    Mat // [B,T]
	Values     Mat // critic values [B,T]; zero Mat (no rows) when there is no critic
	Mask       Mat // response_mask [B,T]: selects the tokens for advantages/returns/values
	// ResponseLengths are the per-row response lengths (Σ of the response
	// part of attention_mask) and MaxResponseLength the padded width; nil
	// skips the response_length/* metrics.
	ResponseLengths   []float64
	MaxResponseLength int
	// PromptLengths and MaxPromptLength likewise for prompt_length/*.
	PromptLengths   []float64
	MaxPromptLength int
}

// DataMetrics is veRL's compute_data_metrics over one batch:
// critic/score/{mean,max,min} and critic/rewards/{…} over per-row sums,
// critic/advantages/{…} and critic/returns/{…} over the masked tokens, with a
// critic also critic/values/{…} and critic/vf_explained_var =
// 1 − var(R−V)/(var(R) + 1e-5) (unbiased variances over masked tokens), and
// response_length/{mean,max,min,clip_ratio}, prompt_length/{…} when lengths
// are given (clip_ratio = fraction of rows at the maximum length).
func DataMetrics(in DataMetricsInput) (map[string]float64, error) {
	if err := sameShape([]string{"scores", "rewards", "advantages", "returns", "mask"}, in.Scores, in.Rewards, in.Advantages, in.Returns, in.Mask); err != nil {
		return nil, fmt.Errorf("algo: data metrics: %w", err)
	}
	useCritic := in.Values.B > 0 || len(in.Values.Data) > 0
	if useCritic {
		if err := sameShape([]string{"mask", "values"}, in.Mask, in.Values); err != nil {
			return nil, fmt.Errorf("algo: data metrics: %w", err)
		}
	}
	if in.Scores.B == 0 {
		return nil, errors.New("algo: data metrics: empty batch")
	}
	out := map[string]float64{}
	stats := func(prefix string, xs []float64) {
		out[prefix+"/mean"], out[prefix+"/max"], out[prefix+"/min"] = meanMaxMin(xs)
	}
	stats("critic/score", rowScores(in.Scores))
	stats("critic/rewards", rowScores(in.Rewards))
	var adv, ret, val []float64
	for k, m := range in.Mask.Data {
		if m != 0 {
			adv = append(adv, in.Advantages.Data[k])
			ret = append(ret, in.Returns.Data[k])
			if useCritic {
				val = append(val, in.Values.Data[k])
			}
		}
	}
	if len(adv) == 0 {
		return nil, errors.New("algo: data metrics: no masked tokens")
	}
	stats("critic/advantages", adv)
	stats("critic/returns", ret)
	if useCritic {
		stats("critic/values", val)
		diff := make([]float64, len(ret))
		for k := range ret {
			diff[k] = ret[k] - val[k]
		}
		out["critic/vf_explained_var"] = 1 - unbiasedVar(diff)/(unbiasedVar(ret)+1e-5)
	}
	lengths := func(prefix string, ls []float64, maxLen int) error {
		if ls == nil {
			return nil
		}
		if err := checkRowLen(prefix+" lengths", len(ls), in.Scores.B); err != nil {
			return err
		}
		stats(prefix, ls)
		c := 0.0
		for _, l := range ls {
			if l == float64(maxLen) {
				c++
			}
		}
		out[prefix+"/clip_ratio"] = c / float64(len(ls))
		return nil
	}
	if err := lengths("response_length", in.ResponseLengths, in.MaxResponseLength); err != nil {
		return nil, fmt.Errorf("algo: data metrics: %w", err)
	}
	if err := lengths("prompt_length", in.PromptLengths, in.MaxPromptLength); err != nil {
		return nil, fmt.Errorf("algo: data metrics: %w", err)
	}
	return out, nil
}

func meanMaxMin(xs []float64) (mean, mx, mn float64) {
	mx, mn = math.Inf(-1), math.Inf(1)
	for _, x := range xs {
		mean += x
		if x > mx || math.IsNaN(x) {
			mx = x
		}
		if x < mn || math.IsNaN(x) {
			mn = x
		}
	}
	return mean / float64(len(xs)), mx, mn
}

// unbiasedVar is torch.var: Σ(x−x̄)²/(n−1); NaN for n < 2.
func unbiasedVar(xs []float64) float64 {
	if len(xs) < 2 {
		return math.NaN()
	}
	mu := 0.0
	for _, x := range xs {
		mu += x
	}
	mu /= float64(len(xs))
	s := 0.0
	for _, x := range xs {
		s += (x - mu) * (x - mu)
	}
	return s / float64(len(xs)-1)
}
