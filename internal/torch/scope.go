package torch

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"unsafe"
)

// Scope owns intermediate tensors. Ops called on a scope register their
// results with it; Close frees all of them in one call. A scope is sticky:
// after its first error every op returns nil and Err reports that error.
//
// A Scope is used by one goroutine at a time.
type Scope struct {
	ts  []*Tensor
	err error
}

// NewScope returns an empty scope.
func NewScope() *Scope { return &Scope{} }

// Err is the first error any op on the scope met, or nil.
func (s *Scope) Err() error { return s.err }

// Fail records err as the scope's error if it has none yet.
func (s *Scope) Fail(err error) {
	if s.err == nil && err != nil {
		s.err = err
	}
}

// Close frees every tensor the scope still owns and returns the scope's
// error. The scope can be reused afterwards (with its error cleared).
func (s *Scope) Close() error {
	if len(s.ts) > 0 {
		hs := make([]C.tt_tensor, 0, len(s.ts))
		for _, t := range s.ts {
			if h := t.handle(); h != nil {
				hs = append(hs, h)
				t.c.h = nil
			}
		}
		if len(hs) > 0 {
			C.tt_free_many((*C.tt_tensor)(unsafe.Pointer(&hs[0])), C.int(len(hs)))
		}
		s.ts = s.ts[:0]
	}
	err := s.err
	s.err = nil
	return err
}

// Own adopts t into the scope (for constructors: s.Own(torch.From(x, 2, 3))).
// If err is non-nil it becomes the scope's error and Own returns nil.
func (s *Scope) Own(t *Tensor, err error) *Tensor {
	if err != nil {
		s.Fail(err)
		if t != nil {
			t.Free()
		}
		return nil
	}
	if s.err != nil {
		t.Free()
		return nil
	}
	s.ts = append(s.ts, t)
	return t
}

// Escape removes t from the scope so that it outlives Close; the caller
// becomes its owner. It returns t (nil if the scope has failed).
func (s *Scope) Escape(t *Tensor) *Tensor {
	if t == nil {
		return nil
	}
	for i := len(s.ts) - 1; i >= 0; i-- {
		if s.ts[i] == t {
			s.ts = append(s.ts[:i], s.ts[i+1:]...)
			return t
		}
	}
	panic("torch: Escape of a tensor the scope does not own")
}

// ok reports whether the scope may run an op on the given inputs.
func (s *Scope) ok(ts ...*Tensor) bool {
	if s.err != nil {
		return false
	}
	for _, t := range ts {
		if t.handle() == nil {
			s.err = ErrFreed
			return false
		}
	}
	return true
}

// put records the result of a C call.
func (s *Scope) put(e C.tt_err, h C.tt_tensor) *Tensor {
	if err := check(e); err != nil {
		s.err = err
		return nil
	}
	t := newTensor(h)
	s.ts = append(s.ts, t)
	return t
}

func (s *Scope) put2(e C.tt_err, a, b C.tt_tensor) (*Tensor, *Tensor) {
	if err := check(e); err != nil {
		s.err = err
		return nil, nil
	}
	ta, tb := newTensor(a), newTensor(b)
	s.ts = append(s.ts, ta, tb)
	return ta, tb
}

func (s *Scope) unary(op C.int, a *Tensor) *Tensor {
	if !s.ok(a) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_unary(op, a.handle(), &h), h)
}

func (s *Scope) binary(op C.int, a, b *Tensor) *Tensor {
	if !s.ok(a, b) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_binary(op, a.handle(), b.handle(), &h), h)
}

func (s *Scope) scalar(op C.int, a *Tensor, v float64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_scalar(op, a.handle(), C.double(v), &h), h)
}

func (s *Scope) reduce(op C.int, a *Tensor, keepdim bool, dims []int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_reduce(op, a.handle(), shapePtr(dims), C.int(len(dims)), b2i(keepdim), &h), h)
}

// ---- creation inside a scope ----

// Full returns a scoped tensor filled with v.
func (s *Scope) Full(shape []int64, v float64, dtype DType, dev Device) *Tensor {
	if s.err != nil {
		return nil
	}
	return s.Own(Full(shape, v, dtype, dev))
}

