// c10drun: the c10d job launcher (torchrun's habits). See options.cc for the usage text and
// supervisor.h for how workers are run, watched, stopped and restarted, elastic_agent.h for the
// dynamic rendezvous (--rdzv-backend c10d|etcd).
#include <fcntl.h>
#include <unistd.h>

#include <exception>
#include <iostream>

#include "tools/c10drun/elastic_agent.h"
#include "tools/c10drun/options.h"
#include "tools/c10drun/signals.h"
#include "tools/c10drun/supervisor.h"

namespace {

// Fds 0..2 must be open so that pipes never land on them (the child dup2s onto 0..2).
void ensureStdFds() {
  for (int fd = 0; fd < 3; ++fd) {
    if (fcntl(fd, F_GETFD) == -1) {
      int devNull = open("/dev/null", O_RDWR);
      if (devNull >= 0 && devNull != fd) {
        dup2(devNull, fd);
        close(devNull);
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  ensureStdFds();
  c10d::run::ParseResult parsed = c10d::run::parseOptions(argc, argv);
  if (!parsed.run) return parsed.exitCode;
  try {
    c10d::run::SignalEvents signals;
    if (parsed.options.elastic()) return c10d::run::runElastic(parsed.options, signals);
    c10d::run::Supervisor supervisor(std::move(parsed.options), signals);
    return supervisor.run();
  } catch (const std::exception& e) {
    std::cerr << "c10drun: error: " << e.what() << std::endl;
    return 1;
  }
}
