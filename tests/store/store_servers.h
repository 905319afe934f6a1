// Test helpers: a real etcd or Redis server for one test, started on free loopback ports with its
// data in a fresh mkdtemp directory, stopped (SIGKILL) and removed by the destructor. The server
// also dies with the test process if that crashes (PR_SET_PDEATHSIG), so nothing outlives a test.
//
// The binaries come from C10D_ETCD_BIN / C10D_REDIS_SERVER_BIN, else PATH (Debian: etcd-server,
// redis-server; scripts/install-deps.sh installs both). serverMissing() says why a test must skip.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

class ServerProcess {
 public:
  enum class Kind { kEtcd, kRedis };

  // "" when the server binary for `kind` can run here, else the reason (for GTEST_SKIP).
  static std::string serverMissing(Kind kind);

  // Starts the server and waits (at most 30 s) until it answers; throws on failure with the
  // server's log.
  explicit ServerProcess(Kind kind);
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  uint16_t port() const { return port_; }
  std::string endpoint() const { return "127.0.0.1:" + std::to_string(port_); }
  pid_t pid() const { return pid_; }
  // SIGKILLs the server now (the fault tests); the directory stays until destruction.
  void kill();
  std::string log() const;

 private:
  void start();
  bool ready();

  const Kind kind_;
  std::string dir_;
  uint16_t port_ = 0;
  uint16_t peerPort_ = 0;  // etcd's raft port
  pid_t pid_ = -1;
  pid_t owner_ = -1;  // the process that started the server: only it stops it
};

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
