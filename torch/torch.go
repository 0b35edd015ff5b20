package torch

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	"golang.org/x/sys/cpu"

	"ragen/internal/torch/csrc" // the only cgo package: the C++ shim and libtorch
)

// DType is a tensor element type.
type DType int

// Element types. The values match the shim's TT_* codes.
const (
	Float32  DType = csrc.F32
	Float64  DType = csrc.F64
	Int64    DType = csrc.I64
	Int32    DType = csrc.I32
	Bool     DType = csrc.Bool
	BFloat16 DType = csrc.BF16
	Float16  DType = csrc.F16
	Uint8    DType = csrc.U8
)

var dtypeNames = map[DType]string{
	Float32: "float32", Float64: "float64", Int64: "int64", Int32: "int32", Bool: "bool",
	BFloat16: "bfloat16", Float16: "float16", Uint8: "uint8",
}

func (d DType) String() string {
	if s, ok := dtypeNames[d]; ok {
		return s
	}
	return fmt.Sprintf("dtype(%d)", int(d))
}

// Size is the element size in bytes.
func (d DType) Size() int {
	switch d {
	case Float64, Int64:
		return 8
	case Float32, Int32:
		return 4
	case BFloat16, Float16:
		return 2
	default:
		return 1
	}
}

// ParseDType maps names such as "float32", "fp32", "bf16" to a DType.
func ParseDType(s string) (DType, error) {
	switch strings.ToLower(s) {
	case "float32", "fp32", "float":
		return Float32, nil
	case "float64", "fp64", "double":
		return Float64, nil
	case "bfloat16", "bf16":
		return BFloat16, nil
	case "float16", "fp16", "half":
		return Float16, nil
	case "int64", "long":
		return Int64, nil
	case "int32", "int":
		return Int32, nil
	case "bool":
		return Bool, nil
	case "uint8":
		return Uint8, nil
	}
	return 0, fmt.Errorf("torch: unknown dtype %q (valid: float32, float64, bfloat16, float16, int64, int32, bool, uint8)", s)
}

// Device is CPU or a CUDA ordinal. The zero value is the CPU, so a config
// struct left empty never lands on a GPU by accident.
type Device int

// CPU is the host device.
const CPU Device = 0

// CUDA returns the device for CUDA ordinal i.
func CUDA(i int) Device { return Device(i + 1) }

// IsCUDA reports whether d is a CUDA device.
func (d Device) IsCUDA() bool { return d > 0 }

// Ordinal is the CUDA device index (-1 for the CPU).
func (d Device) Ordinal() int { return int(d) - 1 }

// c is the shim's device code: TT_CPU (-1) or the CUDA ordinal.
func (d Device) c() int { return d.Ordinal() }

func deviceFromC(code int) Device { return Device(code + 1) }

func (d Device) String() string {
	if !d.IsCUDA() {
		return "cpu"
	}
	return fmt.Sprintf("cuda:%d", d.Ordinal())
}

// ParseDevice maps "cpu", "cuda" and "cuda:N" to a Device.
func ParseDevice(s string) (Device, error) {
	switch {
	case s == "cpu" || s == "":
		return CPU, nil
	case s == "cuda":
		return CUDA(0), nil
	case strings.HasPrefix(s, "cuda:"):
		var i int
		if _, err := fmt.Sscanf(s, "cuda:%d", &i); err == nil && i >= 0 {
			return CUDA(i), nil
		}
	}
	return CPU, fmt.Errorf("torch: unknown device %q (valid: cpu, cuda, cuda:N)", s)
}

// Error is an error raised by libtorch or by the binding, naming the op.
type Error struct {
	Op  string // the op that failed, e.g. "matmul"
	Msg string // libtorch's message without the C++ backtrace
}

func (e *Error) Error() string { return "torch: " + e.Op + ": " + e.Msg }

// ErrFreed is returned when an op receives a nil or freed tensor.
var ErrFreed = errors.New("torch: use of a nil or freed tensor")

// check converts an error of package csrc (the shim's "op: reason") into
// an *Error with the same Op and Msg.
func check(err error) error {
	if err == nil {
		return nil
	}
	if e, ok := err.(*csrc.Error); ok {
		return &Error{Op: e.Op, Msg: e.Msg}
	}
	return err
}