// Zeros returns a scoped zero tensor.
func (s *Scope) Zeros(shape []int64, dtype DType, dev Device) *Tensor {
	return s.Full(shape, 0, dtype, dev)
}

// Arange returns a scoped [start, end) range.
func (s *Scope) Arange(start, end, step float64, dtype DType, dev Device) *Tensor {
	if s.err != nil {
		return nil
	}
	return s.Own(Arange(start, end, step, dtype, dev))
}

// ---- elementwise unary ----

func (s *Scope) Neg(a *Tensor) *Tensor        { return s.unary(C.TT_NEG, a) }
func (s *Scope) Exp(a *Tensor) *Tensor        { return s.unary(C.TT_EXP, a) }
func (s *Scope) Log(a *Tensor) *Tensor        { return s.unary(C.TT_LOG, a) }
func (s *Scope) Log1p(a *Tensor) *Tensor      { return s.unary(C.TT_LOG1P, a) }
func (s *Scope) Sqrt(a *Tensor) *Tensor       { return s.unary(C.TT_SQRT, a) }
func (s *Scope) Rsqrt(a *Tensor) *Tensor      { return s.unary(C.TT_RSQRT, a) }
func (s *Scope) Abs(a *Tensor) *Tensor        { return s.unary(C.TT_ABS, a) }
func (s *Scope) Sign(a *Tensor) *Tensor       { return s.unary(C.TT_SIGN, a) }
func (s *Scope) Square(a *Tensor) *Tensor     { return s.unary(C.TT_SQUARE, a) }
func (s *Scope) Reciprocal(a *Tensor) *Tensor { return s.unary(C.TT_RECIPROCAL, a) }
func (s *Scope) Floor(a *Tensor) *Tensor      { return s.unary(C.TT_FLOOR, a) }
func (s *Scope) SiLU(a *Tensor) *Tensor       { return s.unary(C.TT_SILU, a) }
func (s *Scope) ReLU(a *Tensor) *Tensor       { return s.unary(C.TT_RELU, a) }
func (s *Scope) Sigmoid(a *Tensor) *Tensor    { return s.unary(C.TT_SIGMOID, a) }
func (s *Scope) Tanh(a *Tensor) *Tensor       { return s.unary(C.TT_TANH, a) }
func (s *Scope) Cos(a *Tensor) *Tensor        { return s.unary(C.TT_COS, a) }
func (s *Scope) Sin(a *Tensor) *Tensor        { return s.unary(C.TT_SIN, a) }
func (s *Scope) Not(a *Tensor) *Tensor        { return s.unary(C.TT_LOGICAL_NOT, a) }
func (s *Scope) IsNaN(a *Tensor) *Tensor      { return s.unary(C.TT_ISNAN, a) }

// GELU is the exact (erf) GELU; GELUTanh the tanh approximation.
func (s *Scope) GELU(a *Tensor) *Tensor     { return s.unary(C.TT_GELU, a) }
func (s *Scope) GELUTanh(a *Tensor) *Tensor { return s.unary(C.TT_GELU_TANH, a) }

// Contiguous returns a contiguous copy of a (or a itself, re-referenced).
func (s *Scope) Contiguous(a *Tensor) *Tensor { return s.unary(C.TT_CONTIGUOUS, a) }

// Clone copies a (keeping autograd history).
func (s *Scope) Clone(a *Tensor) *Tensor { return s.unary(C.TT_CLONE, a) }

// Detach returns a view of a cut from the autograd graph.
func (s *Scope) Detach(a *Tensor) *Tensor { return s.unary(C.TT_DETACH, a) }

// ---- elementwise binary (broadcasting) ----

