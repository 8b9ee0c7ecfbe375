// kernels/capi.cpp: the C ABI of the kernels (libioattn_capi.so), for Python's ctypes and any
// other language. No C++ types cross it: plain integers, doubles, strings and device pointers.
//
//   int ioattn_forward(const char* kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim,
//                      dtype ("fp32"|"fp16"|"bf16"), causal (0|1), window_left, window_right,
//                      scale (<= 0: 1/sqrt(d)), br, bc, splits (0: defaults),
//                      q, k, v, o, lse (device pointers, BSHD contiguous; lse fp32 (B, Hq, Nq)),
//                      stream (cudaStream_t / hipStream_t, 0 = default))
//   returns 0 on success, 2 for a refused problem (unknown kernel, bad field, unsupported shape),
//   3 for a runtime error; ioattn_last_error() then holds one line naming the constraint or the
//   error. The launch is asynchronous on `stream`, like any kernel; workspace (naive's S, FA1's
//   m/l) is one grow-only device buffer kept for the process (ioattn_release_workspace() frees
//   it), so calls on different streams at the same time are not supported.
//
//   int64_t ioattn_workspace_bytes(kernel, ...problem fields..., br, bc, splits): -1 when refused
//   const char* ioattn_kernel_config(kernel, ...problem fields..., br, bc, splits): the launch
//       configuration the kernel would use on the current device (LaunchConfig, launch.hpp), as
//       "br=128;bc=128;stages=3;threads=256;smem_bytes=230400;ctas_per_sm=1;grid_x=256;grid_y=32;
//        grid_z=1;launches=1;splits=0;grid_order=qblock_major_rev"
//       (key=value pairs joined by ';', always these keys in this order); NULL when refused
//   int ioattn_kernel_count(); const char* ioattn_kernel_name(int i); const char* ioattn_kernel_info(int i)
//       (NULL for an index outside 0..count-1); void ioattn_release_workspace()
//
// What every entry point checks before anything reaches a kernel (one line in ioattn_last_error()
// on refusal): kernel and dtype are non-null and known; causal is 0 or 1; br, bc, splits >= 0;
// scale finite; the problem passes AttnProblem::validate() (sizes >= 1, heads_q divisible by
// heads_kv, windows -1 or >= 0, size caps); the variant's supports(). ioattn_forward also checks
// that the five pointers are non-null, that q, k, v, o are 16-byte aligned (the matrix-core
// variants load 16 bytes at a time) and lse 4-byte aligned, and that o and lse overlap neither
// each other nor q, k, v. What it cannot check: that the pointers are device memory of at least
// the problem's sizes (python/ioattn.py checks the tensors).
// Strings returned (kernel name, info, config) stay valid until the next call of the same
// function in the same thread.
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "kernels/launch.hpp"
#include "kernels/platform/hip_on_cuda.hpp"

