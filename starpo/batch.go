package starpo

import (
	"fmt"
	"slices"
	"sort"

	"ragen/internal/pyrand"
	"ragen/ragen"
	"ragen/starpo/algo"
	"ragen/torch"
)

// rows is one training batch as flat Go slices: B rows, L tokens per row,
// T = L−1 response positions (position j stands for the prediction of token
// j+1). Rows can be selected, duplicated and reordered cheaply; tensors are
// built per micro-batch.
type rows struct {
	B, L             int
	ids, attn, pos   []int64  // [B·L]
	mask             algo.Mat // response_mask = loss_mask [B,T]
	scores           algo.Mat // token_level_scores = rm_scores [B,T]
	uids             []int    // group ids
	episodeIDs       []int    // turn-level batches only; nil in full mode
	rewardStd        []float64
	oldLogp, refLogp algo.Mat // [B,T]; zero Mat when absent
	entropy          algo.Mat
	values           algo.Mat
	rewards          algo.Mat // token_level_rewards
	adv, returns     algo.Mat
}

// T is the response width.
func (r *rows) T() int { return r.L - 1 }

// fromBatch converts a rollout batch, checking every shape (mode unknown:
// episode ids are kept only when some episode has several rows).
func fromBatch(b *ragen.Batch) (*rows, error) { return fromBatchMode(b, false) }

// fromBatchMode converts a rollout batch; turnLevel says the context window
// mode is single_turn or limited_multi_turn, whose batches always carry
// episode_ids upstream (even when every episode has one row, so that
// duplicates added by the batch adjustment are de-duplicated in GRPO).
func fromBatchMode(b *ragen.Batch, turnLevel bool) (*rows, error) {
	n := len(b.InputIDs)
	if n == 0 {
		return &rows{}, nil
	}
	L := len(b.InputIDs[0])
	if L < 2 {
		return nil, fmt.Errorf("starpo: batch rows have %d tokens; need at least 2", L)
	}
	T := L - 1
	for name, got := range map[string]int{"attention_mask": len(b.AttentionMask), "position_ids": len(b.PositionIDs),
		"loss_mask": len(b.LossMask), "rm_scores": len(b.RMScores), "group_ids": len(b.GroupIDs)} {
		if got != n {
			return nil, fmt.Errorf("starpo: batch has %d rows of input_ids but %d of %s", n, got, name)
		}
	}
	r := &rows{B: n, L: L, ids: make([]int64, n*L), attn: make([]int64, n*L), pos: make([]int64, n*L),
		mask: algo.NewMat(n, T), scores: algo.NewMat(n, T), uids: slices.Clone(b.GroupIDs)}
	for i := 0; i < n; i++ {
		if len(b.InputIDs[i]) != L || len(b.AttentionMask[i]) != L || len(b.PositionIDs[i]) != L {
			return nil, fmt.Errorf("starpo: batch row %d: input_ids/attention_mask/position_ids lengths %d/%d/%d, want %d",
				i, len(b.InputIDs[i]), len(b.AttentionMask[i]), len(b.PositionIDs[i]), L)
		}
		if len(b.LossMask[i]) != T || len(b.RMScores[i]) != T {
			return nil, fmt.Errorf("starpo: batch row %d: loss_mask/rm_scores lengths %d/%d, want %d", i, len(b.LossMask[i]), len(b.RMScores[i]), T)
		}
		for j := 0; j < L; j++ {
			r.ids[i*L+j] = int64(b.InputIDs[i][j])
			r.attn[i*L+j] = int64(b.AttentionMask[i][j])
			r.pos[i*L+j] = int64(b.PositionIDs[i][j])
		}
		for j := 0; j < T; j++ {
			r.mask.Data[i*T+j] = float64(b.LossMask[i][j])
			r.scores.Data[i*T+j] = float64(b.RMScores[i][j])
		}
	}
	// Full mode gives every row its own episode: upstream's batch then has
	// no episode_ids and GRPO counts every row (duplicates included).
	if len(b.EpisodeIDs) == n {
		seen := map[int]bool{}
		for _, e := range b.EpisodeIDs {
			seen[e] = true
		}
		if turnLevel || len(seen) < n {
			r.episodeIDs = slices.Clone(b.EpisodeIDs)
		}
	}
	return r, nil
}

// selectRows returns a new batch holding rows idx (in that order; repeats
// allowed).
func (r *rows) selectRows(idx []int) *rows {
	out := &rows{B: len(idx), L: r.L}
	L, T := r.L, r.T()
	pick64 := func(src []int64) []int64 {
		dst := make([]int64, len(idx)*L)
		for k, i := range idx {
			copy(dst[k*L:(k+1)*L], src[i*L:(i+1)*L])
		}
		return dst
	}
	pickMat := func(m algo.Mat) algo.Mat {
		if m.B == 0 {
			return algo.Mat{}
		}
		d := algo.NewMat(len(idx), T)
		for k, i := range idx {
			copy(d.Data[k*T:(k+1)*T], m.Data[i*T:(i+1)*T])
		}
		return d
	}
	pickInt := func(s []int) []int {
		if s == nil {
			return nil
		}
		d := make([]int, len(idx))
		for k, i := range idx {
			d[k] = s[i]
		}
		return d
	}
	out.ids, out.attn, out.pos = pick64(r.ids), pick64(r.attn), pick64(r.pos)
	out.mask, out.scores = pickMat(r.mask), pickMat(r.scores)
	out.oldLogp, out.refLogp, out.entropy = pickMat(r.oldLogp), pickMat(r.refLogp), pickMat(r.entropy)
	out.values, out.adv, out.returns, out.rewards = pickMat(r.values), pickMat(r.adv), pickMat(r.returns), pickMat(r.rewards)
	out.uids, out.episodeIDs = pickInt(r.uids), pickInt(r.episodeIDs)
	if r.rewardStd != nil {
		out.rewardStd = make([]float64, len(idx))
		for k, i := range idx {
			out.rewardStd[k] = r.rewardStd[i]
		}
	}
	return out
}

