package torch

import (
	"fmt"

	"ragen/internal/torch/csrc"
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
		hs := make([]csrc.Tensor, 0, len(s.ts))
		for _, t := range s.ts {
			if h := t.handle(); !h.IsNil() {
				hs = append(hs, h)
				t.c.h = csrc.Tensor{}
			}
		}
		if len(hs) > 0 {
			csrc.FreeMany(hs)
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
		if t.handle().IsNil() {
			s.err = ErrFreed
			return false
		}
	}
	return true
}

// put records the result of a C call.
func (s *Scope) put(h csrc.Tensor, err error) *Tensor {
	if err != nil {
		s.err = check(err)
		return nil
	}
	t := newTensor(h)
	s.ts = append(s.ts, t)
	return t
}

func (s *Scope) put2(a, b csrc.Tensor, err error) (*Tensor, *Tensor) {
	if err != nil {
		s.err = check(err)
		return nil, nil
	}
	ta, tb := newTensor(a), newTensor(b)
	s.ts = append(s.ts, ta, tb)
	return ta, tb
}

func (s *Scope) unary(op csrc.UnaryOp, a *Tensor) *Tensor {
	if !s.ok(a) {
		return nil
	}
	return s.put(csrc.Unary(op, a.handle()))
}

func (s *Scope) binary(op csrc.BinaryOp, a, b *Tensor) *Tensor {
	if !s.ok(a, b) {
		return nil
	}
	return s.put(csrc.Binary(op, a.handle(), b.handle()))
}

func (s *Scope) scalar(op csrc.ScalarOp, a *Tensor, v float64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	return s.put(csrc.Scalar(op, a.handle(), v))
}

