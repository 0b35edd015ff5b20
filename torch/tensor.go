package torch

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"

	"ragen/internal/torch/csrc"
)

// Tensor is a handle to a libtorch tensor. The zero value and freed tensors
// are invalid; ops on them fail with ErrFreed.
type Tensor struct {
	c *cell
}

// cell holds the C handle; the leak checker watches it.
type cell struct {
	h csrc.Tensor
}

var (
	leakCheck atomic.Bool
	leaked    atomic.Int64
)

// SetLeakCheck turns on counting of tensors that the garbage collector
// reclaims while they still own a C++ reference (see Leaked). It costs one
// runtime cleanup per tensor; tests and debug builds turn it on.
func SetLeakCheck(on bool) { leakCheck.Store(on) }

// Leaked is the number of tensors collected without Free or Scope.Close
// since the process started (counted only while SetLeakCheck is on).
func Leaked() int64 { return leaked.Load() }

func newTensor(h csrc.Tensor) *Tensor {
	t := &Tensor{c: &cell{h: h}}
	if leakCheck.Load() {
		runtime.AddCleanup(t, func(c *cell) {
			if !c.h.IsNil() {
				leaked.Add(1)
			}
		}, t.c)
	}
	return t
}

// handle returns the C handle or the NULL handle if t is nil or freed.
func (t *Tensor) handle() csrc.Tensor {
	if t == nil || t.c == nil {
		return csrc.Tensor{}
	}
	return t.c.h
}

// Valid reports whether t holds a live handle.
func (t *Tensor) Valid() bool { return !t.handle().IsNil() }

// Free releases t's reference. Views and autograd graphs that share the
// storage stay valid. Freeing twice or freeing nil is a no-op.
func (t *Tensor) Free() {
	if h := t.handle(); !h.IsNil() {
		csrc.Free(h)
		t.c.h = csrc.Tensor{}
	}
}

// Shape returns the sizes of t (nil for a freed tensor).
func (t *Tensor) Shape() []int64 {
	h := t.handle()
	if h.IsNil() {
		return nil
	}
	return csrc.Shape(h)
}

// Dim is the number of dimensions.
func (t *Tensor) Dim() int {
	h := t.handle()
	if h.IsNil() {
		return 0
	}
	return csrc.Ndim(h)
}

// Size returns the size of dimension d (negative d counts from the end).
func (t *Tensor) Size(d int) int64 {
	s := t.Shape()
	if d < 0 {
		d += len(s)
	}
	if d < 0 || d >= len(s) {
		panic(fmt.Sprintf("torch: Size(%d) of a %d-dim tensor", d, len(s)))
	}
	return s[d]
}

// Numel is the number of elements.
func (t *Tensor) Numel() int64 {
	h := t.handle()
	if h.IsNil() {
		return 0
	}
	return csrc.Numel(h)
}

// DType is t's element type.
func (t *Tensor) DType() DType { return DType(csrc.DType(t.mustHandle())) }

// Device is where t lives.
func (t *Tensor) Device() Device { return deviceFromC(csrc.Device(t.mustHandle())) }

// RequiresGrad reports whether autograd records ops on t.
func (t *Tensor) RequiresGrad() bool { return csrc.RequiresGrad(t.mustHandle()) }

// IsContiguous reports whether t is laid out contiguously.
func (t *Tensor) IsContiguous() bool { return csrc.IsContiguous(t.mustHandle()) }

func (t *Tensor) mustHandle() csrc.Tensor {
	h := t.handle()
	if h.IsNil() {
		panic(ErrFreed)
	}
	return h
}

// String prints t as libtorch does (for debugging).
func (t *Tensor) String() string {
	h := t.handle()
	if h.IsNil() {
		return "Tensor(freed)"
	}
	s, err := csrc.ToString(h)
	if err != nil {
		return "Tensor(" + check(err).Error() + ")"
	}
	return strings.TrimSpace(s)
}

// Elem lists the Go element types that convert to and from tensors.
type Elem interface {
	float32 | float64 | int64 | int32 | bool | uint8
}

func dtypeOf[T Elem]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return Float32
	case float64:
		return Float64
	case int64:
		return Int64
	case int32:
		return Int32
	case bool:
		return Bool
	default:
		return Uint8
	}
}

func checkShape(n int, shape []int64) error {
	p := int64(1)
	for _, d := range shape {
		if d < 0 {
			return &Error{Op: "from_data", Msg: fmt.Sprintf("negative dimension in shape %v", shape)}
		}
		p *= d
	}
	if p != int64(n) {
		return &Error{Op: "from_data", Msg: fmt.Sprintf("shape %v holds %d elements, data has %d", shape, p, n)}
	}
	return nil
}

