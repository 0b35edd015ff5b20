//go:build !torchshared

// shim.cc - the C ABI over ATen. See shim.h for the contract and
// doc/design.md for the lifetime, error and threading policies.
//
// Per-op headers only (TORCH_ASSERT_ONLY_METHOD_OPERATORS): 3.5 s per
// compile instead of 18 s with <torch/torch.h>.
#define TORCH_ASSERT_ONLY_METHOD_OPERATORS
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include <ATen/core/Tensor.h>
#include <ATen/core/Formatting.h>
#include <ATen/Parallel.h>
#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <c10/core/GradMode.h>
#include <c10/util/accumulate.h>
#include <c10/util/Exception.h>

#include <ATen/ops/abs.h>
#include <ATen/ops/add.h>
#include <ATen/ops/all.h>
#include <ATen/ops/amax.h>
#include <ATen/ops/amin.h>
#include <ATen/ops/any.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/argmax.h>
#include <ATen/ops/bmm.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/clamp.h>
#include <ATen/ops/clone.h>
#include <ATen/ops/cos.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/div.h>
#include <ATen/ops/embedding.h>
#include <ATen/ops/eq.h>
#include <ATen/ops/exp.h>
#include <ATen/ops/floor.h>
#include <ATen/ops/from_blob.h>
#include <ATen/ops/full.h>
#include <ATen/ops/gather.h>
#include <ATen/ops/ge.h>
#include <ATen/ops/gelu.h>
#include <ATen/ops/gt.h>
#include <ATen/ops/index_add.h>
#include <ATen/ops/index_copy.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/le.h>
#include <ATen/ops/linalg_vector_norm.h>
#include <ATen/ops/linear.h>
#include <ATen/ops/log.h>
#include <ATen/ops/log1p.h>
#include <ATen/ops/log_softmax.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/logical_not.h>
#include <ATen/ops/logical_or.h>
#include <ATen/ops/logsumexp.h>
#include <ATen/ops/lt.h>
#include <ATen/ops/masked_fill.h>
#include <ATen/ops/matmul.h>
#include <ATen/ops/max.h>
#include <ATen/ops/maximum.h>
#include <ATen/ops/mean.h>
#include <ATen/ops/minimum.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/multinomial.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/neg.h>
#include <ATen/ops/pow.h>
#include <ATen/ops/prod.h>
#include <ATen/ops/rand.h>
#include <ATen/ops/randn.h>
#include <ATen/ops/reciprocal.h>
#include <ATen/ops/relu.h>
#include <ATen/ops/rsqrt.h>
#include <ATen/ops/rsub.h>
#include <ATen/ops/scatter.h>
#include <ATen/ops/scatter_add.h>
#include <ATen/ops/sigmoid.h>
#include <ATen/ops/sign.h>
#include <ATen/ops/silu.h>
#include <ATen/ops/sin.h>
#include <ATen/ops/softmax.h>
#include <ATen/ops/sort.h>
#include <ATen/ops/sqrt.h>
#include <ATen/ops/square.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/std.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/sum.h>
#include <ATen/ops/tanh.h>
#include <ATen/ops/topk.h>
#include <ATen/ops/tril.h>
#include <ATen/ops/triu.h>
#include <ATen/ops/var.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include <torch/csrc/api/include/torch/version.h>
// the fused multi-tensor AdamW kernel (CUDA) since PyTorch 2.1
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
#define RAGEN_HAVE_FUSED_ADAMW 1
#include <ATen/ops/_fused_adamw.h>
#include <ATen/ops/full.h>
#endif

#ifdef RAGEN_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "shim.h"
#include "op_errors.hpp"
#include "tensor_impl.hpp"
#include "cpu_kernels.hpp"
#include "gemm.hpp"

