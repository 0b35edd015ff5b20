package csrc

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"strings"
	"unsafe"
)

// Tensor is an opaque handle to one counted reference of a C++ at::Tensor
// (a tt_tensor). The zero value is the NULL handle. A []Tensor has the
// memory layout of a C tt_tensor array, so lists cross without copying.
type Tensor struct {
	p C.tt_tensor
}

// IsNil reports whether t is the NULL handle.
func (t Tensor) IsNil() bool { return t.p == nil }

// Gen is an opaque handle to a generator (a tt_gen). The zero value is NULL,
// which the shim reads as libtorch's default generator.
type Gen struct {
	p C.tt_gen
}

// IsNil reports whether g is the NULL handle.
func (g Gen) IsNil() bool { return g.p == nil }

// Error is a failure reported by the shim: the op that failed (the name in
// the shim's TT_TRY) and libtorch's message without the C++ backtrace.
type Error struct {
	Op  string
	Msg string
}

func (e *Error) Error() string { return e.Op + ": " + e.Msg }

// errOf converts a non-NULL tt_err ("op: reason") into an *Error and frees
// the C string.
func errOf(e C.tt_err) error {
	s := C.GoString(e)
	C.free(unsafe.Pointer(e))
	op, msg, ok := strings.Cut(s, ": ")
	if !ok {
		return &Error{Op: "unknown", Msg: s}
	}
	return &Error{Op: op, Msg: strings.TrimSpace(msg)}
}

// check returns nil for a NULL tt_err, else its *Error.
func check(e C.tt_err) error {
	if e != nil {
		return errOf(e)
	}
	return nil
}

func out1(e C.tt_err, h C.tt_tensor) (Tensor, error) {
	if e != nil {
		return Tensor{}, errOf(e)
	}
	return Tensor{h}, nil
}

func out2(e C.tt_err, a, b C.tt_tensor) (Tensor, Tensor, error) {
	if e != nil {
		return Tensor{}, Tensor{}, errOf(e)
	}
	return Tensor{a}, Tensor{b}, nil
}

// list returns ts as a C array (NULL when empty). The Go memory holds only C
// pointers and is kept alive by being a call argument.
func list(ts []Tensor) *C.tt_tensor {
	if len(ts) == 0 {
		return nil
	}
	return (*C.tt_tensor)(unsafe.Pointer(unsafe.SliceData(ts)))
}

// i64s returns s as a C int64_t array (NULL when empty).
func i64s(s []int64) *C.int64_t {
	if len(s) == 0 {
		return nil
	}
	return (*C.int64_t)(unsafe.Pointer(unsafe.SliceData(s)))
}

