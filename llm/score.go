package llm

import (
	"context"
	"fmt"

	"ragen/collapse"
	"ragen/internal/torch/fused"
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

// PrefixScorer is a collapse.Scorer that runs each distinct prompt once and
// scores every reasoning paired with it as a continuation of that prompt's
// KV cache. The collapse matrix pairs every sampled reasoning with every
// sampled prompt (64 x 64 pairs per family at upstream's defaults), and
// prompts are several times longer than reasonings, so where Scorer runs
// rows x columns x (prompt + reasoning) tokens this runs columns x prompt +
// rows x columns x reasoning tokens. It computes in the model's compute
// dtype (bf16 under mixed precision, as the actor's log-probs are), with
// the weights cast once per call. Scores equal Scorer's to the compute
// dtype's rounding (TestPrefixScorerMatchesScorer).
type PrefixScorer struct {
	M           *Model
	MicroBatch  int     // reasonings per forward pass (continuations of one prompt)
	Temperature float64 // logits are divided by it (0: 1)
}

// NewPrefixScorer returns a PrefixScorer over m.
func NewPrefixScorer(m *Model, microBatch int, temperature float64) *PrefixScorer {
	return &PrefixScorer{M: m, MicroBatch: microBatch, Temperature: temperature}
}

// ScoreReasoning implements collapse.Scorer: for each pair, the sum of
// log p(z_t | x, z_<t) over the reasoning ids z given the prompt ids x,
// without gradients.
func (sc *PrefixScorer) ScoreReasoning(ctx context.Context, pairs []collapse.Pair) ([]collapse.Score, error) {
	if sc.M == nil {
		return nil, fmt.Errorf("llm: prefix scorer: no model")
	}
	if err := sc.M.alive(); err != nil {
		return nil, fmt.Errorf("llm: prefix scorer: %w", err)
	}
	mb := max(sc.MicroBatch, 1)
	temp := sc.Temperature
	if temp == 0 {
		temp = 1
	}
	if !(temp > 0) {
		return nil, fmt.Errorf("llm: prefix scorer: temperature must be > 0, got %g", temp)
	}
	out := make([]collapse.Score, len(pairs))
	groups := map[string][]int{}
	var order []string
	for i, p := range pairs {
		if len(p.Prompt) == 0 {
			return nil, fmt.Errorf("llm: prefix scorer: pair %d has an empty prompt", i)
		}
		out[i].Tokens = len(p.Reasoning)
		if len(p.Reasoning) == 0 {
			continue // a sum over no token
		}
		k := promptKey(p.Prompt)
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	// the weights in the compute dtype, cast once for all groups (mixed
	// precision scores as the actor's log-probs are computed)
	ws := torch.NewScope()
	defer ws.Close()
	var w *fused.Weights
	var head *torch.Tensor
	if err := torch.NoGrad(func() error { w, head = sc.M.computeWeights(ws); return ws.Err() }); err != nil {
		return nil, fmt.Errorf("llm: prefix scorer: %w", err)
	}
	for _, k := range order {
		idx := groups[k]
		for lo := 0; lo < len(idx); lo += mb {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("llm: prefix scorer: %w", err)
			}
			if err := sc.scoreGroup(pairs, idx[lo:min(lo+mb, len(idx))], temp, w, head, out); err != nil {
				return nil, fmt.Errorf("llm: prefix scorer: %w", err)
			}
		}
	}
	return out, nil
}

func promptKey(p []int) string {
	b := make([]byte, 0, 4*len(p))
	for _, v := range p {
		b = append(b, byte(v), byte(v>>8), byte(v>>16), byte(v>>24))
	}
	return string(b)
}

// scoreGroup scores the reasonings of pairs[idx], which share one prompt:
// one prefill of the prompt into a KV cache (batch 1), the cache copied to
// one row per reasoning, one forward of the padded reasonings at cache
// position len(prompt), and the chunked head log-probs of the hidden states
// (the prompt's last state predicts each reasoning's first token).
func (sc *PrefixScorer) scoreGroup(pairs []collapse.Pair, idx []int, temp float64, w *fused.Weights, head *torch.Tensor,
	out []collapse.Score) error {
	m := sc.M
	prompt := pairs[idx[0]].Prompt
	P, Z, n := len(prompt), 0, len(idx)
	for _, i := range idx {
		Z = max(Z, len(pairs[i].Reasoning))
	}
	L := P + Z
	if err := m.ensureRope(L); err != nil {
		return fmt.Errorf("rotary table: %w", err)
	}
	dev := m.opt.Device
	return torch.NoGrad(func() error {
		s := torch.NewScope()
		defer s.Close()
		upload := func(x []int64, shape ...int64) *torch.Tensor {
			t := s.Own(torch.From(x, shape...))
			if t != nil && dev != torch.CPU {
				t = s.To(t, torch.Int64, dev)
			}
			return t
		}
		KV, D := int64(m.cfg.NumKeyValueHeads), int64(m.cfg.HeadDimension())
		caches := make([]*torch.Tensor, 2*len(m.layers))
		for i := range caches {
			caches[i] = s.Zeros([]int64{1, KV, int64(L), D}, m.ComputeDType(), dev)
		}
		pid, ppos, patt := make([]int64, P), make([]int64, P), make([]int64, L)
		for t, v := range prompt {
			pid[t], ppos[t] = int64(v), int64(t)
		}
		for t := range patt {
			patt[t] = 1
		}
		sh := m.shape()
		last := fused.Forward(s, w, sh, fused.ForwardArgs{IDs: upload(pid, 1, int64(P)), Pos: upload(ppos, 1, int64(P)),
			Cos: m.cos, Sin: m.sin, KeyBias: s.KeyBias(upload(patt, 1, int64(L))), KV: caches, CachePos: 0,
			LastOnly: true, NoGrad: true}) // (1,1,E)
		rows := make([]*torch.Tensor, len(caches))
		for i, c := range caches {
			rows[i] = s.Contiguous(s.Expand(c, int64(n), KV, int64(L), D))
		}
		zid, zpos, zatt := make([]int64, n*Z), make([]int64, n*Z), make([]int64, n*L)
		ids := make([]int64, n*(Z+1)) // column 0: a placeholder for the prompt's last token
		for r, i := range idx {
			z := pairs[i].Reasoning
			for t := range Z {
				zpos[r*Z+t] = int64(P + t)
				if t < len(z) {
					zid[r*Z+t] = int64(z[t])
					ids[r*(Z+1)+1+t] = int64(z[t])
				}
			}
			for t := range P + len(z) {
				zatt[r*L+t] = 1
			}
		}
		hz := fused.Forward(s, w, sh, fused.ForwardArgs{IDs: upload(zid, int64(n), int64(Z)), Pos: upload(zpos, int64(n), int64(Z)),
			Cos: m.cos, Sin: m.sin, KeyBias: s.KeyBias(upload(zatt, int64(n), int64(L))), KV: rows, CachePos: int64(P),
			NoGrad: true}) // (n,Z,E)
		if err := s.Err(); err != nil {
			return err
		}
		E := hz.Size(2)
		h := s.Cat([]*torch.Tensor{s.Expand(last, int64(n), 1, E), hz}, 1)
		lp, _ := s.HeadLogProbs(h, head, upload(ids, int64(n), int64(Z+1)), temp, false, m.logProbChunk(int64(n)))
		vals := s.Float32s(lp)
		if err := s.Err(); err != nil {
			return err
		}
		for r, i := range idx {
			sum := 0.0
			for t := 1; t <= len(pairs[i].Reasoning); t++ {
				sum += float64(vals[r*(Z+1)+t])
			}
			out[i].SumLogProb = sum
		}
		return nil
	})
}