static std::atomic<int64_t> g_live{0};
// The default intra-op thread count: OMP_NUM_THREADS when it is a positive
// number, else the CPUs this process may run on. Without it a thread the Go
// runtime created (the torch thread among them) ran libtorch's ops on one
// thread: a program that never called SetNumThreads decoded 2.2x slower on
// 2 cores.
static int default_threads() {
  if (const char* e = std::getenv("OMP_NUM_THREADS")) {
    char* end = nullptr;
    long v = std::strtol(e, &end, 10);
    if (end != e && v > 0) return static_cast<int>(std::min<long>(v, 1 << 16));
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  return std::max(1u, std::thread::hardware_concurrency());
}
static std::atomic<int> g_threads{default_threads()};
static thread_local int t_threads = -1;

// libtorch's intra-op thread count is per OS thread once a thread has run an
// op; re-apply the process-wide choice on every thread that enters the shim.
static inline void sync_threads() {
  int n = g_threads.load(std::memory_order_relaxed);
  if (n > 0 && n != t_threads) {
    at::set_num_threads(n);
    t_threads = n;
  }
}

tt_tensor_s* tt_counted(at::Tensor t) {
  g_live.fetch_add(1, std::memory_order_relaxed);
  return new tt_tensor_s{std::move(t)};
}

static tt_tensor wrap(at::Tensor t) { return tt_counted(std::move(t)); }

struct tt_gen_s {
  at::Generator g;
};

#define TT_TRY(opname)        \
  const char* tt_op = opname; \
  try {                       \
    sync_threads();

// the entry points' error convention (op_errors.hpp); TT_TRY differs from
// OP_TRY in syncing the thread count inside the try
#define TT_CATCH OP_CATCH
#define NEED(cond, msg) OP_NEED(cond, msg)

// Ops on at least TT_BIG elements open an OpenMP region (ATen's grain size).
// Off the torch thread, while it serves, such an op returns the tt_deferred
// sentinel without running, and the Go wrapper re-issues it on the torch
// thread (worker.go), so every OpenMP region opens from one OS thread.
static const int64_t TT_BIG = 32768;
static std::atomic<int> g_worker_on{0};
static thread_local int t_worker = 0;
static char tt_defer_sentinel[] = "deferred to the torch thread";
#define DEFER_IF(big) \
  if ((big) && !t_worker && g_worker_on.load(std::memory_order_relaxed)) return tt_defer_sentinel;
#define DEFER_BIG(x) DEFER_IF((x).numel() >= TT_BIG)

static at::ScalarType to_st(int d) {
  switch (d) {
    case TT_F32: return at::kFloat;
    case TT_F64: return at::kDouble;
    case TT_I64: return at::kLong;
    case TT_I32: return at::kInt;
    case TT_BOOL: return at::kBool;
    case TT_BF16: return at::kBFloat16;
    case TT_F16: return at::kHalf;
    case TT_U8: return at::kByte;
  }
  throw std::invalid_argument("unknown dtype code " + std::to_string(d));
}

static int from_st(at::ScalarType s) {
  switch (s) {
    case at::kFloat: return TT_F32;
    case at::kDouble: return TT_F64;
    case at::kLong: return TT_I64;
    case at::kInt: return TT_I32;
    case at::kBool: return TT_BOOL;
    case at::kBFloat16: return TT_BF16;
    case at::kHalf: return TT_F16;
    case at::kByte: return TT_U8;
    default: return -1;
  }
}

static at::Device to_dev(int d) {
  if (d < 0) return at::Device(at::kCPU);
  return at::Device(at::kCUDA, (c10::DeviceIndex)d);
}

static at::TensorOptions opts(int dtype, int device) {
  return at::TensorOptions().dtype(to_st(dtype)).device(to_dev(device));
}

static at::IntArrayRef ints(const int64_t* p, int n) { return at::IntArrayRef(p, (size_t)n); }

extern "C" {

int64_t tt_live(void) { return g_live.load(); }

void tt_free(tt_tensor t) {
  if (!t) return;
  delete t;
  g_live.fetch_sub(1, std::memory_order_relaxed);
}

void tt_free_many(tt_tensor* ts, int n) {
  for (int i = 0; i < n; i++) tt_free(ts[i]);
}

int tt_ndim(tt_tensor t) { return (int)t->t.dim(); }
void tt_shape(tt_tensor t, int64_t* out) {
  auto s = t->t.sizes();
  for (size_t i = 0; i < s.size(); i++) out[i] = s[i];
}
int tt_dtype(tt_tensor t) { return from_st(t->t.scalar_type()); }
int tt_device(tt_tensor t) { return t->t.is_cuda() ? (int)t->t.get_device() : TT_CPU; }
int64_t tt_numel(tt_tensor t) { return t->t.numel(); }
int tt_requires_grad(tt_tensor t) { return t->t.requires_grad() ? 1 : 0; }
int tt_is_contiguous(tt_tensor t) { return t->t.is_contiguous() ? 1 : 0; }

tt_err tt_to_string(tt_tensor t, char** out) {
  TT_TRY("to_string")
  std::ostringstream os;
  os << t->t;
  std::string s = os.str();
  *out = (char*)malloc(s.size() + 1);
  memcpy(*out, s.c_str(), s.size() + 1);
  TT_CATCH
}

tt_err tt_from_data(const void* data, int dtype, const int64_t* shape, int ndim, int device, tt_tensor* out) {
  TT_TRY("from_data")
  at::Tensor t;
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    NEED(shape[i] >= 0, "negative dimension");
    n *= shape[i];
  }
  DEFER_IF(n >= TT_BIG)
  if (n == 0) {
    t = at::zeros(ints(shape, ndim), opts(dtype, TT_CPU));
  } else {
    t = at::from_blob(const_cast<void*>(data), ints(shape, ndim), at::TensorOptions().dtype(to_st(dtype))).clone();
  }
  if (device >= 0) t = t.to(to_dev(device));
  *out = wrap(std::move(t));
  TT_CATCH
}

tt_err tt_copy_out(tt_tensor t, int dtype, void* dst, int64_t nbytes) {
  TT_TRY("copy_out")
  at::Tensor c = t->t.detach().to(at::kCPU).to(to_st(dtype)).contiguous();
  int64_t want = c.numel() * (int64_t)c.element_size();
  NEED(want == nbytes, "destination size does not match the tensor's element count");
  if (nbytes > 0) memcpy(dst, c.data_ptr(), (size_t)nbytes);
  TT_CATCH
}

tt_err tt_full(const int64_t* shape, int ndim, double value, int dtype, int device, tt_tensor* out) {
  TT_TRY("full")
  DEFER_IF(c10::multiply_integers(ints(shape, ndim)) >= TT_BIG)
  *out = wrap(at::full(ints(shape, ndim), value, opts(dtype, device)));
  TT_CATCH
}

tt_err tt_arange(double start, double end, double step, int dtype, int device, tt_tensor* out) {
  TT_TRY("arange")
  *out = wrap(at::arange(start, end, step, opts(dtype, device)));
  TT_CATCH
}

static c10::optional<at::Generator> gen_of(tt_gen g) {
  if (!g) return c10::optional<at::Generator>();
  return c10::optional<at::Generator>(g->g);
}

tt_err tt_randn(const int64_t* shape, int ndim, int dtype, int device, tt_gen g, tt_tensor* out) {
  TT_TRY("randn")
  DEFER_IF(c10::multiply_integers(ints(shape, ndim)) >= TT_BIG)
  *out = wrap(at::randn(ints(shape, ndim), gen_of(g), opts(dtype, device)));
  TT_CATCH
}

tt_err tt_rand(const int64_t* shape, int ndim, int dtype, int device, tt_gen g, tt_tensor* out) {
  TT_TRY("rand")
  DEFER_IF(c10::multiply_integers(ints(shape, ndim)) >= TT_BIG)
  *out = wrap(at::rand(ints(shape, ndim), gen_of(g), opts(dtype, device)));
  TT_CATCH
}

tt_err tt_item(tt_tensor t, double* out) {
  TT_TRY("item")
  NEED(t->t.numel() == 1, "item needs a tensor with exactly one element");
  *out = t->t.detach().to(at::kCPU).to(at::kDouble).reshape({1})[0].item<double>();
  TT_CATCH
}

tt_err tt_gen_new(uint64_t seed, int device, tt_gen* out) {
  TT_TRY("generator")
  if (device < 0) {
    *out = new tt_gen_s{at::make_generator<at::CPUGeneratorImpl>(seed)};
  } else {
#ifdef RAGEN_WITH_CUDA
    at::Generator g = at::cuda::detail::createCUDAGenerator((c10::DeviceIndex)device);
    g.set_current_seed(seed);
    *out = new tt_gen_s{g};
#else
    return op_err(tt_op, "this build has no CUDA support");
#endif
  }
  TT_CATCH
}

void tt_gen_free(tt_gen g) { delete g; }

tt_err tt_gen_get_state(tt_gen g, tt_tensor* out) {
  TT_TRY("generator_get_state")
  std::lock_guard<std::mutex> lock(g->g.mutex());
  *out = wrap(g->g.get_state());
  TT_CATCH
}

tt_err tt_gen_set_state(tt_gen g, tt_tensor state) {
  TT_TRY("generator_set_state")
  std::lock_guard<std::mutex> lock(g->g.mutex());
  g->g.set_state(state->t);
  TT_CATCH
}

void tt_manual_seed(uint64_t seed) {
  auto g = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(g.mutex());
  g.set_current_seed(seed);
}

static const char* unary_names[TT_UNARY_COUNT] = {
    "neg", "exp", "log", "sqrt", "rsqrt", "abs", "sign", "silu", "gelu", "gelu_tanh", "sigmoid", "tanh",
    "cos", "sin", "relu", "contiguous", "logical_not", "reciprocal", "square", "clone", "detach", "isnan",
    "log1p", "floor"};

tt_err tt_unary(int op, tt_tensor a, tt_tensor* out) {
  TT_TRY(op >= 0 && op < TT_UNARY_COUNT ? unary_names[op] : "unary")
  const at::Tensor& x = a->t;
  DEFER_BIG(x)
  at::Tensor r;
  switch (op) {
    case TT_NEG: r = at::neg(x); break;
    case TT_EXP: r = at::exp(x); break;
    case TT_LOG: r = at::log(x); break;
    case TT_SQRT: r = at::sqrt(x); break;
    case TT_RSQRT: r = at::rsqrt(x); break;
    case TT_ABS: r = at::abs(x); break;
    case TT_SIGN: r = at::sign(x); break;
    case TT_SILU: r = at::silu(x); break;
    case TT_GELU: r = at::gelu(x); break;
    case TT_GELU_TANH: r = at::gelu(x, "tanh"); break;
    case TT_SIGMOID: r = at::sigmoid(x); break;
    case TT_TANH: r = at::tanh(x); break;
    case TT_COS: r = at::cos(x); break;
    case TT_SIN: r = at::sin(x); break;
    case TT_RELU: r = at::relu(x); break;
    case TT_CONTIGUOUS: r = x.contiguous(); break;
    case TT_LOGICAL_NOT: r = at::logical_not(x); break;
    case TT_RECIPROCAL: r = at::reciprocal(x); break;
    case TT_SQUARE: r = at::square(x); break;
    case TT_CLONE: r = at::clone(x); break;
    case TT_DETACH: r = x.detach(); break;
    case TT_ISNAN: r = at::isnan(x); break;
    case TT_LOG1P: r = at::log1p(x); break;
    case TT_FLOOR: r = at::floor(x); break;
    default: return op_err(tt_op, "unknown op code");
  }
  *out = wrap(std::move(r));
  TT_CATCH
}

static const char* binary_names[TT_BINARY_COUNT] = {
    "add", "sub", "mul", "div", "pow", "minimum", "maximum", "eq", "ne", "lt", "le", "gt", "ge",
    "matmul", "bmm", "logical_and", "logical_or"};

tt_err tt_binary(int op, tt_tensor a, tt_tensor b, tt_tensor* out) {
  TT_TRY(op >= 0 && op < TT_BINARY_COUNT ? binary_names[op] : "binary")
  const at::Tensor &x = a->t, &y = b->t;
  DEFER_IF(std::max(x.numel(), y.numel()) >= TT_BIG)
  at::Tensor r;
  switch (op) {
    case TT_ADD: r = at::add(x, y); break;
    case TT_SUB: r = at::sub(x, y); break;
    case TT_MUL: r = at::mul(x, y); break;
    case TT_DIV: r = at::div(x, y); break;
    case TT_POW: r = at::pow(x, y); break;
    case TT_MINIMUM: r = at::minimum(x, y); break;
    case TT_MAXIMUM: r = at::maximum(x, y); break;
    case TT_EQ: r = at::eq(x, y); break;
    case TT_NE: r = at::ne(x, y); break;
    case TT_LT: r = at::lt(x, y); break;
    case TT_LE: r = at::le(x, y); break;
    case TT_GT: r = at::gt(x, y); break;
    case TT_GE: r = at::ge(x, y); break;
    case TT_MATMUL: r = at::matmul(x, y); break;
    case TT_BMM: r = at::bmm(x, y); break;
    case TT_LOGICAL_AND: r = at::logical_and(x, y); break;
    case TT_LOGICAL_OR: r = at::logical_or(x, y); break;
    default: return op_err(tt_op, "unknown op code");
  }
  *out = wrap(std::move(r));
  TT_CATCH
}

static const char* scalar_names[TT_SCALAR_COUNT] = {
    "add_scalar", "sub_scalar", "mul_scalar", "div_scalar", "pow_scalar", "rsub_scalar", "rdiv_scalar",
    "eq_scalar", "ne_scalar", "lt_scalar", "le_scalar", "gt_scalar", "ge_scalar", "minimum_scalar",
    "maximum_scalar"};

tt_err tt_scalar(int op, tt_tensor a, double s, tt_tensor* out) {
  TT_TRY(op >= 0 && op < TT_SCALAR_COUNT ? scalar_names[op] : "scalar")
  const at::Tensor& x = a->t;
  DEFER_BIG(x)
  at::Scalar v(s);
  at::Tensor r;
  switch (op) {
    case TT_ADD_S: r = at::add(x, v); break;
    case TT_SUB_S: r = at::sub(x, v); break;
    case TT_MUL_S: r = at::mul(x, v); break;
    case TT_DIV_S: r = at::div(x, v); break;
    case TT_POW_S: r = at::pow(x, v); break;
    case TT_RSUB_S: r = at::rsub(x, v); break;
    case TT_RDIV_S: r = at::mul(at::reciprocal(x), v); break;
    case TT_EQ_S: r = at::eq(x, v); break;
    case TT_NE_S: r = at::ne(x, v); break;
    case TT_LT_S: r = at::lt(x, v); break;
    case TT_LE_S: r = at::le(x, v); break;
    case TT_GT_S: r = at::gt(x, v); break;
    case TT_GE_S: r = at::ge(x, v); break;
    case TT_MINIMUM_S: r = at::clamp(x, c10::optional<at::Scalar>(), c10::optional<at::Scalar>(v)); break;
    case TT_MAXIMUM_S: r = at::clamp(x, c10::optional<at::Scalar>(v), c10::optional<at::Scalar>()); break;
    default: return op_err(tt_op, "unknown op code");
  }
  *out = wrap(std::move(r));
  TT_CATCH
}

static const char* reduce_names[TT_REDUCE_COUNT] = {"sum", "mean", "var", "std", "var", "std", "amax",
                                                    "amin", "logsumexp", "prod", "any", "all", "norm"};

tt_err tt_reduce(int op, tt_tensor a, const int64_t* dims, int ndims, int keepdim, tt_tensor* out) {
  TT_TRY(op >= 0 && op < TT_REDUCE_COUNT ? reduce_names[op] : "reduce")
  const at::Tensor& x = a->t;
  DEFER_BIG(x)
  std::vector<int64_t> all;
  if (ndims == 0) {
    for (int64_t i = 0; i < x.dim(); i++) all.push_back(i);
  } else {
    all.assign(dims, dims + ndims);
  }
  at::IntArrayRef d(all);
  bool kd = keepdim != 0;
  at::Tensor r;
  switch (op) {
    case TT_SUM: r = ndims == 0 && !kd ? at::sum(x) : at::sum(x, d, kd); break;
    case TT_MEAN: r = ndims == 0 && !kd ? at::mean(x) : at::mean(x, d, kd); break;
    case TT_VAR: r = at::var(x, at::OptionalIntArrayRef(d), true, kd); break;
    case TT_STD: r = at::std(x, at::OptionalIntArrayRef(d), true, kd); break;
    case TT_VAR_POP: r = at::var(x, at::OptionalIntArrayRef(d), false, kd); break;
    case TT_STD_POP: r = at::std(x, at::OptionalIntArrayRef(d), false, kd); break;
    case TT_AMAX: r = at::amax(x, d, kd); break;
    case TT_AMIN: r = at::amin(x, d, kd); break;
    case TT_LOGSUMEXP: r = at::logsumexp(x, d, kd); break;
    case TT_NORM2: r = at::linalg_vector_norm(x, 2, at::OptionalIntArrayRef(d), kd); break;
    case TT_PROD:
    case TT_ANY:
    case TT_ALL:
      if (ndims == 0 && !kd) {
        r = op == TT_PROD ? at::prod(x) : op == TT_ANY ? at::any(x) : at::all(x);
      } else {
        NEED(all.size() == 1, "this reduction takes exactly one dim");
        r = op == TT_PROD ? at::prod(x, all[0], kd) : op == TT_ANY ? at::any(x, all[0], kd) : at::all(x, all[0], kd);
      }
      break;
    default: return op_err(tt_op, "unknown op code");
  }
  *out = wrap(std::move(r));
  TT_CATCH
}

tt_err tt_clamp(tt_tensor a, double lo, double hi, int has_lo, int has_hi, tt_tensor* out) {
  TT_TRY("clamp")
  DEFER_BIG(a->t)
  c10::optional<at::Scalar> l, h;
  if (has_lo) l = at::Scalar(lo);
  if (has_hi) h = at::Scalar(hi);
  *out = wrap(at::clamp(a->t, l, h));
  TT_CATCH
}

tt_err tt_where(tt_tensor cond, tt_tensor a, tt_tensor b, tt_tensor* out) {
  TT_TRY("where")
  DEFER_IF(std::max(a->t.numel(), b->t.numel()) >= TT_BIG)
  *out = wrap(at::where(cond->t, a->t, b->t));
  TT_CATCH
}

tt_err tt_masked_fill(tt_tensor a, tt_tensor mask, double value, tt_tensor* out) {
  TT_TRY("masked_fill")
  DEFER_BIG(a->t)
  *out = wrap(at::masked_fill(a->t, mask->t, value));
  TT_CATCH
}

tt_err tt_linear(tt_tensor x, tt_tensor w, tt_tensor b, tt_tensor* out) {
  TT_TRY("linear")
  *out = wrap(tt_gemm::linear(x->t, w->t, b ? b->t : at::Tensor()));
  TT_CATCH
}

// The lookup's gradient is a few rows of the (V,E) table. Autograd's
// embedding backward builds it dense (zeros, then index_add), and for a head
// tied to the table adds that to the head's own dense gradient: three passes
// over V*E floats a step (0.3 s at Qwen2.5-0.5B's 151,936 x 896). Here, for
// a CPU leaf table that wants gradients, the lookup is a leaf of its own
// whose hook adds its rows into the table's .grad in place (allocating it
// when it is undefined), in index order, as index_add does on the CPU. On
// other devices autograd's deterministic dense backward stays.
static at::Tensor embedding_row_grad(const at::Tensor& w, const at::Tensor& ids) {
  at::Tensor x;
  {
    at::NoGradGuard ng;
    x = at::embedding(w, ids);
  }
  x.requires_grad_(true);
  at::Tensor table = w, flat = ids.reshape({-1});
  x.register_hook([table, flat](const at::Tensor& g) {
    at::NoGradGuard ng;
    at::Tensor rows = g.reshape({-1, g.size(-1)});
    at::Tensor& acc = table.mutable_grad();
    if (!acc.defined()) acc = at::zeros_like(table, at::MemoryFormat::Contiguous);
    acc.index_add_(0, flat, rows.to(acc.scalar_type()));
  });
  return x;
}

tt_err tt_embedding(tt_tensor weight, tt_tensor ids, tt_tensor* out) {
  TT_TRY("embedding")
  DEFER_IF(ids->t.numel() * weight->t.size(-1) >= TT_BIG)
  const at::Tensor& w = weight->t;
  if (c10::GradMode::is_enabled() && w.requires_grad() && w.is_leaf() && w.is_cpu()) {
    *out = wrap(embedding_row_grad(w, ids->t));
  } else {
    *out = wrap(at::embedding(w, ids->t));
  }
  TT_CATCH
}

tt_err tt_softmax(tt_tensor a, int64_t dim, int log, tt_tensor* out) {
  TT_TRY(log ? "log_softmax" : "softmax")
  DEFER_BIG(a->t)
  *out = wrap(log ? at::log_softmax(a->t, dim) : at::softmax(a->t, dim));
  TT_CATCH
}

tt_err tt_argmax(tt_tensor a, int64_t dim, int keepdim, tt_tensor* out) {
  TT_TRY("argmax")
  *out = wrap(at::argmax(a->t, dim, keepdim != 0));
  TT_CATCH
}

tt_err tt_max_dim(tt_tensor a, int64_t dim, int keepdim, tt_tensor* values, tt_tensor* indices) {
  TT_TRY("max")
  auto r = at::max(a->t, dim, keepdim != 0);
  *values = wrap(std::get<0>(r));
  *indices = wrap(std::get<1>(r));
  TT_CATCH
}

tt_err tt_topk(tt_tensor a, int64_t k, int64_t dim, int largest, tt_tensor* values, tt_tensor* indices) {
  TT_TRY("topk")
  auto r = at::topk(a->t, k, dim, largest != 0, true);
  *values = wrap(std::get<0>(r));
  *indices = wrap(std::get<1>(r));
  TT_CATCH
}

tt_err tt_sort(tt_tensor a, int64_t dim, int descending, int stable, tt_tensor* values, tt_tensor* indices) {
  TT_TRY("sort")
  auto r = at::sort(a->t, c10::optional<bool>(stable != 0), dim, descending != 0);
  *values = wrap(std::get<0>(r));
  *indices = wrap(std::get<1>(r));
  TT_CATCH
}

tt_err tt_cumsum(tt_tensor a, int64_t dim, tt_tensor* out) {
  TT_TRY("cumsum")
  *out = wrap(at::cumsum(a->t, dim));
  TT_CATCH
}

tt_err tt_multinomial(tt_tensor probs, int64_t n, int replacement, tt_gen g, tt_tensor* out) {
  TT_TRY("multinomial")
  // at::multinomial locks the generator itself (std::mutex is not recursive).
  *out = wrap(at::multinomial(probs->t, n, replacement != 0, gen_of(g)));
  TT_CATCH
}

tt_err tt_to(tt_tensor a, int dtype, int device, tt_tensor* out) {
  TT_TRY("to")
  DEFER_BIG(a->t)
  *out = wrap(a->t.to(to_dev(device), to_st(dtype)));
  TT_CATCH
}

tt_err tt_reshape(tt_tensor a, const int64_t* shape, int ndim, tt_tensor* out) {
  TT_TRY("reshape")
  *out = wrap(a->t.reshape(ints(shape, ndim)));
  TT_CATCH
}

tt_err tt_view(tt_tensor a, const int64_t* shape, int ndim, tt_tensor* out) {
  TT_TRY("view")
  *out = wrap(a->t.view(ints(shape, ndim)));
  TT_CATCH
}

tt_err tt_expand(tt_tensor a, const int64_t* shape, int ndim, tt_tensor* out) {
  TT_TRY("expand")
  *out = wrap(a->t.expand(ints(shape, ndim)));
  TT_CATCH
}

tt_err tt_permute(tt_tensor a, const int64_t* dims, int ndim, tt_tensor* out) {
  TT_TRY("permute")
  *out = wrap(a->t.permute(ints(dims, ndim)));
  TT_CATCH
}

tt_err tt_transpose(tt_tensor a, int64_t d0, int64_t d1, tt_tensor* out) {
  TT_TRY("transpose")
  *out = wrap(a->t.transpose(d0, d1));
  TT_CATCH
}

tt_err tt_slice(tt_tensor a, int64_t dim, int64_t start, int64_t end, int64_t step, tt_tensor* out) {
  TT_TRY("slice")
  *out = wrap(a->t.slice(dim, start, end, step));
  TT_CATCH
}

tt_err tt_narrow(tt_tensor a, int64_t dim, int64_t start, int64_t len, tt_tensor* out) {
  TT_TRY("narrow")
  *out = wrap(a->t.narrow(dim, start, len));
  TT_CATCH
}

tt_err tt_unsqueeze(tt_tensor a, int64_t dim, tt_tensor* out) {
  TT_TRY("unsqueeze")
  *out = wrap(a->t.unsqueeze(dim));
  TT_CATCH
}

tt_err tt_squeeze(tt_tensor a, int64_t dim, tt_tensor* out) {
  TT_TRY("squeeze")
  *out = wrap(a->t.squeeze(dim));
  TT_CATCH
}

tt_err tt_index_select(tt_tensor a, int64_t dim, tt_tensor idx, tt_tensor* out) {
  TT_TRY("index_select")
  *out = wrap(at::index_select(a->t, dim, idx->t));
  TT_CATCH
}

tt_err tt_gather(tt_tensor a, int64_t dim, tt_tensor idx, tt_tensor* out) {
  TT_TRY("gather")
  *out = wrap(at::gather(a->t, dim, idx->t));
  TT_CATCH
}

tt_err tt_scatter(tt_tensor a, int64_t dim, tt_tensor idx, tt_tensor src, tt_tensor* out) {
  TT_TRY("scatter")
  *out = wrap(at::scatter(a->t, dim, idx->t, src->t));
  TT_CATCH
}

tt_err tt_scatter_add(tt_tensor a, int64_t dim, tt_tensor idx, tt_tensor src, tt_tensor* out) {
  TT_TRY("scatter_add")
  *out = wrap(at::scatter_add(a->t, dim, idx->t, src->t));
  TT_CATCH
}

static std::vector<at::Tensor> unwrap_list(tt_tensor* ts, int n) {
  std::vector<at::Tensor> v;
  v.reserve(n);
  for (int i = 0; i < n; i++) v.push_back(ts[i]->t);
  return v;
}

tt_err tt_cat(tt_tensor* ts, int n, int64_t dim, tt_tensor* out) {
  TT_TRY("cat")
  NEED(n > 0, "needs at least one tensor");
  DEFER_IF(ts[0]->t.numel() * n >= TT_BIG)
  *out = wrap(at::cat(unwrap_list(ts, n), dim));
  TT_CATCH
}

tt_err tt_stack(tt_tensor* ts, int n, int64_t dim, tt_tensor* out) {
  TT_TRY("stack")
  NEED(n > 0, "needs at least one tensor");
  *out = wrap(at::stack(unwrap_list(ts, n), dim));
  TT_CATCH
}

tt_err tt_triu(tt_tensor a, int64_t k, int upper, tt_tensor* out) {
  TT_TRY(upper ? "triu" : "tril")
  *out = wrap(upper ? at::triu(a->t, k) : at::tril(a->t, k));
  TT_CATCH
}

tt_err tt_copy_(tt_tensor dst, tt_tensor src) {
  TT_TRY("copy_")
  DEFER_BIG(dst->t)
  at::NoGradGuard ng;
  dst->t.copy_(src->t);
  TT_CATCH
}

tt_err tt_fill_(tt_tensor dst, double v) {
  TT_TRY("fill_")
  at::NoGradGuard ng;
  dst->t.fill_(v);
  TT_CATCH
}

tt_err tt_index_copy_(tt_tensor dst, int64_t dim, tt_tensor idx, tt_tensor src) {
  TT_TRY("index_copy_")
  at::NoGradGuard ng;
  dst->t.index_copy_(dim, idx->t, src->t);
  TT_CATCH
}

tt_err tt_set_requires_grad(tt_tensor t, int on) {
  TT_TRY("requires_grad")
  t->t.set_requires_grad(on != 0);
  TT_CATCH
}

tt_err tt_backward(tt_tensor t, tt_tensor grad, int retain_graph) {
  TT_TRY("backward")
  at::Tensor g;
  if (grad) g = grad->t;
  t->t.backward(g, retain_graph ? c10::optional<bool>(true) : c10::optional<bool>(), false);
  TT_CATCH
}

tt_err tt_grad(tt_tensor t, tt_tensor* out) {
  TT_TRY("grad")
  const at::Tensor& g = t->t.grad();
  *out = g.defined() ? wrap(g) : nullptr;
  TT_CATCH
}

tt_err tt_zero_grad(tt_tensor* ts, int n) {
  TT_TRY("zero_grad")
  for (int i = 0; i < n; i++) {
    if (ts[i]->t.grad().defined()) ts[i]->t.mutable_grad().reset();
  }
  TT_CATCH
}

tt_err tt_set_grad(tt_tensor t, tt_tensor g) {
  TT_TRY("set_grad")
  if (g) {
    t->t.mutable_grad() = g->t;
  } else {
    t->t.mutable_grad().reset();
  }
  TT_CATCH
}

int tt_set_grad_enabled(int enabled) {
  bool prev = c10::GradMode::is_enabled();
  c10::GradMode::set_enabled(enabled != 0);
  return prev ? 1 : 0;
}

int tt_grad_enabled(void) { return c10::GradMode::is_enabled() ? 1 : 0; }

// O3 for the hand-vectorised loops below comes from a pragma, not an
// optimize("O3") attribute: GCC 14 refuses to inline the always_inline
// intrinsics into a function whose attributes carry optimize() next to
// target() ("target specific option mismatch").
#pragma GCC push_options
#pragma GCC optimize("O3")
// One pass of AdamW over float32 spans (p, g, m, v of n elements) with the
// operations of the ATen sequence below in the same order: m by a fused
// multiply-add as ATen's vectorised add(alpha) does, the rest as separately
// rounded float32 operations, the tail like the vector body, so an element's
// result does not depend on where it sits (sharded or not).
__attribute__((target("avx2,fma"))) void adamw_span(float* p, const float* g, float* m, float* v,
                                                                    int64_t n, float decay, float b1, float omb1,
                                                                    float b2, float omb2, float bc2s, float eps,
                                                                    float step) {
  const __m256 vdecay = _mm256_set1_ps(decay), vb1 = _mm256_set1_ps(b1), vomb1 = _mm256_set1_ps(omb1),
               vb2 = _mm256_set1_ps(b2), vomb2 = _mm256_set1_ps(omb2), vbc2s = _mm256_set1_ps(bc2s),
               veps = _mm256_set1_ps(eps), vstep = _mm256_set1_ps(step);
  const int64_t n8 = n & ~int64_t(7);
  for (int64_t i = 0; i < n8; i += 8) {
    const __m256 gi = _mm256_loadu_ps(g + i);
    __m256 pi = _mm256_mul_ps(_mm256_loadu_ps(p + i), vdecay);
    const __m256 mi = _mm256_fmadd_ps(gi, vomb1, _mm256_mul_ps(_mm256_loadu_ps(m + i), vb1));
    const __m256 vi = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(v + i), vb2), _mm256_mul_ps(_mm256_mul_ps(vomb2, gi), gi));
    const __m256 den = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), vbc2s), veps);
    pi = _mm256_add_ps(pi, _mm256_div_ps(_mm256_mul_ps(vstep, mi), den));
    _mm256_storeu_ps(p + i, pi);
    _mm256_storeu_ps(m + i, mi);
    _mm256_storeu_ps(v + i, vi);
  }
  for (int64_t i = n8; i < n; i++) {
    const float gi = g[i];
    const float mi = std::fma(gi, omb1, m[i] * b1);
    const float vi = v[i] * b2 + (omb2 * gi) * gi;
    const float den = std::sqrt(vi) / bc2s + eps;
    p[i] = p[i] * decay + (step * mi) / den;
    m[i] = mi;
    v[i] = vi;
  }
}