func b2i(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// DType codes (TT_*).
const (
	F32  = C.TT_F32
	F64  = C.TT_F64
	I64  = C.TT_I64
	I32  = C.TT_I32
	Bool = C.TT_BOOL
	BF16 = C.TT_BF16
	F16  = C.TT_F16
	U8   = C.TT_U8
)

// CPU is the device code of the host; CUDA devices are their ordinals (>= 0).
const CPU = C.TT_CPU

// UnaryOp selects the op of Unary.
type UnaryOp int

// Unary op codes (TT_NEG ...).
const (
	OpNeg        UnaryOp = C.TT_NEG
	OpExp        UnaryOp = C.TT_EXP
	OpLog        UnaryOp = C.TT_LOG
	OpSqrt       UnaryOp = C.TT_SQRT
	OpRsqrt      UnaryOp = C.TT_RSQRT
	OpAbs        UnaryOp = C.TT_ABS
	OpSign       UnaryOp = C.TT_SIGN
	OpSiLU       UnaryOp = C.TT_SILU
	OpGELU       UnaryOp = C.TT_GELU
	OpGELUTanh   UnaryOp = C.TT_GELU_TANH
	OpSigmoid    UnaryOp = C.TT_SIGMOID
	OpTanh       UnaryOp = C.TT_TANH
	OpCos        UnaryOp = C.TT_COS
	OpSin        UnaryOp = C.TT_SIN
	OpReLU       UnaryOp = C.TT_RELU
	OpContiguous UnaryOp = C.TT_CONTIGUOUS
	OpLogicalNot UnaryOp = C.TT_LOGICAL_NOT
	OpReciprocal UnaryOp = C.TT_RECIPROCAL
	OpSquare     UnaryOp = C.TT_SQUARE
	OpClone      UnaryOp = C.TT_CLONE
	OpDetach     UnaryOp = C.TT_DETACH
	OpIsNaN      UnaryOp = C.TT_ISNAN
	OpLog1p      UnaryOp = C.TT_LOG1P
	OpFloor      UnaryOp = C.TT_FLOOR
)

// BinaryOp selects the op of Binary.
type BinaryOp int

// Binary op codes (TT_ADD ...).
const (
	OpAdd        BinaryOp = C.TT_ADD
	OpSub        BinaryOp = C.TT_SUB
	OpMul        BinaryOp = C.TT_MUL
	OpDiv        BinaryOp = C.TT_DIV
	OpPow        BinaryOp = C.TT_POW
	OpMinimum    BinaryOp = C.TT_MINIMUM
	OpMaximum    BinaryOp = C.TT_MAXIMUM
	OpEq         BinaryOp = C.TT_EQ
	OpNe         BinaryOp = C.TT_NE
	OpLt         BinaryOp = C.TT_LT
	OpLe         BinaryOp = C.TT_LE
	OpGt         BinaryOp = C.TT_GT
	OpGe         BinaryOp = C.TT_GE
	OpMatMul     BinaryOp = C.TT_MATMUL
	OpBMM        BinaryOp = C.TT_BMM
	OpLogicalAnd BinaryOp = C.TT_LOGICAL_AND
	OpLogicalOr  BinaryOp = C.TT_LOGICAL_OR
)

// ScalarOp selects the op of Scalar.
type ScalarOp int

// Tensor-scalar op codes (TT_ADD_S ...); OpRSubS computes s - a, OpRDivS s / a.
const (
	OpAddS     ScalarOp = C.TT_ADD_S
	OpSubS     ScalarOp = C.TT_SUB_S
	OpMulS     ScalarOp = C.TT_MUL_S
	OpDivS     ScalarOp = C.TT_DIV_S
	OpPowS     ScalarOp = C.TT_POW_S
	OpRSubS    ScalarOp = C.TT_RSUB_S
	OpRDivS    ScalarOp = C.TT_RDIV_S
	OpEqS      ScalarOp = C.TT_EQ_S
	OpNeS      ScalarOp = C.TT_NE_S
	OpLtS      ScalarOp = C.TT_LT_S
	OpLeS      ScalarOp = C.TT_LE_S
	OpGtS      ScalarOp = C.TT_GT_S
	OpGeS      ScalarOp = C.TT_GE_S
	OpMinimumS ScalarOp = C.TT_MINIMUM_S
	OpMaximumS ScalarOp = C.TT_MAXIMUM_S
)

// ReduceOp selects the op of Reduce.
type ReduceOp int

// Reduction op codes (TT_SUM ...).
const (
	OpSum       ReduceOp = C.TT_SUM
	OpMean      ReduceOp = C.TT_MEAN
	OpVar       ReduceOp = C.TT_VAR
	OpStd       ReduceOp = C.TT_STD
	OpVarPop    ReduceOp = C.TT_VAR_POP
	OpStdPop    ReduceOp = C.TT_STD_POP
	OpAMax      ReduceOp = C.TT_AMAX
	OpAMin      ReduceOp = C.TT_AMIN
	OpLogSumExp ReduceOp = C.TT_LOGSUMEXP
	OpProd      ReduceOp = C.TT_PROD
	OpAny       ReduceOp = C.TT_ANY
	OpAll       ReduceOp = C.TT_ALL
	OpNorm2     ReduceOp = C.TT_NORM2
)

// ---- lifetime and queries ----

// Live is the number of tensor handles alive in C++ (tt_live).
func Live() int64 { return int64(C.tt_live()) }

// Free releases t (tt_free).
func Free(t Tensor) { C.tt_free(t.p) }

// FreeMany releases every handle in ts in one call (tt_free_many).
func FreeMany(ts []Tensor) { C.tt_free_many(list(ts), C.int(len(ts))) }

// Ndim is t's number of dimensions (tt_ndim).
func Ndim(t Tensor) int { return int(C.tt_ndim(t.p)) }

// Shape returns t's sizes in a new slice (tt_ndim, then tt_shape).
func Shape(t Tensor) []int64 {
	n := int(C.tt_ndim(t.p))
	s := make([]int64, n)
	if n > 0 {
		C.tt_shape(t.p, i64s(s))
	}
	return s
}

// DType is t's dtype code (tt_dtype).
func DType(t Tensor) int { return int(C.tt_dtype(t.p)) }

// Device is t's device code: CPU or a CUDA ordinal (tt_device).
func Device(t Tensor) int { return int(C.tt_device(t.p)) }

// Numel is t's element count (tt_numel).
func Numel(t Tensor) int64 { return int64(C.tt_numel(t.p)) }

// RequiresGrad reports whether autograd records ops on t (tt_requires_grad).
func RequiresGrad(t Tensor) bool { return C.tt_requires_grad(t.p) != 0 }

// IsContiguous reports whether t is contiguous (tt_is_contiguous).
func IsContiguous(t Tensor) bool { return C.tt_is_contiguous(t.p) != 0 }

// ToString prints t as libtorch does (tt_to_string).
func ToString(t Tensor) (string, error) {
	var s *C.char
	if e := C.tt_to_string(t.p, &s); e != nil {
		return "", errOf(e)
	}
	defer C.free(unsafe.Pointer(s))
	return C.GoString(s), nil
}

// ---- creation and copy-out ----

// FromData copies data, elements of the given dtype code, into a new tensor
// of the given shape on device (tt_from_data). The caller checks that shape
// holds len(data) elements of dtype's size.
func FromData[E any](data []E, dtype int, shape []int64, device int) (Tensor, error) {
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(unsafe.SliceData(data))
	}
	var h C.tt_tensor
	if e := C.tt_from_data(p, C.int(dtype), i64s(shape), C.int(len(shape)), C.int(device), &h); e != deferred {
		return out1(e, h)
	}
	return heavy1(func(h *C.tt_tensor) C.tt_err {
		return C.tt_from_data(p, C.int(dtype), i64s(shape), C.int(len(shape)), C.int(device), h)
	})
}

