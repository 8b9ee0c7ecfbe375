// kernels/capi.cpp: the C ABI of the kernels (libioattn_capi.so), for Python's ctypes and any
// other language. No C++ types cross it: plain integers, doubles, strings and device pointers.
// The declarations are in include/ioattn/capi.h (plain C; included below, so they cannot drift).
//
// The problem fields, in this order wherever they appear below ("...problem fields..."):
//   kernel (a variant name), batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim (int64),
//   dtype ("fp32"|"fp16"|"bf16"), causal (0|1), window_left, window_right (int64, -1 = unbounded)
//
// Forward (registry(), launch.hpp):
//   int ioattn_forward(...problem fields..., double scale (<= 0: 1/sqrt(d)), int br, int bc,
//                      int splits (0: defaults), q, k, v, o, lse (device pointers, BSHD contiguous;
//                      lse fp32 (B, Hq, Nq)), stream (cudaStream_t / hipStream_t, 0 = default))
//   int64_t ioattn_workspace_bytes(...problem fields..., br, bc, splits): -1 when refused
//   const char* ioattn_kernel_config(...problem fields..., br, bc, splits): the launch
//       configuration the kernel would use on the current device (LaunchConfig, launch.hpp), as
//       "br=128;bc=128;stages=3;threads=256;smem_bytes=230400;ctas_per_sm=1;grid_x=256;grid_y=32;
//        grid_z=1;launches=1;splits=0;grid_order=qblock_major_rev"
//       (key=value pairs joined by ';', always these keys in this order); NULL when refused
//   int ioattn_kernel_count(); const char* ioattn_kernel_name(int i);
//   const char* ioattn_kernel_info(int i): "strategy;dtypes;head_dims;tiles;idea"
//   int ioattn_forward_paged(...problem fields..., scale, br, bc, splits, int64 page_size,
//                            int64 num_pages, int64 max_pages, block_table_host, seqused_k_host,
//                            block_table, seqused_k, q, k, v, o, lse, stream)
//       a paged KV cache (ioattn/layout.hpp): k, v are (num_pages, page_size, heads_kv, d); the
//       int32 tables (block_table (batch, max_pages) row-major, seqused_k (batch)) are given twice,
//       as host copies (validated here: every used slot a page, no page in two slots, seqused_k
//       <= seqlen_k, which is max_seqlen_k) and as device pointers of the same values (what the
//       kernel reads; non-null, 4-byte aligned); q, o, lse dense as in ioattn_forward. Only variants
//       whose registry line declares paged_kv take it; the others refuse it (code 2).
//   int ioattn_forward_varlen(...problem fields..., scale, br, bc, int64 total_q, int64 total_k,
//                             cu_seqlens_q_host, cu_seqlens_k_host, cu_seqlens_q, cu_seqlens_k,
//                             q, k, v, o, lse, stream)
//       packed (varlen) queries and keys (ioattn/layout.hpp): seqlen_q, seqlen_k are the max lengths,
//       q, o (total_q, heads_q, d), k, v (total_k, heads_kv, d), lse fp32 (heads_q, total_q); the int32
//       offsets (batch + 1 each) are given as host copies (validated here: cu[0] = 0, non-decreasing,
//       within total and the max length) and as device pointers of the same values (non-null,
//       4-byte aligned). Only variants whose registry line declares varlen take it (code 2 otherwise).
//   int ioattn_forward_fp8(...problem fields..., scale, br, bc, splits, const char* out_dtype,
//                          const float* q_descale, int64 q_descale_count, const float* k_descale,
//                          int64 k_descale_count, const float* v_descale, int64 v_descale_count,
//                          q, k, v, o, lse, stream)
//       FP8 inputs (problem.hpp, Fp8Scaling): dtype "fp8_e4m3" (or "fp8_e5m2"), q, k, v 1-byte codes
//       (BSHD as above); the real inputs are the codes times the descales, each a HOST array of
//       count fp32 values, count 1 (per tensor) or heads_kv (per K/V head; query head h uses entry
//       h / (heads_q / heads_kv)), every value finite and > 0 (read during the call, not kept);
//       out_dtype "bf16" or "fp16" is the dtype of o (B, Nq, Hq, d), 2 bytes per element; lse as
//       above. Only variants whose registry line lists the FP8 dtype take it (v09_fp8_wgmma; code 2
//       otherwise). Forward only: the backward entry points refuse FP8 dtypes.
//   ioattn_workspace_bytes and ioattn_kernel_config also answer for an FP8 dtype, as for per-tensor
//       descales and a bf16 output (the descale values and the output dtype change neither the
//       workspace nor the launch; per-K/V-head descales add one limit, heads_kv <= 64 in v09, which
//       only ioattn_forward_fp8 sees). ioattn_forward itself refuses FP8 dtypes (o would not have
//       the input's element size): use ioattn_forward_fp8.
//
// Backward (backward_registry(), backward.hpp; `kernel` names a backward variant):
//   int ioattn_backward(...problem fields..., double scale (<= 0: 1/sqrt(d)), int br, int bc,
//                       q, k, v, o, lse, d_o (in), dq, dk, dv (out), stream)
//       dq like q, dk and dv like k (summed over the query heads of a GQA group); o and lse are
//       the forward's (any registered forward: they share one output contract, problem.hpp; the
//       variant's pairs_with is the forward it is tested with)
//   int64_t ioattn_backward_workspace_bytes(...problem fields..., br, bc): -1 when refused
//   const char* ioattn_backward_config(...problem fields..., br, bc): as ioattn_kernel_config, for
//       the backward's MAIN kernel (the K/V-outer one); launches counts every launch of the
//       backward (preprocess, main, dQ convert or dQ pass); NULL when refused
//   int ioattn_backward_count(); const char* ioattn_backward_name(int i);
//   const char* ioattn_backward_info(int i):
//       "pairs_with;strategy;dq_mode;deterministic;dtypes;head_dims;idea" (deterministic 0 or 1)
//
//   const char* ioattn_last_error(); void ioattn_release_workspace()
//
// ioattn_forward and ioattn_backward return 0 on success, 2 for a refused call (unknown kernel, bad
// field, unsupported shape, bad pointers), 3 for a runtime error (no GPU, allocation, launch);
// ioattn_last_error() then holds one line naming the constraint or the error. The name and info
// functions return NULL for an index outside 0..count-1. Launches are asynchronous on `stream`,
// like any kernel. Workspace: two grow-only device buffers kept for the process, one for the
// forward (naive's S, FA1's m/l, split-KV partials) and one for the backward (D = rowsum(dO o O),
// the fp32 dQ accumulator), so a forward and a backward may be in flight together;
// ioattn_release_workspace() frees both. Calls on different streams at the same time are not
// supported (a later call may grow a buffer an earlier one still uses on another stream).
//
// What every entry point checks before anything reaches a kernel (one line in ioattn_last_error()
// on refusal): kernel and dtype are non-null and known (a backward name for the backward entry
// points); causal is 0 or 1; br, bc (and splits) >= 0; scale finite; the problem passes
// AttnProblem::validate() (sizes >= 1, heads_q divisible by heads_kv, windows -1 or >= 0, size
// caps); the variant's supports(). The launches also check that every pointer is non-null, that
// the tensors are 16-byte aligned (matrix-core variants load 16 bytes at a time) and lse 4-byte
// aligned, and that no output overlaps another output or an input (forward: o, lse; backward: dq,
// dk, dv). What they cannot check: that the pointers are device memory of at least the problem's
// sizes (python/ioattn.py checks the tensors).
// Strings returned (kernel name, info, config) stay valid until the next call of the same
// function in the same thread.
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ioattn/capi.h"  // the declarations of the entry points below (C linkage)
#include "kernels/backward.hpp"
#include "kernels/harness.hpp"  // gpu_unavailable
#include "kernels/launch.hpp"
#include "kernels/platform/hip_on_cuda.hpp"