#pragma GCC pop_options

bool adamw_fast_ok(const at::Tensor& p, const at::Tensor& g, const at::Tensor& m, const at::Tensor& v) {
  for (const at::Tensor* t : {&p, &g, &m, &v})
    if (!t->device().is_cpu() || t->scalar_type() != at::kFloat || !t->is_contiguous() || t->is_sparse() ||
        t->numel() != p.numel())
      return false;
  return tt_cpu::cpu_has_avx2();
}

// Decoupled AdamW, identical to torch.optim.AdamW (foreach=False); float32
// CPU tensors take one fused pass per parameter (adamw_span) instead of
// ATen's eight, GPU tensors PyTorch's fused multi-tensor kernel.
tt_err tt_adamw_step(tt_tensor* ps, tt_tensor* ms, tt_tensor* vs, int n, double lr, double b1, double b2,
                     double eps, double wd, int64_t step) {
  TT_TRY("adamw_step")
  NEED(step >= 1, "step must be >= 1");
  at::NoGradGuard ng;
  const double bc1 = 1 - std::pow(b1, (double)step), bc2 = 1 - std::pow(b2, (double)step);
  const double bc2_sqrt = std::sqrt(bc2);
  std::vector<bool> done((size_t)n, false);
#ifdef RAGEN_HAVE_FUSED_ADAMW
  // GPU parameters: one multi-tensor kernel per (device, dtype) group,
  // torch.optim.AdamW(fused=True)'s, instead of five kernels per parameter
  for (int i = 0; i < n; i++) {
    const at::Tensor& p0 = ps[i]->t;
    if (done[(size_t)i] || !p0.is_cuda() || !p0.grad().defined()) continue;
    std::vector<at::Tensor> P, G, M, V;
    for (int j = i; j < n; j++) {
      const at::Tensor &p = ps[j]->t, &g = p.grad(), &m = ms[j]->t, &v = vs[j]->t;
      if (done[(size_t)j] || !g.defined() || p.device() != p0.device() || p.scalar_type() != p0.scalar_type() ||
          !at::isFloatingType(p.scalar_type()) || g.scalar_type() != p.scalar_type() ||
          m.scalar_type() != p.scalar_type() || v.scalar_type() != p.scalar_type() || g.device() != p.device() ||
          m.device() != p.device() || v.device() != p.device() || !p.is_contiguous() || !g.is_contiguous() ||
          !m.is_contiguous() || !v.is_contiguous())
        continue;
      P.push_back(p), G.push_back(g), M.push_back(m), V.push_back(v);
      done[(size_t)j] = true;
    }
    if (P.empty()) continue;
    at::Tensor steps = at::full({(int64_t)P.size()}, (double)step, p0.options().dtype(at::kFloat));
    std::vector<at::Tensor> S;
    for (size_t j = 0; j < P.size(); j++) S.push_back(steps.select(0, (int64_t)j));
    at::_fused_adamw_(P, G, M, V, {}, S, lr, b1, b2, wd, eps, false, false);
  }
#endif
  for (int i = 0; i < n; i++) {
    if (done[(size_t)i]) continue;
    at::Tensor& p = ps[i]->t;
    const at::Tensor& g = p.grad();
    if (!g.defined()) continue;
    if (adamw_fast_ok(p, g, ms[i]->t, vs[i]->t)) {
      float *pp = p.data_ptr<float>(), *mp = ms[i]->t.data_ptr<float>(), *vp = vs[i]->t.data_ptr<float>();
      const float* gp = g.data_ptr<float>();
      at::parallel_for(0, p.numel(), 1 << 15, [&](int64_t lo, int64_t hi) {
        adamw_span(pp + lo, gp + lo, mp + lo, vp + lo, hi - lo, (float)(1 - lr * wd), (float)b1, (float)(1 - b1),
                   (float)b2, (float)(1 - b2), (float)bc2_sqrt, (float)eps, (float)(-lr / bc1));
      });
      continue;
    }
    if (wd != 0) p.mul_(1 - lr * wd);
    ms[i]->t.mul_(b1).add_(g, 1 - b1);
    vs[i]->t.mul_(b2).addcmul_(g, g, 1 - b2);
    at::Tensor denom = vs[i]->t.sqrt().div_(bc2_sqrt).add_(eps);
    p.addcdiv_(ms[i]->t, denom, -lr / bc1);
  }
  TT_CATCH
}

