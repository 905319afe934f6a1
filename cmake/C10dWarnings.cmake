# Warning flags shared by every target of the project.
function(c10d_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  # clang checks the lock annotations (c10d/base/thread_annotations.h); scripts/clang-check.sh makes
  # that an error in CI.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_compile_options(${target} PRIVATE -Wthread-safety)
  endif()
  if(C10D_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