namespace {
thread_local std::string g_last_error;
thread_local std::string g_info;
thread_local std::string g_config;
void* g_ws = nullptr;         // the workspace, shared by all calls of this process
std::size_t g_ws_bytes = 0;

int fail(int code, std::string what) {
  g_last_error = std::move(what);
  return code;
}
const char* fail_null(std::string what) {
  g_last_error = std::move(what);
  return nullptr;
}

std::string kernel_names() {
  std::string names;
  for (const auto& k : ioattn::kernels::registry()) names += (names.empty() ? "" : ", ") + std::string(k.name);
  return names;
}

// A variant's message, prefixed with its name unless it already starts with it.
std::string named(const ioattn::kernels::KernelInfo& k, const std::string& what) {
  return what.starts_with(k.name) ? what : std::string(k.name) + ": " + what;
}

// What every entry point receives, once checked: the variant, the problem, the options.
struct Request {
  const ioattn::kernels::KernelInfo* info = nullptr;
  ioattn::AttnProblem p;
  ioattn::kernels::KernelOptions opt;
};

// The fields of the C ABI -> a checked Request (see the list at the top of this file); nullopt
// when every check passed, else the one line for ioattn_last_error().
std::optional<std::string> make_request(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv,
                                        int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, const char* dtype,
                                        int causal, int64_t window_left, int64_t window_right, double scale,
                                        int br, int bc, int splits, Request& r) {
  using namespace ioattn;
  if (!kernel) return "kernel must name a variant (got NULL; known: " + kernel_names() + ")";
  r.info = kernels::find_kernel(kernel);
  if (!r.info) return "unknown kernel '" + std::string(kernel) + "' (known: " + kernel_names() + ")";
  if (!dtype) return std::string("dtype must be fp32, fp16 or bf16 (got NULL)");
  const auto dt = parse_dtype(dtype);
  if (!dt) return "dtype must be fp32, fp16 or bf16 (got '" + std::string(dtype) + "')";
  if (causal != 0 && causal != 1) return "causal must be 0 or 1 (got " + std::to_string(causal) + ")";
  if (br < 0 || bc < 0 || splits < 0)
    return "br, bc and splits must be >= 0 (0: the variant's default; got " + std::to_string(br) + ", " +
           std::to_string(bc) + ", " + std::to_string(splits) + ")";
  if (!std::isfinite(scale)) return std::string("scale must be finite (> 0, or <= 0 for 1/sqrt(head_dim))");
  // validate() multiplies batch by heads_q: keep the product inside int64 before it does.
  if (batch > kMaxBatchHeads || heads_q > kMaxBatchHeads)
    return "batch * heads_q must be <= " + std::to_string(kMaxBatchHeads);
  AttnProblem& p = r.p;
  p.batch = batch;
  p.heads_q = heads_q;
  p.heads_kv = heads_kv;
  p.seqlen_q = seqlen_q;
  p.seqlen_k = seqlen_k;
  p.head_dim = head_dim;
  p.dtype = *dt;
  p.causal = causal == 1;
  p.window_left = window_left;
  p.window_right = window_right;
  if (scale > 0) p.scale = scale;
  if (auto e = p.validate()) return e;  // sizes >= 1, heads_q % heads_kv == 0, windows, caps
  r.opt = kernels::KernelOptions{br, bc, splits};
  if (auto e = r.info->supports(p, r.opt)) return named(*r.info, *e);
  return std::nullopt;
}

// [a, a + na) and [b, b + nb) share a byte.
bool overlap(const void* a, std::size_t na, const void* b, std::size_t nb) {
  const auto x = reinterpret_cast<std::uintptr_t>(a), y = reinterpret_cast<std::uintptr_t>(b);
  return x < y + nb && y < x + na;
}
bool aligned(const void* ptr, std::size_t to) { return reinterpret_cast<std::uintptr_t>(ptr) % to == 0; }

// The pointers of ioattn_forward: non-null, aligned, outputs apart from everything else.
std::optional<std::string> check_tensors(const ioattn::AttnProblem& p, const void* q, const void* k, const void* v,
                                         const void* o, const float* lse) {
  if (!q || !k || !v || !o || !lse) return std::string("q, k, v, o and lse must be device pointers (not null)");
  if (!aligned(q, 16) || !aligned(k, 16) || !aligned(v, 16) || !aligned(o, 16))
    return std::string("q, k, v and o must be 16-byte aligned");
  if (!aligned(lse, 4)) return std::string("lse must be 4-byte aligned (fp32)");
  const std::size_t e = ioattn::dtype_bytes(p.dtype);
  const std::size_t q_bytes = static_cast<std::size_t>(p.q_elems()) * e;
  const std::size_t kv_bytes = static_cast<std::size_t>(p.kv_elems()) * e;
  const std::size_t lse_bytes = static_cast<std::size_t>(p.lse_elems()) * sizeof(float);
  if (overlap(o, q_bytes, lse, lse_bytes)) return std::string("o and lse must not overlap");
  for (const auto& [ptr, bytes] : {std::pair{q, q_bytes}, {k, kv_bytes}, {v, kv_bytes}})
    if (overlap(o, q_bytes, ptr, bytes) || overlap(lse, lse_bytes, ptr, bytes))
      return std::string("o and lse must not overlap q, k or v");
  return std::nullopt;
}
}  // namespace

