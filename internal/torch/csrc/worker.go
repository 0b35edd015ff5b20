package csrc

/*
#include "shim.h"
*/
import "C"

import (
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

// The torch thread.
//
// libgomp gives every OS thread that opens an OpenMP parallel region its own
// team of worker threads. A goroutine that is not locked to its OS thread
// moves between Ms across long cgo calls, so the heavy ops of one training
// step open regions from several OS threads: several teams exist, and the
// idle ones spin-wait against the active one on the same cores. Callers that
// lock their goroutine (runtime.LockOSThread) do not pay this; library
// callers should not have to know.
//
// So the calls that do most of the arithmetic run on one OS thread the
// package owns, a goroutine locked to its thread for the life of the
// process: the fused forward, backward, optimizer steps and clipping, head
// log-probs, sampling and linear layers (Heavy's callers). The handoff
// costs two goroutine switches (about 5-30 µs on an idle machine), paid only
// by those calls; other ops run on the caller's thread as before.
//
// By default (SetDeferBigOps(true); RAGEN_TORCH_THREAD unset or "all") the
// torch thread also runs every element-wise, reduction, softmax, embedding,
// cat, to, copy and creation (from_data, full, randn, rand) op on at least
// 32,768 elements (ATen's grain size, above which an op opens an OpenMP
// region): the shim returns the tt_deferred sentinel for those instead of
// running them off the torch thread, and the wrapper re-issues them through
// Heavy. That puts every OpenMP region of a run on one thread (one libgomp
// team), at a handoff per such op. It matters because libgomp threads
// outlive their regions: once a second OS thread has opened a region, the
// process manages more OpenMP threads than there are CPUs, and libgomp then
// barely spins before sleeping, so every region of a decode step wakes its
// worker through a futex. Measured on the noisy 2-core test machine: bf16
// decode at 24 layers 8-15% faster (three alternating pairs of processes,
// 34.2-40.1 against 39.0-43.2 ms a step), the training step and a 2-layer
// StarPO step no slower (107.6 and 117.1 s against 108.4 and 117.8 s).
// RAGEN_TORCH_THREAD=heavy (SetDeferBigOps(false)) hands over only Heavy's
// callers.
//
// The caller's grad mode (thread-local in libtorch) is applied on the torch
// thread for the call and restored after, so NoGrad and autograd recording
// behave as if the call ran on the caller's thread. A Heavy call made from
// the torch thread itself (nested) runs inline. Calls from several
// goroutines are served one at a time, which on CPU is what the shared
// OpenMP team would do anyway. RAGEN_TORCH_THREAD=0 in the environment (or
// SetTorchThread(false)) runs everything on the caller's thread.

type job struct {
	f     func()
	grad  C.int
	panic any
	done  chan struct{}
}

var (
	workerOn   atomic.Bool
	workerOnce sync.Once
	jobs       chan *job
	jobPool    = sync.Pool{New: func() any { return &job{done: make(chan struct{}, 1)} }}
	handoffs   atomic.Int64
)

// Handoffs is how many calls Heavy has handed to the torch thread so far
// (calls that ran inline are not counted).
func Handoffs() int64 { return handoffs.Load() }

// deferred is the shim's sentinel (tt_deferred): the op was not run because
// it is big and the caller is not on the torch thread; re-issue it there.
// It is static: never freed, never an error.
var deferred = C.tt_deferred()

var (
	setMu    sync.Mutex
	deferBig atomic.Bool
)

func init() {
	mode := os.Getenv("RAGEN_TORCH_THREAD")
	deferBig.Store(mode != "heavy")
	SetTorchThread(mode != "0")
}

// SetDeferBigOps makes the shim hand every op on >= 32,768 elements to the
// torch thread (while it is on) and returns the previous setting.
func SetDeferBigOps(on bool) bool {
	setMu.Lock()
	defer setMu.Unlock()
	prev := deferBig.Swap(on)
	if !on || !workerOn.Load() {
		C.tt_worker_serving(0)
	} else {
		C.tt_worker_serving(1)
	}
	return prev
}

// SetTorchThread turns the torch thread on or off and returns the previous
// setting. Off, Heavy runs f on the caller's thread and the shim runs every
// op where it is called. Order matters: the shim defers ops only while the
// Go side dispatches them, so a deferred op always finds the torch thread.
func SetTorchThread(on bool) bool {
	setMu.Lock()
	defer setMu.Unlock()
	prev := workerOn.Load()
	if on {
		workerOnce.Do(startWorker)
		workerOn.Store(true)
		if deferBig.Load() {
			C.tt_worker_serving(1)
		}
	} else {
		C.tt_worker_serving(0)
		workerOn.Store(false)
	}
	return prev
}

// TorchThread reports whether heavy calls run on the torch thread.
func TorchThread() bool { return workerOn.Load() }

// OnTorchThread reports whether the caller runs on the torch thread.
func OnTorchThread() bool { return C.tt_on_worker() != 0 }

func startWorker() {
	jobs = make(chan *job)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread serves for the life of the process
		C.tt_worker_mark()
		for j := range jobs {
			runJob(j)
			j.done <- struct{}{}
		}
	}()
}

func runJob(j *job) {
	prev := C.tt_set_grad_enabled(j.grad)
	defer func() {
		C.tt_set_grad_enabled(prev)
		j.panic = recover()
	}()
	j.f()
}

// heavy1 re-issues a deferred single-output call on the torch thread.
func heavy1(call func(h *C.tt_tensor) C.tt_err) (Tensor, error) {
	var h C.tt_tensor
	var e C.tt_err
	Heavy(func() { e = call(&h) })
	return out1(e, h)
}

// Heavy runs f on the torch thread with the caller's grad mode and waits
// for it; inline when the torch thread is off or the caller is on it.
func Heavy(f func()) {
	if !workerOn.Load() || C.tt_on_worker() != 0 {
		f()
		return
	}
	handoffs.Add(1)
	j := jobPool.Get().(*job)
	j.f, j.grad, j.panic = f, C.tt_grad_enabled(), nil
	jobs <- j
	<-j.done
	p := j.panic
	j.f, j.panic = nil, nil
	jobPool.Put(j)
	if p != nil {
		panic(p)
	}
}
