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