// SetNumThreads sets libtorch's intra-op thread count for the process (n < 1
// means runtime.NumCPU()). Call it once at start-up; without it the count
// is OMP_NUM_THREADS when set, else the CPUs the process may run on.
func SetNumThreads(n int) {
	if n < 1 {
		n = runtime.NumCPU()
	}
	csrc.SetNumThreads(n)
}

// SetTorchThread turns the torch thread on (the default) or off and returns
// the previous setting. On, the calls that do most of the arithmetic (the
// fused forward, backward, optimizer steps, head log-probs, sampling, linear
// layers) run on one OS thread the package owns, with the caller's grad
// mode, so every caller, locked to its OS thread or not, uses one OpenMP
// team; off, they run on the caller's thread (see the package doc). The
// environment variable RAGEN_TORCH_THREAD=0 turns it off at start-up.
func SetTorchThread(on bool) bool { return csrc.SetTorchThread(on) }

// NumThreads reports libtorch's intra-op thread count on this thread.
func NumThreads() int { return csrc.NumThreads() }

// OnHugePages runs f with the CPU allocations of 2 MiB or more that it
// makes, on any goroutine, placed on transparent huge pages (2 MiB pages
// where Linux's transparent_hugepage setting is madvise or always), and
// returns f's error. It is for long-lived tensors read whole again and
// again, as a model's weights and KV caches are by every decode step: on
// 4 KiB pages each page read is a TLB miss and ends a hardware prefetch
// stream (a bf16 decode step of Qwen2.5-0.5B reads a quarter of a million of
// them). Spans nest and may overlap between goroutines; allocations made
// elsewhere meanwhile may take huge pages too. The environment variable
// RAGEN_HUGEPAGES=0 leaves libtorch's allocator alone (f then runs as it is).
func OnHugePages(f func() error) error {
	if csrc.HugePagesBegin() {
		defer csrc.HugePagesEnd()
	}
	return f()
}

// HugePageBytes reports the bytes of live tensors OnHugePages placed on
// huge pages (mapped; Linux backs with 2 MiB pages what it can).
func HugePageBytes() int64 { return csrc.HugePageBytes() }

// CUDAAvailable reports whether this build links a CUDA libtorch and a GPU is visible.
func CUDAAvailable() bool { return csrc.CUDAAvailable() }

// NativeBF16Matmul reports whether this CPU multiplies bfloat16 matrices
// natively (AMX-BF16 or AVX512-BF16) and libtorch has oneDNN to do it:
// bfloat16 GEMMs then run at two to three times the float32 rate (on the
// AMX test machine, Qwen2.5-0.5B's head GEMMs at 530-820 GFLOP/s against
// 210-260 in float32). Elsewhere bfloat16 matmuls are emulated, no faster
// than float32.
func NativeBF16Matmul() bool {
	return (cpu.X86.HasAMXBF16 || cpu.X86.HasAVX512BF16) && csrc.MKLDNNEnabled()
}

// OneDNNSgemm reports whether float32 CPU linear layers, the fused
// attention and the fused LM head's backward compute their matrix products
// with oneDNN's sgemm rather than libtorch's BLAS: true where libtorch links oneDNN as a shared library
// (Debian's libtorch does), unless RAGEN_GEMM=aten was set when the process
// started. On a 2-core AVX-512 machine it measured 5-15% faster on a Qwen
// layer's training products.
func OneDNNSgemm() bool { return csrc.OneDNNSgemm() }

// CUDADeviceCount is the number of visible CUDA devices (0 without CUDA).
func CUDADeviceCount() int { return csrc.CUDADeviceCount() }

// Live is the number of tensor handles alive in C++.
func Live() int64 { return csrc.Live() }

// ManualSeed seeds libtorch's default CPU generator.
func ManualSeed(seed uint64) { csrc.ManualSeed(seed) }

// BuildInfo describes the linked shim ("libtorch" or "libtorch+cuda").
func BuildInfo() string { return csrc.Version() }
