// Test helper: runs the c10d_trace binary (C10D_TRACE_PATH) on files and collects its exit status,
// stdout and stderr. Bounded: the run is wrapped in timeout(1) (30 s). Header-only.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

struct TraceRun {
  int exitCode = -1;
  std::string out, err;
  std::string describe() const {
    return "exit " + std::to_string(exitCode) + "\nstdout:\n" + out + "\nstderr:\n" + err;
  }
};

inline TraceRun runTrace(const std::vector<std::string>& args, const std::string& errFile) {
  std::string cmd = std::string("timeout 30 '") + C10D_TRACE_PATH + "'";
  for (const auto& a : args) cmd += " '" + a + "'";
  cmd += " 2>'" + errFile + "'";
  TraceRun run;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return run;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) run.out.append(buf, n);
  const int status = ::pclose(p);
  run.exitCode = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream in(errFile);
  std::stringstream ss;
  ss << in.rdbuf();
  run.err = ss.str();
  return run;
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
