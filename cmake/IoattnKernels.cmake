# Helpers for the HIP kernels (kernels/CMakeLists.txt).
#
#   ioattn_hip_as_cuda(SOURCES ...)        compile .hip files with nvcc as CUDA (-x cu), for
#                                          ${IOATTN_CUDA_ARCH}; kernels/platform/hip_on_cuda.hpp
#                                          maps the HIP runtime names onto CUDA.
#   ioattn_add_amd_check(NAME SOURCES ... INCLUDES ...)
#                                          a target in `all` that runs hipcc for every AMD target of
#                                          IOATTN_AMD_ARCHS on each file (-c, objects discarded):
#                                          AMD is compiled, not run, and CI keeps it from rotting.

function(ioattn_hip_as_cuda)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  set_source_files_properties(${ARG_SOURCES} PROPERTIES LANGUAGE CUDA)
  # nvcc decides the language by extension; .hip is unknown to it, so say it is CUDA.
  set_property(SOURCE ${ARG_SOURCES} APPEND PROPERTY COMPILE_OPTIONS -x cu)
endfunction()

function(ioattn_add_amd_check name)
  cmake_parse_arguments(ARG "" "" "SOURCES;INCLUDES" ${ARGN})
  set(arch_flags "")
  foreach(arch ${IOATTN_AMD_ARCHS})
    list(APPEND arch_flags --offload-arch=${arch})
  endforeach()
  set(inc_flags "")
  foreach(dir ${ARG_INCLUDES})
    list(APPEND inc_flags -I${dir})
  endforeach()
  set(stamps "")
  foreach(src ${ARG_SOURCES})
    get_filename_component(abs ${src} ABSOLUTE)
    get_filename_component(stem ${src} NAME_WE)
    set(obj ${CMAKE_CURRENT_BINARY_DIR}/amd_check/${stem}.o)
    add_custom_command(
      OUTPUT ${obj}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/amd_check
      COMMAND ${IOATTN_HIPCC} ${arch_flags} -O3 -std=c++20 -Wno-unused-command-line-argument
              ${inc_flags} -c ${abs} -o ${obj}
      DEPENDS ${abs} ${ARG_DEPENDS}
      IMPLICIT_DEPENDS CXX ${abs}
      COMMENT "AMD compile check (${IOATTN_AMD_ARCHS}): ${src}"
      VERBATIM)
    list(APPEND stamps ${obj})
  endforeach()
  add_custom_target(${name} ALL DEPENDS ${stamps})
endfunction()