func (s *Scope) Add(a, b *Tensor) *Tensor     { return s.binary(C.TT_ADD, a, b) }
func (s *Scope) Sub(a, b *Tensor) *Tensor     { return s.binary(C.TT_SUB, a, b) }
func (s *Scope) Mul(a, b *Tensor) *Tensor     { return s.binary(C.TT_MUL, a, b) }
func (s *Scope) Div(a, b *Tensor) *Tensor     { return s.binary(C.TT_DIV, a, b) }
func (s *Scope) Pow(a, b *Tensor) *Tensor     { return s.binary(C.TT_POW, a, b) }
func (s *Scope) Minimum(a, b *Tensor) *Tensor { return s.binary(C.TT_MINIMUM, a, b) }
func (s *Scope) Maximum(a, b *Tensor) *Tensor { return s.binary(C.TT_MAXIMUM, a, b) }
func (s *Scope) Eq(a, b *Tensor) *Tensor      { return s.binary(C.TT_EQ, a, b) }
func (s *Scope) Ne(a, b *Tensor) *Tensor      { return s.binary(C.TT_NE, a, b) }
func (s *Scope) Lt(a, b *Tensor) *Tensor      { return s.binary(C.TT_LT, a, b) }
func (s *Scope) Le(a, b *Tensor) *Tensor      { return s.binary(C.TT_LE, a, b) }
func (s *Scope) Gt(a, b *Tensor) *Tensor      { return s.binary(C.TT_GT, a, b) }
func (s *Scope) Ge(a, b *Tensor) *Tensor      { return s.binary(C.TT_GE, a, b) }
func (s *Scope) And(a, b *Tensor) *Tensor     { return s.binary(C.TT_LOGICAL_AND, a, b) }
func (s *Scope) Or(a, b *Tensor) *Tensor      { return s.binary(C.TT_LOGICAL_OR, a, b) }

// MatMul is torch.matmul (batched, broadcasting); BMM is torch.bmm.
func (s *Scope) MatMul(a, b *Tensor) *Tensor { return s.binary(C.TT_MATMUL, a, b) }
func (s *Scope) BMM(a, b *Tensor) *Tensor    { return s.binary(C.TT_BMM, a, b) }

// ---- tensor-scalar ----

func (s *Scope) AddS(a *Tensor, v float64) *Tensor { return s.scalar(C.TT_ADD_S, a, v) }
func (s *Scope) SubS(a *Tensor, v float64) *Tensor { return s.scalar(C.TT_SUB_S, a, v) }
func (s *Scope) MulS(a *Tensor, v float64) *Tensor { return s.scalar(C.TT_MUL_S, a, v) }
func (s *Scope) DivS(a *Tensor, v float64) *Tensor { return s.scalar(C.TT_DIV_S, a, v) }
func (s *Scope) PowS(a *Tensor, v float64) *Tensor { return s.scalar(C.TT_POW_S, a, v) }

// RSubS computes v - a; RDivS computes v / a.
func (s *Scope) RSubS(a *Tensor, v float64) *Tensor { return s.scalar(C.TT_RSUB_S, a, v) }
func (s *Scope) RDivS(a *Tensor, v float64) *Tensor { return s.scalar(C.TT_RDIV_S, a, v) }

func (s *Scope) EqS(a *Tensor, v float64) *Tensor { return s.scalar(C.TT_EQ_S, a, v) }
func (s *Scope) NeS(a *Tensor, v float64) *Tensor { return s.scalar(C.TT_NE_S, a, v) }
func (s *Scope) LtS(a *Tensor, v float64) *Tensor { return s.scalar(C.TT_LT_S, a, v) }
func (s *Scope) LeS(a *Tensor, v float64) *Tensor { return s.scalar(C.TT_LE_S, a, v) }
func (s *Scope) GtS(a *Tensor, v float64) *Tensor { return s.scalar(C.TT_GT_S, a, v) }
func (s *Scope) GeS(a *Tensor, v float64) *Tensor { return s.scalar(C.TT_GE_S, a, v) }

// MinS is min(a, v) elementwise; MaxS is max(a, v).
func (s *Scope) MinS(a *Tensor, v float64) *Tensor { return s.scalar(C.TT_MINIMUM_S, a, v) }
func (s *Scope) MaxS(a *Tensor, v float64) *Tensor { return s.scalar(C.TT_MAXIMUM_S, a, v) }

// Clamp limits a to [lo, hi].
func (s *Scope) Clamp(a *Tensor, lo, hi float64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_clamp(a.handle(), C.double(lo), C.double(hi), 1, 1, &h), h)
}

// Where picks a where cond is true, else b.
func (s *Scope) Where(cond, a, b *Tensor) *Tensor {
	if !s.ok(cond, a, b) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_where(cond.handle(), a.handle(), b.handle(), &h), h)
}

