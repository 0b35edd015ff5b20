// Package csrc is the cgo binding of c10d (libtorch's distributed engine):
// TCP and file stores, Gloo and (with the cuda tag) NCCL process groups, and
// their collectives. It is the only package besides internal/torch/csrc with
// an `import "C"`. Tensors cross as the torch shim's tt_tensor handles (see
// ../../torch/csrc/tensor_impl.hpp); package dist owns the policy on top.
//
// Build modes follow internal/torch/csrc: the system libtorch by default,
// tag torchpc (pkg-config), tag cuda (adds the NCCL group, dist_cuda.cc),
// tag torchshared (dist.cc is not compiled in; binaries link
// libragen_dist.so, built from the same sources by scripts/gpu-bundle.sh).
//
// dist.cc includes ../../torch/csrc/tensor_impl.hpp, which cmd/go does not
// hash into this package's build key: keep that header stable, or clean the
// build cache when it changes.
package csrc

/*
#cgo CXXFLAGS: -std=c++17 -g0 -O1 -fPIC -Wno-deprecated-declarations
#include <stdlib.h>
#include "dist.h"
*/
import "C"

import (
	"strings"
	"time"
	"unsafe"
)

// Reduce ops (dist.h).
const (
	Sum     = C.TD_SUM
	Avg     = C.TD_AVG
	Product = C.TD_PRODUCT
	Min     = C.TD_MIN
	Max     = C.TD_MAX
)

// Reduce-scatter algorithms (dist.h).
const (
	RSAuto      = C.TD_RS_AUTO
	RSAllreduce = C.TD_RS_ALLREDUCE
	RSAlltoall  = C.TD_RS_ALLTOALL
	RSNative    = C.TD_RS_NATIVE
)

// Error is a failure reported by c10d: the op and libtorch's message. Comm
// is true when the communication itself failed or timed out (the group is
// then unusable), false for a call rejected before anything was sent.
type Error struct {
	Op   string
	Msg  string
	Comm bool
}

func (e *Error) Error() string { return e.Op + ": " + e.Msg }

func check(e C.td_err) error {
	if e == nil {
		return nil
	}
	s := C.GoString(e)
	C.free(unsafe.Pointer(e))
	op, msg, ok := strings.Cut(s, ": ")
	if !ok {
		return &Error{Op: "c10d", Msg: s, Comm: true}
	}
	op, args := strings.CutSuffix(op, "(args)")
	return &Error{Op: op, Msg: strings.TrimSpace(msg), Comm: !args}
}

func millis(d time.Duration) C.int64_t {
	ms := d.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	return C.int64_t(ms)
}

// Store is a c10d key-value store (rendezvous).
type Store struct{ p C.td_store }

// TCPStore connects to (or, with server, hosts) a c10d TCPStore.
func TCPStore(host string, port int, server bool, world int, timeout time.Duration) (Store, error) {
	h := C.CString(host)
	defer C.free(unsafe.Pointer(h))
	srv := C.int(0)
	if server {
		srv = 1
	}
	var s Store
	err := check(C.td_store_tcp(h, C.int(port), srv, C.int(world), millis(timeout), &s.p))
	return s, err
}

// FileStore opens a c10d FileStore at path shared by world processes.
func FileStore(path string, world int, timeout time.Duration) (Store, error) {
	p := C.CString(path)
	defer C.free(unsafe.Pointer(p))
	var s Store
	err := check(C.td_store_file(p, C.int(world), millis(timeout), &s.p))
	return s, err
}

// Set stores value under key.
func (s Store) Set(key string, value []byte) error {
	k := C.CString(key)
	defer C.free(unsafe.Pointer(k))
	var p unsafe.Pointer
	if len(value) > 0 {
		p = C.CBytes(value)
		defer C.free(p)
	}
	return check(C.td_store_set(s.p, k, p, C.int64_t(len(value))))
}

// Get waits up to timeout for key and returns its value.
func (s Store) Get(key string, timeout time.Duration) ([]byte, error) {
	k := C.CString(key)
	defer C.free(unsafe.Pointer(k))
	var p unsafe.Pointer
	var n C.int64_t
	if err := check(C.td_store_get(s.p, k, millis(timeout), &p, &n)); err != nil {
		return nil, err
	}
	defer C.free(p)
	return C.GoBytes(p, C.int(n)), nil
}

