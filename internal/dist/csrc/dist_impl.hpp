// dist_impl.hpp - C++-only definitions of the dist handles, shared by
// dist.cc and dist_cuda.cc.
#pragma once
#include <string>

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "dist.h"

struct td_store_s {
  c10::intrusive_ptr<c10d::Store> s;
};

struct td_pg_s {
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
  c10::intrusive_ptr<c10d::Store> store;  // keeps the (prefixed) store alive
  const char* backend;                    // "gloo" or "nccl"
  int rank;
  int world;
  bool native_flat = false;  // _allgather_base and _reduce_scatter_base exist (NCCL)
};

td_err td_errorf(const char* op, const std::string& msg);
