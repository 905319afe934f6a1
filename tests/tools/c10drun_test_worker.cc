// Worker program for the c10drun tests: one binary, a behavior per mode (argv[1]).
//
//   env                      print the launcher-provided variables on one line, exit 0
//   argv ARGS...             print each argument on its own line, exit 0
//   lines N                  print N numbered lines to stdout and to stderr in several write()s
//                            each (so they reach the launcher in pieces), then a partial line
//   fail RANK CODE SLEEP_S   rank RANK exits CODE after 100 ms; the others print "pid P" and sleep
//   raise RANK SIG           rank RANK raises SIG; the others sleep 60 s
//   ignore-term RANK CODE DIR  the others ignore SIGTERM, print "pid P", create DIR/ready<rank> and
//                            sleep 60 s; rank RANK exits CODE once all those files exist
//   trap                     print "ready P", then on SIGINT/SIGTERM print "got SIG..." and exit 0
//   fail-until N CODE        print "attempt C rank R" (C = C10D_RESTART_COUNT); while C < N rank 0
//                            exits CODE and the others sleep 60 s; then every rank exits 0
//   pid                      print "ready P", sleep 60 s
//   ignore-all               ignore SIGINT and SIGTERM, print "ready P", sleep 60 s
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

namespace {

int envInt(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : -1;
}

void say(int fd, const std::string& s) {
  const char* p = s.data();
  size_t n = s.size();
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) return;
    p += w;
    n -= static_cast<size_t>(w);
  }
}

void sleepSeconds(double s) {
  timespec ts{static_cast<time_t>(s), static_cast<long>((s - static_cast<time_t>(s)) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

void printPidLine(const char* word) {
  say(1, std::string(word) + " " + std::to_string(getpid()) + "\n");
}

volatile sig_atomic_t gotSignal = 0;
void onSignal(int sig) {
  gotSignal = sig;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 100;
  std::string mode = argv[1];
  int rank = envInt("RANK");
  if (mode == "env") {
    std::string line;
    for (const char* key :
         {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "MASTER_ADDR",
          "MASTER_PORT", "C10D_RESTART_COUNT", "TORCHELASTIC_RESTART_COUNT", "C10D_STORE_SECRET"}) {
      const char* v = std::getenv(key);
      line += std::string(key) + "=" + (v != nullptr ? v : "<unset>") + " ";
    }
    say(1, line + "\n");
    return 0;
  }
  if (mode == "argv") {
    for (int i = 2; i < argc; ++i) say(1, std::string(argv[i]) + "\n");
    return 0;
  }
  if (mode == "lines" && argc >= 3) {
    int n = std::atoi(argv[2]);
    std::string r = std::to_string(rank);
    std::string pad(40 + 10 * rank, static_cast<char>('a' + rank));
    for (int i = 0; i < n; ++i) {
      // Three writes per line: the launcher sees partial lines all the time.
      say(1, "out" + r + " line ");
      say(1, std::to_string(i) + " ");
      say(1, pad + "\n");
      say(2, "err" + r + " line " + std::to_string(i) + "\n");
    }
    say(1, "tail" + r);  // no newline
    return 0;
  }
  if (mode == "fail" && argc >= 5) {
    if (rank == std::atoi(argv[2])) {
      sleepSeconds(0.1);
      return std::atoi(argv[3]);
    }
    printPidLine("pid");
    sleepSeconds(std::atof(argv[4]));
    return 0;
  }
  if (mode == "raise" && argc >= 4) {
    if (rank == std::atoi(argv[2])) {
      sleepSeconds(0.1);
      raise(std::atoi(argv[3]));
      return 101;
    }
    sleepSeconds(60);
    return 0;
  }
  if (mode == "ignore-term" && argc >= 5) {
    std::string dir = argv[4];
    if (rank == std::atoi(argv[2])) {
      // Fail only once every other rank ignores SIGTERM (their marker files exist), or after 10 s.
      for (int i = 0; i < 1000; ++i) {
        int ready = 0;
        for (int r = 0; r < envInt("WORLD_SIZE"); ++r) {
          ready += access((dir + "/ready" + std::to_string(r)).c_str(), F_OK) == 0 ? 1 : 0;
        }
        if (ready >= envInt("WORLD_SIZE") - 1) break;
        sleepSeconds(0.01);
      }
      return std::atoi(argv[3]);
    }
    signal(SIGTERM, SIG_IGN);
    printPidLine("pid");
    FILE* f = std::fopen((dir + "/ready" + std::to_string(rank)).c_str(), "w");
    if (f != nullptr) std::fclose(f);
    sleepSeconds(60);
    return 0;
  }
  if (mode == "trap") {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_handler = onSignal;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    printPidLine("ready");
    for (int i = 0; i < 600 && gotSignal == 0; ++i) sleepSeconds(0.1);
    if (gotSignal == 0) return 102;
    say(1, std::string("got ") + (gotSignal == SIGINT ? "SIGINT" : "SIGTERM") + "\n");
    return 0;
  }
  if (mode == "fail-until" && argc >= 4) {
    int count = envInt("C10D_RESTART_COUNT");
    say(1, "attempt " + std::to_string(count) + " rank " + std::to_string(rank) + "\n");
    if (count >= std::atoi(argv[2])) return 0;
    if (rank == 0) return std::atoi(argv[3]);
    sleepSeconds(60);
    return 0;
  }
  if (mode == "ignore-all") {
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    printPidLine("ready");
    sleepSeconds(60);
    return 0;
  }
  if (mode == "pid") {
    printPidLine("ready");
    sleepSeconds(60);
    return 0;
  }
  return 100;
}
