// Package dist runs ragen across processes on PyTorch's own distributed
// engine, c10d: rendezvous through a TCPStore (or a FileStore), Gloo process
// groups on CPU and NCCL ones on GPU (binaries built with the cuda tag), and
// the collectives data-parallel and sharded training need.
//
// Every collective takes a context and waits at most the group's timeout (or
// the context's deadline, when sooner): a lost or stuck peer becomes an
// error on every surviving rank, never a hang. After a failed collective the
// group is broken: later calls return the first error at once.
//
// libtorch 1.13's Gloo lacks reduce-scatter, the flat all-gather and AVG;
// Group emulates them (allreduce then keep the own chunk, or all-to-all then
// a local sum; gather into views of the flat buffer; SUM then divide) and
// uses the native NCCL ops where they exist.
package dist
