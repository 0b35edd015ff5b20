//go:build !torchshared

// dist.cc - c10d process groups and stores behind the C ABI of dist.h.
// Compiled by cgo, or (tag torchshared) into libragen_dist.so by
// scripts/gpu-bundle.sh with scripts/build-shim.sh, which passes no
// defines of its own: USE_C10D_GLOO is set here.
// Gloo comes with Debian's libgloo-dev (make deps) and PyTorch's wheels; a
// libtorch without gloo's headers still gets a library (NCCL, the stores)
// whose gloo group says why it is missing.
#if __has_include(<gloo/config.h>)
#define RAGEN_HAVE_GLOO 1
#ifndef USE_C10D_GLOO
#define USE_C10D_GLOO
#endif
#endif
#include "dist.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#ifdef RAGEN_HAVE_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "../../torch/csrc/tensor_impl.hpp"
#include "dist_impl.hpp"

namespace {

td_err make_err(const char* op, const char* msg) {
  std::string s = std::string(op) + ": " + msg;
  // c10 messages end with a newline and sometimes a context block; keep the first paragraph.
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

}  // namespace

td_err td_errorf(const char* op, const std::string& msg) { return make_err(op, msg.c_str()); }

// comm_error marks a failure of the communication itself (a collective that
// failed or timed out); anything else thrown is an argument error, reported
// as "op(args): ..." and leaving the group usable.
struct comm_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

#define TD_TRY(op, ...)                                    \
  try {                                                    \
    __VA_ARGS__;                                           \
    return nullptr;                                        \
  } catch (const comm_error& e) {                          \
    return make_err(op, e.what());                         \
  } catch (const c10::Error& e) {                          \
    return make_err(op "(args)", e.what_without_backtrace()); \
  } catch (const std::exception& e) {                      \
    return make_err(op "(args)", e.what());                \
  } catch (...) {                                          \
    return make_err(op, "unknown C++ exception");          \
  }

static at::Tensor& T(void* h) { return static_cast<tt_tensor_s*>(h)->t; }

static std::chrono::milliseconds ms(int64_t t) { return std::chrono::milliseconds(t); }

static void wait(const c10::intrusive_ptr<c10d::Work>& w, int64_t timeout_ms) {
  try {
    w->wait(ms(timeout_ms));
  } catch (const c10::Error& e) {
    throw comm_error(e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw comm_error(e.what());
  }
}

static c10d::ReduceOp native_op(int op) {
  switch (op) {
    case TD_SUM:
    case TD_AVG:
      return c10d::ReduceOp::SUM;
    case TD_PRODUCT:
      return c10d::ReduceOp::PRODUCT;
    case TD_MIN:
      return c10d::ReduceOp::MIN;
    case TD_MAX:
      return c10d::ReduceOp::MAX;
  }
  TORCH_CHECK(false, "unknown reduce op ", op);
}

// ---- stores ----

// without_libuv turns TCPStoreOptions::useLibUV off where the field exists
// (libtorch 2.2+) and reports whether it did; 1.13 has no such field.
template <class O>
static auto without_libuv(O& o, int) -> decltype(o.useLibUV = false, bool()) {
  if (!o.useLibUV) return false;
  o.useLibUV = false;
  return true;
}
template <class O>
static bool without_libuv(O&, long) {
  return false;
}

td_err td_store_tcp(const char* host, int port, int is_server, int world, int64_t timeout_ms, td_store* out) {
  TD_TRY("tcp_store", {
    TORCH_CHECK(port > 0 && port < 65536, "port ", port, " out of range 1..65535");
    c10d::TCPStoreOptions o;
    o.port = static_cast<std::uint16_t>(port);
    o.isServer = is_server != 0;
    o.numWorkers = static_cast<std::size_t>(world);
    o.waitWorkers = true;
    o.timeout = ms(timeout_ms);
    c10::intrusive_ptr<c10d::TCPStore> s;
    try {
      s = c10::make_intrusive<c10d::TCPStore>(std::string(host), o);
    } catch (const c10::Error& e) {
      // libtorch 2.4+ asks for the libuv store backend by default, which
      // some builds lack (Debian's 2.6): "use_libuv was requested but
      // PyTorch was build without libuv support". Retry with the classic
      // backend there; elsewhere keep the default.
      if (std::string(e.what()).find("libuv") == std::string::npos || !without_libuv(o, 0)) throw;
      s = c10::make_intrusive<c10d::TCPStore>(std::string(host), o);
    }
    *out = new td_store_s{s};
  })
}

td_err td_store_file(const char* path, int world, int64_t timeout_ms, td_store* out) {
  TD_TRY("file_store", {
    auto s = c10::make_intrusive<c10d::FileStore>(std::string(path), world);
    s->setTimeout(ms(timeout_ms));
    *out = new td_store_s{s};
  })
}

td_err td_store_set(td_store s, const char* key, const void* data, int64_t n) {
  TD_TRY("store_set", {
    const auto* b = static_cast<const uint8_t*>(data);
    s->s->set(std::string(key), std::vector<uint8_t>(b, b + n));
  })
}

td_err td_store_get(td_store s, const char* key, int64_t timeout_ms, void** data, int64_t* n) {
  TD_TRY("store_get", {
    s->s->wait({std::string(key)}, ms(timeout_ms));
    auto v = s->s->get(std::string(key));
    void* p = std::malloc(v.size() ? v.size() : 1);
    if (!v.empty()) std::memcpy(p, v.data(), v.size());
    *data = p;
    *n = static_cast<int64_t>(v.size());
  })
}

td_err td_store_add(td_store s, const char* key, int64_t delta, int64_t* out) {
  TD_TRY("store_add", { *out = s->s->add(std::string(key), delta); })
}

void td_store_free(td_store s) { delete s; }

// ---- process groups ----

td_err td_pg_gloo(td_store s, const char* prefix, int rank, int world, int64_t timeout_ms,
                  const char* bind, int threads, td_pg* out) {
#ifndef RAGEN_HAVE_GLOO
  (void)s, (void)prefix, (void)rank, (void)world, (void)timeout_ms, (void)bind, (void)threads, (void)out;
  return make_err("gloo", "this build found no gloo headers (gloo/config.h) next to libtorch's: install libgloo-dev");
#else
  TD_TRY("gloo", {
    auto opts = c10d::ProcessGroupGloo::Options::create(ms(timeout_ms));
    std::string b(bind);
    if (b.rfind("iface:", 0) == 0) {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(b.substr(6)));
    } else if (b.rfind("host:", 0) == 0) {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(b.substr(5)));
    } else {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    if (threads > 0) opts->threads = threads;
    c10::intrusive_ptr<c10d::Store> st = c10::make_intrusive<c10d::PrefixStore>(std::string(prefix), s->s);
    auto pg = c10::make_intrusive<c10d::ProcessGroupGloo>(st, rank, world, opts);
    *out = new td_pg_s{pg, st, "gloo", rank, world};
  })
#endif
}

#ifndef RAGEN_WITH_CUDA
td_err td_pg_nccl(td_store, const char*, int, int, int64_t, td_pg*) {
  return make_err("nccl",
                  "this binary was built without CUDA: NCCL needs a CUDA libtorch and `go build -tags cuda` "
                  "(see scripts/gpu-bundle.sh); use backend gloo on CPU");
}
int td_nccl_available(void) { return 0; }
#endif

const char* td_pg_backend(td_pg pg) { return pg->backend; }

void td_pg_free(td_pg pg) { delete pg; }

// ---- collectives ----

static std::vector<at::Tensor> tensors(void** ts, int n) {
  std::vector<at::Tensor> v;
  v.reserve(n);
  for (int i = 0; i < n; i++) {
    TORCH_CHECK(ts[i] != nullptr, "tensor ", i, " is NULL");
    v.push_back(T(ts[i]));
  }
  return v;
}

td_err td_allreduce(td_pg pg, void** ts, int n, int op, int64_t timeout_ms) {
  TD_TRY("allreduce", {
    auto v = tensors(ts, n);
    for (auto& t : v) TORCH_CHECK(t.is_contiguous(), "allreduce needs contiguous tensors");
    c10d::AllreduceOptions o;
    o.reduceOp = native_op(op);
    o.timeout = ms(timeout_ms);
    // One collective per tensor (a c10d tensor list means one per device).
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    for (auto& t : v) {
      std::vector<at::Tensor> one{t};
      works.push_back(pg->pg->allreduce(one, o));
    }
    for (auto& w : works) wait(w, timeout_ms);
    if (op == TD_AVG) {
      for (auto& t : v) t.div_(pg->world);
    }
  })
}

td_err td_broadcast(td_pg pg, void** ts, int n, int root, int64_t timeout_ms) {
  TD_TRY("broadcast", {
    TORCH_CHECK(root >= 0 && root < pg->world, "root ", root, " outside 0..", pg->world - 1);
    auto v = tensors(ts, n);
    c10d::BroadcastOptions o;
    o.rootRank = root;
    o.timeout = ms(timeout_ms);
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    for (auto& t : v) {
      std::vector<at::Tensor> one{t};
      works.push_back(pg->pg->broadcast(one, o));
    }
    for (auto& w : works) wait(w, timeout_ms);
  })
}

td_err td_allgather(td_pg pg, void** outs, int world, void* in, int64_t timeout_ms) {
  TD_TRY("allgather", {
    TORCH_CHECK(world == pg->world, "got ", world, " outputs for a world of ", pg->world);
    std::vector<std::vector<at::Tensor>> o{tensors(outs, world)};
    std::vector<at::Tensor> i{T(in)};
    c10d::AllgatherOptions ao;
    ao.timeout = ms(timeout_ms);
    wait(pg->pg->allgather(o, i, ao), timeout_ms);
  })
}

td_err td_allgather_flat(td_pg pg, void* flat, void* shard, int64_t timeout_ms) {
  TD_TRY("allgather_flat", {
    at::Tensor f = T(flat);
    at::Tensor s = T(shard);
    TORCH_CHECK(f.is_contiguous(), "the flat output must be contiguous");
    TORCH_CHECK(f.numel() == s.numel() * pg->world, "flat has ", f.numel(), " elements, want world ",
                pg->world, " x shard ", s.numel());
    TORCH_CHECK(f.scalar_type() == s.scalar_type(), "flat and shard dtypes differ");
    c10d::AllgatherOptions ao;
    ao.timeout = ms(timeout_ms);
    at::Tensor s1 = s.contiguous().view({-1});
    at::Tensor f1 = f.view({-1});
    if (pg->native_flat) {
      wait(pg->pg->_allgather_base(f1, s1, ao), timeout_ms);
      return nullptr;
    }
    // Gloo 1.13 has no _allgather_base: gather into views of the flat buffer.
    std::vector<std::vector<at::Tensor>> o{f1.chunk(pg->world)};
    std::vector<at::Tensor> i{s1};
    wait(pg->pg->allgather(o, i, ao), timeout_ms);
  })
}

td_err td_alltoall(td_pg pg, void* out, void* in, int64_t timeout_ms) {
  TD_TRY("alltoall", {
    at::Tensor o = T(out), i = T(in);
    TORCH_CHECK(o.numel() == i.numel(), "alltoall: in and out sizes differ");
    TORCH_CHECK(i.numel() % pg->world == 0, "alltoall: ", i.numel(), " elements do not split over ", pg->world,
                " ranks");
    c10d::AllToAllOptions ao;
    ao.timeout = ms(timeout_ms);
    std::vector<int64_t> none;
    at::Tensor oc = o.is_contiguous() ? o : at::empty_like(o, at::MemoryFormat::Contiguous);
    at::Tensor ic = i.contiguous();
    wait(pg->pg->alltoall_base(oc, ic, none, none, ao), timeout_ms);
    if (!oc.is_same(o)) o.copy_(oc);
  })
}

td_err td_reduce_scatter(td_pg pg, void* out, void* in, int op, int algo, int64_t timeout_ms) {
  TD_TRY("reduce_scatter", {
    at::Tensor o = T(out), i = T(in);
    const int W = pg->world;
    TORCH_CHECK(i.numel() == o.numel() * W, "input has ", i.numel(), " elements, want world ", W, " x output ",
                o.numel());
    TORCH_CHECK(i.scalar_type() == o.scalar_type(), "input and output dtypes differ");
    at::Tensor i1 = i.contiguous().view({-1});
    if (algo == TD_RS_AUTO) algo = pg->native_flat ? TD_RS_NATIVE : TD_RS_ALLREDUCE;
    TORCH_CHECK(algo != TD_RS_NATIVE || pg->native_flat, "backend ", pg->backend,
                " has no native reduce_scatter (libtorch 1.13 Gloo); use the allreduce or alltoall emulation");
    c10d::ReduceScatterOptions ro;
    ro.reduceOp = native_op(op);
    ro.timeout = ms(timeout_ms);
    if (algo == TD_RS_NATIVE) {
      at::Tensor oc = o.is_contiguous() ? o.view({-1}) : at::empty({o.numel()}, o.options());
      wait(pg->pg->_reduce_scatter_base(oc, i1, ro), timeout_ms);
      if (!o.is_contiguous()) o.copy_(oc.view(o.sizes()));
    } else if (algo == TD_RS_ALLREDUCE) {
      std::vector<at::Tensor> v{i1.clone()};
      c10d::AllreduceOptions ao;
      ao.reduceOp = ro.reduceOp;
      ao.timeout = ro.timeout;
      wait(pg->pg->allreduce(v, ao), timeout_ms);
      o.copy_(v[0].chunk(W)[pg->rank].view(o.sizes()));
    } else if (algo == TD_RS_ALLTOALL) {
      at::Tensor tmp = at::empty_like(i1);
      c10d::AllToAllOptions ao;
      ao.timeout = ro.timeout;
      std::vector<int64_t> none;
      wait(pg->pg->alltoall_base(tmp, i1, none, none, ao), timeout_ms);
      at::Tensor m = tmp.view({W, -1});
      at::Tensor r;
      switch (op) {
        case TD_MIN: r = std::get<0>(m.min(0)); break;
        case TD_MAX: r = std::get<0>(m.max(0)); break;
        case TD_PRODUCT: r = m.prod(0); break;
        default: r = m.sum(0); break;
      }
      o.copy_(r.view(o.sizes()));
    } else {
      TORCH_CHECK(false, "unknown reduce_scatter algorithm ", algo);
    }
    if (op == TD_AVG) o.div_(W);
  })
}

td_err td_barrier(td_pg pg, int64_t timeout_ms) {
  TD_TRY("barrier", {
    c10d::BarrierOptions o;
    o.timeout = ms(timeout_ms);
    wait(pg->pg->barrier(o), timeout_ms);
  })
}
