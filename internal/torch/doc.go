// Package torch is ragen's Go binding to libtorch (ATen) through a small C
// shim (package csrc). It is internal: the model, trainer and distributed
// code build on it; users see tensors only through those packages.
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
// SetNumThreads sets libtorch's intra-op thread count (and OpenMP BLAS's)
// once at start-up; the shim re-applies it on every OS thread that calls in.
// Grad mode is thread-local in libtorch: NoGrad pins the goroutine to its
// thread while it runs.
package torch