func (s *Scope) reduce(op csrc.ReduceOp, a *Tensor, keepdim bool, dims []int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	return s.put(csrc.Reduce(op, a.handle(), dims, keepdim))
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

func (s *Scope) Neg(a *Tensor) *Tensor        { return s.unary(csrc.OpNeg, a) }
func (s *Scope) Exp(a *Tensor) *Tensor        { return s.unary(csrc.OpExp, a) }
func (s *Scope) Log(a *Tensor) *Tensor        { return s.unary(csrc.OpLog, a) }
func (s *Scope) Log1p(a *Tensor) *Tensor      { return s.unary(csrc.OpLog1p, a) }
func (s *Scope) Sqrt(a *Tensor) *Tensor       { return s.unary(csrc.OpSqrt, a) }
func (s *Scope) Rsqrt(a *Tensor) *Tensor      { return s.unary(csrc.OpRsqrt, a) }
func (s *Scope) Abs(a *Tensor) *Tensor        { return s.unary(csrc.OpAbs, a) }
func (s *Scope) Sign(a *Tensor) *Tensor       { return s.unary(csrc.OpSign, a) }
func (s *Scope) Square(a *Tensor) *Tensor     { return s.unary(csrc.OpSquare, a) }
func (s *Scope) Reciprocal(a *Tensor) *Tensor { return s.unary(csrc.OpReciprocal, a) }
func (s *Scope) Floor(a *Tensor) *Tensor      { return s.unary(csrc.OpFloor, a) }
func (s *Scope) SiLU(a *Tensor) *Tensor       { return s.unary(csrc.OpSiLU, a) }
func (s *Scope) ReLU(a *Tensor) *Tensor       { return s.unary(csrc.OpReLU, a) }
func (s *Scope) Sigmoid(a *Tensor) *Tensor    { return s.unary(csrc.OpSigmoid, a) }
func (s *Scope) Tanh(a *Tensor) *Tensor       { return s.unary(csrc.OpTanh, a) }
func (s *Scope) Cos(a *Tensor) *Tensor        { return s.unary(csrc.OpCos, a) }
func (s *Scope) Sin(a *Tensor) *Tensor        { return s.unary(csrc.OpSin, a) }
func (s *Scope) Not(a *Tensor) *Tensor        { return s.unary(csrc.OpLogicalNot, a) }
func (s *Scope) IsNaN(a *Tensor) *Tensor      { return s.unary(csrc.OpIsNaN, a) }

// GELU is the exact (erf) GELU; GELUTanh the tanh approximation.
func (s *Scope) GELU(a *Tensor) *Tensor     { return s.unary(csrc.OpGELU, a) }
func (s *Scope) GELUTanh(a *Tensor) *Tensor { return s.unary(csrc.OpGELUTanh, a) }

// Contiguous returns a contiguous copy of a (or a itself, re-referenced).
func (s *Scope) Contiguous(a *Tensor) *Tensor { return s.unary(csrc.OpContiguous, a) }

// Clone copies a (keeping autograd history).
func (s *Scope) Clone(a *Tensor) *Tensor { return s.unary(csrc.OpClone, a) }

// Detach returns a view of a cut from the autograd graph.
func (s *Scope) Detach(a *Tensor) *Tensor { return s.unary(csrc.OpDetach, a) }

// ---- elementwise binary (broadcasting) ----

func (s *Scope) Add(a, b *Tensor) *Tensor     { return s.binary(csrc.OpAdd, a, b) }
func (s *Scope) Sub(a, b *Tensor) *Tensor     { return s.binary(csrc.OpSub, a, b) }
func (s *Scope) Mul(a, b *Tensor) *Tensor     { return s.binary(csrc.OpMul, a, b) }
func (s *Scope) Div(a, b *Tensor) *Tensor     { return s.binary(csrc.OpDiv, a, b) }
func (s *Scope) Pow(a, b *Tensor) *Tensor     { return s.binary(csrc.OpPow, a, b) }
func (s *Scope) Minimum(a, b *Tensor) *Tensor { return s.binary(csrc.OpMinimum, a, b) }
func (s *Scope) Maximum(a, b *Tensor) *Tensor { return s.binary(csrc.OpMaximum, a, b) }
func (s *Scope) Eq(a, b *Tensor) *Tensor      { return s.binary(csrc.OpEq, a, b) }
func (s *Scope) Ne(a, b *Tensor) *Tensor      { return s.binary(csrc.OpNe, a, b) }
func (s *Scope) Lt(a, b *Tensor) *Tensor      { return s.binary(csrc.OpLt, a, b) }
func (s *Scope) Le(a, b *Tensor) *Tensor      { return s.binary(csrc.OpLe, a, b) }
func (s *Scope) Gt(a, b *Tensor) *Tensor      { return s.binary(csrc.OpGt, a, b) }
func (s *Scope) Ge(a, b *Tensor) *Tensor      { return s.binary(csrc.OpGe, a, b) }
func (s *Scope) And(a, b *Tensor) *Tensor     { return s.binary(csrc.OpLogicalAnd, a, b) }
func (s *Scope) Or(a, b *Tensor) *Tensor      { return s.binary(csrc.OpLogicalOr, a, b) }

// MatMul is torch.matmul (batched, broadcasting); BMM is torch.bmm.
func (s *Scope) MatMul(a, b *Tensor) *Tensor { return s.binary(csrc.OpMatMul, a, b) }
func (s *Scope) BMM(a, b *Tensor) *Tensor    { return s.binary(csrc.OpBMM, a, b) }

// ---- tensor-scalar ----

func (s *Scope) AddS(a *Tensor, v float64) *Tensor { return s.scalar(csrc.OpAddS, a, v) }
func (s *Scope) SubS(a *Tensor, v float64) *Tensor { return s.scalar(csrc.OpSubS, a, v) }
func (s *Scope) MulS(a *Tensor, v float64) *Tensor { return s.scalar(csrc.OpMulS, a, v) }
func (s *Scope) DivS(a *Tensor, v float64) *Tensor { return s.scalar(csrc.OpDivS, a, v) }
func (s *Scope) PowS(a *Tensor, v float64) *Tensor { return s.scalar(csrc.OpPowS, a, v) }

// RSubS computes v - a; RDivS computes v / a.
func (s *Scope) RSubS(a *Tensor, v float64) *Tensor { return s.scalar(csrc.OpRSubS, a, v) }
func (s *Scope) RDivS(a *Tensor, v float64) *Tensor { return s.scalar(csrc.OpRDivS, a, v) }

func (s *Scope) EqS(a *Tensor, v float64) *Tensor { return s.scalar(csrc.OpEqS, a, v) }
func (s *Scope) NeS(a *Tensor, v float64) *Tensor { return s.scalar(csrc.OpNeS, a, v) }
func (s *Scope) LtS(a *Tensor, v float64) *Tensor { return s.scalar(csrc.OpLtS, a, v) }
func (s *Scope) LeS(a *Tensor, v float64) *Tensor { return s.scalar(csrc.OpLeS, a, v) }
func (s *Scope) GtS(a *Tensor, v float64) *Tensor { return s.scalar(csrc.OpGtS, a, v) }
func (s *Scope) GeS(a *Tensor, v float64) *Tensor { return s.scalar(csrc.OpGeS, a, v) }

// MinS is min(a, v) elementwise; MaxS is max(a, v).
func (s *Scope) MinS(a *Tensor, v float64) *Tensor { return s.scalar(csrc.OpMinimumS, a, v) }
func (s *Scope) MaxS(a *Tensor, v float64) *Tensor { return s.scalar(csrc.OpMaximumS, a, v) }

// Clamp limits a to [lo, hi].
func (s *Scope) Clamp(a *Tensor, lo, hi float64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	return s.put(csrc.Clamp(a.handle(), lo, hi, true, true))
}

// Where picks a where cond is true, else b.
func (s *Scope) Where(cond, a, b *Tensor) *Tensor {
	if !s.ok(cond, a, b) {
		return nil
	}
	return s.put(csrc.Where(cond.handle(), a.handle(), b.handle()))
}

// MaskedFill sets a to v where mask is true.
func (s *Scope) MaskedFill(a, mask *Tensor, v float64) *Tensor {
	if !s.ok(a, mask) {
		return nil
	}
	return s.put(csrc.MaskedFill(a.handle(), mask.handle(), v))
}

// ---- reductions: no dims means all elements ----

func (s *Scope) Sum(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(csrc.OpSum, a, keepdim, dims)
}
func (s *Scope) Mean(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(csrc.OpMean, a, keepdim, dims)
}

// Var and Std are unbiased (n-1); VarPop and StdPop divide by n.
func (s *Scope) Var(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(csrc.OpVar, a, keepdim, dims)
}
func (s *Scope) Std(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(csrc.OpStd, a, keepdim, dims)
}
func (s *Scope) VarPop(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(csrc.OpVarPop, a, keepdim, dims)
}
func (s *Scope) StdPop(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(csrc.OpStdPop, a, keepdim, dims)
}

// Max and Min are amax/amin over dims (values only).
func (s *Scope) Max(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(csrc.OpAMax, a, keepdim, dims)
}
func (s *Scope) Min(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(csrc.OpAMin, a, keepdim, dims)
}
func (s *Scope) LogSumExp(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(csrc.OpLogSumExp, a, keepdim, dims)
}
func (s *Scope) Prod(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(csrc.OpProd, a, keepdim, dims)
}
func (s *Scope) Any(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(csrc.OpAny, a, keepdim, dims)
}
func (s *Scope) All(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(csrc.OpAll, a, keepdim, dims)
}

// Norm is the L2 norm over dims.
func (s *Scope) Norm(a *Tensor, keepdim bool, dims ...int64) *Tensor {
	return s.reduce(csrc.OpNorm2, a, keepdim, dims)
}

// MaxDim returns the max values and their indices along dim.
func (s *Scope) MaxDim(a *Tensor, dim int64, keepdim bool) (values, indices *Tensor) {
	if !s.ok(a) {
		return nil, nil
	}
	return s.put2(csrc.MaxDim(a.handle(), dim, keepdim))
}

// Argmax returns the index of the max along dim.
func (s *Scope) Argmax(a *Tensor, dim int64, keepdim bool) *Tensor {
	if !s.ok(a) {
		return nil
	}
	return s.put(csrc.Argmax(a.handle(), dim, keepdim))
}

// TopK returns the k largest (or smallest) values along dim, sorted, and their indices.
func (s *Scope) TopK(a *Tensor, k, dim int64, largest bool) (values, indices *Tensor) {
	if !s.ok(a) {
		return nil, nil
	}
	return s.put2(csrc.TopK(a.handle(), k, dim, largest))
}

// Sort sorts along dim; stable keeps the order of equal elements.
func (s *Scope) Sort(a *Tensor, dim int64, descending, stable bool) (values, indices *Tensor) {
	if !s.ok(a) {
		return nil, nil
	}
	return s.put2(csrc.Sort(a.handle(), dim, descending, stable))
}

// Cumsum is the cumulative sum along dim.
func (s *Scope) Cumsum(a *Tensor, dim int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	return s.put(csrc.Cumsum(a.handle(), dim))
}

// Softmax along dim.
func (s *Scope) Softmax(a *Tensor, dim int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	return s.put(csrc.Softmax(a.handle(), dim, false))
}

// LogSoftmax along dim.
func (s *Scope) LogSoftmax(a *Tensor, dim int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	return s.put(csrc.Softmax(a.handle(), dim, true))
}

// Linear computes x @ w^T + b (b may be nil), as torch.nn.functional.linear.
func (s *Scope) Linear(x, w, b *Tensor) *Tensor {
	if !s.ok(x, w) {
		return nil
	}
	var bh csrc.Tensor
	if b != nil {
		if !s.ok(b) {
			return nil
		}
		bh = b.handle()
	}
	return s.put(csrc.Linear(x.handle(), w.handle(), bh))
}

// Embedding looks ids (int64) up in the rows of weight. When weight is a
// CPU leaf that wants gradients (and grad mode is on), the result is a leaf
// of its own whose gradient is added, row by row, into weight's .grad during
// the backward: the same numbers as autograd's embedding backward, without
// its dense (rows x width) gradient, which for a large vocabulary tied to
// the LM head is three extra passes over the table a step.
func (s *Scope) Embedding(weight, ids *Tensor) *Tensor {
	if !s.ok(weight, ids) {
		return nil
	}
	return s.put(csrc.Embedding(weight.handle(), ids.handle()))
}

// Multinomial draws n indices per row of probs from g (nil: default generator).
func (s *Scope) Multinomial(probs *Tensor, n int64, replacement bool, g *Generator) *Tensor {
	if !s.ok(probs) {
		return nil
	}
	return s.put(csrc.Multinomial(probs.handle(), n, replacement, g.handle()))
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
	return s.put(csrc.To(a.handle(), int(dtype), dev.c()))
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
	return s.put(csrc.Reshape(a.handle(), shape))
}

// View is Reshape that never copies (fails on incompatible strides).
func (s *Scope) View(a *Tensor, shape ...int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	return s.put(csrc.View(a.handle(), shape))
}

// Expand broadcasts a to shape without copying (-1 keeps a dimension).
func (s *Scope) Expand(a *Tensor, shape ...int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	return s.put(csrc.Expand(a.handle(), shape))
}

// Permute reorders dimensions.
func (s *Scope) Permute(a *Tensor, dims ...int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	return s.put(csrc.Permute(a.handle(), dims))
}

// Transpose swaps two dimensions.
func (s *Scope) Transpose(a *Tensor, d0, d1 int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	return s.put(csrc.Transpose(a.handle(), d0, d1))
}

// Slice is a[start:end:step] along dim (a view).
func (s *Scope) Slice(a *Tensor, dim, start, end, step int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	return s.put(csrc.Slice(a.handle(), dim, start, end, step))
}

// Narrow is a[start:start+n] along dim (a view).
func (s *Scope) Narrow(a *Tensor, dim, start, n int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	return s.put(csrc.Narrow(a.handle(), dim, start, n))
}

// Unsqueeze inserts a dimension of size 1 at dim.
func (s *Scope) Unsqueeze(a *Tensor, dim int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	return s.put(csrc.Unsqueeze(a.handle(), dim))
}

// Squeeze removes dimension dim if its size is 1.
func (s *Scope) Squeeze(a *Tensor, dim int64) *Tensor {
	if !s.ok(a) {
		return nil
	}
	return s.put(csrc.Squeeze(a.handle(), dim))
}

// IndexSelect picks entries idx (int64, 1-D) along dim.
func (s *Scope) IndexSelect(a *Tensor, dim int64, idx *Tensor) *Tensor {
	if !s.ok(a, idx) {
		return nil
	}
	return s.put(csrc.IndexSelect(a.handle(), dim, idx.handle()))
}

// Gather is torch.gather.
func (s *Scope) Gather(a *Tensor, dim int64, idx *Tensor) *Tensor {
	if !s.ok(a, idx) {
		return nil
	}
	return s.put(csrc.Gather(a.handle(), dim, idx.handle()))
}

// Scatter is torch.scatter (out of place).
func (s *Scope) Scatter(a *Tensor, dim int64, idx, src *Tensor) *Tensor {
	if !s.ok(a, idx, src) {
		return nil
	}
	return s.put(csrc.Scatter(a.handle(), dim, idx.handle(), src.handle()))
}

// ScatterAdd is torch.scatter_add (out of place).
func (s *Scope) ScatterAdd(a *Tensor, dim int64, idx, src *Tensor) *Tensor {
	if !s.ok(a, idx, src) {
		return nil
	}
	return s.put(csrc.ScatterAdd(a.handle(), dim, idx.handle(), src.handle()))
}

func (s *Scope) list(ts []*Tensor) []csrc.Tensor {
	if !s.ok(ts...) {
		return nil
	}
	if len(ts) == 0 {
		s.err = &Error{Op: "cat", Msg: "needs at least one tensor"}
		return nil
	}
	hs := make([]csrc.Tensor, len(ts))
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
	return s.put(csrc.Cat(hs, dim))
}

// Stack stacks along a new dim.
func (s *Scope) Stack(ts []*Tensor, dim int64) *Tensor {
	hs := s.list(ts)
	if hs == nil {
		return nil
	}
	return s.put(csrc.Stack(hs, dim))
}

// Triu keeps the upper triangle from diagonal k; Tril the lower.
func (s *Scope) Triu(a *Tensor, k int64) *Tensor { return s.tri(a, k, true) }
func (s *Scope) Tril(a *Tensor, k int64) *Tensor { return s.tri(a, k, false) }

func (s *Scope) tri(a *Tensor, k int64, upper bool) *Tensor {
	if !s.ok(a) {
		return nil
	}
	return s.put(csrc.Triu(a.handle(), k, upper))
}

// ---- in place ----

// CopyInto copies src into dst (broadcasting; no autograd).
func (s *Scope) CopyInto(dst, src *Tensor) {
	if s.ok(dst, src) {
		s.Fail(check(csrc.Copy(dst.handle(), src.handle())))
	}
}

// FillInto sets every element of dst to v (no autograd).
func (s *Scope) FillInto(dst *Tensor, v float64) {
	if s.ok(dst) {
		s.Fail(check(csrc.Fill(dst.handle(), v)))
	}
}

// IndexCopyInto copies rows of src into dst at idx along dim (no autograd).
func (s *Scope) IndexCopyInto(dst *Tensor, dim int64, idx, src *Tensor) {
	if s.ok(dst, idx, src) {
		s.Fail(check(csrc.IndexCopy(dst.handle(), dim, idx.handle(), src.handle())))
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