// Add adds delta to the counter at key and returns the new value.
func (s Store) Add(key string, delta int64) (int64, error) {
	k := C.CString(key)
	defer C.free(unsafe.Pointer(k))
	var out C.int64_t
	err := check(C.td_store_add(s.p, k, C.int64_t(delta), &out))
	return int64(out), err
}

// Free releases the store handle (the server stops when its last handle goes).
func (s Store) Free() {
	if s.p != nil {
		C.td_store_free(s.p)
	}
}

// PG is a c10d process group.
type PG struct{ p C.td_pg }

// Gloo creates a Gloo process group; bind is "", "host:ADDR" or "iface:NAME".
func Gloo(s Store, prefix string, rank, world int, timeout time.Duration, bind string, threads int) (PG, error) {
	pr, b := C.CString(prefix), C.CString(bind)
	defer C.free(unsafe.Pointer(pr))
	defer C.free(unsafe.Pointer(b))
	var g PG
	err := check(C.td_pg_gloo(s.p, pr, C.int(rank), C.int(world), millis(timeout), b, C.int(threads), &g.p))
	return g, err
}

// NCCL creates a NCCL process group (an error naming what is missing unless
// built with the cuda tag).
func NCCL(s Store, prefix string, rank, world int, timeout time.Duration) (PG, error) {
	pr := C.CString(prefix)
	defer C.free(unsafe.Pointer(pr))
	var g PG
	err := check(C.td_pg_nccl(s.p, pr, C.int(rank), C.int(world), millis(timeout), &g.p))
	return g, err
}

// NCCLAvailable reports whether the NCCL path was compiled in.
func NCCLAvailable() bool { return C.td_nccl_available() != 0 }

// Backend names the group's backend.
func (g PG) Backend() string { return C.GoString(C.td_pg_backend(g.p)) }

// Free destroys the group.
func (g PG) Free() {
	if g.p != nil {
		C.td_pg_free(g.p)
	}
}

func list(ts []unsafe.Pointer) *unsafe.Pointer {
	if len(ts) == 0 {
		return nil
	}
	return unsafe.SliceData(ts)
}

// AllReduce reduces ts in place over the group.
func (g PG) AllReduce(ts []unsafe.Pointer, op int, timeout time.Duration) error {
	return check(C.td_allreduce(g.p, list(ts), C.int(len(ts)), C.int(op), millis(timeout)))
}

// Broadcast copies root's ts to every rank.
func (g PG) Broadcast(ts []unsafe.Pointer, root int, timeout time.Duration) error {
	return check(C.td_broadcast(g.p, list(ts), C.int(len(ts)), C.int(root), millis(timeout)))
}

// AllGather fills outs[r] with rank r's in.
func (g PG) AllGather(outs []unsafe.Pointer, in unsafe.Pointer, timeout time.Duration) error {
	return check(C.td_allgather(g.p, list(outs), C.int(len(outs)), in, millis(timeout)))
}

// AllGatherFlat fills chunk r of flat with rank r's shard.
func (g PG) AllGatherFlat(flat, shard unsafe.Pointer, timeout time.Duration) error {
	return check(C.td_allgather_flat(g.p, flat, shard, millis(timeout)))
}

// ReduceScatter sets out to the reduction of chunk rank of every rank's in.
func (g PG) ReduceScatter(out, in unsafe.Pointer, op, algo int, timeout time.Duration) error {
	return check(C.td_reduce_scatter(g.p, out, in, C.int(op), C.int(algo), millis(timeout)))
}

// AllToAll sends chunk j of in to rank j; chunk j of out comes from rank j.
func (g PG) AllToAll(out, in unsafe.Pointer, timeout time.Duration) error {
	return check(C.td_alltoall(g.p, out, in, millis(timeout)))
}

// Barrier waits for every rank.
func (g PG) Barrier(timeout time.Duration) error {
	return check(C.td_barrier(g.p, millis(timeout)))
}
