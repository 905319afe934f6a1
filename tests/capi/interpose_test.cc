// The torch situation in miniature: another library that defines c10d:: symbols of its own
// (impostor.cc: elementSize, toString, reduceInto, and the vtable and typeinfo of c10d::Work) is
// loaded RTLD_GLOBAL first, then libc10d RTLD_LOCAL (as a plugin loads it). The test first shows
// the impostor's definitions are live in the global scope (a library that binds its references at
// run time would pick them up), then runs 2 forked ranks through libc10d's C API on every CPU
// backend: allreduce (SUM on float64 and int32), allgather, an error message that names a dtype,
// works waited and released. Results must match references computed here; an interposed libc10d
// computes garbage, prints "impostor" or aborts in the impostor's Work.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "c10d/base/config.h"
#include "c10d/c_api.h"

namespace {

constexpr const char* kElementSize = "_ZN4c10d2v111elementSizeENS0_8DataTypeE";
constexpr const char* kToString = "_ZN4c10d2v18toStringENS0_8DataTypeE";
constexpr const char* kWorkVtable = "_ZTVN4c10d2v14WorkE";

int g_rank = -1;
void* g_lib = nullptr;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "[rank %d] interpose test: %s\n", g_rank, what.c_str());
  std::exit(1);
}

void check(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

template <typename F>
F sym(const char* name) {
  void* p = dlsym(g_lib, name);
  if (p == nullptr) fail(std::string("dlsym(") + name + ") failed");
  return reinterpret_cast<F>(p);
}
#define C(name) sym<decltype(&::name)>(#name)

std::string where(void* addr) {
  Dl_info info{};
  return dladdr(addr, &info) != 0 && info.dli_fname != nullptr ? info.dli_fname : "?";
}

void waitOk(c10d_work_t* w, const std::string& what) {
  const c10d_status_t s = C(c10d_work_wait)(w, C10D_TIMEOUT_DEFAULT);
  check(s == C10D_STATUS_OK, what + ": " + C(c10d_status_name)(s) + ": " + C(c10d_last_error)());
  C(c10d_work_release)(w);
}

void runBackend(const char* backend, const std::string& path, int rank) {
  const std::string url =
      "file://" + path + "-" + backend + "?rank=" + std::to_string(rank) + "&world_size=2";
  c10d_pg_options_t o;
  c10d_pg_options_init(&o);
  o.timeout_ms = 30000;
  c10d_pg_t* pg = nullptr;
  c10d_status_t s = C(c10d_pg_init)(url.c_str(), backend, -1, -1, &o, &pg);
  check(s == C10D_STATUS_OK, std::string(backend) + ": c10d_pg_init: " + C(c10d_last_error)());
  c10d_work_t* w = nullptr;

  double d[7];
  int32_t n[7];
  for (int i = 0; i < 7; ++i) {
    d[i] = 0.5 * i + 100.0 * rank;
    n[i] = 1000 * rank + i;
  }
  c10d_tensor_t td = c10d_tensor_cpu(d, 7, C10D_FLOAT64);
  c10d_tensor_t tn = c10d_tensor_cpu(n, 7, C10D_INT32);
  check(C(c10d_allreduce)(pg, &td, C10D_REDUCE_SUM, nullptr, &w) == C10D_STATUS_OK, "allreduce");
  waitOk(w, std::string(backend) + " allreduce float64");
  check(C(c10d_allreduce)(pg, &tn, C10D_REDUCE_SUM, nullptr, &w) == C10D_STATUS_OK, "allreduce");
  waitOk(w, std::string(backend) + " allreduce int32");
  for (int i = 0; i < 7; ++i) {
    check(d[i] == 1.0 * i + 100.0, std::string(backend) + ": float64 sum element " +
                                       std::to_string(i) + " is " + std::to_string(d[i]));
    check(n[i] == 1000 + 2 * i, std::string(backend) + ": int32 sum element " + std::to_string(i) +
                                    " is " + std::to_string(n[i]));
  }

  double all[2 * 3];
  double mine[3] = {rank + 0.25, rank + 0.5, rank + 0.75};
  c10d_tensor_t in = c10d_tensor_cpu(mine, 3, C10D_FLOAT64);
  c10d_tensor_t out = c10d_tensor_cpu(all, 6, C10D_FLOAT64);
  check(C(c10d_allgather_into_tensor)(pg, &out, &in, nullptr, &w) == C10D_STATUS_OK, "allgather");
  waitOk(w, std::string(backend) + " allgather");
  for (int i = 0; i < 6; ++i) {
    check(all[i] == (i / 3) + 0.25 * (i % 3 + 1),
          std::string(backend) + ": allgather element " + std::to_string(i));
  }

  // A message that names a dtype through c10d::toString(DataType).
  float f = 1;
  c10d_tensor_t tf = c10d_tensor_cpu(&f, 1, C10D_FLOAT32);
  s = C(c10d_allreduce)(pg, &tf, C10D_REDUCE_BXOR, nullptr, &w);
  const std::string msg = C(c10d_last_error)();
  check(s == C10D_STATUS_INVALID_ARGUMENT && msg.find("float") != std::string::npos &&
            msg.find("impostor") == std::string::npos,
        std::string(backend) + ": bxor on float gave '" + msg + "'");
  C(c10d_pg_destroy)(pg);
  std::printf("[rank %d] %s: correct with the impostor loaded first\n", rank, backend);
}

void rankMain(int rank, const std::string& path) {
  g_rank = rank;
  void* impostor = dlopen(IMPOSTOR_PATH, RTLD_NOW | RTLD_GLOBAL);
  if (impostor == nullptr) fail(std::string("dlopen(impostor): ") + dlerror());
  g_lib = dlopen(C10D_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (g_lib == nullptr) fail(std::string("dlopen(" C10D_SONAME "): ") + dlerror());

  // The impostor's definitions are what the global scope resolves these names to, and they are
  // not libc10d's: a run-time-bound reference from libc10d would land on them.
  using ElementSize = size_t (*)(uint8_t);
  auto globalSize = reinterpret_cast<ElementSize>(dlsym(RTLD_DEFAULT, kElementSize));
  auto ourSize = reinterpret_cast<ElementSize>(dlsym(g_lib, kElementSize));
  check(globalSize != nullptr && ourSize != nullptr && globalSize != ourSize,
        "expected two definitions of c10d::elementSize (impostor and libc10d)");
  check(where(reinterpret_cast<void*>(globalSize)).find("impostor") != std::string::npos,
        "the global c10d::elementSize is not the impostor's: " +
            where(reinterpret_cast<void*>(globalSize)));
  check(globalSize(1) == 1 && ourSize(1) == 8, "elementSize(float64): impostor " +
                                                   std::to_string(globalSize(1)) + ", libc10d " +
                                                   std::to_string(ourSize(1)));
  check(dlsym(RTLD_DEFAULT, kToString) != dlsym(g_lib, kToString), "one c10d::toString only");
  void* vtable = dlsym(RTLD_DEFAULT, kWorkVtable);
  check(vtable != nullptr && vtable != dlsym(g_lib, kWorkVtable) &&
            where(vtable).find("impostor") != std::string::npos,
        "the global vtable for c10d::Work is not the impostor's");

  runBackend("verbs", path, rank);
#if C10D_HAVE_GLOO
  runBackend("gloo", path, rank);
#endif
}

}  // namespace

int main() {
  // A fresh directory (pids wrap over a CI run: a pid-named store file may be a stale one).
  char dir[] = "/tmp/c10d-capi-interpose-XXXXXX";
  if (::mkdtemp(dir) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string path = std::string(dir) + "/store";
  std::fflush(stdout);
  pid_t pids[2];
  for (int r = 0; r < 2; ++r) {
    pids[r] = fork();
    if (pids[r] == 0) {
      alarm(60);  // never hang the suite
      rankMain(r, path);
      std::fflush(stdout);
      std::exit(0);  // not _exit: LeakSanitizer checks the rank at exit
    }
  }
  int failed = 0;
  for (int r = 0; r < 2; ++r) {
    int status = 0;
    waitpid(pids[r], &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "rank %d failed (%s %d)\n", r,
                   WIFEXITED(status) ? "exit status" : "signal",
                   WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
      ++failed;
    }
  }
  for (const char* backend : {"verbs", "gloo"}) ::unlink((path + "-" + backend).c_str());
  ::rmdir(dir);
  if (failed != 0) return 1;
  std::printf("interpose test: OK\n");
  return 0;
}
