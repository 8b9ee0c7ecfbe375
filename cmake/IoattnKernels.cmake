# Helpers for the HIP kernels (kernels/CMakeLists.txt).
#
#   ioattn_hip_as_cuda(SOURCES ...)        compile .hip files with nvcc as CUDA (-x cu), for
#                                          ${IOATTN_CUDA_ARCH}; kernels/platform/hip_on_cuda.hpp
#                                          maps the HIP runtime names onto CUDA.
#   ioattn_add_amd_check(NAME SOURCES ... INCLUDES ...)
#                                          a target in `all` that runs hipcc for every AMD target of
#                                          IOATTN_AMD_ARCHS on each file (-c, objects discarded):
#                                          AMD is compiled, not run, and CI keeps it from rotting.

# CMake 3.25 does not know that nvcc >= 12 accepts -std=c++20 (it knows up to CUDA17), so a
# CUDA_STANDARD of 20 fails at generate time. Teach it the flag, once, in this directory scope.
if(IOATTN_HAVE_CUDA AND NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
  set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
  set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
endif()

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