// MaskedFill sets a to v where mask is true.
func (s *Scope) MaskedFill(a, mask *Tensor, v float64) *Tensor {
	if !s.ok(a, mask) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_masked_fill(a.handle(), mask.handle(), C.double(v), &h), h)
}

// ---- reductions: no dims means all elements ----

func (s *Scope) Sum(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(C.TT_SUM, a, keepdim, dims)
}
func (s *Scope) Mean(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(C.TT_MEAN, a, keepdim, dims)
}

// Var and Std are unbiased (n-1); VarPop and StdPop divide by n.
func (s *Scope) Var(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(C.TT_VAR, a, keepdim, dims)
}
func (s *Scope) Std(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(C.TT_STD, a, keepdim, dims)
}
func (s *Scope) VarPop(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(C.TT_VAR_POP, a, keepdim, dims)
}
func (s *Scope) StdPop(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(C.TT_STD_POP, a, keepdim, dims)
}

// Max and Min are amax/amin over dims (values only).
func (s *Scope) Max(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(C.TT_AMAX, a, keepdim, dims)
}
func (s *Scope) Min(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(C.TT_AMIN, a, keepdim, dims)
}
func (s *Scope) LogSumExp(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(C.TT_LOGSUMEXP, a, keepdim, dims)
}
func (s *Scope) Prod(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(C.TT_PROD, a, keepdim, dims)
}
func (s *Scope) Any(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(C.TT_ANY, a, keepdim, dims)
}
func (s *Scope) All(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(C.TT_ALL, a, keepdim, dims)
}

// Norm is the L2 norm over dims.
func (s *Scope) Norm(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(C.TT_NORM2, a, keepdim, dims)
}

// MaxDim returns the max values and their indices along dim.
func (s *Scope) MaxDim(a *Tensor, dim int64, keepdim bool) (values, indices *Tensor) {
	if !s.ok(a) {
		return nil, nil
	}
	var v, i C.tt_tensor
	return s.put2(C.tt_max_dim(a.handle(), C.int64_t(dim), b2i(keepdim), &v, &i), v, i)
}

// Argmax returns the index of the max along dim.
func (s *Scope) Argmax(a *Tensor, dim int64, keepdim bool) *Tensor {
	if !s.ok(a) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_argmax(a.handle(), C.int64_t(dim), b2i(keepdim), &h), h)
}

// TopK returns the k largest (or smallest) values along dim, sorted, and their indices.
func (s *Scope) TopK(a *Tensor, k, dim int64, largest bool) (values, indices *Tensor) {
	if !s.ok(a) {
		return nil, nil
	}
	var v, i C.tt_tensor
	return s.put2(C.tt_topk(a.handle(), C.int64_t(k), C.int64_t(dim), b2i(largest), &v, &i), v, i)
}

// Sort sorts along dim; stable keeps the order of equal elements.
func (s *Scope) Sort(a *Tensor, dim int64, descending, stable bool) (values, indices *Tensor) {
	if !s.ok(a) {
		return nil, nil
	}
	var v, i C.tt_tensor
	return s.put2(C.tt_sort(a.handle(), C.int64_t(dim), b2i(descending), b2i(stable), &v, &i), v, i)
}

// Cumsum is the cumulative sum along dim.
func (s *Scope) Cumsum(a *Tensor, dim int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_cumsum(a.handle(), C.int64_t(dim), &h), h)
}

// Softmax along dim.
func (s *Scope) Softmax(a *Tensor, dim int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_softmax(a.handle(), C.int64_t(dim), 0, &h), h)
}

// LogSoftmax along dim.
func (s *Scope) LogSoftmax(a *Tensor, dim int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_softmax(a.handle(), C.int64_t(dim), 1, &h), h)
}

// Linear computes x @ w^T + b (b may be nil), as torch.nn.functional.linear.
func (s *Scope) Linear(x, w, b *Tensor) *Tensor {
	if !s.ok(x, w) {
		return nil
	}
	var bh C.tt_tensor
	if b != nil {
		if !s.ok(b) {
			return nil
		}
		bh = b.handle()
	}
	var h C.tt_tensor
	return s.put(C.tt_linear(x.handle(), w.handle(), bh, &h), h)
}

