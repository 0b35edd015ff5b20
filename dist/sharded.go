package dist

import (
	"context"
	"errors"
	"fmt"
	"math"

	"ragen/torch"
)

// ShardedAdamW is an FSDP/ZeRO-style AdamW over a group: the parameters are
// flattened (in order, padded to a multiple of the world size) into one
// vector split into Size equal shards. Each rank keeps the master copy,
// gradient and both AdamW moments of its own shard only; Step
// reduce-scatters the gradients, clips them on the global norm, updates the
// shard and all-gathers the parameters back into the (replicated) model
// tensors used for forward and backward. Per-rank optimizer state is
// 3·⌈numel/W⌉ elements instead of 3·numel.
//
// With LoRA pass only the adapter parameters: only they are sharded.
type ShardedAdamW struct {
	g      *Group
	params []*torch.Tensor
	sizes  []int64
	numel  int64 // unpadded
	shard  int64 // elements per rank
	dtype  torch.DType
	dev    torch.Device

	master *torch.Tensor // this rank's shard of the flat parameters (the optimizer's parameter)
	opt    *torch.AdamW

	// GradReduce is how gradients combine over ranks: Avg (default; each
	// rank's loss is a mean over its share) or Sum (each rank's loss is
	// already weighted by its share of the global batch).
	GradReduce ReduceOp
}

// NewShardedAdamW broadcasts rank 0's parameters to every rank (so all
// start equal) and builds this rank's shard state. params must share one
// floating dtype and device.
func NewShardedAdamW(ctx context.Context, g *Group, params []*torch.Tensor, cfg torch.AdamWConfig) (*ShardedAdamW, error) {
	if len(params) == 0 {
		return nil, errors.New("dist: sharded adamw: no parameters")
	}
	o := &ShardedAdamW{g: g, params: params, dtype: params[0].DType(), dev: params[0].Device(), GradReduce: Avg}
	for i, p := range params {
		if !p.Valid() {
			return nil, fmt.Errorf("dist: sharded adamw: parameter %d: %w", i, torch.ErrFreed)
		}
		if p.DType() != o.dtype || p.Device() != o.dev {
			return nil, fmt.Errorf("dist: sharded adamw: parameter %d is %v on %v, parameter 0 %v on %v: all must match",
				i, p.DType(), p.Device(), o.dtype, o.dev)
		}
		o.sizes = append(o.sizes, p.Numel())
		o.numel += p.Numel()
	}
	w := int64(g.Size())
	o.shard = (o.numel + w - 1) / w
	err := withScope(func(s *torch.Scope) error {
		flat := o.flatten(s, func(i int) (*torch.Tensor, error) { return params[i], nil })
		if s.Err() != nil {
			return s.Err()
		}
		if err := g.Broadcast(ctx, 0, flat); err != nil {
			return fmt.Errorf("dist: sharded adamw: syncing parameters from rank 0: %w", err)
		}
		if err := o.unflatten(s, flat); err != nil {
			return err
		}
		o.master = s.Escape(s.Clone(s.Narrow(flat, 0, int64(g.Rank())*o.shard, o.shard)))
		return s.Err()
	})
	if err != nil {
		return nil, err
	}
	if err := o.master.SetRequiresGrad(true); err != nil {
		o.master.Free()
		return nil, err
	}
	if o.opt, err = torch.NewAdamW([]*torch.Tensor{o.master}, cfg); err != nil {
		o.master.Free()
		return nil, err
	}
	return o, nil
}

func withScope(f func(s *torch.Scope) error) error {
	s := torch.NewScope()
	err := f(s)
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.Err()
	}
	return err
}

// flatten concatenates part(i) (zeros where it is nil) into a new flat
// vector padded to W·shard elements.
func (o *ShardedAdamW) flatten(s *torch.Scope, part func(i int) (*torch.Tensor, error)) *torch.Tensor {
	pieces := make([]*torch.Tensor, 0, len(o.sizes)+1)
	for i, n := range o.sizes {
		t, err := part(i)
		if err != nil {
			s.Fail(err)
			return nil
		}
		if t == nil {
			t = s.Zeros([]int64{n}, o.dtype, o.dev)
		}
		pieces = append(pieces, s.Reshape(t, n))
	}
	if pad := o.shard*int64(o.g.Size()) - o.numel; pad > 0 {
		pieces = append(pieces, s.Zeros([]int64{pad}, o.dtype, o.dev))
	}
	return s.Cat(pieces, 0)
}

