/* ioattn/capi.h: the C ABI of libioattn_capi.so, for C, C++ and any language with a C FFI.
 *
 * The declarations of the functions kernels/capi.cpp defines (that file includes this header, so a
 * declaration that differs from its definition does not compile). The contract of every function
 * (problem fields, tensor layouts, return codes, what is checked, the workspaces, the strings'
 * lifetime) is the comment at the top of kernels/capi.cpp; python/ioattn.py calls these through
 * ctypes. In short: 0 = success, 2 = refused (one line in ioattn_last_error() naming the
 * constraint), 3 = runtime error; tensors are device pointers, BSHD contiguous, lse fp32
 * (B, Hq, Nq); stream is a cudaStream_t / hipStream_t (NULL: the default stream).
 */
#ifndef IOATTN_CAPI_H
#define IOATTN_CAPI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

const char* ioattn_last_error(void);
void ioattn_release_workspace(void);

/* ---- forward ---- */
int ioattn_kernel_count(void);
const char* ioattn_kernel_name(int i);
const char* ioattn_kernel_info(int i); /* "strategy;dtypes;head_dims;tiles;idea" */

int64_t ioattn_workspace_bytes(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv,
                               int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, const char* dtype, int causal,
                               int64_t window_left, int64_t window_right, int br, int bc, int splits);
const char* ioattn_kernel_config(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv,
                                 int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, const char* dtype,
                                 int causal, int64_t window_left, int64_t window_right, int br, int bc,
                                 int splits);

int ioattn_forward(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv, int64_t seqlen_q,
                   int64_t seqlen_k, int64_t head_dim, const char* dtype, int causal, int64_t window_left,
                   int64_t window_right, double scale, int br, int bc, int splits, const void* q, const void* k,
                   const void* v, void* o, float* lse, void* stream);

int ioattn_forward_paged(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv, int64_t seqlen_q,
                         int64_t seqlen_k, int64_t head_dim, const char* dtype, int causal, int64_t window_left,
                         int64_t window_right, double scale, int br, int bc, int splits, int64_t page_size,
                         int64_t num_pages, int64_t max_pages, const int32_t* block_table_host,
                         const int32_t* seqused_k_host, const int32_t* block_table, const int32_t* seqused_k,
                         const void* q, const void* k, const void* v, void* o, float* lse, void* stream);

int ioattn_forward_varlen(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv, int64_t seqlen_q,
                          int64_t seqlen_k, int64_t head_dim, const char* dtype, int causal, int64_t window_left,
                          int64_t window_right, double scale, int br, int bc, int64_t total_q, int64_t total_k,
                          const int32_t* cu_seqlens_q_host, const int32_t* cu_seqlens_k_host,
                          const int32_t* cu_seqlens_q, const int32_t* cu_seqlens_k, const void* q, const void* k,
                          const void* v, void* o, float* lse, void* stream);

/* FP8 inputs (dtype "fp8_e4m3"): 1-byte q, k, v codes; descales are HOST arrays of count 1 (per
 * tensor) or heads_kv (per K/V head) finite positive floats; o is in out_dtype ("bf16"|"fp16"). */
int ioattn_forward_fp8(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv, int64_t seqlen_q,
                       int64_t seqlen_k, int64_t head_dim, const char* dtype, int causal, int64_t window_left,
                       int64_t window_right, double scale, int br, int bc, int splits, const char* out_dtype,
                       const float* q_descale, int64_t q_descale_count, const float* k_descale,
                       int64_t k_descale_count, const float* v_descale, int64_t v_descale_count, const void* q,
                       const void* k, const void* v, void* o, float* lse, void* stream);

/* ---- backward ---- */
int ioattn_backward_count(void);
const char* ioattn_backward_name(int i);
const char* ioattn_backward_info(int i); /* "pairs_with;strategy;dq_mode;deterministic;dtypes;head_dims;idea" */

int64_t ioattn_backward_workspace_bytes(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv,
                                        int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, const char* dtype,
                                        int causal, int64_t window_left, int64_t window_right, int br, int bc);
const char* ioattn_backward_config(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv,
                                   int64_t seqlen_q, int64_t seqlen_k, int64_t head_dim, const char* dtype,
                                   int causal, int64_t window_left, int64_t window_right, int br, int bc);

int ioattn_backward(const char* kernel, int64_t batch, int64_t heads_q, int64_t heads_kv, int64_t seqlen_q,
                    int64_t seqlen_k, int64_t head_dim, const char* dtype, int causal, int64_t window_left,
                    int64_t window_right, double scale, int br, int bc, const void* q, const void* k, const void* v,
                    const void* o, const float* lse, const void* d_o, void* dq, void* dk, void* dv, void* stream);

#ifdef __cplusplus
}
#endif

#endif /* IOATTN_CAPI_H */
