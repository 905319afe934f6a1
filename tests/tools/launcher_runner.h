// Test helper: runs the c10drun binary as a real child process and collects what it did.
//
// runLauncher() forks/execs C10DRUN_PATH with the given arguments, captures its stdout and
// stderr separately, and waits for it up to a deadline (then SIGKILLs it and reports timedOut:
// a test never hangs). An optional hook sees the output so far after every read and may act on
// the launcher (e.g. send it a signal once the workers said they are ready).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

struct LauncherRun {
  bool exited = false;  // else killed by a signal
  int exitCode = -1;
  int signal = 0;
  bool timedOut = false;
  std::string out;
  std::string err;
  double seconds = 0;            // wall time from spawn to exit
  std::string describe() const;  // for assertion messages
};

struct LauncherHooks {
  std::chrono::milliseconds timeout{40000};
  // Called after each read with the launcher's pid and its output so far.
  std::function<void(pid_t pid, const std::string& out, const std::string& err)> onOutput;
};

// Runs `C10DRUN_PATH args...`.
LauncherRun runLauncher(const std::vector<std::string>& args, const LauncherHooks& hooks = {});

// Path of the test worker program (WORKER_PATH).
std::string workerPath();

// The lines of `text` (without the newlines; a last partial line included).
std::vector<std::string> splitLines(const std::string& text);

// The numbers that follow `word ` in `text` ("pid 123" -> 123), in order.
std::vector<int> numbersAfter(const std::string& text, const std::string& word);

// True while `pid` exists and is not a zombie.
bool processAlive(pid_t pid);

// Splits "[rankR]: REST" into R and REST; false when `line` has no such prefix.
bool parsePrefixed(const std::string& line, int* rank, std::string* rest);

// Count of non-overlapping occurrences of `needle` in `haystack`.
int countOf(const std::string& haystack, const std::string& needle);

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
