#include "tests/store/store_servers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using Clock = std::chrono::steady_clock;

std::string findBinary(const char* envVar, const char* name) {
  const char* v = std::getenv(envVar);
  if (v != nullptr && *v != '\0') return ::access(v, X_OK) == 0 ? v : "";
  const char* path = std::getenv("PATH");
  std::stringstream ss(path != nullptr && *path != '\0' ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  for (const char* d : {"/usr/bin/", "/usr/sbin/", "/usr/local/bin/"}) {
    const std::string candidate = std::string(d) + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

const char* binaryEnv(ServerProcess::Kind kind) {
  return kind == ServerProcess::Kind::kEtcd ? "C10D_ETCD_BIN" : "C10D_REDIS_SERVER_BIN";
}
const char* binaryName(ServerProcess::Kind kind) {
  return kind == ServerProcess::Kind::kEtcd ? "etcd" : "redis-server";
}

uint16_t freeLoopbackPort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error("socket failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    ::close(fd);
    throw std::runtime_error("bind to a free loopback port failed");
  }
  ::close(fd);
  return ntohs(addr.sin_port);
}

// Sends `request` to 127.0.0.1:port and returns what comes back within 1 s ("" on failure).
std::string exchange(uint16_t port, const std::string& request) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return "";
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  std::string reply;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(request.size())) {
    const auto deadline = Clock::now() + std::chrono::seconds(1);
    char buf[512];
    while (Clock::now() < deadline) {
      pollfd pfd{fd, POLLIN, 0};
      if (::poll(&pfd, 1, 100) != 1) continue;
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n <= 0) break;
      reply.append(buf, static_cast<size_t>(n));
      if (reply.find("PONG") != std::string::npos || reply.find("}") != std::string::npos) break;
    }
  }
  ::close(fd);
  return reply;
}

std::string tempRoot() {
  struct stat st {};
  if (::stat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && ::access("/dev/shm", W_OK) == 0) {
    return "/dev/shm";  // tmpfs: etcd's fsyncs cost nothing
  }
  const char* t = std::getenv("TMPDIR");
  return t != nullptr && *t != '\0' ? t : "/tmp";
}

}  // namespace

std::string ServerProcess::serverMissing(Kind kind) {
  if (!findBinary(binaryEnv(kind), binaryName(kind)).empty()) return "";
  return std::string(binaryName(kind)) + " not found (set " + binaryEnv(kind) +
         " or install Debian's " + (kind == Kind::kEtcd ? "etcd-server" : "redis-server") +
         ": scripts/install-deps.sh)";
}

ServerProcess::ServerProcess(Kind kind) : kind_(kind), owner_(::getpid()) {
  std::string templ = tempRoot() + "/c10d-" + binaryName(kind) + "-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) {
    throw std::runtime_error("mkdtemp " + templ + ": " + std::strerror(errno));
  }
  dir_ = templ;
  // Two tries: another process may take the free port between our probe and the server's bind.
  for (int attempt = 0;; ++attempt) {
    try {
      start();
      return;
    } catch (const std::exception&) {
      if (attempt == 1) {
        std::error_code ec;
        std::filesystem::remove_all(dir_, ec);
        throw;
      }
    }
  }
}

void ServerProcess::start() {
  const std::string bin = findBinary(binaryEnv(kind_), binaryName(kind_));
  if (bin.empty()) throw std::runtime_error(serverMissing(kind_));
  port_ = freeLoopbackPort();
  std::vector<std::string> args{bin};
  if (kind_ == Kind::kEtcd) {
    peerPort_ = freeLoopbackPort();
    const std::string client = "http://127.0.0.1:" + std::to_string(port_);
    const std::string peer = "http://127.0.0.1:" + std::to_string(peerPort_);
    args.insert(args.end(),
                {"--name", "c10d-test", "--data-dir", dir_ + "/data", "--listen-client-urls",
                 client, "--advertise-client-urls", client, "--listen-peer-urls", peer,
                 "--initial-advertise-peer-urls", peer, "--initial-cluster", "c10d-test=" + peer,
                 // The conformance suite stores 16 MiB values (22 MiB of base64 JSON).
                 "--max-request-bytes", "33554432", "--quota-backend-bytes", "4294967296",
                 "--log-level", "warn"});
  } else {
    args.insert(args.end(), {"--port", std::to_string(port_), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", dir_, "--daemonize", "no"});
  }
  const std::string logPath = dir_ + "/server.log";
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error(std::string("fork: ") + std::strerror(errno));
  if (pid_ == 0) {
    // Dies with the test process, however that ends.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);
    const int log = ::open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0) {
      ::dup2(log, 1);
      ::dup2(log, 2);
    }
    const int null = ::open("/dev/null", O_RDONLY);
    if (null >= 0) ::dup2(null, 0);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    std::fprintf(stderr, "execv %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (Clock::now() < deadline) {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      throw std::runtime_error(std::string(binaryName(kind_)) + " exited at start; its log:\n" +
                               log());
    }
    if (ready()) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill();
  throw std::runtime_error(std::string(binaryName(kind_)) + " on port " + std::to_string(port_) +
                           " did not answer within 30 s; its log:\n" + log());
}

bool ServerProcess::ready() {
  if (kind_ == Kind::kRedis) return exchange(port_, "PING\r\n").find("+PONG") == 0;
  return exchange(port_, "GET /health HTTP/1.0\r\n\r\n").find("\"health\":\"true\"") !=
         std::string::npos;
}

void ServerProcess::kill() {
  if (pid_ <= 0 || ::getpid() != owner_) return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  pid_ = -1;
}

std::string ServerProcess::log() const {
  std::ifstream in(dir_ + "/server.log");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ServerProcess::~ServerProcess() {
  if (::getpid() != owner_) return;  // a forked rank: the server is not ours to stop
  kill();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
