// ioattn/config.hpp: one macro that makes the spec callable from host and device code.
//
// The spec headers are included by plain C++ (reference, simulator, tests, CLI), by nvcc
// (NVIDIA build of the kernels) and by hipcc (AMD compile checks). Functions that kernels call
// are marked IOATTN_HD so that all three compilers see the same definition.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define IOATTN_HD __host__ __device__
#else
#define IOATTN_HD
#endif
