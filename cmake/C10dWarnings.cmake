# Warning flags shared by every target of the project.
function(c10d_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(C10D_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