// CopyOut copies t's elements, converted to the dtype code, into dst on the
// host (tt_copy_out). dst must be exactly the size of the converted tensor.
func CopyOut[E any](t Tensor, dtype int, dst []E) error {
	var p unsafe.Pointer
	if len(dst) > 0 {
		p = unsafe.Pointer(unsafe.SliceData(dst))
	}
	var z E
	return check(C.tt_copy_out(t.p, C.int(dtype), p, C.int64_t(len(dst)*int(unsafe.Sizeof(z)))))
}

// Full is a tensor of shape filled with v (tt_full).
func Full(shape []int64, v float64, dtype, device int) (Tensor, error) {
	var h C.tt_tensor
	if e := C.tt_full(i64s(shape), C.int(len(shape)), C.double(v), C.int(dtype), C.int(device), &h); e != deferred {
		return out1(e, h)
	}
	return heavy1(func(h *C.tt_tensor) C.tt_err {
		return C.tt_full(i64s(shape), C.int(len(shape)), C.double(v), C.int(dtype), C.int(device), h)
	})
}

// Arange is [start, end) in steps of step (tt_arange).
func Arange(start, end, step float64, dtype, device int) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_arange(C.double(start), C.double(end), C.double(step), C.int(dtype), C.int(device), &h), h)
}

