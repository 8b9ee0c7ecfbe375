# One helper per target kind (after Eigen's eigen_add_benchmark): each sets labels, flags and
# links the same way so a test or benchmark file only names its sources and dependencies.
#
#   ioattn_add_test(NAME SOURCES ... LIBS ... LABELS unit|property|gpu|slow [TIMEOUT s])
#   ioattn_add_benchmark(NAME SOURCES ... LIBS ...)

function(ioattn_add_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT" "SOURCES;LIBS;LABELS;ARGS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ioattn::spec ioattn_warnings ${ARG_LIBS})
  add_test(NAME ${name} COMMAND ${name} ${ARG_ARGS})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 600)
  endif()
  set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}" TIMEOUT ${ARG_TIMEOUT}
                       SKIP_RETURN_CODE 77)
endfunction()

function(ioattn_add_benchmark name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE ioattn::spec ioattn_warnings benchmark::benchmark ${ARG_LIBS})
endfunction()