namespace {
using ioattn::AttnProblem;
using ioattn::kernels::BackwardInfo;
using ioattn::kernels::BackwardOptions;
using ioattn::kernels::KernelInfo;
using ioattn::kernels::KernelOptions;

thread_local std::string g_last_error;
thread_local std::string g_info;
thread_local std::string g_config;

int fail(int code, std::string what) {
  g_last_error = std::move(what);
  return code;
}
const char* fail_null(std::string what) {
  g_last_error = std::move(what);
  return nullptr;
}

// One grow-only device buffer kept for the process (no allocation per call, so a launch stays
// asynchronous); growing it first waits for the kernels that may still use the old one.
struct Workspace {
  void* ptr = nullptr;
  std::size_t bytes = 0;

  void release() {
    if (ptr) (void)hipFree(ptr);
    ptr = nullptr;
    bytes = 0;
  }
  // nullopt when at least `need` bytes are there, else why not.
  std::optional<std::string> reserve(std::size_t need) {
    if (need <= bytes) return std::nullopt;
    (void)hipDeviceSynchronize();
    release();
    const hipError_t e = hipMalloc(&ptr, need);
    if (e != hipSuccess) {
      (void)hipGetLastError();
      ptr = nullptr;
      const auto no_gpu = ioattn::kernels::gpu_unavailable();
      return "cannot allocate the workspace (" + std::to_string(need) + " bytes): " +
             (no_gpu ? *no_gpu : std::string(hipGetErrorString(e)));
    }
    bytes = need;
    return std::nullopt;
  }
};
Workspace g_fwd_ws;  // ioattn_forward's
Workspace g_bwd_ws;  // ioattn_backward's

// The two ladders, seen alike by the request code below.
template <class Info>
struct Ladder;
template <>
struct Ladder<KernelInfo> {
  using Options = KernelOptions;
  static constexpr const char* what = "kernel";
  static constexpr const char* variant = "a variant";
  static std::span<const KernelInfo> all() { return ioattn::kernels::registry(); }
  static const KernelInfo* find(std::string_view n) { return ioattn::kernels::find_kernel(n); }
};
template <>
struct Ladder<BackwardInfo> {
  using Options = BackwardOptions;
  static constexpr const char* what = "backward kernel";
  static constexpr const char* variant = "a backward variant";
  static std::span<const BackwardInfo> all() { return ioattn::kernels::backward_registry(); }
  static const BackwardInfo* find(std::string_view n) { return ioattn::kernels::find_backward(n); }
};

template <class Info>
std::string names_of() {
  std::string names;
  for (const auto& k : Ladder<Info>::all()) names += (names.empty() ? "" : ", ") + std::string(k.name);
  return names;
}

// Variant i of a ladder, or NULL with the last error set.
template <class Info>
const Info* at(int i) {
  const auto reg = Ladder<Info>::all();
  if (i >= 0 && static_cast<std::size_t>(i) < reg.size()) return &reg[static_cast<std::size_t>(i)];
  g_last_error = std::string(Ladder<Info>::what) + " index must be in 0.." + std::to_string(reg.size() - 1) +
                 " (got " + std::to_string(i) + ")";
  return nullptr;
}

template <class Info>
int count_of() {
  return static_cast<int>(Ladder<Info>::all().size());
}
template <class Info>
const char* name_at(int i) {
  const Info* k = at<Info>(i);
  return k ? k->name.data() : nullptr;
}

// A variant's message, prefixed with its name unless it already starts with it.
template <class Info>
std::string named(const Info& k, const std::string& what) {
  return what.starts_with(k.name) ? what : std::string(k.name) + ": " + what;
}

std::optional<std::string> bad_tiles(const KernelOptions& o) {
  if (o.br >= 0 && o.bc >= 0 && o.splits >= 0) return std::nullopt;
  return "br, bc and splits must be >= 0 (0: the variant's default; got " + std::to_string(o.br) + ", " +
         std::to_string(o.bc) + ", " + std::to_string(o.splits) + ")";
}
std::optional<std::string> bad_tiles(const BackwardOptions& o) {
  if (o.br >= 0 && o.bc >= 0) return std::nullopt;
  return "br and bc must be >= 0 (0: the variant's default; got " + std::to_string(o.br) + ", " +
         std::to_string(o.bc) + ")";
}

// The problem fields of the C ABI (the list at the top of this file) and the scale.
struct Fields {
  const char* kernel;
  int64_t batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim;
  const char* dtype;
  int causal;
  int64_t window_left, window_right;
  double scale;  // <= 0: 1/sqrt(head_dim)
  const ioattn::BatchLayout* layout = nullptr;  // null: dense
  // FP8 dtypes: the descales and output dtype of ioattn_forward_fp8 (`fp8`), or, for the forward's
  // workspace and config queries (`fp8_query`), the defaults (per tensor 1.0, bf16 out); neither:
  // an FP8 dtype is refused (ioattn_forward, the backward entry points).
  const ioattn::Fp8Scaling* fp8 = nullptr;
  bool fp8_query = false;
};

// What every entry point receives, once checked: the variant, the problem, the options.
template <class Info>
struct Request {
  const Info* info = nullptr;
  AttnProblem p;
  typename Ladder<Info>::Options opt;
};

// The fields -> a checked Request (the checks listed at the top of this file); nullopt when every
// check passed, else the one line for ioattn_last_error().
template <class Info>
std::optional<std::string> make_request(const Fields& f, const typename Ladder<Info>::Options& opt,
                                        Request<Info>& r) {
  using namespace ioattn;
  using L = Ladder<Info>;
  if (!f.kernel)
    return std::string(L::what) + " must name " + L::variant + " (got NULL; known: " + names_of<Info>() + ")";
  r.info = L::find(f.kernel);
  if (!r.info)
    return "unknown " + std::string(L::what) + " '" + std::string(f.kernel) + "' (known: " + names_of<Info>() + ")";
  if (!f.dtype) return std::string("dtype must be fp32, fp16 or bf16 (got NULL)");
  const auto dt = parse_dtype(f.dtype);
  if (!dt) return "dtype must be fp32, fp16 or bf16, or fp8_e4m3 / fp8_e5m2 (got '" + std::string(f.dtype) + "')";
  // FP8 needs descales and an output dtype (and O is not the input's element size): only
  // ioattn_forward_fp8 (f.fp8) and the forward's queries (f.fp8_query) take it, before any variant.
  if (is_fp8(*dt) && !f.fp8 && !f.fp8_query) {
    if constexpr (std::is_same_v<Info, BackwardInfo>)
      return "dtype " + std::string(f.dtype) + ": FP8 is forward only (no FP8 backward)";
    else
      return "dtype " + std::string(f.dtype) + ": FP8 inputs need descales and an output dtype: call "
             "ioattn_forward_fp8 (ioattn_forward takes fp32, fp16 or bf16)";
  }
  if (f.causal != 0 && f.causal != 1) return "causal must be 0 or 1 (got " + std::to_string(f.causal) + ")";
  if (auto e = bad_tiles(opt)) return e;
  if (!std::isfinite(f.scale)) return std::string("scale must be finite (> 0, or <= 0 for 1/sqrt(head_dim))");
  // validate() multiplies batch by heads_q: keep the product inside int64 before it does.
  if (f.batch > kMaxBatchHeads || f.heads_q > kMaxBatchHeads)
    return "batch * heads_q must be <= " + std::to_string(kMaxBatchHeads);
  AttnProblem& p = r.p;
  p.batch = f.batch;
  p.heads_q = f.heads_q;
  p.heads_kv = f.heads_kv;
  p.seqlen_q = f.seqlen_q;
  p.seqlen_k = f.seqlen_k;
  p.head_dim = f.head_dim;
  p.dtype = *dt;
  p.causal = f.causal == 1;
  p.window_left = f.window_left;
  p.window_right = f.window_right;
  if (f.scale > 0) p.scale = f.scale;
  if (f.layout) p.layout = *f.layout;
  if (is_fp8(*dt) && f.fp8) p.fp8 = *f.fp8;  // else the defaults (per tensor 1.0, bf16 out)
  if (auto e = p.validate()) return e;  // fp8: descale counts and values, output dtype  // sizes >= 1, heads_q % heads_kv == 0, windows, caps, tables
  r.opt = opt;
  if (auto e = r.info->supports(p, r.opt)) return named(*r.info, *e);
  return std::nullopt;
}

template <class Info>
int64_t workspace_bytes_of(const Fields& f, const typename Ladder<Info>::Options& opt) {
  Request<Info> r;
  if (auto e = make_request(f, opt, r)) return fail(-1, *e);
  return static_cast<int64_t>(r.info->workspace_bytes(r.p, r.opt));
}

template <class Info>
const char* config_of(const Fields& f, const typename Ladder<Info>::Options& opt) {
  Request<Info> r;
  if (auto e = make_request(f, opt, r)) return fail_null(*e);
  ioattn::kernels::LaunchConfig c;
  if (auto e = r.info->config(r.p, r.opt, c)) return fail_null(named(*r.info, *e));
  g_config = ioattn::kernels::format_config(c, ';');
  return g_config.c_str();
}

// A device buffer a launch reads (input) or writes (output).
struct Buffer {
  const char* name;
  const void* ptr;
  std::size_t bytes;
  std::size_t align;  // 16 for the tensors, 4 for the fp32 LSE
};
// [a, a + na) and [b, b + nb) share a byte.
bool overlap(const Buffer& a, const Buffer& b) {
  const auto x = reinterpret_cast<std::uintptr_t>(a.ptr), y = reinterpret_cast<std::uintptr_t>(b.ptr);
  return x < y + b.bytes && y < x + a.bytes;
}
// Every buffer non-null and aligned; every output apart from every other output and every input.
std::optional<std::string> check_buffers(std::initializer_list<Buffer> inputs, std::initializer_list<Buffer> outputs) {
  for (auto list : {inputs, outputs})
    for (const Buffer& b : list) {
      if (!b.ptr) return std::string(b.name) + " must be a device pointer (got null)";
      if (reinterpret_cast<std::uintptr_t>(b.ptr) % b.align != 0)
        return std::string(b.name) + " must be " + std::to_string(b.align) + "-byte aligned" +
               (b.align == 4 ? " (4-byte fp32 / int32 elements)" : " (the matrix-core variants load 16 bytes at a time)");
    }
  for (auto out = outputs.begin(); out != outputs.end(); ++out) {
    for (auto other = outputs.begin(); other != out; ++other)
      if (overlap(*out, *other))
        return std::string(out->name) + " must not overlap " + other->name + " (both are outputs)";
    for (const Buffer& in : inputs)
      if (overlap(*out, in)) return std::string(out->name) + " must not overlap the input " + in.name;
  }
  return std::nullopt;
}

std::size_t q_bytes(const AttnProblem& p) { return static_cast<std::size_t>(p.q_elems()) * ioattn::dtype_bytes(p.dtype); }
std::size_t kv_bytes(const AttnProblem& p) { return static_cast<std::size_t>(p.kv_elems()) * ioattn::dtype_bytes(p.dtype); }
// O is in the output dtype (the input's, except for FP8 inputs: bf16 or fp16).
std::size_t o_bytes(const AttnProblem& p) { return static_cast<std::size_t>(p.q_elems()) * ioattn::dtype_bytes(p.output_dtype()); }
std::size_t lse_bytes(const AttnProblem& p) { return static_cast<std::size_t>(p.lse_elems()) * sizeof(float); }

}  // namespace