// Randn draws standard normals from g (NULL: the default generator) (tt_randn).
func Randn(shape []int64, dtype, device int, g Gen) (Tensor, error) {
	var h C.tt_tensor
	if e := C.tt_randn(i64s(shape), C.int(len(shape)), C.int(dtype), C.int(device), g.p, &h); e != deferred {
		return out1(e, h)
	}
	return heavy1(func(h *C.tt_tensor) C.tt_err {
		return C.tt_randn(i64s(shape), C.int(len(shape)), C.int(dtype), C.int(device), g.p, h)
	})
}

// Rand draws uniforms in [0, 1) from g (NULL: the default generator) (tt_rand).
func Rand(shape []int64, dtype, device int, g Gen) (Tensor, error) {
	var h C.tt_tensor
	if e := C.tt_rand(i64s(shape), C.int(len(shape)), C.int(dtype), C.int(device), g.p, &h); e != deferred {
		return out1(e, h)
	}
	return heavy1(func(h *C.tt_tensor) C.tt_err {
		return C.tt_rand(i64s(shape), C.int(len(shape)), C.int(dtype), C.int(device), g.p, h)
	})
}

// Item is t's single element as float64 (tt_item).
func Item(t Tensor) (float64, error) {
	var v C.double
	if e := C.tt_item(t.p, &v); e != nil {
		return 0, errOf(e)
	}
	return float64(v), nil
}

// ---- generators ----

// GenNew returns a generator on device seeded with seed (tt_gen_new).
func GenNew(seed uint64, device int) (Gen, error) {
	var g C.tt_gen
	if e := C.tt_gen_new(C.uint64_t(seed), C.int(device), &g); e != nil {
		return Gen{}, errOf(e)
	}
	return Gen{g}, nil
}

// GenFree frees g (tt_gen_free).
func GenFree(g Gen) { C.tt_gen_free(g.p) }

// GenGetState returns g's state as a new uint8 tensor (tt_gen_get_state).
func GenGetState(g Gen) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_gen_get_state(g.p, &h), h)
}

// GenSetState restores g from a state tensor (tt_gen_set_state).
func GenSetState(g Gen, state Tensor) error { return check(C.tt_gen_set_state(g.p, state.p)) }

// ManualSeed seeds libtorch's default CPU generator (tt_manual_seed).
func ManualSeed(seed uint64) { C.tt_manual_seed(C.uint64_t(seed)) }

// ---- elementwise and matmul families ----

// Unary applies op to a (tt_unary).
func Unary(op UnaryOp, a Tensor) (Tensor, error) {
	var h C.tt_tensor
	if e := C.tt_unary(C.int(op), a.p, &h); e != deferred {
		return out1(e, h)
	}
	return heavy1(func(h *C.tt_tensor) C.tt_err { return C.tt_unary(C.int(op), a.p, h) })
}

// Binary applies op to a and b, broadcasting (tt_binary).
func Binary(op BinaryOp, a, b Tensor) (Tensor, error) {
	var h C.tt_tensor
	if e := C.tt_binary(C.int(op), a.p, b.p, &h); e != deferred {
		return out1(e, h)
	}
	return heavy1(func(h *C.tt_tensor) C.tt_err { return C.tt_binary(C.int(op), a.p, b.p, h) })
}

// Scalar applies op to a and the scalar s (tt_scalar).
func Scalar(op ScalarOp, a Tensor, s float64) (Tensor, error) {
	var h C.tt_tensor
	if e := C.tt_scalar(C.int(op), a.p, C.double(s), &h); e != deferred {
		return out1(e, h)
	}
	return heavy1(func(h *C.tt_tensor) C.tt_err { return C.tt_scalar(C.int(op), a.p, C.double(s), h) })
}

// Reduce reduces a over dims (none: all elements) (tt_reduce).
func Reduce(op ReduceOp, a Tensor, dims []int64, keepdim bool) (Tensor, error) {
	var h C.tt_tensor
	if e := C.tt_reduce(C.int(op), a.p, i64s(dims), C.int(len(dims)), b2i(keepdim), &h); e != deferred {
		return out1(e, h)
	}
	return heavy1(func(h *C.tt_tensor) C.tt_err {
		return C.tt_reduce(C.int(op), a.p, i64s(dims), C.int(len(dims)), b2i(keepdim), h)
	})
}