// SGD with optional momentum (dampening 0, not Nesterov) and coupled weight
// decay, identical to torch.optim.SGD.
tt_err tt_sgd_step(tt_tensor* ps, tt_tensor* bufs, int n, double lr, double momentum, double wd) {
  TT_TRY("sgd_step")
  at::NoGradGuard ng;
  for (int i = 0; i < n; i++) {
    at::Tensor& p = ps[i]->t;
    if (!p.grad().defined()) continue;
    at::Tensor d = p.grad();
    if (wd != 0) d = d.add(p, wd);
    if (momentum != 0 && bufs) {
      bufs[i]->t.mul_(momentum).add_(d);
      d = bufs[i]->t;
    }
    p.add_(d, -lr);
  }
  TT_CATCH
}

// Global-norm clipping, identical to torch.nn.utils.clip_grad_norm_ (norm 2).
tt_err tt_clip_grad_norm(tt_tensor* ps, int n, double max_norm, double* total_norm) {
  TT_TRY("clip_grad_norm")
  at::NoGradGuard ng;
  std::vector<at::Tensor> norms;
  for (int i = 0; i < n; i++) {
    const at::Tensor& g = ps[i]->t.grad();
    if (g.defined()) norms.push_back(at::linalg_vector_norm(g, 2).to(at::kFloat));
  }
  if (norms.empty()) {
    *total_norm = 0;
    return nullptr;
  }
  at::Tensor total = at::linalg_vector_norm(at::stack(norms), 2);
  double tn = total.item<double>();
  *total_norm = tn;
  double coef = max_norm / (tn + 1e-6);
  if (coef < 1.0) {
    for (int i = 0; i < n; i++) {
      at::Tensor g = ps[i]->t.mutable_grad();
      if (g.defined()) g.mul_(coef);
    }
  }
  TT_CATCH
}

void tt_set_num_threads(int n) {
  if (n < 1) n = 1;
  g_threads.store(n);
  at::set_num_threads(n);
  t_threads = n;
}

int tt_get_num_threads(void) {
  sync_threads();
  return at::get_num_threads();
}

void tt_worker_mark(void) { t_worker = 1; }
int tt_on_worker(void) { return t_worker; }
void tt_worker_serving(int on) { g_worker_on.store(on ? 1 : 0); }
tt_err tt_deferred(void) { return tt_defer_sentinel; }

int tt_cuda_available(void) { return at::hasCUDA() ? 1 : 0; }

int tt_mkldnn_enabled(void) { return at::hasMKLDNN() && at::globalContext().userEnabledMkldnn() ? 1 : 0; }

int tt_cuda_device_count(void) {
#ifdef RAGEN_WITH_CUDA
  return at::hasCUDA() ? (int)at::cuda::device_count() : 0;
#else
  return 0;
#endif
}

const char* tt_version(void) {
#ifdef RAGEN_WITH_CUDA
  return "libtorch+cuda";
#else
  return "libtorch";
#endif
}

}  // extern "C"
