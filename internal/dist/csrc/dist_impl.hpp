// dist_impl.hpp - C++-only definitions of the dist handles, shared by
// dist.cc and dist_cuda.cc.
#pragma once
#include <string>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "dist.h"

// The object the collectives are called on. Up to libtorch 1.13,
// ProcessGroupGloo and ProcessGroupNCCL are c10d::ProcessGroups; since 2.0
// they are c10d::Backends (a ProcessGroup wraps one per device type, for
// Python's dispatcher). Both have the same collective methods (allreduce,
// broadcast, allgather, _allgather_base, alltoall_base,
// _reduce_scatter_base, barrier), so the shim calls the backend directly.
// By version, not by probing for Backend.hpp: 1.13 already ships that
// header without deriving the Gloo group from it. version.h sits under the
// C++ API's include folder in Debian's and in PyTorch's wheels alike.
#include <torch/csrc/api/include/torch/version.h>
#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
using td_backend = c10d::Backend;
#else
using td_backend = c10d::ProcessGroup;
#endif

struct td_store_s {
  c10::intrusive_ptr<c10d::Store> s;
};

struct td_pg_s {
  c10::intrusive_ptr<td_backend> pg;
  c10::intrusive_ptr<c10d::Store> store;  // keeps the (prefixed) store alive
  const char* backend;                    // "gloo" or "nccl"
  int rank;
  int world;
  bool native_flat = false;  // _allgather_base and _reduce_scatter_base exist (NCCL)
};

td_err td_errorf(const char* op, const std::string& msg);