// Clamp limits a to [lo, hi]; a bound applies only when its has flag is set (tt_clamp).
func Clamp(a Tensor, lo, hi float64, hasLo, hasHi bool) (Tensor, error) {
	var h C.tt_tensor
	if e := C.tt_clamp(a.p, C.double(lo), C.double(hi), b2i(hasLo), b2i(hasHi), &h); e != deferred {
		return out1(e, h)
	}
	return heavy1(func(h *C.tt_tensor) C.tt_err {
		return C.tt_clamp(a.p, C.double(lo), C.double(hi), b2i(hasLo), b2i(hasHi), h)
	})
}

// Where picks a where cond is true, else b (tt_where).
func Where(cond, a, b Tensor) (Tensor, error) {
	var h C.tt_tensor
	if e := C.tt_where(cond.p, a.p, b.p, &h); e != deferred {
		return out1(e, h)
	}
	return heavy1(func(h *C.tt_tensor) C.tt_err { return C.tt_where(cond.p, a.p, b.p, h) })
}

// MaskedFill sets a to v where mask is true (tt_masked_fill).
func MaskedFill(a, mask Tensor, v float64) (Tensor, error) {
	var h C.tt_tensor
	if e := C.tt_masked_fill(a.p, mask.p, C.double(v), &h); e != deferred {
		return out1(e, h)
	}
	return heavy1(func(h *C.tt_tensor) C.tt_err { return C.tt_masked_fill(a.p, mask.p, C.double(v), h) })
}

// Linear is x @ w^T + b; b may be the NULL handle (tt_linear).
func Linear(x, w, b Tensor) (Tensor, error) {
	var h C.tt_tensor
	var e C.tt_err
	Heavy(func() { e = C.tt_linear(x.p, w.p, b.p, &h) })
	return out1(e, h)
}

// Embedding looks ids up in the rows of weight (tt_embedding).
func Embedding(weight, ids Tensor) (Tensor, error) {
	var h C.tt_tensor
	if e := C.tt_embedding(weight.p, ids.p, &h); e != deferred {
		return out1(e, h)
	}
	return heavy1(func(h *C.tt_tensor) C.tt_err { return C.tt_embedding(weight.p, ids.p, h) })
}

// Softmax is softmax (log: log_softmax) along dim (tt_softmax).
func Softmax(a Tensor, dim int64, log bool) (Tensor, error) {
	var h C.tt_tensor
	if e := C.tt_softmax(a.p, C.int64_t(dim), b2i(log), &h); e != deferred {
		return out1(e, h)
	}
	return heavy1(func(h *C.tt_tensor) C.tt_err { return C.tt_softmax(a.p, C.int64_t(dim), b2i(log), h) })
}

// Argmax is the index of the max along dim (tt_argmax).
func Argmax(a Tensor, dim int64, keepdim bool) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_argmax(a.p, C.int64_t(dim), b2i(keepdim), &h), h)
}

// MaxDim returns the max values along dim and their indices (tt_max_dim).
func MaxDim(a Tensor, dim int64, keepdim bool) (values, indices Tensor, err error) {
	var v, i C.tt_tensor
	return out2(C.tt_max_dim(a.p, C.int64_t(dim), b2i(keepdim), &v, &i), v, i)
}

// TopK returns the k largest (or smallest) values along dim and their indices (tt_topk).
func TopK(a Tensor, k, dim int64, largest bool) (values, indices Tensor, err error) {
	var v, i C.tt_tensor
	return out2(C.tt_topk(a.p, C.int64_t(k), C.int64_t(dim), b2i(largest), &v, &i), v, i)
}

