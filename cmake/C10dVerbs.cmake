# Detection for the verbs backend's ibverbs transport. The backend itself always builds; the
# ibverbs transport needs only libibverbs' headers at build time (the library is dlopen'd at run
# time), so a missing libibverbs-dev means "no ibverbs transport", never a broken build.
find_path(C10D_IBVERBS_INCLUDE_DIR infiniband/verbs.h)
if(C10D_IBVERBS_INCLUDE_DIR)
  set(C10D_HAVE_IBVERBS_HEADERS 1)
  message(STATUS "c10d: verbs backend: ibverbs transport ON (headers in ${C10D_IBVERBS_INCLUDE_DIR}; libibverbs.so.1 loaded at run time)")
else()
  set(C10D_HAVE_IBVERBS_HEADERS 0)
  message(STATUS "c10d: verbs backend: ibverbs transport OFF (infiniband/verbs.h not found; apt-get install libibverbs-dev)")
endif()

# The collective engine's fibers (c10d/backends/verbs/fiber.h) switch stacks with Boost.Context's
# fcontext: a context switch without a syscall (glibc's swapcontext saves the signal mask).
find_package(boost_context 1.71 CONFIG QUIET)
if(NOT boost_context_FOUND)
  message(FATAL_ERROR "c10d: the verbs backend needs Boost.Context (apt-get install libboost-context-dev; scripts/install-deps.sh does)")
endif()
message(STATUS "c10d: verbs backend: Boost.Context ${boost_context_VERSION} (engine fibers)")
