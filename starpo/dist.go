package starpo

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"

	"ragen/dist"
	"ragen/ragen"
	"ragen/starpo/algo"
	"ragen/torch"
)

// EnableDataParallel makes t one rank of a data-parallel run over g; every
// rank runs the same Fit. Results do not depend on the world size:
//
//   - the env groups of every rollout (training and validation) are split
//     over the ranks (ragen.Shard: a group never spans ranks); each rank
//     generates and steps only its own, the finished episodes are gathered,
//     and every rank builds the same global batch (checked after every
//     rollout), so the filter, advantages, reward normalisation, collapse
//     metrics and logs see the whole batch. Each trajectory turn samples
//     from its own stream (ragen.StreamSeed), so the batch does not depend
//     on the world size;
//   - the micro-batches of every mini-batch are split over the ranks,
//     balanced by token count (upstream's balance_batch); each rank runs
//     forward and backward on its share only;
//   - the actor and critic updates are FSDP-style (dist.ShardedAdamW): the
//     gradients are reduce-scattered, clipped on the global norm, and each
//     rank keeps the AdamW moments of its 1/W shard of the parameters only;
//   - the per-micro-batch metrics are gathered and reduced in the global
//     micro-batch order, as one process would;
//   - rank 0 alone logs and calls Deps.OnFilter; checkpoints are sharded:
//     each rank writes the AdamW moments of its own shard, rank 0 the
//     (replicated) parameters, the trainer state and a manifest (world
//     size, shard layout, checksums), so a run resumes at any world size
//     (dist_ckpt.go).
//
// Call it after NewTrainer and before Fit.
func (t *Trainer) EnableDataParallel(g *dist.Group) error {
	if g == nil {
		return fmt.Errorf("starpo: EnableDataParallel: nil group")
	}
	if t.dp != nil {
		return fmt.Errorf("starpo: EnableDataParallel: already enabled")
	}
	t.dp = &dataParallel{g: g, ctx: context.Background(), sharded: map[string]*dist.ShardedAdamW{}}
	if g.Rank() != 0 {
		t.deps.Logger = nil
		t.deps.OnFilter = nil
	}
	return nil
}

// ShardedOptimizerBytes is this rank's persistent actor+critic optimizer
// memory (master shard and AdamW moments) in a data-parallel run, 0 before
// the first update or in one process.
func (t *Trainer) ShardedOptimizerBytes() int64 {
	if t.dp == nil {
		return 0
	}
	var n int64
	for _, o := range t.dp.sharded {
		n += o.StateBytes()
	}
	return n
}

type dataParallel struct {
	g       *dist.Group
	ctx     context.Context
	sharded map[string]*dist.ShardedAdamW // by role: "actor", "critic"

	seq  int           // global micro-batch number within one update loop
	recs []microRecord // this rank's micro-batch metrics
}

type microRecord struct {
	Seq int                `json:"s"`
	Met map[string]float64 `json:"m"`
}

// begin starts an update loop.
func (d *dataParallel) begin() {
	if d != nil {
		d.seq, d.recs = 0, nil
	}
}

// owned reports, for each micro-batch of one mini-batch, whether this rank
// runs it (owners); in one process every part is owned.
func (d *dataParallel) owned(parts [][]int, tokens func(int) int) []bool {
	own := make([]bool, len(parts))
	owners := d.owners(parts, tokens)
	for i := range own {
		own[i] = d == nil || owners[i] == d.g.Rank()
	}
	return own
}

// owners assigns each part (a list of rows) to a rank: greedy by token
// count, largest first, onto the least loaded rank (ties: the lower rank),
// so every rank computes the same assignment (nil in one process).
func (d *dataParallel) owners(parts [][]int, tokens func(int) int) []int {
	if d == nil {
		return nil
	}
	owner := make([]int, len(parts))
	cost := make([]int, len(parts))
	for i, p := range parts {
		for _, r := range p {
			cost[i] += tokens(r)
		}
	}
	order := make([]int, len(parts))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return cost[order[a]] > cost[order[b]] })
	load := make([]int, d.g.Size())
	for _, i := range order {
		r := 0
		for q := range load {
			if load[q] < load[r] {
				r = q
			}
		}
		load[r] += cost[i] + 1 // +1: empty parts still spread
		owner[i] = r
	}
	return owner
}

