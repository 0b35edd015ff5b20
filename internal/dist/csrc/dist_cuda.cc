//go:build cuda && !torchshared

// dist_cuda.cc - the NCCL process group, compiled only with the cuda build
// tag (or, in libragen_dist.so, when build-shim.sh defines RAGEN_WITH_CUDA)
// against a CUDA libtorch built with NCCL.
#ifdef RAGEN_WITH_CUDA
#ifndef USE_C10D_NCCL
#define USE_C10D_NCCL
#endif
#include <cstdlib>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>

#include "dist_impl.hpp"

int td_nccl_available(void) { return 1; }

td_err td_pg_nccl(td_store s, const char* prefix, int rank, int world, int64_t timeout_ms, td_pg* out) {
  try {
    // Without blocking wait a NCCL Work::wait only orders streams: a lost peer
    // would hang the host. With it, wait(timeout) blocks and throws.
    setenv("NCCL_BLOCKING_WAIT", "1", 0);
    auto opts = c10d::ProcessGroupNCCL::Options::create();
    opts->timeout = std::chrono::milliseconds(timeout_ms);
    c10::intrusive_ptr<c10d::Store> st = c10::make_intrusive<c10d::PrefixStore>(std::string(prefix), s->s);
    auto pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(st, rank, world, opts);
    auto* h = new td_pg_s{pg, st, "nccl", rank, world};
    h->native_flat = true;
    *out = h;
    return nullptr;
  } catch (const c10::Error& e) {
    return td_errorf("nccl", e.what_without_backtrace());
  } catch (const std::exception& e) {
    return td_errorf("nccl", e.what());
  }
}
#endif  // RAGEN_WITH_CUDA