// Sort sorts along dim and returns the values and their indices (tt_sort).
func Sort(a Tensor, dim int64, descending, stable bool) (values, indices Tensor, err error) {
	var v, i C.tt_tensor
	return out2(C.tt_sort(a.p, C.int64_t(dim), b2i(descending), b2i(stable), &v, &i), v, i)
}

// Cumsum is the cumulative sum along dim (tt_cumsum).
func Cumsum(a Tensor, dim int64) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_cumsum(a.p, C.int64_t(dim), &h), h)
}

// Multinomial draws n indices per row of probs from g (tt_multinomial).
func Multinomial(probs Tensor, n int64, replacement bool, g Gen) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_multinomial(probs.p, C.int64_t(n), b2i(replacement), g.p, &h), h)
}

// To converts a to the dtype code on the device code (tt_to).
func To(a Tensor, dtype, device int) (Tensor, error) {
	var h C.tt_tensor
	if e := C.tt_to(a.p, C.int(dtype), C.int(device), &h); e != deferred {
		return out1(e, h)
	}
	return heavy1(func(h *C.tt_tensor) C.tt_err { return C.tt_to(a.p, C.int(dtype), C.int(device), h) })
}

// ---- views and indexing ----

// Reshape is a.reshape(shape) (tt_reshape).
func Reshape(a Tensor, shape []int64) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_reshape(a.p, i64s(shape), C.int(len(shape)), &h), h)
}

// View is a.view(shape) (tt_view).
func View(a Tensor, shape []int64) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_view(a.p, i64s(shape), C.int(len(shape)), &h), h)
}

// Expand is a.expand(shape) (tt_expand).
func Expand(a Tensor, shape []int64) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_expand(a.p, i64s(shape), C.int(len(shape)), &h), h)
}

// Permute is a.permute(dims) (tt_permute).
func Permute(a Tensor, dims []int64) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_permute(a.p, i64s(dims), C.int(len(dims)), &h), h)
}

// Transpose swaps dimensions d0 and d1 (tt_transpose).
func Transpose(a Tensor, d0, d1 int64) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_transpose(a.p, C.int64_t(d0), C.int64_t(d1), &h), h)
}

// Slice is a[start:end:step] along dim (tt_slice).
func Slice(a Tensor, dim, start, end, step int64) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_slice(a.p, C.int64_t(dim), C.int64_t(start), C.int64_t(end), C.int64_t(step), &h), h)
}

// Narrow is a[start:start+n] along dim (tt_narrow).
func Narrow(a Tensor, dim, start, n int64) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_narrow(a.p, C.int64_t(dim), C.int64_t(start), C.int64_t(n), &h), h)
}

// Unsqueeze inserts a dimension of size 1 at dim (tt_unsqueeze).
func Unsqueeze(a Tensor, dim int64) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_unsqueeze(a.p, C.int64_t(dim), &h), h)
}

// Squeeze removes dimension dim if its size is 1 (tt_squeeze).
func Squeeze(a Tensor, dim int64) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_squeeze(a.p, C.int64_t(dim), &h), h)
}

// IndexSelect picks entries idx along dim (tt_index_select).
func IndexSelect(a Tensor, dim int64, idx Tensor) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_index_select(a.p, C.int64_t(dim), idx.p, &h), h)
}

// Gather is torch.gather (tt_gather).
func Gather(a Tensor, dim int64, idx Tensor) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_gather(a.p, C.int64_t(dim), idx.p, &h), h)
}

// Scatter is torch.scatter, out of place (tt_scatter).
func Scatter(a Tensor, dim int64, idx, src Tensor) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_scatter(a.p, C.int64_t(dim), idx.p, src.p, &h), h)
}

// ScatterAdd is torch.scatter_add, out of place (tt_scatter_add).
func ScatterAdd(a Tensor, dim int64, idx, src Tensor) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_scatter_add(a.p, C.int64_t(dim), idx.p, src.p, &h), h)
}

