package algo

import (
	"fmt"
)

// SliceRows returns rows [i, j) as a matrix sharing m's storage. It panics
// on out-of-range bounds (a programming mistake).
func (m Mat) SliceRows(i, j int) Mat {
	if i < 0 || j < i || j > m.B {
		panic(fmt.Sprintf("algo: SliceRows(%d, %d) of %d rows", i, j, m.B))
	}
	return Mat{B: j - i, T: m.T, Data: m.Data[i*m.T : j*m.T]}
}

func sliceOpt(m Mat, i, j int) Mat {
	if m.Data == nil && m.B == 0 {
		return m
	}
	if m.check("") != nil || j > m.B {
		return m // shape errors are reported by the loss itself
	}
	return m.SliceRows(i, j)
}

func microCount(b, micro int) (int, error) {
	if micro <= 0 {
		return 0, fmt.Errorf("algo: micro-batch size %d must be positive", micro)
	}
	if b%micro != 0 {
		return 0, fmt.Errorf("algo: mini-batch of %d rows is not divisible by micro-batch size %d", b, micro)
	}
	return b / micro, nil
}

// MiniBatchActorLoss is one mini-batch of RAGEN's actor update as upstream
// runs it: the rows are split in order into micro-batches of micro rows,
// ActorLoss is computed per micro-batch (so aggregation happens per
// micro-batch: with micro = 1, token-mean equals seq-mean-token-mean over
// the mini-batch), and each micro-batch loss is divided by grad_accum =
// B/micro before backward. Loss is Σ_micro loss/grad_accum, the gradients
// are those of that sum, and each metric is the mean over micro-batches
// (upstream appends one value per micro-batch and averages when logging),
// except actor/kl_loss and actor/kl_coef, which are the last micro-batch's
// (LastValueMetric).
func MiniBatchActorLoss(in ActorLossInput, cfg ActorLossConfig, micro int) (ActorLossOutput, map[string]float64, error) {
	if err := in.LogProb.check("log_prob"); err != nil {
		return ActorLossOutput{}, nil, err
	}
	n, err := microCount(in.LogProb.B, micro)
	if err != nil {
		return ActorLossOutput{}, nil, err
	}
	out := ActorLossOutput{GradLogProb: NewMat(in.LogProb.B, in.LogProb.T), GradEntropy: NewMat(in.LogProb.B, in.LogProb.T)}
	metrics := map[string]float64{}
	for k := 0; k < n; k++ {
		i, j := k*micro, (k+1)*micro
		part := ActorLossInput{
			LogProb:    in.LogProb.SliceRows(i, j),
			OldLogProb: sliceOpt(in.OldLogProb, i, j),
			Advantages: sliceOpt(in.Advantages, i, j),
			Mask:       sliceOpt(in.Mask, i, j),
			Entropy:    sliceOpt(in.Entropy, i, j),
			RefLogProb: sliceOpt(in.RefLogProb, i, j),
		}
		o, m, err := ActorLoss(part, cfg)
		if err != nil {
			return ActorLossOutput{}, nil, fmt.Errorf("algo: micro-batch %d: %w", k, err)
		}
		out.Loss += o.Loss / float64(n)
		for x, g := range o.GradLogProb.Data {
			out.GradLogProb.Data[i*in.LogProb.T+x] = g / float64(n)
		}
		for x, g := range o.GradEntropy.Data {
			out.GradEntropy.Data[i*in.LogProb.T+x] = g / float64(n)
		}
		for key, v := range m {
			if LastValueMetric(key) {
				metrics[key] = v
				continue
			}
			metrics[key] += v / float64(n)
		}
	}
	return out, metrics, nil
}

// LastValueMetric reports whether upstream logs a metric of the actor
// update by assignment instead of appending it: RAGEN's dp_actor sets
// metrics["actor/kl_loss"] and metrics["actor/kl_coef"] per micro-batch, so
// the logged value is the last micro-batch's (of the last mini-batch and
// epoch), not the mean.
func LastValueMetric(key string) bool {
	return key == MetricKLLoss || key == MetricKLCoef
}

// MiniBatchValueLoss is one mini-batch of the critic update: ValueLoss per
// micro-batch of micro rows, each divided by grad_accum = B/micro. It
// returns Σ_micro vf_loss/grad_accum, its gradient w.r.t. v_pred, and the
// per-micro-batch metrics averaged (critic/vf_loss is logged already divided
// by grad_accum, as upstream).
func MiniBatchValueLoss(vpreds, values, returns, mask Mat, cfg ValueLossConfig, micro int) (float64, Mat, map[string]float64, error) {
	if err := sameShape([]string{"vpreds", "values", "returns", "mask"}, vpreds, values, returns, mask); err != nil {
		return 0, Mat{}, nil, fmt.Errorf("algo: value loss: %w", err)
	}
	n, err := microCount(vpreds.B, micro)
	if err != nil {
		return 0, Mat{}, nil, err
	}
	cfg.GradAccum = n
	loss := 0.0
	grad := NewMat(vpreds.B, vpreds.T)
	metrics := map[string]float64{}
	for k := 0; k < n; k++ {
		i, j := k*micro, (k+1)*micro
		l, g, m, err := ValueLoss(vpreds.SliceRows(i, j), values.SliceRows(i, j), returns.SliceRows(i, j), mask.SliceRows(i, j), cfg)
		if err != nil {
			return 0, Mat{}, nil, fmt.Errorf("algo: micro-batch %d: %w", k, err)
		}
		loss += l / float64(n)
		for x, v := range g.Data {
			grad.Data[i*vpreds.T+x] = v / float64(n)
		}
		for key, v := range m {
			metrics[key] += v / float64(n)
		}
	}
	return loss, grad, metrics, nil
}