extern "C" {

const char* ioattn_last_error() { return g_last_error.c_str(); }

void ioattn_release_workspace() {
  (void)hipDeviceSynchronize();
  g_fwd_ws.release();
  g_bwd_ws.release();
}

// ---- forward ----------------------------------------------------------------------------------

int ioattn_kernel_count() { return count_of<KernelInfo>(); }

const char* ioattn_kernel_name(int i) { return name_at<KernelInfo>(i); }

// "strategy;dtypes;head_dims;tiles;idea" of variant i.
const char* ioattn_kernel_info(int i) {
  const KernelInfo* k = at<KernelInfo>(i);
  if (!k) return nullptr;
  g_info = std::string(k->strategy) + ";" + std::string(k->dtypes) + ";" + std::string(k->head_dims) + ";" +
           (k->takes_tile_sizes ? "br,bc" : "-") + ";" + std::string(k->idea);
  return g_info.c_str();
}

// Device bytes ioattn_forward allocates for this problem beyond its tensors (naive's N^2 scores,
// FA1's fp32 O/m/l); -1 when refused (see ioattn_last_error).
int64_t ioattn_workspace_bytes(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv,
                               int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, const char* dtype,
                               int causal, int64_t window_left, int64_t window_right, int br, int bc, int splits) {
  return workspace_bytes_of<KernelInfo>({kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal,
                                         window_left, window_right, 0.0, nullptr, nullptr, /*fp8_query=*/true},
                                        {br, bc, splits});
}

// The launch configuration (format at the top of this file); NULL when refused.
const char* ioattn_kernel_config(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv,
                                 int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, const char* dtype,
                                 int causal, int64_t window_left, int64_t window_right, int br, int bc,
                                 int splits) {
  return config_of<KernelInfo>({kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal,
                                 window_left, window_right, 0.0, nullptr, nullptr, /*fp8_query=*/true},
                                {br, bc, splits});
}

int ioattn_forward(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv, int64_t seqlen_q,
                   int64_t seqlen_k, int64_t head_dim, const char* dtype, int causal, int64_t window_left,
                   int64_t window_right, double scale, int br, int bc, int splits, const void* q, const void* k,
                   const void* v, void* o, float* lse, void* stream) {
  Request<KernelInfo> r;
  if (auto e = make_request<KernelInfo>(
          {kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal, window_left, window_right,
           scale},
          {br, bc, splits}, r))
    return fail(2, *e);
  const AttnProblem& p = r.p;
  if (auto e = check_buffers({{"q", q, q_bytes(p), 16}, {"k", k, kv_bytes(p), 16}, {"v", v, kv_bytes(p), 16}},
                             {{"o", o, o_bytes(p), 16}, {"lse", lse, lse_bytes(p), 4}}))
    return fail(2, *e);
  const std::size_t ws_bytes = r.info->workspace_bytes(p, r.opt);
  if (auto e = g_fwd_ws.reserve(ws_bytes)) return fail(3, named(*r.info, *e));
  if (auto e = r.info->launch(p, {q, k, v, o, lse}, r.opt, ws_bytes ? g_fwd_ws.ptr : nullptr, stream))
    return fail(3, named(*r.info, *e));
  return 0;
}

// The forward launch of ioattn_forward_paged and ioattn_forward_varlen once their arguments passed:
// the workspace grown to what the variant asks, then the launch (code 3 on a runtime error).
static int launch_checked(const Request<KernelInfo>& r, const ioattn::kernels::DeviceTensors& t, void* stream) {
  const std::size_t ws_bytes = r.info->workspace_bytes(r.p, r.opt);
  if (auto e = g_fwd_ws.reserve(ws_bytes)) return fail(3, named(*r.info, *e));
  if (auto e = r.info->launch(r.p, t, r.opt, ws_bytes ? g_fwd_ws.ptr : nullptr, stream))
    return fail(3, named(*r.info, *e));
  return 0;
}

// A paged KV cache's layout from the C arguments; nullopt when every size check passed, else the line.
std::optional<std::string> paged_layout(int64_t batch, int64_t page_size, int64_t num_pages, int64_t max_pages,
                                        const int32_t* table_host, const int32_t* seqused_host,
                                        ioattn::BatchLayout& l) {
  using ioattn::kMaxTokens;
  if (page_size < 1 || page_size > kMaxTokens)
    return "page_size must be in [1, " + std::to_string(kMaxTokens) + "] (got " + std::to_string(page_size) + ")";
  if (num_pages < 1 || num_pages > kMaxTokens)
    return "num_pages must be in [1, " + std::to_string(kMaxTokens) + "] (got " + std::to_string(num_pages) + ")";
  if (batch < 1 || max_pages < 1 || max_pages > kMaxTokens / batch)
    return "max_pages must be >= 1 and batch * max_pages <= " + std::to_string(kMaxTokens) + " (got batch " +
           std::to_string(batch) + ", max_pages " + std::to_string(max_pages) + ")";
  if (!table_host || !seqused_host)
    return std::string("block_table_host and seqused_k_host must be host copies of the tables (got null)");
  l.page_size = page_size;
  l.num_pages = num_pages;
  l.max_pages = max_pages;
  l.block_table.assign(table_host, table_host + batch * max_pages);
  l.seqused_k.assign(seqused_host, seqused_host + batch);
  return std::nullopt;
}

int ioattn_forward_paged(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv, int64_t seqlen_q,
                         int64_t seqlen_k, int64_t head_dim, const char* dtype, int causal, int64_t window_left,
                         int64_t window_right, double scale, int br, int bc, int splits, int64_t page_size,
                         int64_t num_pages, int64_t max_pages, const int32_t* block_table_host,
                         const int32_t* seqused_k_host, const int32_t* block_table, const int32_t* seqused_k,
                         const void* q, const void* k, const void* v, void* o, float* lse, void* stream) {
  ioattn::BatchLayout layout;
  if (auto e = paged_layout(batch, page_size, num_pages, max_pages, block_table_host, seqused_k_host, layout))
    return fail(2, *e);
  Request<KernelInfo> r;
  if (auto e = make_request<KernelInfo>({kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype,
                                         causal, window_left, window_right, scale, &layout},
                                        {br, bc, splits}, r))
    return fail(2, *e);
  const AttnProblem& p = r.p;
  const std::size_t table_bytes = layout.block_table.size() * sizeof(int32_t);
  const std::size_t used_bytes = layout.seqused_k.size() * sizeof(int32_t);
  if (auto e = check_buffers({{"q", q, q_bytes(p), 16},
                              {"k", k, kv_bytes(p), 16},
                              {"v", v, kv_bytes(p), 16},
                              {"block_table", block_table, table_bytes, 4},
                              {"seqused_k", seqused_k, used_bytes, 4}},
                             {{"o", o, q_bytes(p), 16}, {"lse", lse, lse_bytes(p), 4}}))
    return fail(2, *e);
  ioattn::kernels::DeviceTensors t{q, k, v, o, lse};
  t.block_table = block_table;
  t.seqused_k = seqused_k;
  return launch_checked(r, t, stream);
}

// Packed (varlen) queries and keys from the C arguments (sizes only; validate() checks the offsets).
static std::optional<std::string> varlen_layout(int64_t batch, int64_t total_q, int64_t total_k, const int32_t* cu_q_host,
                                                const int32_t* cu_k_host, ioattn::BatchLayout& l) {
  using ioattn::kMaxTokens;
  if (batch < 1 || batch >= kMaxTokens) return "batch must be in [1, " + std::to_string(kMaxTokens) + ")";
  for (const auto& [name, total] : {std::pair{"total_q", total_q}, {"total_k", total_k}})
    if (total < 1 || total > kMaxTokens)
      return std::string(name) + " must be in [1, " + std::to_string(kMaxTokens) + "] (got " + std::to_string(total) + ")";
  if (!cu_q_host || !cu_k_host)
    return std::string("cu_seqlens_q_host and cu_seqlens_k_host must be host copies of the offsets (got null)");
  l.cu_seqlens_q.assign(cu_q_host, cu_q_host + batch + 1);
  l.cu_seqlens_k.assign(cu_k_host, cu_k_host + batch + 1);
  l.total_q = total_q;
  l.total_k = total_k;
  return std::nullopt;
}

int ioattn_forward_varlen(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv, int64_t seqlen_q,
                          int64_t seqlen_k, int64_t head_dim, const char* dtype, int causal, int64_t window_left,
                          int64_t window_right, double scale, int br, int bc, int64_t total_q, int64_t total_k,
                          const int32_t* cu_seqlens_q_host, const int32_t* cu_seqlens_k_host,
                          const int32_t* cu_seqlens_q, const int32_t* cu_seqlens_k, const void* q, const void* k,
                          const void* v, void* o, float* lse, void* stream) {
  ioattn::BatchLayout layout;
  if (auto e = varlen_layout(batch, total_q, total_k, cu_seqlens_q_host, cu_seqlens_k_host, layout)) return fail(2, *e);
  Request<KernelInfo> r;
  if (auto e = make_request<KernelInfo>({kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype,
                                         causal, window_left, window_right, scale, &layout},
                                        {br, bc, 0}, r))
    return fail(2, *e);
  const AttnProblem& p = r.p;
  const std::size_t cu_bytes = static_cast<std::size_t>(batch + 1) * sizeof(int32_t);
  if (auto e = check_buffers({{"q", q, q_bytes(p), 16},
                              {"k", k, kv_bytes(p), 16},
                              {"v", v, kv_bytes(p), 16},
                              {"cu_seqlens_q", cu_seqlens_q, cu_bytes, 4},
                              {"cu_seqlens_k", cu_seqlens_k, cu_bytes, 4}},
                             {{"o", o, q_bytes(p), 16}, {"lse", lse, lse_bytes(p), 4}}))
    return fail(2, *e);
  ioattn::kernels::DeviceTensors t{q, k, v, o, lse};
  t.cu_seqlens_q = cu_seqlens_q;
  t.cu_seqlens_k = cu_seqlens_k;
  return launch_checked(r, t, stream);
}

// One descale array of ioattn_forward_fp8 -> `out`; nullopt when its count is 1 or heads_kv and the
// pointer is non-null (validate() then checks the values), else the line.
static std::optional<std::string> descales_of(const char* name, const float* host, int64_t count, int64_t heads_kv,
                                              std::vector<float>& out) {
  if (count != 1 && (count != heads_kv || count < 1 || count > ioattn::kMaxBatchHeads))
    return std::string(name) + "_count must be 1 (per tensor) or heads_kv = " + std::to_string(heads_kv) +
           " (per K/V head) (got " + std::to_string(count) + ")";
  if (!host)
    return std::string(name) + " must be a host array of " + std::to_string(count) + (count == 1 ? " float" : " floats") +
           " (got NULL)";
  out.assign(host, host + count);
  return std::nullopt;
}

int ioattn_forward_fp8(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv, int64_t seqlen_q,
                       int64_t seqlen_k, int64_t head_dim, const char* dtype, int causal, int64_t window_left,
                       int64_t window_right, double scale, int br, int bc, int splits, const char* out_dtype,
                       const float* q_descale, int64_t q_descale_count, const float* k_descale,
                       int64_t k_descale_count, const float* v_descale, int64_t v_descale_count, const void* q,
                       const void* k, const void* v, void* o, float* lse, void* stream) {
  using ioattn::DType;
  const auto dt = dtype ? ioattn::parse_dtype(dtype) : std::nullopt;
  if (!dt || !ioattn::is_fp8(*dt))
    return fail(2, "ioattn_forward_fp8: dtype must be fp8_e4m3 or fp8_e5m2 (got " +
                       (dtype ? "'" + std::string(dtype) + "'" : std::string("NULL")) + "; other dtypes: ioattn_forward)");
  const auto od = out_dtype ? ioattn::parse_dtype(out_dtype) : std::nullopt;
  if (!od || (*od != DType::bf16 && *od != DType::fp16))
    return fail(2, "out_dtype of an fp8 problem must be bf16 or fp16 (got " +
                       (out_dtype ? "'" + std::string(out_dtype) + "'" : std::string("NULL")) + ")");
  ioattn::Fp8Scaling fp8;
  fp8.out = *od;
  for (auto [name, host, count, vec] : {std::tuple{"q_descale", q_descale, q_descale_count, &fp8.q_descale},
                                        {"k_descale", k_descale, k_descale_count, &fp8.k_descale},
                                        {"v_descale", v_descale, v_descale_count, &fp8.v_descale}})
    if (auto e = descales_of(name, host, count, heads_kv, *vec)) return fail(2, *e);
  Request<KernelInfo> r;
  if (auto e = make_request<KernelInfo>({kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal,
                                         window_left, window_right, scale, nullptr, &fp8},
                                        {br, bc, splits}, r))
    return fail(2, *e);
  const AttnProblem& p = r.p;
  if (auto e = check_buffers({{"q", q, q_bytes(p), 16}, {"k", k, kv_bytes(p), 16}, {"v", v, kv_bytes(p), 16}},
                             {{"o", o, o_bytes(p), 16}, {"lse", lse, lse_bytes(p), 4}}))
    return fail(2, *e);
  return launch_checked(r, {q, k, v, o, lse}, stream);
}

// ---- backward ---------------------------------------------------------------------------------

int ioattn_backward_count() { return count_of<BackwardInfo>(); }

const char* ioattn_backward_name(int i) { return name_at<BackwardInfo>(i); }

// "pairs_with;strategy;dq_mode;deterministic;dtypes;head_dims;idea" of backward variant i.
const char* ioattn_backward_info(int i) {
  const BackwardInfo* k = at<BackwardInfo>(i);
  if (!k) return nullptr;
  g_info = std::string(k->pairs_with) + ";" + std::string(k->strategy) + ";" + std::string(k->dq_mode) + ";" +
           (k->deterministic ? "1" : "0") + ";" + std::string(k->dtypes) + ";" + std::string(k->head_dims) + ";" +
           std::string(k->idea);
  return g_info.c_str();
}

// Device bytes ioattn_backward allocates for this problem beyond its tensors (D, the fp32 dQ
// accumulator); -1 when refused.
int64_t ioattn_backward_workspace_bytes(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv,
                                        int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, const char* dtype,
                                        int causal, int64_t window_left, int64_t window_right, int br, int bc) {
  return workspace_bytes_of<BackwardInfo>(
      {kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal, window_left, window_right, 0.0},
      {br, bc});
}

// The backward's launch configuration (its K/V-outer kernel; format at the top); NULL when refused.
const char* ioattn_backward_config(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv,
                                   int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, const char* dtype,
                                   int causal, int64_t window_left, int64_t window_right, int br, int bc) {
  return config_of<BackwardInfo>(
      {kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal, window_left, window_right, 0.0},
      {br, bc});
}

int ioattn_backward(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv, int64_t seqlen_q,
                    int64_t seqlen_k, int64_t head_dim, const char* dtype, int causal, int64_t window_left,
                    int64_t window_right, double scale, int br, int bc, const void* q, const void* k, const void* v,
                    const void* o, const float* lse, const void* d_o, void* dq, void* dk, void* dv, void* stream) {
  Request<BackwardInfo> r;
  if (auto e = make_request<BackwardInfo>(
          {kernel, batch, heads_q, heads_kv, seqlen_q, seqlen_k, head_dim, dtype, causal, window_left, window_right,
           scale},
          {br, bc}, r))
    return fail(2, *e);
  const AttnProblem& p = r.p;
  if (auto e = check_buffers({{"q", q, q_bytes(p), 16},
                              {"k", k, kv_bytes(p), 16},
                              {"v", v, kv_bytes(p), 16},
                              {"o", o, q_bytes(p), 16},
                              {"lse", lse, lse_bytes(p), 4},
                              {"d_o", d_o, q_bytes(p), 16}},
                             {{"dq", dq, q_bytes(p), 16}, {"dk", dk, kv_bytes(p), 16}, {"dv", dv, kv_bytes(p), 16}}))
    return fail(2, *e);
  const std::size_t ws_bytes = r.info->workspace_bytes(p, r.opt);
  if (auto e = g_bwd_ws.reserve(ws_bytes)) return fail(3, named(*r.info, *e));
  if (auto e = r.info->launch(p, {q, k, v, o, lse, d_o, dq, dk, dv}, r.opt, ws_bytes ? g_bwd_ws.ptr : nullptr, stream))
    return fail(3, named(*r.info, *e));
  return 0;
}

}  // extern "C"
