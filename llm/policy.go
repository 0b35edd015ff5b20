package llm

import (
	"context"
	"fmt"

	"ragen/collapse"
	"ragen/torch"
)

// Scorer scores reasoning under prompts with a model (collapse.Scorer).
type Scorer struct {
	M           *Model
	MicroBatch  int     // pairs per forward pass
	Temperature float64 // logits are divided by it (rollout temperature)
}

// NewScorer returns a collapse.Scorer over m with temperature 1.
func NewScorer(m *Model, microBatch int) collapse.Scorer {
	return NewScorerTemperature(m, microBatch, 1)
}

// NewScorerTemperature returns a collapse.Scorer dividing logits by temperature.
func NewScorerTemperature(m *Model, microBatch int, temperature float64) *Scorer {
	return &Scorer{M: m, MicroBatch: microBatch, Temperature: temperature}
}

// ScoreReasoning implements collapse.Scorer: for each pair, the sum of
// log p(z_t | x, z_<t) over the reasoning ids z given the prompt ids x,
// without gradients. Sequences [x ‖ z] are right-padded per micro-batch.
func (sc *Scorer) ScoreReasoning(ctx context.Context, pairs []collapse.Pair) ([]collapse.Score, error) {
	mb := max(sc.MicroBatch, 1)
	temp := sc.Temperature
	if temp == 0 {
		temp = 1
	}
	out := make([]collapse.Score, len(pairs))
	for i, p := range pairs {
		if len(p.Prompt) == 0 {
			return nil, fmt.Errorf("llm: scorer: pair %d has an empty prompt", i)
		}
		out[i].Tokens = len(p.Reasoning)
	}
	for start := 0; start < len(pairs); start += mb {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("llm: scorer: %w", err)
		}
		part := pairs[start:min(start+mb, len(pairs))]
		seqs := make([][]int, len(part))
		for j, p := range part {
			seqs[j] = append(append(make([]int, 0, len(p.Prompt)+len(p.Reasoning)), p.Prompt...), p.Reasoning...)
		}
		err := torch.NoGrad(func() error {
			s := torch.NewScope()
			defer s.Close()
			ids, pos, attn := PadBatch(s, seqs, 0, false, sc.M.opt.Device)
			lp, _ := sc.M.TokenLogProbs(s, ids, pos, attn, temp, false)
			vals := s.Float32s(lp)
			if err := s.Err(); err != nil {
				return err
			}
			T := len(vals) / len(part)
			for j, p := range part {
				sum := 0.0
				for t := len(p.Prompt); t < len(p.Prompt)+len(p.Reasoning); t++ {
					sum += float64(vals[j*T+t])
				}
				out[start+j].SumLogProb = sum
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("llm: scorer: %w", err)
		}
	}
	return out, nil
}
