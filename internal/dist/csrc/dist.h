/* dist.h - the C ABI between Go and libtorch's c10d (process groups, stores).
 *
 * Handles are opaque; tensors are the tt_tensor handles of the torch shim
 * (internal/torch/csrc/shim.h), passed as void*. Every call that can throw
 * returns a malloc'd "op: reason" string (NULL on success) that the caller
 * frees. Every collective waits at most timeout_ms milliseconds: a lost or
 * stuck peer turns into an error, never a hang.
 */
#ifndef RAGEN_DIST_H
#define RAGEN_DIST_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct td_store_s* td_store;
typedef struct td_pg_s* td_pg;
typedef char* td_err;

/* reduce ops; TD_AVG is SUM then a division by the world size where the
 * backend lacks it (Gloo). */
enum { TD_SUM = 0, TD_AVG = 1, TD_PRODUCT = 2, TD_MIN = 3, TD_MAX = 4 };
/* reduce-scatter algorithms: native where the backend has one, else
 * allreduce then keep the own chunk (TD_RS_ALLREDUCE) or all-to-all then a
 * local sum (TD_RS_ALLTOALL). */
enum { TD_RS_AUTO = 0, TD_RS_ALLREDUCE = 1, TD_RS_ALLTOALL = 2, TD_RS_NATIVE = 3 };

td_err td_store_tcp(const char* host, int port, int is_server, int world, int64_t timeout_ms, td_store* out);
td_err td_store_file(const char* path, int world, int64_t timeout_ms, td_store* out);
td_err td_store_set(td_store s, const char* key, const void* data, int64_t n);
/* td_store_get waits up to timeout_ms for key; *data is malloc'd. */
td_err td_store_get(td_store s, const char* key, int64_t timeout_ms, void** data, int64_t* n);
td_err td_store_add(td_store s, const char* key, int64_t delta, int64_t* out);
void td_store_free(td_store s);

/* bind: "" (default device), "host:ADDR" or "iface:NAME". prefix namespaces
 * the group's keys in the store (several groups may share one store). */
td_err td_pg_gloo(td_store s, const char* prefix, int rank, int world, int64_t timeout_ms,
                  const char* bind, int threads, td_pg* out);
/* td_pg_nccl fails with a clear message unless built with the cuda tag. */
td_err td_pg_nccl(td_store s, const char* prefix, int rank, int world, int64_t timeout_ms, td_pg* out);
int td_nccl_available(void);
const char* td_pg_backend(td_pg pg);
void td_pg_free(td_pg pg);

td_err td_allreduce(td_pg pg, void** ts, int n, int op, int64_t timeout_ms);
td_err td_broadcast(td_pg pg, void** ts, int n, int root, int64_t timeout_ms);
/* outs: world tensors shaped like in */
td_err td_allgather(td_pg pg, void** outs, int world, void* in, int64_t timeout_ms);
/* flat: contiguous, numel = world * numel(shard); chunk r of flat gets rank r's shard */
td_err td_allgather_flat(td_pg pg, void* flat, void* shard, int64_t timeout_ms);
/* in: contiguous, numel = world * numel(out); out = reduction over ranks of chunk rank */
td_err td_reduce_scatter(td_pg pg, void* out, void* in, int op, int algo, int64_t timeout_ms);
td_err td_alltoall(td_pg pg, void* out, void* in, int64_t timeout_ms);
td_err td_barrier(td_pg pg, int64_t timeout_ms);

#ifdef __cplusplus
}
#endif
#endif