// Step runs one sharded update with learning rate lr after the local
// backward passes: gradients are reduce-scattered (GradReduce), clipped to
// the global L2 norm maxNorm (<= 0: no clipping), and, when that norm is
// finite, applied to the shard and all-gathered into the parameters. It
// returns the global gradient norm before clipping (as
// torch.ClipGradNorm); on a non-finite norm nothing is updated.
func (o *ShardedAdamW) Step(ctx context.Context, lr, maxNorm float64) (float64, error) {
	w := int64(o.g.Size())
	var norm float64
	err := withScope(func(s *torch.Scope) error {
		flat := o.flatten(s, func(i int) (*torch.Tensor, error) { return o.params[i].Grad() })
		if s.Err() != nil {
			return s.Err()
		}
		gs := flat // one rank: its gradient is the whole (padded) flat vector
		if w > 1 {
			gs = s.Zeros([]int64{o.shard}, o.dtype, o.dev)
			if err := o.g.ReduceScatter(ctx, o.GradReduce, gs, flat); err != nil {
				return err
			}
		}
		// the shard's L2 norm in the gradient dtype (as clip_grad_norm_), squared and summed in float64
		sq := s.Reshape(s.Square(s.Cast(s.Norm(gs, false), torch.Float64)), 1)
		if err := o.g.AllReduce(ctx, Sum, sq); err != nil {
			return err
		}
		norm = math.Sqrt(s.Item(sq))
		if math.IsNaN(norm) || math.IsInf(norm, 0) {
			return s.Err()
		}
		if maxNorm > 0 {
			// torch.nn.utils.clip_grad_norm_: coef = max_norm / (norm + 1e-6), at most 1.
			if coef := maxNorm / (norm + 1e-6); coef < 1 {
				gs = s.MulS(gs, coef)
			}
		}
		if err := o.master.SetGrad(gs); err != nil {
			return err
		}
		if err := o.opt.Step(lr); err != nil {
			return err
		}
		if err := o.master.SetGrad(nil); err != nil {
			return err
		}
		full := o.master
		if w > 1 {
			full = s.Zeros([]int64{o.shard * w}, o.dtype, o.dev)
			if err := o.g.AllGatherFlat(ctx, full, o.master); err != nil {
				return err
			}
		}
		return o.unflatten(s, full)
	})
	return norm, err
}

// unflatten copies the flat vector back into the parameters.
func (o *ShardedAdamW) unflatten(s *torch.Scope, flat *torch.Tensor) error {
	return torch.NoGrad(func() error {
		var off int64
		for i, n := range o.sizes {
			s.CopyInto(o.params[i], s.Reshape(s.Narrow(flat, 0, off, n), o.params[i].Shape()...))
			off += n
		}
		return s.Err()
	})
}

// StepCount is the number of updates applied.
func (o *ShardedAdamW) StepCount() int64 { return o.opt.StepCount() }

// ShardElems is the number of parameter elements each rank owns (padded).
func (o *ShardedAdamW) ShardElems() int64 { return o.shard }

// Numel is the number of parameter elements sharded.
func (o *ShardedAdamW) Numel() int64 { return o.numel }

// StateBytes is this rank's persistent optimizer memory: the shard's master
// copy and both AdamW moments.
func (o *ShardedAdamW) StateBytes() int64 { return 3 * o.shard * int64(o.dtype.Size()) }

// Shard returns this rank's state for a checkpoint: the master shard, the
// two moments (owned by o) and the step count.
func (o *ShardedAdamW) Shard() (master, m, v *torch.Tensor, step int64) {
	ms, vs, step := o.opt.State()
	return o.master, ms[0], vs[0], step
}

// Close frees the shard state (not the parameters).
func (o *ShardedAdamW) Close() {
	if o.opt != nil {
		o.opt.Close()
	}
	o.master.Free()
	o.opt, o.master = nil, nil
}

// LoadFull sets this rank's moments and step from full-size AdamW moments
// (one tensor per parameter, as torch.AdamW.State returns): the way a
// checkpoint written at any world size resumes.
func (o *ShardedAdamW) LoadFull(m, v []*torch.Tensor, step int64) error {
	if len(m) != len(o.params) || len(v) != len(o.params) {
		return fmt.Errorf("dist: sharded adamw: %d/%d moment tensors for %d parameters", len(m), len(v), len(o.params))
	}
	ms, vs, _ := o.opt.State()
	err := withScope(func(s *torch.Scope) error {
		for _, p := range []struct {
			full []*torch.Tensor
			dst  *torch.Tensor
		}{{m, ms[0]}, {v, vs[0]}} {
			flat := o.flatten(s, func(i int) (*torch.Tensor, error) {
				if p.full[i].Numel() != o.sizes[i] {
					return nil, fmt.Errorf("dist: sharded adamw: moment %d has %d elements, parameter %d", i, p.full[i].Numel(), o.sizes[i])
				}
				return s.Cast(p.full[i], o.dtype), nil
			})
			if s.Err() != nil {
				return s.Err()
			}
			s.CopyInto(p.dst, s.Narrow(flat, 0, int64(o.g.Rank())*o.shard, o.shard))
		}
		return s.Err()
	})
	if err != nil {
		return err
	}
	o.opt.SetStep(step)
	return nil
}

// Consolidate gathers every rank's moments into full-size tensors m and v
// (one per parameter, shaped like it). Every rank must call it.
func (o *ShardedAdamW) Consolidate(ctx context.Context, m, v []*torch.Tensor) error {
	if len(m) != len(o.params) || len(v) != len(o.params) {
		return fmt.Errorf("dist: sharded adamw: %d/%d moment tensors for %d parameters", len(m), len(v), len(o.params))
	}
	ms, vs, _ := o.opt.State()
	w := int64(o.g.Size())
	return withScope(func(s *torch.Scope) error {
		for _, p := range []struct {
			shard *torch.Tensor
			dst   []*torch.Tensor
		}{{ms[0], m}, {vs[0], v}} {
			full := s.Zeros([]int64{o.shard * w}, o.dtype, o.dev)
			if err := o.g.AllGatherFlat(ctx, full, p.shard); err != nil {
				return err
			}
			var off int64
			for i, n := range o.sizes {
				s.CopyInto(p.dst[i], s.Reshape(s.Narrow(full, 0, off, n), p.dst[i].Shape()...))
				off += n
			}
		}
		return s.Err()
	})
}

// DType is the dtype of the flat shards (the parameters').
func (o *ShardedAdamW) DType() torch.DType { return o.dtype }
