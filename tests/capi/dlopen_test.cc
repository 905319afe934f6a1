// Loads libc10d as a plugin or an FFI does: dlopen("libc10d.so.<ABI>", RTLD_LOCAL | RTLD_NOW) by
// its SONAME, every function through dlsym, no link-time dependency (this program does not link
// libc10d; the test checks it is not loaded before). Then: the versions, a one-rank group per CPU
// backend (file:// and a hash store) running an allreduce checked against its reference, an error
// returned as a status and message, and dlclose.
#include <dlfcn.h>

#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "c10d/base/config.h"
#include "c10d/c_api.h"

namespace {

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "dlopen test: %s\n", what.c_str());
  std::exit(1);
}

void* g_lib = nullptr;

template <typename F>
F sym(const char* name) {
  dlerror();
  void* p = dlsym(g_lib, name);
  if (p == nullptr) fail(std::string("dlsym(") + name + "): " + (dlerror() ? dlerror() : "null"));
  return reinterpret_cast<F>(p);
}

// The C API, resolved at run time: C(name) is a pointer of exactly the declared type.
#define C(name) sym<decltype(&::name)>(#name)

void check(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

void allreduceOnOneRank(const char* backend, bool fromHashStore) {
  const std::string label = std::string(backend) + (fromHashStore ? " (hash store)" : " (file://)");
  c10d_pg_options_t o;
  c10d_pg_options_init(&o);
  o.timeout_ms = 30000;
  c10d_pg_t* pg = nullptr;
  c10d_status_t s;
  if (fromHashStore) {
    c10d_store_options_t so;
    c10d_store_options_init(&so);
    c10d_store_t* store = nullptr;
    s = C(c10d_store_hash_create)(&so, &store);
    check(s == C10D_STATUS_OK, label + ": c10d_store_hash_create: " + C(c10d_last_error)());
    s = C(c10d_pg_create_from_store)(store, backend, 0, 1, &o, &pg);
    C(c10d_store_release)(store);
  } else {
    const std::string url = "file:///tmp/c10d-capi-dlopen-" + std::to_string(getpid()) + "-" +
                            backend + "?rank=0&world_size=1";
    s = C(c10d_pg_init)(url.c_str(), backend, -1, -1, &o, &pg);
  }
  check(s == C10D_STATUS_OK, label + ": creating the group: " + C(c10d_last_error)());

  double x[5] = {1.5, -2, 3, 0.25, 1e10};
  c10d_tensor_t t = c10d_tensor_cpu(x, 5, C10D_FLOAT64);
  c10d_op_options_t opts;
  c10d_op_options_init(&opts);
  opts.premul_scale = 4;
  c10d_work_t* w = nullptr;
  s = C(c10d_allreduce)(pg, &t, C10D_REDUCE_PREMUL_SUM, &opts, &w);
  check(s == C10D_STATUS_OK, label + ": c10d_allreduce: " + C(c10d_last_error)());
  s = C(c10d_work_wait)(w, C10D_TIMEOUT_DEFAULT);
  check(s == C10D_STATUS_OK, label + ": c10d_work_wait: " + C(c10d_last_error)());
  C(c10d_work_release)(w);
  const double want[5] = {6, -8, 12, 1, 4e10};  // one rank: premul_sum is x * 4
  for (int i = 0; i < 5; ++i) {
    check(x[i] == want[i], label + ": element " + std::to_string(i) + " is " +
                               std::to_string(x[i]) + ", expected " + std::to_string(want[i]));
  }

  // Errors come back as a status and the thread's message.
  t.dtype = static_cast<c10d_dtype_t>(12);
  s = C(c10d_allreduce)(pg, &t, C10D_REDUCE_SUM, nullptr, &w);
  check(s == C10D_STATUS_INVALID_ARGUMENT && w == nullptr &&
            std::strstr(C(c10d_last_error)(), "dtype 12") != nullptr,
        label + ": bad dtype gave " + C(c10d_status_name)(s) + ": " + C(c10d_last_error)());
  C(c10d_pg_destroy)(pg);
  std::printf("%s: allreduce on one rank OK\n", label.c_str());
}

}  // namespace

int main() {
  check(dlopen(C10D_SONAME, RTLD_NOW | RTLD_NOLOAD) == nullptr,
        std::string(C10D_SONAME) + " is already loaded: this program must not link it");
  g_lib = dlopen(C10D_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (g_lib == nullptr) fail(std::string("dlopen(") + C10D_SONAME + "): " + dlerror());
  // RTLD_LOCAL: the C API is not in the global scope.
  check(dlsym(RTLD_DEFAULT, "c10d_allreduce") == nullptr,
        "c10d_allreduce is visible in the global scope after an RTLD_LOCAL dlopen");

  check(C(c10d_abi_version)() == C10D_ABI_VERSION,
        "c10d_abi_version() = " + std::to_string(C(c10d_abi_version)()));
  check(std::strcmp(C(c10d_version)(), C10D_VERSION) == 0,
        std::string("c10d_version() = ") + C(c10d_version)());

  allreduceOnOneRank("verbs", false);
  allreduceOnOneRank("verbs", true);
#if C10D_HAVE_GLOO
  allreduceOnOneRank("gloo", false);
  allreduceOnOneRank("gloo", true);
#endif
  if (dlclose(g_lib) != 0) fail(std::string("dlclose: ") + dlerror());
  std::printf("dlopen test: OK (%s)\n", C10D_SONAME);
  return 0;
}
