package llm

import (
	"context"
	"fmt"

	"ragen/torch"
)

// ScoreSequences returns, without gradients, the teacher-forced log-probs
// (and entropies when withEntropy) of whole token sequences: out[i][t] is
// log p(seqs[i][t] | seqs[i][:t]) under softmax(logits/temperature), 0 at
// t = 0. Sequences are right-padded and split, in order, into micro-batches
// of at most tokenBudget padded tokens (see MicroBatches). This is how the
// reference and old-policy log-probs of a training batch are computed.
func (m *Model) ScoreSequences(ctx context.Context, seqs [][]int, tokenBudget int, temperature float64, withEntropy bool) (logp, entropy [][]float32, err error) {
	lengths := make([]int, len(seqs))
	for i, q := range seqs {
		if len(q) == 0 {
			return nil, nil, fmt.Errorf("llm: score: sequence %d is empty", i)
		}
		lengths[i] = len(q)
	}
	groups, err := MicroBatches(lengths, tokenBudget)
	if err != nil {
		return nil, nil, err
	}
	logp = make([][]float32, len(seqs))
	if withEntropy {
		entropy = make([][]float32, len(seqs))
	}
	for _, g := range groups {
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("llm: score: %w", err)
		}
		part := make([][]int, len(g))
		for j, i := range g {
			part[j] = seqs[i]
		}
		err := torch.NoGrad(func() error {
			s := torch.NewScope()
			defer s.Close()
			ids, pos, attn := PadBatch(s, part, 0, false, m.opt.Device)
			lp, en := m.TokenLogProbs(s, ids, pos, attn, temperature, withEntropy)
			lv := s.Float32s(lp)
			var ev []float32
			if withEntropy {
				ev = s.Float32s(en)
			}
			if err := s.Err(); err != nil {
				return err
			}
			T := len(lv) / len(g)
			for j, i := range g {
				n := len(seqs[i])
				logp[i] = append([]float32(nil), lv[j*T:j*T+n]...)
				if withEntropy {
					entropy[i] = append([]float32(nil), ev[j*T:j*T+n]...)
				}
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("llm: score: %w", err)
		}
	}
	return logp, entropy, nil
}