// From copies data into a new CPU tensor of the given shape (a 1-D tensor
// when shape is empty). The caller owns the result.
func From[T Elem](data []T, shape ...int64) (*Tensor, error) {
	if len(shape) == 0 {
		shape = []int64{int64(len(data))}
	}
	if err := checkShape(len(data), shape); err != nil {
		return nil, err
	}
	return wrapOut(csrc.FromData(data, int(dtypeOf[T]()), shape, csrc.CPU))
}

// FromBytes makes a CPU tensor from raw little-endian element bytes of dtype
// (how safetensors stores bfloat16 and float16).
func FromBytes(data []byte, dtype DType, shape ...int64) (*Tensor, error) {
	n := len(data) / dtype.Size()
	if n*dtype.Size() != len(data) {
		return nil, &Error{Op: "from_data", Msg: fmt.Sprintf("%d bytes is not a whole number of %s elements", len(data), dtype)}
	}
	if err := checkShape(n, shape); err != nil {
		return nil, err
	}
	return wrapOut(csrc.FromData(data, int(dtype), shape, csrc.CPU))
}

// Data copies t's elements, converted to T, into a new slice in row-major
// order. The tensor may live on any device and have any layout.
func Data[T Elem](t *Tensor) ([]T, error) {
	h := t.handle()
	if h.IsNil() {
		return nil, ErrFreed
	}
	out := make([]T, csrc.Numel(h))
	if err := check(csrc.CopyOut(h, int(dtypeOf[T]()), out)); err != nil {
		return nil, err
	}
	return out, nil
}

// Bytes copies t's elements as raw bytes of dtype (for writing safetensors).
func Bytes(t *Tensor, dtype DType) ([]byte, error) {
	h := t.handle()
	if h.IsNil() {
		return nil, ErrFreed
	}
	out := make([]byte, int(csrc.Numel(h))*dtype.Size())
	if err := check(csrc.CopyOut(h, int(dtype), out)); err != nil {
		return nil, err
	}
	return out, nil
}

// Item returns the single element of t as float64.
func (t *Tensor) Item() (float64, error) {
	h := t.handle()
	if h.IsNil() {
		return 0, ErrFreed
	}
	v, err := csrc.Item(h)
	return v, check(err)
}

func wrapOut(h csrc.Tensor, err error) (*Tensor, error) {
	if err != nil {
		return nil, check(err)
	}
	return newTensor(h), nil
}

// Full returns a tensor of the given shape filled with v.
func Full(shape []int64, v float64, dtype DType, dev Device) (*Tensor, error) {
	return wrapOut(csrc.Full(shape, v, int(dtype), dev.c()))
}

// Zeros returns a zero tensor.
func Zeros(shape []int64, dtype DType, dev Device) (*Tensor, error) {
	return Full(shape, 0, dtype, dev)
}

// Ones returns a tensor of ones.
func Ones(shape []int64, dtype DType, dev Device) (*Tensor, error) { return Full(shape, 1, dtype, dev) }

// Arange returns [start, end) in steps of step.
func Arange(start, end, step float64, dtype DType, dev Device) (*Tensor, error) {
	return wrapOut(csrc.Arange(start, end, step, int(dtype), dev.c()))
}

// Randn draws standard normal values from g (nil: the default generator).
func Randn(g *Generator, shape []int64, dtype DType, dev Device) (*Tensor, error) {
	return wrapOut(csrc.Randn(shape, int(dtype), dev.c(), g.handle()))
}

// Rand draws uniform values in [0, 1) from g (nil: the default generator).
func Rand(g *Generator, shape []int64, dtype DType, dev Device) (*Tensor, error) {
	return wrapOut(csrc.Rand(shape, int(dtype), dev.c(), g.handle()))
}

// Generator is a seeded random-number generator for sampling and init.
type Generator struct {
	g csrc.Gen
}

// NewGenerator returns a generator on dev seeded with seed. Close it when done.
func NewGenerator(seed uint64, dev Device) (*Generator, error) {
	g, err := csrc.GenNew(seed, dev.c())
	if err != nil {
		return nil, check(err)
	}
	return &Generator{g: g}, nil
}

func (g *Generator) handle() csrc.Gen {
	if g == nil {
		return csrc.Gen{}
	}
	return g.g
}

// Close frees the generator.
func (g *Generator) Close() {
	if g != nil && !g.g.IsNil() {
		csrc.GenFree(g.g)
		g.g = csrc.Gen{}
	}
}

// State returns the generator state as bytes (for checkpoints).
func (g *Generator) State() ([]byte, error) {
	t, err := wrapOut(csrc.GenGetState(g.handle()))
	if err != nil {
		return nil, err
	}
	defer t.Free()
	return Data[uint8](t)
}

// SetState restores a state returned by State.
func (g *Generator) SetState(state []byte) error {
	t, err := From(state)
	if err != nil {
		return err
	}
	defer t.Free()
	return check(csrc.GenSetState(g.handle(), t.handle()))
}