// Cat concatenates ts along dim (tt_cat).
func Cat(ts []Tensor, dim int64) (Tensor, error) {
	var h C.tt_tensor
	if e := C.tt_cat(list(ts), C.int(len(ts)), C.int64_t(dim), &h); e != deferred {
		return out1(e, h)
	}
	return heavy1(func(h *C.tt_tensor) C.tt_err { return C.tt_cat(list(ts), C.int(len(ts)), C.int64_t(dim), h) })
}

// Stack stacks ts along a new dim (tt_stack).
func Stack(ts []Tensor, dim int64) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_stack(list(ts), C.int(len(ts)), C.int64_t(dim), &h), h)
}

// Triu keeps the upper (upper=false: lower) triangle from diagonal k (tt_triu).
func Triu(a Tensor, k int64, upper bool) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_triu(a.p, C.int64_t(k), b2i(upper), &h), h)
}

// ---- in place (no autograd history expected) ----

// Copy copies src into dst, broadcasting (tt_copy_).
func Copy(dst, src Tensor) error {
	if e := C.tt_copy_(dst.p, src.p); e != deferred {
		return check(e)
	}
	var e C.tt_err
	Heavy(func() { e = C.tt_copy_(dst.p, src.p) })
	return check(e)
}

// Fill sets every element of dst to v (tt_fill_).
func Fill(dst Tensor, v float64) error { return check(C.tt_fill_(dst.p, C.double(v))) }

// IndexCopy copies rows of src into dst at idx along dim (tt_index_copy_).
func IndexCopy(dst Tensor, dim int64, idx, src Tensor) error {
	return check(C.tt_index_copy_(dst.p, C.int64_t(dim), idx.p, src.p))
}

// ---- autograd ----

// SetRequiresGrad turns autograd recording on t on or off (tt_set_requires_grad).
func SetRequiresGrad(t Tensor, on bool) error { return check(C.tt_set_requires_grad(t.p, b2i(on))) }

// Backward runs autograd from t; grad may be NULL for a scalar t (tt_backward).
func Backward(t, grad Tensor, retainGraph bool) error {
	var e C.tt_err
	Heavy(func() { e = C.tt_backward(t.p, grad.p, b2i(retainGraph)) })
	return check(e)
}

// Grad returns a new reference to t's gradient, NULL when it has none (tt_grad).
func Grad(t Tensor) (Tensor, error) {
	var h C.tt_tensor
	return out1(C.tt_grad(t.p, &h), h)
}

// ZeroGrad sets the gradients of ts undefined (tt_zero_grad).
func ZeroGrad(ts []Tensor) error { return check(C.tt_zero_grad(list(ts), C.int(len(ts)))) }

// SetGrad replaces t's gradient with g; NULL clears it (tt_set_grad).
func SetGrad(t, g Tensor) error { return check(C.tt_set_grad(t.p, g.p)) }

// SetGradEnabled sets the calling thread's grad mode and returns the previous
// one (tt_set_grad_enabled).
func SetGradEnabled(on bool) bool { return C.tt_set_grad_enabled(b2i(on)) != 0 }

// GradEnabled is the calling thread's grad mode (tt_grad_enabled).
func GradEnabled() bool { return C.tt_grad_enabled() != 0 }

// ---- optimizers and clipping ----

// AdamWStep applies one decoupled AdamW update to params with moments m and
// v (same lengths), in place (tt_adamw_step).
func AdamWStep(params, m, v []Tensor, lr, beta1, beta2, eps, wd float64, step int64) error {
	if len(m) != len(params) || len(v) != len(params) {
		return &Error{Op: "adamw_step", Msg: "moment lists do not match the parameters"}
	}
	var e C.tt_err
	Heavy(func() {
		e = C.tt_adamw_step(list(params), list(m), list(v), C.int(len(params)), C.double(lr),
			C.double(beta1), C.double(beta2), C.double(eps), C.double(wd), C.int64_t(step))
	})
	return check(e)
}

