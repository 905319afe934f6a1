# cmake -DBUILD_DIR=... -P probe.cmake: a core file that includes only floors below builds; one
# that includes a backend header does not, and the compiler names the header.
function(build target result_var output_var)
  execute_process(COMMAND ${CMAKE_COMMAND} --build ${BUILD_DIR} --target ${target}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(${result_var} ${rc} PARENT_SCOPE)
  set(${output_var} "${out}" PARENT_SCOPE)
endfunction()

build(c10d_layering_probe_allowed rc out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the core room's allowed includes did not compile:\n${out}")
endif()
build(c10d_layering_probe_upward rc out)
if(rc EQUAL 0)
  message(FATAL_ERROR "a core file including c10d/backends/verbs/comm.h compiled: the rooms' include "
                      "views do not enforce the floors (cmake/C10dRooms.cmake)")
endif()
# GCC: "c10d/backends/verbs/comm.h: No such file or directory"; clang: "'c10d/backends/verbs/comm.h' file
# not found". Anything else failed for another reason.
if(NOT out MATCHES "c10d/backends/verbs/comm.h'?:? (No such file or directory|file not found)")
  message(FATAL_ERROR "the upward include failed, but not for want of the header:\n${out}")
endif()
message(STATUS "a core file that includes a backend header does not compile, as designed")