// gatherRows completes outs (row-major (B, T) matrices) after each rank
// filled the rows of its own parts: every rank sends its rows, in part
// order, and copies the others' into place (no-op in one process).
func (d *dataParallel) gatherRows(parts [][]int, owners []int, outs []*algo.Mat) error {
	if d == nil || len(outs) == 0 {
		return nil
	}
	rowsOf := func(q int) (n int) {
		for k, p := range parts {
			if owners[k] == q {
				n += len(p)
			}
		}
		return n
	}
	T := outs[0].T
	var mine []float64
	for _, m := range outs {
		if m.T != T {
			return fmt.Errorf("starpo: data parallel: gathered matrices of %d and %d columns", T, m.T)
		}
		for k, p := range parts {
			if owners[k] == d.g.Rank() {
				for _, i := range p {
					mine = append(mine, m.Data[i*T:(i+1)*T]...)
				}
			}
		}
	}
	all, err := d.g.AllGatherFloat64s(d.ctx, mine)
	if err != nil {
		return err
	}
	off := 0
	for q := range d.g.Size() {
		n := rowsOf(q) * T * len(outs)
		if off+n > len(all) {
			return fmt.Errorf("starpo: data parallel: rank %d sent fewer rows than it owns", q)
		}
		src := all[off : off+n]
		off += n
		if q == d.g.Rank() {
			continue
		}
		j := 0
		for _, m := range outs {
			for k, p := range parts {
				if owners[k] == q {
					for _, i := range p {
						copy(m.Data[i*T:(i+1)*T], src[j:j+T])
						j += T
					}
				}
			}
		}
	}
	if off != len(all) {
		return fmt.Errorf("starpo: data parallel: gathered %d values, expected %d", len(all), off)
	}
	return nil
}

// record keeps one micro-batch's metrics (or adds them directly in one
// process); skip advances the global order past a part another rank runs.
func (d *dataParallel) record(lists metricLists, m map[string]float64) {
	if d == nil {
		lists.add(m)
		return
	}
	d.recs = append(d.recs, microRecord{Seq: d.seq, Met: m})
	d.seq++
}

func (d *dataParallel) skip() {
	if d != nil {
		d.seq++
	}
}

// gather adds every rank's micro-batch metrics to lists in the global order.
func (d *dataParallel) gather(lists metricLists) error {
	if d == nil {
		return nil
	}
	b, err := json.Marshal(d.recs)
	if err != nil {
		return err
	}
	parts, err := d.g.AllGatherBytes(d.ctx, b)
	if err != nil {
		return err
	}
	var all []microRecord
	for r, p := range parts {
		var recs []microRecord
		if err := json.Unmarshal(p, &recs); err != nil {
			return fmt.Errorf("starpo: metrics from rank %d: %w", r, err)
		}
		all = append(all, recs...)
	}
	slices.SortFunc(all, func(a, b microRecord) int { return a.Seq - b.Seq })
	for _, rec := range all {
		lists.add(rec.Met)
	}
	d.recs = nil
	return nil
}

// step replaces clip + AdamW step after a mini-batch's backward passes: the
// role's sharded optimizer (created on first use from opt's state, whose
// full moments are then freed) reduce-scatters the gradients, clips on the
// global norm and updates. It returns the global norm before clipping.
func (d *dataParallel) step(role string, opt *torch.AdamW, params []*torch.Tensor, lr, clip float64) (float64, error) {
	sh := d.sharded[role]
	if sh == nil {
		var err error
		if sh, err = dist.NewShardedAdamW(d.ctx, d.g, params, opt.Config); err != nil {
			return 0, err
		}
		sh.GradReduce = dist.Sum // micro-batch losses carry their share of the global mini-batch
		m, v, step := opt.State()
		if err := sh.LoadFull(m, v, step); err != nil {
			sh.Close()
			return 0, err
		}
		opt.Close() // the full moments now live sharded
		d.sharded[role] = sh
	}
	return sh.Step(d.ctx, lr, clip)
}

// shard is this rank's share of a data-parallel rollout (nil in one
// process): env groups split over the ranks, episodes gathered.
func (d *dataParallel) shard() *ragen.Shard {
	if d == nil {
		return nil
	}
	return &ragen.Shard{Rank: d.g.Rank(), Size: d.g.Size(), AllGather: func(ctx context.Context, b []byte) ([][]byte, error) {
		return d.g.AllGatherBytes(ctx, b)
	}}
}

// checkRows verifies that every rank holds the same rollout batch (a
// rank-dependent rollout would silently train on different data).
func (d *dataParallel) checkRows(r *rows) error {
	if d == nil {
		return nil
	}
	h := sha256.New()
	w := func(xs ...int64) {
		var b [8]byte
		for _, x := range xs {
			binary.LittleEndian.PutUint64(b[:], uint64(x))
			h.Write(b[:])
		}
	}
	w(int64(r.B), int64(r.L))
	w(r.ids...)
	w(r.attn...)
	for _, m := range []*[]float64{&r.mask.Data, &r.scores.Data} {
		for _, x := range *m {
			w(int64(math.Float64bits(x)))
		}
	}
	for _, u := range r.uids {
		w(int64(u))
	}
	sum := h.Sum(nil)
	parts, err := d.g.AllGatherBytes(d.ctx, sum)
	if err != nil {
		return err
	}
	for q, p := range parts {
		if string(p) != string(parts[0]) {
			return fmt.Errorf("starpo: data parallel: rank %d rolled out a different batch than rank 0 "+
				"(rollouts must be identical on every rank: same seed, weights and thread count)", q)
		}
	}
	return nil
}

func (d *dataParallel) close() {
	if d == nil {
		return
	}
	for _, o := range d.sharded {
		o.Close()
	}
	d.sharded = nil
}