// SGDStep applies one SGD update to params in place; buf holds the momentum
// buffers (one per parameter) or is nil without momentum (tt_sgd_step).
func SGDStep(params, buf []Tensor, lr, momentum, wd float64) error {
	if buf != nil && len(buf) != len(params) {
		return &Error{Op: "sgd_step", Msg: "momentum buffers do not match the parameters"}
	}
	var e C.tt_err
	Heavy(func() {
		e = C.tt_sgd_step(list(params), list(buf), C.int(len(params)), C.double(lr), C.double(momentum), C.double(wd))
	})
	return check(e)
}

// ClipGradNorm scales the gradients of params to a global L2 norm of at most
// maxNorm and returns the norm before clipping (tt_clip_grad_norm).
func ClipGradNorm(params []Tensor, maxNorm float64) (float64, error) {
	var n C.double
	var e C.tt_err
	Heavy(func() { e = C.tt_clip_grad_norm(list(params), C.int(len(params)), C.double(maxNorm), &n) })
	if e != nil {
		return 0, errOf(e)
	}
	return float64(n), nil
}

// ---- runtime ----

// SetNumThreads sets libtorch's intra-op thread count (tt_set_num_threads).
func SetNumThreads(n int) { C.tt_set_num_threads(C.int(n)) }

// NumThreads is libtorch's intra-op thread count (tt_get_num_threads).
func NumThreads() int { return int(C.tt_get_num_threads()) }

// HugePagesBegin starts a span in which CPU allocations of 2 MiB or more
// are made on transparent huge pages; false when the allocator is not
// installed (RAGEN_HUGEPAGES=0) (tt_hugepages_begin).
func HugePagesBegin() bool { return C.tt_hugepages_begin() != 0 }

// HugePagesEnd ends a span HugePagesBegin started (tt_hugepages_end).
func HugePagesEnd() { C.tt_hugepages_end() }

// HugePageBytes is the bytes of live huge-page allocations (tt_hugepages_bytes).
func HugePageBytes() int64 { return int64(C.tt_hugepages_bytes()) }

// MKLDNNEnabled reports whether libtorch has oneDNN and may use it
// (tt_mkldnn_enabled).
func MKLDNNEnabled() bool { return C.tt_mkldnn_enabled() != 0 }

// OneDNNSgemm reports whether float32 CPU linears take oneDNN's sgemm
// (tt_onednn_sgemm).
func OneDNNSgemm() bool { return C.tt_onednn_sgemm() != 0 }

// CUDAAvailable reports whether CUDA is linked and a GPU is visible (tt_cuda_available).
func CUDAAvailable() bool { return C.tt_cuda_available() != 0 }

// CUDADeviceCount is the number of visible CUDA devices (tt_cuda_device_count).
func CUDADeviceCount() int { return int(C.tt_cuda_device_count()) }

// Version describes the linked shim, "libtorch" or "libtorch+cuda" (tt_version).
func Version() string { return C.GoString(C.tt_version()) }

// HeadMinChunk sets the fast head path's least logits per chunk, returning
// the previous value (tt_head_min_chunk); for tests.
func HeadMinChunk(elems int64) int64 { return int64(C.tt_head_min_chunk(C.int64_t(elems))) }

// HeadLogProbsChunked returns the per-token log-probs (and, if withEntropy,
// entropies; else NULL) of ids under softmax(hidden @ head^T / temperature)
// as one autograd node whose forward and backward materialise the logits one
// time chunk at a time (tt_head_logprobs_chunked); when all B*(T-1)*V
// logits fit in keep floats it keeps log p for the backward instead of
// recomputing. Runs on the torch thread.
func HeadLogProbsChunked(hidden, head, ids Tensor, temperature float64, withEntropy bool, chunk, keep int64) (logp, ent Tensor, err error) {
	var a, b C.tt_tensor
	var e C.tt_err
	Heavy(func() {
		e = C.tt_head_logprobs_chunked(hidden.p, head.p, ids.p, C.double(temperature), b2i(withEntropy), C.int64_t(chunk),
			C.int64_t(keep), &a, &b)
	})
	return out2(e, a, b)
}
