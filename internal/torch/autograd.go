package torch

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// SetRequiresGrad turns autograd recording on t on or off.
func (t *Tensor) SetRequiresGrad(on bool) error {
	h := t.handle()
	if h == nil {
		return ErrFreed
	}
	return check(C.tt_set_requires_grad(h, b2i(on)))
}

// Backward runs autograd from t. grad may be nil when t is a scalar.
func (t *Tensor) Backward(grad *Tensor) error { return t.backward(grad, false) }

// BackwardRetain is Backward keeping the graph for another backward pass.
func (t *Tensor) BackwardRetain(grad *Tensor) error { return t.backward(grad, true) }

func (t *Tensor) backward(grad *Tensor, retain bool) error {
	h := t.handle()
	if h == nil {
		return ErrFreed
	}
	var g C.tt_tensor
	if grad != nil {
		if g = grad.handle(); g == nil {
			return ErrFreed
		}
	}
	return check(C.tt_backward(h, g, b2i(retain)))
}

// Grad returns a new reference to t's accumulated gradient, or nil when it
// has none. The caller owns the result.
func (t *Tensor) Grad() (*Tensor, error) {
	h := t.handle()
	if h == nil {
		return nil, ErrFreed
	}
	var g C.tt_tensor
	if err := check(C.tt_grad(h, &g)); err != nil {
		return nil, err
	}
	if g == nil {
		return nil, nil
	}
	return newTensor(g), nil
}

// SetGrad replaces t's gradient with g (nil clears it).
func (t *Tensor) SetGrad(g *Tensor) error {
	h := t.handle()
	if h == nil {
		return ErrFreed
	}
	return check(C.tt_set_grad(h, g.handle()))
}

func handles(ts []*Tensor) ([]C.tt_tensor, error) {
	hs := make([]C.tt_tensor, len(ts))
	for i, t := range ts {
		if hs[i] = t.handle(); hs[i] == nil {
			return nil, ErrFreed
		}
	}
	return hs, nil
}

func first(hs []C.tt_tensor) *C.tt_tensor {
	if len(hs) == 0 {
		return nil
	}
	return (*C.tt_tensor)(unsafe.Pointer(&hs[0]))
}

// ZeroGrad clears the gradients of ts (set to none, as PyTorch's default).
func ZeroGrad(ts []*Tensor) error {
	hs, err := handles(ts)
	if err != nil {
		return err
	}
	return check(C.tt_zero_grad(first(hs), C.int(len(hs))))
}

// NoGrad runs f with autograd recording off. Grad mode is thread-local in
// libtorch, so the goroutine is pinned to its OS thread while f runs; work f
// hands to other goroutines is not covered.
func NoGrad(f func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	prev := C.tt_set_grad_enabled(0)
	defer C.tt_set_grad_enabled(prev)
	return f()
}

// GradEnabled reports the grad mode of the calling thread (meaningful only
// on a pinned goroutine, e.g. inside NoGrad).
func GradEnabled() bool { return C.tt_grad_enabled() != 0 }
