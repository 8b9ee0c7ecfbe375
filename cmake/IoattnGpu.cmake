# Detect the optional GPU toolchains. Neither is needed for the CPU build.
#
# NVIDIA: ROCm 5.2's HIP-on-NVIDIA headers do not compile with CUDA 13, so the .hip sources are
# compiled as CUDA by nvcc with kernels/platform/hip_on_cuda.hpp mapping the HIP names we use.
# AMD: CMake 3.25's enable_language(HIP) cannot find Debian's hip-lang package, so the compile
# check calls hipcc from a custom command (kernels/CMakeLists.txt).
set(IOATTN_HAVE_CUDA OFF)
if(IOATTN_ENABLE_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CMAKE_CUDA_ARCHITECTURES ${IOATTN_CUDA_ARCH})
    find_package(CUDAToolkit REQUIRED)
    set(IOATTN_HAVE_CUDA ON)
  endif()
endif()

set(IOATTN_HAVE_HIPCC OFF)
if(IOATTN_ENABLE_AMD_CHECK)
  find_program(IOATTN_HIPCC hipcc)
  if(IOATTN_HIPCC)
    set(IOATTN_HAVE_HIPCC ON)
  endif()
endif()
message(STATUS "ioattn: NVIDIA kernels (nvcc): ${IOATTN_HAVE_CUDA}; AMD compile check (hipcc): ${IOATTN_HAVE_HIPCC}")
