#include "tests/tools/launcher_runner.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

std::string LauncherRun::describe() const {
  std::ostringstream ss;
  ss << "launcher " << (timedOut ? "TIMED OUT, " : "");
  if (exited) {
    ss << "exited " << exitCode;
  } else {
    ss << "killed by signal " << signal;
  }
  ss << " after " << seconds << " s\n--- stdout ---\n"
     << out.substr(0, 4000) << "\n--- stderr ---\n"
     << err.substr(0, 4000);
  return ss.str();
}

std::string workerPath() {
  return WORKER_PATH;
}

LauncherRun runLauncher(const std::vector<std::string>& args, const LauncherHooks& hooks) {
  int outPipe[2], errPipe[2];
  if (pipe2(outPipe, O_CLOEXEC) != 0 || pipe2(errPipe, O_CLOEXEC) != 0) {
    throw std::runtime_error(std::string("pipe2: ") + std::strerror(errno));
  }
  std::vector<std::string> argvStrings = {C10DRUN_PATH};
  argvStrings.insert(argvStrings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : argvStrings) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);

  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    dup2(outPipe[1], 1);
    dup2(errPipe[1], 2);
    int devNull = open("/dev/null", O_RDONLY);
    if (devNull >= 0) dup2(devNull, 0);
    execv(argv[0], argv.data());
    _exit(127);
  }
  close(outPipe[1]);
  close(errPipe[1]);

  LauncherRun run;
  auto deadline = start + hooks.timeout;
  int fds[2] = {outPipe[0], errPipe[0]};
  std::string* sinks[2] = {&run.out, &run.err};
  bool open[2] = {true, true};
  while (open[0] || open[1]) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      run.timedOut = true;
      kill(pid, SIGKILL);
      break;
    }
    pollfd p[2];
    int n = 0;
    int idx[2];
    for (int i = 0; i < 2; ++i) {
      if (open[i]) {
        p[n] = pollfd{fds[i], POLLIN, 0};
        idx[n++] = i;
      }
    }
    int r = poll(p, n, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    for (int j = 0; j < n && r > 0; ++j) {
      if (p[j].revents == 0) continue;
      char buf[65536];
      ssize_t got = read(p[j].fd, buf, sizeof(buf));
      if (got > 0) {
        sinks[idx[j]]->append(buf, got);
      } else if (got == 0 || errno != EINTR) {
        open[idx[j]] = false;
      }
    }
    if (hooks.onOutput) hooks.onOutput(pid, run.out, run.err);
  }
  close(outPipe[0]);
  close(errPipe[0]);
  int status = 0;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline && !run.timedOut) {
      run.timedOut = true;
      kill(pid, SIGKILL);
    }
    usleep(1000);
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) {
    run.exited = true;
    run.exitCode = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    run.signal = WTERMSIG(status);
  }
  return run;
}

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return lines;
}

std::vector<int> numbersAfter(const std::string& text, const std::string& word) {
  std::vector<int> out;
  std::string needle = word + " ";
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    size_t p = at + needle.size();
    if (p < text.size() && text[p] >= '0' && text[p] <= '9') out.push_back(std::atoi(&text[p]));
  }
  return out;
}

bool processAlive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return false;
  std::string line;
  std::getline(stat, line);
  size_t close = line.rfind(')');
  if (close == std::string::npos || close + 2 >= line.size()) return false;
  char state = line[close + 2];
  return state != 'Z' && state != 'X';
}

bool parsePrefixed(const std::string& line, int* rank, std::string* rest) {
  const std::string open = "[rank";
  if (line.compare(0, open.size(), open) != 0) return false;
  size_t p = open.size();
  size_t digits = p;
  while (digits < line.size() && line[digits] >= '0' && line[digits] <= '9') ++digits;
  if (digits == p || line.compare(digits, 3, "]: ") != 0) return false;
  *rank = std::stoi(line.substr(p, digits - p));
  *rest = line.substr(digits + 3);
  return true;
}

int countOf(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos;
       at = haystack.find(needle, at + needle.size())) {
    ++n;
  }
  return n;
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
