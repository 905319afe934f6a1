#include "tests/perf/perf_process.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

std::string readFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

namespace {

int freePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof(a);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  close(fd);
  return port;
}

}  // namespace

bool RunResult::allOk() const {
  for (const auto& r : ranks) {
    if (!r.ok()) return false;
  }
  return true;
}

bool RunResult::anyExitedNonZero() const {
  for (const auto& r : ranks) {
    if (r.exited && r.exitCode != 0) return true;
  }
  return false;
}

std::vector<int> RunResult::exitCodes() const {
  std::vector<int> codes;
  for (const auto& r : ranks) codes.push_back(r.exited ? r.exitCode : -1);
  return codes;
}

RunResult runPerf(const std::string& binary, int n, const std::vector<std::string>& args,
                  const std::vector<std::pair<std::string, std::string>>& env) {
  const std::string dir = test::uniqueTempPath("perf");
  const std::string path = std::string(C10D_PERF_BIN_DIR) + "/" + binary;
  const int port = freePort();
  const int size = n == 0 ? 1 : n;
  test::MultiProcOptions mp;
  mp.timeout = std::chrono::milliseconds(90000);
  RunResult res;
  res.ranks = test::runRanks(
      size,
      [&](int rank, int world) {
        for (const char* v : {"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
                              "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID",
                              "SLURM_NTASKS", "C10D_PERF_INJECT_ERROR", "C10D_TRANSPORT"}) {
          unsetenv(v);
        }
        if (n > 0) {
          setenv("RANK", std::to_string(rank).c_str(), 1);
          setenv("LOCAL_RANK", std::to_string(rank).c_str(), 1);
          setenv("WORLD_SIZE", std::to_string(world).c_str(), 1);
          setenv("MASTER_ADDR", "127.0.0.1", 1);
          setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
        }
        for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
        const std::string out = dir + ".out." + std::to_string(rank);
        const std::string err = dir + ".err." + std::to_string(rank);
        if (!freopen(out.c_str(), "w", stdout) || !freopen(err.c_str(), "w", stderr)) _exit(3);
        std::vector<std::string> words{path};
        words.insert(words.end(), args.begin(), args.end());
        std::vector<char*> argv;
        for (auto& w : words) argv.push_back(w.data());
        argv.push_back(nullptr);
        execv(path.c_str(), argv.data());
        _exit(127);
      },
      mp);
  res.out0 = readFile(dir + ".out.0");
  for (int r = 0; r < size; ++r) {
    res.err += readFile(dir + ".err." + std::to_string(r));
    std::remove((dir + ".out." + std::to_string(r)).c_str());
    std::remove((dir + ".err." + std::to_string(r)).c_str());
  }
  return res;
}

std::string findMpirun() {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string d; std::getline(dirs, d, ':');) {
    const std::string p = (d.empty() ? "." : d) + "/mpirun";
    if (access(p.c_str(), X_OK) == 0) return p;
  }
  return "";
}

RunResult runMpiPerf(const std::string& binary, int n, const std::vector<std::string>& args,
                     const std::vector<std::pair<std::string, std::string>>& env) {
  const std::string dir = test::uniqueTempPath("mpiperf");
  const std::string path = std::string(C10D_PERF_BIN_DIR) + "/" + binary;
  const std::string mpirun = findMpirun();
  test::MultiProcOptions mp;
  mp.timeout = std::chrono::milliseconds(90000);  // past timeout's 60 + 5 s
  RunResult res;
  res.ranks = test::runRanks(
      1,
      [&](int, int) {
        // Open MPI refuses root without these.
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
        unsetenv("C10D_PERF_INJECT_ERROR");
        // Open MPI leaks by design: no LeakSanitizer for the ranks in sanitizer builds.
        setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
        // A session directory of this run's own: two mpiruns starting at once (ctest -j2) race
        // to make the shared $TMPDIR/ompi.<host>.<uid>, and the loser's orte_init fails ("A call
        // to mkdir was unable to create the desired directory ... File exists").
        const std::string tmp = dir + ".ompi";
        if (mkdir(tmp.c_str(), 0700) != 0 || setenv("TMPDIR", tmp.c_str(), 1) != 0) _exit(3);
        std::vector<std::string> words{
            "timeout", "-k", "5", "60", mpirun, "--oversubscribe", "-np", std::to_string(n)};
        for (const auto& [k, v] : env) {
          setenv(k.c_str(), v.c_str(), 1);
          words.push_back("-x");
          words.push_back(k);
        }
        words.push_back(path);
        words.insert(words.end(), args.begin(), args.end());
        if (!freopen((dir + ".out").c_str(), "w", stdout) ||
            !freopen((dir + ".err").c_str(), "w", stderr)) {
          _exit(3);
        }
        std::vector<char*> argv;
        for (auto& w : words) argv.push_back(w.data());
        argv.push_back(nullptr);
        execvp("timeout", argv.data());
        _exit(127);
      },
      mp);
  res.out0 = readFile(dir + ".out");
  res.err = readFile(dir + ".err");
  std::remove((dir + ".out").c_str());
  std::remove((dir + ".err").c_str());
  return res;
}

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