// adjust makes the batch size a multiple of div (upstream's adjust_batch):
// copy appends size-div remainder duplicates drawn with NumPy's
// np.random.choice (without replacement when enough rows), delete removes
// `remainder` random rows. rng is NumPy's legacy global generator.
func (r *rows) adjust(div int, mode string, rng *pyrand.Legacy) *rows {
	rem := r.B % div
	if rem == 0 || r.B == 0 {
		return r
	}
	idx := make([]int, r.B)
	for i := range idx {
		idx[i] = i
	}
	if mode == AdjustDelete {
		if r.B-rem == 0 {
			return r.selectRows(nil)
		}
		drop := rng.Permutation(r.B)[:rem]
		gone := make(map[int]bool, rem)
		for _, d := range drop {
			gone[d] = true
		}
		keep := idx[:0]
		for i := 0; i < r.B; i++ {
			if !gone[i] {
				keep = append(keep, i)
			}
		}
		return r.selectRows(keep)
	}
	add := div - rem
	var dup []int
	if add <= r.B {
		dup = rng.Permutation(r.B)[:add]
	} else {
		dup = make([]int, add)
		for k := range dup {
			dup[k] = rng.RandIntN(r.B)
		}
	}
	return r.selectRows(append(idx, dup...))
}

// tokens is Σ attention_mask of row i.
func (r *rows) tokens(i int) int {
	n := int64(0)
	for _, v := range r.attn[i*r.L : (i+1)*r.L] {
		n += v
	}
	return int(n)
}

// inputs uploads ids, position ids and the attention mask of rows idx as
// (len(idx), L) int64 tensors on dev.
func (r *rows) inputs(s *torch.Scope, idx []int, dev torch.Device) (ids, pos, attn *torch.Tensor) {
	L := r.L
	up := func(src []int64) *torch.Tensor {
		d := make([]int64, len(idx)*L)
		for k, i := range idx {
			copy(d[k*L:(k+1)*L], src[i*L:(i+1)*L])
		}
		t := s.Own(torch.From(d, int64(len(idx)), int64(L)))
		if dev != torch.CPU {
			t = s.To(t, torch.Int64, dev)
		}
		return t
	}
	return up(r.ids), up(r.pos), up(r.attn)
}

// matTensor uploads rows idx of m as a (len(idx), T) tensor of dtype on dev.
func matTensor(s *torch.Scope, m algo.Mat, idx []int, dtype torch.DType, dev torch.Device) *torch.Tensor {
	T := m.T
	d := make([]float64, len(idx)*T)
	for k, i := range idx {
		copy(d[k*T:(k+1)*T], m.Data[i*T:(i+1)*T])
	}
	t := s.Own(torch.From(d, int64(len(idx)), int64(T)))
	if dtype != torch.Float64 || dev != torch.CPU {
		t = s.To(t, dtype, dev)
	}
	return t
}

// microBatches splits the rows of one mini-batch into micro-batches: by
// count (size rows each, in order) or, with a token budget > 0, into
// ceil(Σ tokens / budget) partitions balanced by token count (largest
// first into the lightest partition; each partition keeps row order).
// weights[k] is the factor the k-th micro-batch loss is scaled by before
// backward (veRL): 1/grad_accum by count, grad_accum = miniSize/size;
// rows/miniSize by budget. miniSize is the configured mini-batch size, so
// a short mini-batch (the last of a batch it does not divide, or a
// gradient-analysis bucket) weighs less, as upstream's does.
func microBatches(mini []int, miniSize, size int, budget int, tokens func(int) int) (parts [][]int, weights []float64, err error) {
	if budget <= 0 {
		for lo := 0; lo < len(mini); lo += size {
			parts = append(parts, mini[lo:min(lo+size, len(mini))])
		}
		accum := gradAccum(miniSize, size)
		for range parts {
			weights = append(weights, 1/float64(accum))
		}
		return parts, weights, nil
	}
	total := 0
	for _, i := range mini {
		n := tokens(i)
		if n > budget {
			return nil, nil, fmt.Errorf("starpo: a row has %d tokens, more than ppo_max_token_len_per_gpu=%d", n, budget)
		}
		total += n
	}
	k := max((total+budget-1)/budget, 1)
	k = min(k, len(mini))
	order := slices.Clone(mini)
	sort.SliceStable(order, func(a, b int) bool { return tokens(order[a]) > tokens(order[b]) })
	load := make([]int, k)
	parts = make([][]int, k)
	for _, i := range order {
		best := 0
		for p := 1; p < k; p++ {
			if load[p] < load[best] {
				best = p
			}
		}
		load[best] += tokens(i)
		parts[best] = append(parts[best], i)
	}
	for p := range parts {
		slices.Sort(parts[p])
		weights = append(weights, float64(len(parts[p]))/float64(max(miniSize, 1)))
	}
	return parts, weights, nil
}

// gradAccum is veRL's gradient_accumulation: ppo_mini_batch_size //
// ppo_micro_batch_size_per_gpu (at least 1).
func gradAccum(miniSize, microSize int) int { return max(miniSize/max(microSize, 1), 1) }