// Embedding looks ids (int64) up in the rows of weight.
func (s *Scope) Embedding(weight, ids *Tensor) *Tensor {
	if !s.ok(weight, ids) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_embedding(weight.handle(), ids.handle(), &h), h)
}

// Multinomial draws n indices per row of probs from g (nil: default generator).
func (s *Scope) Multinomial(probs *Tensor, n int64, replacement bool, g *Generator) *Tensor {
	if !s.ok(probs) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_multinomial(probs.handle(), C.int64_t(n), b2i(replacement), g.handle(), &h), h)
}

// Randn draws standard normals into a scoped tensor.
func (s *Scope) Randn(g *Generator, shape []int64, dtype DType, dev Device) *Tensor {
	if s.err != nil {
		return nil
	}
	return s.Own(Randn(g, shape, dtype, dev))
}

// Rand draws uniforms in [0,1) into a scoped tensor.
func (s *Scope) Rand(g *Generator, shape []int64, dtype DType, dev Device) *Tensor {
	if s.err != nil {
		return nil
	}
	return s.Own(Rand(g, shape, dtype, dev))
}

// To converts a to dtype on dev.
func (s *Scope) To(a *Tensor, dtype DType, dev Device) *Tensor {
	if !s.ok(a) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_to(a.handle(), C.int(dtype), dev.c(), &h), h)
}

// Cast converts a to dtype on its own device.
func (s *Scope) Cast(a *Tensor, dtype DType) *Tensor {
	if !s.ok(a) {
		return nil
	}
	return s.To(a, dtype, a.Device())
}

// ---- views and indexing ----

// Reshape returns a with the given shape (-1 infers one dimension).
func (s *Scope) Reshape(a *Tensor, shape ...int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_reshape(a.handle(), shapePtr(shape), C.int(len(shape)), &h), h)
}

// View is Reshape that never copies (fails on incompatible strides).
func (s *Scope) View(a *Tensor, shape ...int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_view(a.handle(), shapePtr(shape), C.int(len(shape)), &h), h)
}

// Expand broadcasts a to shape without copying (-1 keeps a dimension).
func (s *Scope) Expand(a *Tensor, shape ...int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_expand(a.handle(), shapePtr(shape), C.int(len(shape)), &h), h)
}

// Permute reorders dimensions.
func (s *Scope) Permute(a *Tensor, dims ...int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_permute(a.handle(), shapePtr(dims), C.int(len(dims)), &h), h)
}

// Transpose swaps two dimensions.
func (s *Scope) Transpose(a *Tensor, d0, d1 int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_transpose(a.handle(), C.int64_t(d0), C.int64_t(d1), &h), h)
}

// Slice is a[start:end:step] along dim (a view).
func (s *Scope) Slice(a *Tensor, dim, start, end, step int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_slice(a.handle(), C.int64_t(dim), C.int64_t(start), C.int64_t(end), C.int64_t(step), &h), h)
}

// Narrow is a[start:start+n] along dim (a view).
func (s *Scope) Narrow(a *Tensor, dim, start, n int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_narrow(a.handle(), C.int64_t(dim), C.int64_t(start), C.int64_t(n), &h), h)
}

// Unsqueeze inserts a dimension of size 1 at dim.
func (s *Scope) Unsqueeze(a *Tensor, dim int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_unsqueeze(a.handle(), C.int64_t(dim), &h), h)
}

// Squeeze removes dimension dim if its size is 1.
func (s *Scope) Squeeze(a *Tensor, dim int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_squeeze(a.handle(), C.int64_t(dim), &h), h)
}

// IndexSelect picks entries idx (int64, 1-D) along dim.
func (s *Scope) IndexSelect(a *Tensor, dim int64, idx *Tensor) *Tensor {
	if !s.ok(a, idx) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_index_select(a.handle(), C.int64_t(dim), idx.handle(), &h), h)
}

// Gather is torch.gather.
func (s *Scope) Gather(a *Tensor, dim int64, idx *Tensor) *Tensor {
	if !s.ok(a, idx) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_gather(a.handle(), C.int64_t(dim), idx.handle(), &h), h)
}

