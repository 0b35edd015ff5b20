package llm

import (
	"fmt"

	"ragen/torch"
)

// PadBatch packs token sequences into (B,T) int64 ids, positions and 0/1
// attention tensors on dev, T the longest length. Left padding puts the pads
// first (generation); right padding puts them last (training). Positions
// count real tokens from 0 at each sequence's first token; pads get 0.
func PadBatch(s *torch.Scope, seqs [][]int, pad int, left bool, dev torch.Device) (ids, positions, attn *torch.Tensor) {
	B := len(seqs)
	T := 0
	for _, q := range seqs {
		T = max(T, len(q))
	}
	if B == 0 || T == 0 {
		s.Errorf("pad_batch", "empty batch (%d sequences, longest %d)", B, T)
		return nil, nil, nil
	}
	id := make([]int64, B*T)
	ps := make([]int64, B*T)
	at := make([]int64, B*T)
	for b, q := range seqs {
		off := 0
		if left {
			off = T - len(q)
		}
		for t := range T {
			id[b*T+t] = int64(pad)
		}
		for j, v := range q {
			id[b*T+off+j] = int64(v)
			ps[b*T+off+j] = int64(j)
			at[b*T+off+j] = 1
		}
	}
	up := func(x []int64) *torch.Tensor {
		t := s.Own(torch.From(x, int64(B), int64(T)))
		if t != nil && dev != torch.CPU {
			t = s.To(t, torch.Int64, dev)
		}
		return t
	}
	return up(id), up(ps), up(at)
}

// MicroBatches splits rows 0..len(lengths)-1, in order, into groups whose
// padded size (rows × longest length) stays within tokenBudget; a row longer
// than the budget forms a group of its own.
func MicroBatches(lengths []int, tokenBudget int) ([][]int, error) {
	if tokenBudget < 1 {
		return nil, fmt.Errorf("llm: token budget must be >= 1, got %d", tokenBudget)
	}
	var out [][]int
	var cur []int
	longest := 0
	for i, n := range lengths {
		l := max(longest, n)
		if len(cur) > 0 && (len(cur)+1)*l > tokenBudget {
			out = append(out, cur)
			cur, l = nil, n
		}
		cur = append(cur, i)
		longest = l
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out, nil
}
