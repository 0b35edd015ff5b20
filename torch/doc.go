// Package torch is ragen's tensor API over libtorch (ATen): tensors, scopes,
// devices, dtypes, the ops that models, losses and estimators are written
// with, autograd, seeded generators and the AdamW and SGD optimizers. The C++
// binding behind it is internal (ragen/internal/torch/csrc); research code
// outside the module writes custom losses, estimators and actors with this
// package alone.
//
//	s := torch.NewScope()
//	defer s.Close()
//	x := s.Own(torch.From([]float32{1, 2, 3, 4}, 2, 2))
//	y := s.Sum(s.Mul(x, x), false)   // 30
//	v, err := s.Item(y), s.Err()     // the first error of any op above
//
// Everything Go-side is a handle: a *Tensor owns one counted reference to a
// C++ at::Tensor, and ops run in libtorch.
//
// # Lifetime
//
// A *Tensor owns one counted reference to a C++ at::Tensor. Intermediates
// belong to a Scope, whose Close frees them all in one cgo call; long-lived
// tensors (parameters, optimizer moments, KV caches) are freed explicitly by
// their owner. The garbage collector never frees tensors: with leak checking
// on (SetLeakCheck), a tensor collected while still holding its reference is
// counted and reported by Leaked. Live reports the number of handles alive in
// C++, which tests assert returns to its starting value.
//
// # Errors
//
// C++ exceptions never cross the boundary: each C call returns its error in
// the same call, and Go returns it as *Error naming the op. A Scope is
// sticky: after its first error every later op is a no-op returning nil, and
// Err reports the first error, so tensor math reads like math and is checked
// once.
//
// # Threads
//
// libtorch's intra-op thread count (and OpenMP BLAS's) defaults to
// OMP_NUM_THREADS when set, else the number of CPUs the process may run on;
// SetNumThreads changes it once at start-up. The shim applies the count on
// every OS thread that calls in.
// Grad mode is thread-local in libtorch: NoGrad pins the goroutine to its
// thread while it runs.
//
// Callers need not lock their goroutines to OS threads. The calls that do
// most of the arithmetic (the fused forward, backward, optimizer steps and
// gradient clipping, head log-probs, sampling and linear layers) run on one
// OS thread the package owns (the torch thread), with the caller's grad
// mode, so they share one OpenMP team whatever goroutine calls (every OS
// thread that opens an OpenMP region gets its own team, and idle teams spin
// against the busy one). The handoff costs a few microseconds and is paid
// only by those calls. Every other op on >= 32,768 elements (the size at
// which an op opens an OpenMP region) is handed to the torch thread too, so a
// run keeps one OpenMP team (bf16 decode 8-15% faster on a 2-core machine,
// see internal/torch/csrc/worker.go); smaller ops run on the caller's
// thread. Concurrent callers are served one at a time. SetTorchThread(false),
// or RAGEN_TORCH_THREAD=0 in the environment, runs everything on the
// caller's thread; RAGEN_TORCH_THREAD=heavy hands over only the calls above.
package torch
