//go:build !torchshared

// shim_hugepages.cc - CPU tensors on transparent huge pages, for the
// long-lived tensors a decode step reads whole (the weights, their bf16
// copies, the KV caches).
//
// A decode step streams every weight once, about 1 GB at Qwen2.5-0.5B's
// shape in bf16: on 4 KiB pages that is a quarter of a million pages a step,
// each a TLB miss, and each 4 KiB page ends a hardware prefetch stream.
// Linux gives anonymous memory 2 MiB pages where it is asked to
// (transparent_hugepage=madvise, the common default). This allocator
// replaces libtorch's CPU allocator: while tt_hugepages_begin has been
// called more often than tt_hugepages_end, an allocation of 2 MiB or more
// gets a mapping of its own, 2 MiB aligned and marked MADV_HUGEPAGE; every
// other allocation is the default allocator's. RAGEN_HUGEPAGES=0 leaves
// libtorch's allocator in place.
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <torch/csrc/api/include/torch/version.h>

#include <sys/mman.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "shim.h"

// Allocator::allocate lost its const and gained copy_data in PyTorch 2.3
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 3)
#define TT_ALLOC_CONST
#define TT_ALLOC_COPY_DATA 1
#else
#define TT_ALLOC_CONST const
#endif

namespace {

constexpr size_t kHuge = size_t(2) << 20;

std::atomic<int64_t> g_scopes{0};    // open tt_hugepages_begin calls
std::atomic<int64_t> g_huge_bytes{0};  // of live huge mappings (0: none)
std::mutex g_mu;
std::unordered_map<void*, size_t>* g_len;  // huge mapping -> its length (under g_mu)
c10::Allocator* g_base = nullptr;
c10::DeleterFnPtr g_base_raw = nullptr;

// A mapping of n bytes (rounded up to the page) starting on a 2 MiB
// boundary, or NULL when the kernel refuses one.
void* map_huge(size_t n) {
  const size_t len = (n + 4095) / 4096 * 4096;
  void* raw = mmap(nullptr, len + kHuge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t b = reinterpret_cast<uintptr_t>(raw), p = (b + kHuge - 1) / kHuge * kHuge;
  if (p > b) munmap(raw, p - b);
  munmap(reinterpret_cast<void*>(p + len), b + kHuge - p);  // the tail past the aligned mapping, never empty
  void* q = reinterpret_cast<void*>(p);
  madvise(q, len, MADV_HUGEPAGE);  // EINVAL without THP in the kernel: then small pages
  {
    std::lock_guard<std::mutex> lk(g_mu);
    (*g_len)[q] = len;
  }
  g_huge_bytes.fetch_add(int64_t(len));
  return q;
}

// unmap_huge frees p if it is a huge mapping and reports whether it was.
bool unmap_huge(void* p) {
  if (g_huge_bytes.load(std::memory_order_relaxed) == 0) return false;
  size_t len = 0;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    auto it = g_len->find(p);
    if (it == g_len->end()) return false;
    len = it->second;
    g_len->erase(it);
  }
  munmap(p, len);
  g_huge_bytes.fetch_sub(int64_t(len));
  return true;
}

void any_free(void* p) {
  if (!unmap_huge(p)) g_base_raw(p);
}

struct HugePageAllocator final : c10::Allocator {
  c10::DataPtr allocate(size_t n) TT_ALLOC_CONST override {
    if (n >= kHuge && g_scopes.load(std::memory_order_relaxed) > 0) {
      if (void* p = map_huge(n)) return {p, p, &any_free, c10::Device(c10::DeviceType::CPU)};
    }
    return g_base->allocate(n);
  }
  c10::DeleterFnPtr raw_deleter() const override { return g_base_raw ? &any_free : nullptr; }
#ifdef TT_ALLOC_COPY_DATA
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }
#endif
};

HugePageAllocator g_alloc;

// installed before main (libc10's allocator registry is initialised first,
// being a library this binary links)
const bool g_installed = [] {
  const char* e = std::getenv("RAGEN_HUGEPAGES");
  if (e && std::strcmp(e, "0") == 0) return false;
  g_len = new std::unordered_map<void*, size_t>();  // never freed: deleters may run at exit
  g_base = c10::GetDefaultCPUAllocator();
  g_base_raw = g_base->raw_deleter();
  c10::SetCPUAllocator(&g_alloc, /*priority=*/1);
  return true;
}();

}  // namespace

extern "C" {

int tt_hugepages_begin(void) {
  if (!g_installed) return 0;
  g_scopes.fetch_add(1);
  return 1;
}

void tt_hugepages_end(void) {
  if (g_installed) g_scopes.fetch_sub(1);
}

int64_t tt_hugepages_bytes(void) { return g_huge_bytes.load(); }

}  // extern "C"
