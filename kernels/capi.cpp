// kernels/capi.cpp: the C ABI of the kernels (libioattn_capi.so), for Python's ctypes and any
// other language. No C++ types cross it: plain integers, doubles, strings and device pointers.
//
//   int ioattn_forward(const char* kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim,
//                      dtype ("fp32"|"fp16"|"bf16"), causal, window_left, window_right,
//                      scale (<= 0: 1/sqrt(d)), br, bc, splits (0: defaults),
//                      q, k, v, o, lse (device pointers, BSHD contiguous; lse fp32 (B, Hq, Nq)),
//                      stream (cudaStream_t / hipStream_t, 0 = default))
//   returns 0 on success, 2 for a refused problem (unknown kernel, unsupported shape), 3 for a
//   runtime error; ioattn_last_error() then holds one line naming the constraint or the error.
//   The launch is asynchronous on `stream`, like any kernel; workspace (naive's S, FA1's m/l) is
//   one grow-only device buffer kept for the process (ioattn_release_workspace() frees it), so
//   calls on different streams at the same time are not supported.
//
//   int ioattn_kernel_count(); const char* ioattn_kernel_name(int i); const char* ioattn_kernel_info(int i)
//   int64_t ioattn_workspace_bytes(...same problem fields...); void ioattn_release_workspace()
#include <cmath>
#include <string>

#include "kernels/launch.hpp"
#include "kernels/platform/hip_on_cuda.hpp"

namespace {
thread_local std::string g_last_error;
thread_local std::string g_info;
void* g_ws = nullptr;         // the workspace, shared by all calls of this process
std::size_t g_ws_bytes = 0;

int fail(int code, std::string what) {
  g_last_error = std::move(what);
  return code;
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
  return (i >= 0 && static_cast<std::size_t>(i) < reg.size()) ? reg[static_cast<std::size_t>(i)].name.data() : nullptr;
}

// "strategy;dtypes;head_dims;tiles;idea" of variant i.
const char* ioattn_kernel_info(int i) {
  const auto reg = ioattn::kernels::registry();
  if (i < 0 || static_cast<std::size_t>(i) >= reg.size()) return nullptr;
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
  using namespace ioattn;
  const kernels::KernelInfo* info = kernels::find_kernel(kernel ? kernel : "");
  const auto dt = parse_dtype(dtype ? dtype : "");
  if (!info || !dt) return fail(-1, "unknown kernel or dtype");
  AttnProblem p;
  p.batch = batch; p.heads_q = heads_q; p.heads_kv = heads_kv;
  p.seqlen_q = seqlen_q; p.seqlen_k = seqlen_k; p.head_dim = head_dim;
  p.dtype = *dt; p.causal = causal != 0; p.window_left = window_left; p.window_right = window_right;
  const kernels::KernelOptions opt{br, bc, splits};
  if (auto e = info->supports(p, opt)) return fail(-1, std::string(info->name) + ": " + *e);
  return static_cast<int64_t>(info->workspace_bytes(p, opt));
}

int ioattn_forward(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv, int64_t seqlen_q,
                   int64_t seqlen_k, int64_t head_dim, const char* dtype, int causal, int64_t window_left,
                   int64_t window_right, double scale, int br, int bc, int splits, const void* q, const void* k,
                   const void* v, void* o, float* lse, void* stream) {
  using namespace ioattn;
  const kernels::KernelInfo* info = kernels::find_kernel(kernel ? kernel : "");
  if (!info) return fail(2, std::string("unknown kernel '") + (kernel ? kernel : "") + "'");
  const auto dt = parse_dtype(dtype ? dtype : "");
  if (!dt) return fail(2, "dtype must be fp32, fp16 or bf16");
  AttnProblem p;
  p.batch = batch; p.heads_q = heads_q; p.heads_kv = heads_kv;
  p.seqlen_q = seqlen_q; p.seqlen_k = seqlen_k; p.head_dim = head_dim;
  p.dtype = *dt; p.causal = causal != 0;
  p.window_left = window_left; p.window_right = window_right;
  if (scale > 0) p.scale = scale;
  if (!q || !k || !v || !o || !lse) return fail(2, "q, k, v, o and lse must be device pointers (not null)");
  const kernels::KernelOptions opt{br, bc, splits};
  if (auto e = info->supports(p, opt)) return fail(2, std::string(info->name) + ": " + *e);
  // Workspace: one grow-only device buffer per process (no allocation per call, so the launch
  // stays asynchronous); growing it first waits for the kernels that may still use the old one.
  const std::size_t ws_bytes = info->workspace_bytes(p, opt);
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
  auto st = info->launch(p, {q, k, v, o, lse}, opt, ws_bytes ? g_ws : nullptr, stream);
  if (st) return fail(3, std::string(info->name) + ": " + *st);
  return 0;
}

}  // extern "C"
