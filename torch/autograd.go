package torch

import (
	"runtime"

	"ragen/internal/torch/csrc"
)

// SetRequiresGrad turns autograd recording on t on or off.
func (t *Tensor) SetRequiresGrad(on bool) error {
	h := t.handle()
	if h.IsNil() {
		return ErrFreed
	}
	return check(csrc.SetRequiresGrad(h, on))
}

// Backward runs autograd from t. grad may be nil when t is a scalar.
func (t *Tensor) Backward(grad *Tensor) error { return t.backward(grad, false) }

// BackwardRetain is Backward keeping the graph for another backward pass.
func (t *Tensor) BackwardRetain(grad *Tensor) error { return t.backward(grad, true) }

func (t *Tensor) backward(grad *Tensor, retain bool) error {
	h := t.handle()
	if h.IsNil() {
		return ErrFreed
	}
	var g csrc.Tensor
	if grad != nil {
		if g = grad.handle(); g.IsNil() {
			return ErrFreed
		}
	}
	return check(csrc.Backward(h, g, retain))
}

// Grad returns a new reference to t's accumulated gradient, or nil when it
// has none. The caller owns the result.
func (t *Tensor) Grad() (*Tensor, error) {
	h := t.handle()
	if h.IsNil() {
		return nil, ErrFreed
	}
	g, err := csrc.Grad(h)
	if err != nil {
		return nil, check(err)
	}
	if g.IsNil() {
		return nil, nil
	}
	return newTensor(g), nil
}

// SetGrad replaces t's gradient with g (nil clears it).
func (t *Tensor) SetGrad(g *Tensor) error {
	h := t.handle()
	if h.IsNil() {
		return ErrFreed
	}
	return check(csrc.SetGrad(h, g.handle()))
}

func handles(ts []*Tensor) ([]csrc.Tensor, error) {
	hs := make([]csrc.Tensor, len(ts))
	for i, t := range ts {
		if hs[i] = t.handle(); hs[i].IsNil() {
			return nil, ErrFreed
		}
	}
	return hs, nil
}

// ZeroGrad clears the gradients of ts (set to none, as PyTorch's default).
func ZeroGrad(ts []*Tensor) error {
	hs, err := handles(ts)
	if err != nil {
		return err
	}
	return check(csrc.ZeroGrad(hs))
}

// NoGrad runs f with autograd recording off. Grad mode is thread-local in
// libtorch, so the goroutine is pinned to its OS thread while f runs; work f
// hands to other goroutines is not covered.
func NoGrad(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	prev := csrc.SetGradEnabled(false)
	defer csrc.SetGradEnabled(prev)
	return f()
}

// GradEnabled reports the grad mode of the calling thread (meaningful only
// on a pinned goroutine, e.g. inside NoGrad).
func GradEnabled() bool { return csrc.GradEnabled() }