// Scatter is torch.scatter (out of place).
func (s *Scope) Scatter(a *Tensor, dim int64, idx, src *Tensor) *Tensor {
	if !s.ok(a, idx, src) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_scatter(a.handle(), C.int64_t(dim), idx.handle(), src.handle(), &h), h)
}

// ScatterAdd is torch.scatter_add (out of place).
func (s *Scope) ScatterAdd(a *Tensor, dim int64, idx, src *Tensor) *Tensor {
	if !s.ok(a, idx, src) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_scatter_add(a.handle(), C.int64_t(dim), idx.handle(), src.handle(), &h), h)
}

func (s *Scope) list(ts []*Tensor) []C.tt_tensor {
	if !s.ok(ts...) {
		return nil
	}
	if len(ts) == 0 {
		s.err = &Error{Op: "cat", Msg: "needs at least one tensor"}
		return nil
	}
	hs := make([]C.tt_tensor, len(ts))
	for i, t := range ts {
		hs[i] = t.handle()
	}
	return hs
}

// Cat concatenates along dim.
func (s *Scope) Cat(ts []*Tensor, dim int64) *Tensor {
	hs := s.list(ts)
	if hs == nil {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_cat((*C.tt_tensor)(unsafe.Pointer(&hs[0])), C.int(len(hs)), C.int64_t(dim), &h), h)
}

// Stack stacks along a new dim.
func (s *Scope) Stack(ts []*Tensor, dim int64) *Tensor {
	hs := s.list(ts)
	if hs == nil {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_stack((*C.tt_tensor)(unsafe.Pointer(&hs[0])), C.int(len(hs)), C.int64_t(dim), &h), h)
}

// Triu keeps the upper triangle from diagonal k; Tril the lower.
func (s *Scope) Triu(a *Tensor, k int64) *Tensor { return s.tri(a, k, true) }
func (s *Scope) Tril(a *Tensor, k int64) *Tensor { return s.tri(a, k, false) }

func (s *Scope) tri(a *Tensor, k int64, upper bool) *Tensor {
	if !s.ok(a) {
		return nil
	}
	var h C.tt_tensor
	return s.put(C.tt_triu(a.handle(), C.int64_t(k), b2i(upper), &h), h)
}

// ---- in place ----

// CopyInto copies src into dst (broadcasting; no autograd).
func (s *Scope) CopyInto(dst, src *Tensor) {
	if s.ok(dst, src) {
		s.Fail(check(C.tt_copy_(dst.handle(), src.handle())))
	}
}

// FillInto sets every element of dst to v (no autograd).
func (s *Scope) FillInto(dst *Tensor, v float64) {
	if s.ok(dst) {
		s.Fail(check(C.tt_fill_(dst.handle(), C.double(v))))
	}
}

// IndexCopyInto copies rows of src into dst at idx along dim (no autograd).
func (s *Scope) IndexCopyInto(dst *Tensor, dim int64, idx, src *Tensor) {
	if s.ok(dst, idx, src) {
		s.Fail(check(C.tt_index_copy_(dst.handle(), C.int64_t(dim), idx.handle(), src.handle())))
	}
}

// ---- reading values ----

// Float32s copies a's values; on failure it records the error and returns nil.
func (s *Scope) Float32s(a *Tensor) []float32 { return scopedData[float32](s, a) }

// Float64s copies a's values as float64.
func (s *Scope) Float64s(a *Tensor) []float64 { return scopedData[float64](s, a) }

// Int64s copies a's values as int64.
func (s *Scope) Int64s(a *Tensor) []int64 { return scopedData[int64](s, a) }

// Item returns a's single value.
func (s *Scope) Item(a *Tensor) float64 {
	if !s.ok(a) {
		return 0
	}
	v, err := a.Item()
	s.Fail(err)
	return v
}

func scopedData[T Elem](s *Scope, a *Tensor) []T {
	if !s.ok(a) {
		return nil
	}
	v, err := Data[T](a)
	s.Fail(err)
	return v
}

// Errorf records a binding-level error on the scope (for shape checks in
// code built on the scope).
func (s *Scope) Errorf(op, format string, args ...any) {
	s.Fail(&Error{Op: op, Msg: fmt.Sprintf(format, args...)})
}