extern "C" {

const char* ioattn_last_error() { return g_last_error.c_str(); }

void ioattn_release_workspace() {
  (void)hipDeviceSynchronize();
  if (g_ws) (void)hipFree(g_ws);
  g_ws = nullptr;
  g_ws_bytes = 0;
}

int ioattn_kernel_count() { return static_cast<int>(ioattn::kernels::registry().size()); }

const char* ioattn_kernel_name(int i) {
  const auto reg = ioattn::kernels::registry();
  if (i < 0 || static_cast<std::size_t>(i) >= reg.size())
    return fail_null("kernel index must be in 0.." + std::to_string(reg.size() - 1) + " (got " + std::to_string(i) + ")");
  return reg[static_cast<std::size_t>(i)].name.data();
}

// "strategy;dtypes;head_dims;tiles;idea" of variant i.
const char* ioattn_kernel_info(int i) {
  const auto reg = ioattn::kernels::registry();
  if (i < 0 || static_cast<std::size_t>(i) >= reg.size())
    return fail_null("kernel index must be in 0.." + std::to_string(reg.size() - 1) + " (got " + std::to_string(i) + ")");
  const auto& k = reg[static_cast<std::size_t>(i)];
  g_info = std::string(k.strategy) + ";" + std::string(k.dtypes) + ";" + std::string(k.head_dims) + ";" +
           (k.takes_tile_sizes ? "br,bc" : "-") + ";" + std::string(k.idea);
  return g_info.c_str();
}

// Device bytes ioattn_forward allocates for this problem beyond its tensors (naive's N^2 scores,
// FA1's fp32 O/m/l); -1 when refused (see ioattn_last_error).
int64_t ioattn_workspace_bytes(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv,
                               int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, const char* dtype,
                               int causal, int64_t window_left, int64_t window_right, int br, int bc, int splits) {
  Request r;
  if (auto e = make_request(kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal,
                            window_left, window_right, 0.0, br, bc, splits, r))
    return fail(-1, *e);
  return static_cast<int64_t>(r.info->workspace_bytes(r.p, r.opt));
}

// The launch configuration (format at the top of this file); NULL when refused.
const char* ioattn_kernel_config(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv,
                                 int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, const char* dtype,
                                 int causal, int64_t window_left, int64_t window_right, int br, int bc,
                                 int splits) {
  Request r;
  if (auto e = make_request(kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal,
                            window_left, window_right, 0.0, br, bc, splits, r))
    return fail_null(*e);
  ioattn::kernels::LaunchConfig c;
  if (auto e = r.info->config(r.p, r.opt, c)) return fail_null(named(*r.info, *e));
  g_config = ioattn::kernels::format_config(c, ';');
  return g_config.c_str();
}

int ioattn_forward(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv, int64_t seqlen_q,
                   int64_t seqlen_k, int64_t head_dim, const char* dtype, int causal, int64_t window_left,
                   int64_t window_right, double scale, int br, int bc, int splits, const void* q, const void* k,
                   const void* v, void* o, float* lse, void* stream) {
  Request r;
  if (auto e = make_request(kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal,
                            window_left, window_right, scale, br, bc, splits, r))
    return fail(2, *e);
  if (auto e = check_tensors(r.p, q, k, v, o, lse)) return fail(2, *e);
  const auto* info = r.info;
  // Workspace: one grow-only device buffer per process (no allocation per call, so the launch
  // stays asynchronous); growing it first waits for the kernels that may still use the old one.
  const std::size_t ws_bytes = info->workspace_bytes(r.p, r.opt);
  if (ws_bytes > g_ws_bytes) {
    (void)hipDeviceSynchronize();
    if (g_ws) (void)hipFree(g_ws);
    g_ws = nullptr;
    g_ws_bytes = 0;
    if (hipMalloc(&g_ws, ws_bytes) != hipSuccess) {
      (void)hipGetLastError();
      return fail(3, std::string(info->name) + ": cannot allocate the workspace (" + std::to_string(ws_bytes) + " bytes)");
    }
    g_ws_bytes = ws_bytes;
  }
  auto st = info->launch(r.p, {q, k, v, o, lse}, r.opt, ws_bytes ? g_ws : nullptr, stream);
  if (st) return fail(3, named(*info, *st));
  return 0;
}

}  // extern "C"
