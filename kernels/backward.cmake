# The backward kernels (included by kernels/CMakeLists.txt after ioattn_kernels is defined).
#
# The backward ladder joins ioattn_kernels (so the C ABI and the CLI reach it through the same
# library): bwd_registry.cpp always (metadata; without nvcc every launch says "built without GPU
# support"), the variant files and harness_bwd.hip with nvcc, harness_bwd_nogpu.cpp without.
# check_bwd.cpp (gradients vs the CPU reference) is its own library, like the forward's check, so
# the kernels library never links the reference. With hipcc every backward file is compiled for
# AMD (target ioattn_backward_amd_check, part of `all` and of ioattn_kernels_amd_check).

# The backward ladder, in order: ONE LINE PER VARIANT (and one line in bwd_registry.cpp).
set(IOATTN_BACKWARD_VARIANTS
  bwd01_fa2_scalar.hip
  bwd01b_fa2_scalar_dqpass.hip
  bwd02_fa2_mma.hip
  bwd02b_fa2_mma_dqpass.hip
  bwd03_fa3_wgmma.hip
  bwd03b_fa3_wgmma_dqpass.hip
)
# bwd03/bwd03b issue Hopper's wgmma: as v06 (kernels/CMakeLists.txt), their files also get sm_90a
# device code, and a probe tells at run time whether the driver loaded it.
set_property(SOURCE bwd03_fa3_wgmma.hip bwd03b_fa3_wgmma_dqpass.hip APPEND PROPERTY COMPILE_OPTIONS
             $<$<COMPILE_LANGUAGE:CUDA>:-gencode=arch=compute_90a,code=sm_90a>)
set(IOATTN_BACKWARD_HARNESS harness_bwd.hip)

target_sources(ioattn_kernels PRIVATE bwd_registry.cpp)
if(IOATTN_HAVE_CUDA)
  ioattn_hip_as_cuda(SOURCES ${IOATTN_BACKWARD_VARIANTS} ${IOATTN_BACKWARD_HARNESS})
  target_sources(ioattn_kernels PRIVATE ${IOATTN_BACKWARD_VARIANTS} ${IOATTN_BACKWARD_HARNESS})
else()
  target_sources(ioattn_kernels PRIVATE harness_bwd_nogpu.cpp)
endif()

add_library(ioattn_backward_check STATIC check_bwd.cpp)
target_link_libraries(ioattn_backward_check PUBLIC ioattn_kernels ioattn_reference)
target_link_libraries(ioattn_backward_check PRIVATE ioattn_warnings)

if(IOATTN_HAVE_HIPCC)
  ioattn_add_amd_check(ioattn_backward_amd_check
    SOURCES ${IOATTN_BACKWARD_VARIANTS} ${IOATTN_BACKWARD_HARNESS}
    INCLUDES ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/include)
  if(TARGET ioattn_kernels_amd_check)
    add_dependencies(ioattn_kernels_amd_check ioattn_backward_amd_check)
  endif()
endif()
