package main

import (
	"context"
	"fmt"
	"strings"

	"ragen/llm/tokenizer"
	"ragen/ragen"
	"ragen/torch"
)

// Bigram is an actor that is not a transformer: a table of next-token
// logits indexed by the previous token, W (V, V). It implements the two
// interfaces an actor needs:
//
//   - ragen.Policy (Generate): sampling for the rollout;
//   - starpo.Actor (TokenLogProbs + Trainable): log-probs for the update.
//
// Any model that can do these two things can be trained by starpo.Trainer.
type Bigram struct {
	W      *torch.Tensor // (V,V) float32 logits, trained
	tok    tokenizer.Tokenizer
	gen    *torch.Generator
	MaxNew int // tokens generated per response at most
}

// NewBigram starts from a table that spells the answer format with high
// probability and leaves the one real choice, the first letter of the arm
// name after the forced "<answer>", uniform: "Zu</answer>" or
// "Ky</answer>". Training moves that choice.
func NewBigram(tok tokenizer.Tokenizer, seed uint64) (*Bigram, error) {
	v := tok.VocabSize()
	w := make([]float32, v*v)
	id := func(c string) int { return tok.Encode(c)[0] }
	for _, p := range []string{">Z", ">K", "Zu", "u<", "Ky", "y<", "</", "/a", "an", "ns", "sw", "we", "er", "r>"} {
		w[id(p[:1])*v+id(p[1:])] = 10
	}
	W, err := torch.From(w, int64(v), int64(v))
	if err != nil {
		return nil, err
	}
	if err := W.SetRequiresGrad(true); err != nil {
		W.Free()
		return nil, err
	}
	g, err := torch.NewGenerator(seed, torch.CPU)
	if err != nil {
		W.Free()
		return nil, err
	}
	return &Bigram{W: W, tok: tok, gen: g, MaxNew: 24}, nil
}

// Close frees the table and the generator.
func (m *Bigram) Close() { m.W.Free(); m.gen.Close() }

// Trainable is the parameter list the optimizer updates.
func (m *Bigram) Trainable() []*torch.Tensor { return []*torch.Tensor{m.W} }

// TokenLogProbs: logp[b,t] = log softmax(W[ids[b,t−1]]/temperature)[ids[b,t]]
// (0 at t = 0), and the entropy of the same distribution when asked.
func (m *Bigram) TokenLogProbs(s *torch.Scope, ids, pos, attn *torch.Tensor, temperature float64, withEntropy bool) (logp, entropy *torch.Tensor) {
	L := ids.Size(1)
	prev := s.Narrow(ids, 1, 0, L-1)                                // (B,L−1)
	next := s.Narrow(ids, 1, 1, L-1)                                // (B,L−1)
	logits := s.DivS(s.Embedding(m.W, prev), temperature)           // (B,L−1,V)
	lsm := s.LogSoftmax(logits, -1)                                 // (B,L−1,V)
	lp := s.Squeeze(s.Gather(lsm, -1, s.Unsqueeze(next, -1)), -1)   // (B,L−1)
	zero := s.Zeros([]int64{ids.Size(0), 1}, lp.DType(), torch.CPU) // t = 0
	logp = s.Cat([]*torch.Tensor{zero, lp}, 1)
	if withEntropy {
		h := s.Neg(s.Sum(s.Mul(s.Exp(lsm), lsm), false, -1))
		entropy = s.Cat([]*torch.Tensor{zero, h}, 1)
	}
	return logp, entropy
}

// Generate samples every request's response token by token, all requests
// in one batch of table look-ups per step.
func (m *Bigram) Generate(ctx context.Context, reqs []ragen.GenRequest) ([]ragen.Generation, error) {
	out := make([]ragen.Generation, len(reqs))
	prev := make([]int64, len(reqs))
	for i, r := range reqs {
		prev[i] = int64(r.IDs[len(r.IDs)-1])
	}
	done := make([]bool, len(reqs))
	for step := 0; step < m.MaxNew; step++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ids, lps, err := m.step(prev, reqs[0].Sampling.Temperature)
		if err != nil {
			return nil, err
		}
		for i := range reqs {
			if done[i] {
				continue
			}
			out[i].IDs = append(out[i].IDs, int(ids[i]))
			out[i].LogProbs = append(out[i].LogProbs, float64(lps[i]))
			prev[i] = ids[i]
			if strings.HasSuffix(m.tok.Decode(out[i].IDs), "</answer>") {
				done[i], out[i].FinishReason = true, "stop"
			}
		}
	}
	for i := range out {
		out[i].Text = m.tok.Decode(out[i].IDs)
		if !done[i] {
			out[i].FinishReason = "length"
		}
	}
	return out, nil
}

// step samples one next token for every row.
func (m *Bigram) step(prev []int64, temperature float64) ([]int64, []float32, error) {
	s := torch.NewScope()
	defer s.Close()
	var ids []int64
	var lp []float32
	err := torch.NoGrad(func() error {
		p := s.Own(torch.From(prev, int64(len(prev))))
		id, l := s.Sample(s.Embedding(m.W, p), temperature, 0, 1, m.gen)
		ids, lp = s.Int64s(id), s.Float32s(l)
		return s.Err()
	})
	if err != nil {
		return nil, nil, fmt.Errorf("bigram: %w", err)
	}
	return ids, lp, nil
}
