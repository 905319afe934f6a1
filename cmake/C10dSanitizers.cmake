# -DC10D_SANITIZE=address,undefined or -DC10D_SANITIZE=thread instruments every target.
if(C10D_SANITIZE)
  message(STATUS "c10d: sanitizers: ${C10D_SANITIZE}")
  add_compile_options(-fsanitize=${C10D_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${C10D_SANITIZE})
endif()
