#include "tests/store/store_fixtures.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <exception>
#include <mutex>
#include <ostream>
#include <thread>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/store/file_store.h"
#include "c10d/store/hash_store.h"
#include "c10d/store/prefix_store.h"
#include "c10d/store/tcp/tcp_store.h"
#include "tests/common/multiproc.h"
#include "tests/store/store_servers.h"
#ifdef C10D_TEST_ETCD_STORE
#include "c10d/store/etcd/etcd_store.h"
#endif
#ifdef C10D_TEST_REDIS_STORE
#include "c10d/store/redis/redis_store.h"
#endif

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

class HashStoreFixture : public StoreFixture {
 public:
  std::shared_ptr<Store> make() override { return store_; }
  bool sharedAcrossProcesses() const override { return false; }

 protected:
  std::shared_ptr<HashStore> store_ = std::make_shared<HashStore>(kStoreTestTimeout);
};

class PrefixOverHashStoreFixture : public HashStoreFixture {
 public:
  std::shared_ptr<Store> make() override { return std::make_shared<PrefixStore>("pg0", store_); }
};

class FileStoreFixture : public StoreFixture {
 public:
  ~FileStoreFixture() override { ::unlink(path_.c_str()); }
  // numUsers < 0: the fixture, not the last user, removes the file (clients come and go).
  std::shared_ptr<Store> make() override {
    return std::make_shared<FileStore>(path_, -1, kStoreTestTimeout);
  }

 private:
  const std::string path_ = uniqueTempPath("filestore");
};

// A TCPStore server in a forked child process: the test process stays single-threaded (so forking
// ranks from it is safe) and every rank, the parent included, is an ordinary client. The child
// publishes its port through a pipe and serves until the parent closes the other pipe (or dies).
// With a secret, the server and every client authenticate (HMAC challenge-response) first.
class TCPStoreFixture : public StoreFixture {
 public:
  explicit TCPStoreFixture(bool prefixed, std::string secret = "")
      : prefixed_(prefixed), secret_(std::move(secret)) {
    int portPipe[2];
    int stopPipe[2];
    if (::pipe(portPipe) != 0 || ::pipe(stopPipe) != 0) throw Error("pipe failed");
    std::fflush(stdout);
    std::fflush(stderr);
    pid_ = ::fork();
    if (pid_ < 0) throw Error("fork failed");
    if (pid_ == 0) serve(portPipe, stopPipe);  // never returns
    ::close(portPipe[1]);
    ::close(stopPipe[0]);
    stopFd_ = stopPipe[1];
    int port = 0;
    pollfd pfd{portPipe[0], POLLIN, 0};
    if (::poll(&pfd, 1, 30000) == 1 && ::read(portPipe[0], &port, sizeof(port)) == sizeof(port)) {
      port_ = static_cast<uint16_t>(port);
    }
    ::close(portPipe[0]);
    if (port_ == 0) throw Error("the TCPStore server process did not start (see its stderr)");
  }

  ~TCPStoreFixture() override {
    ::close(stopFd_);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }

  std::shared_ptr<Store> make() override {
    TCPStoreOptions options;
    options.host = "127.0.0.1";
    options.port = port_;
    options.isServer = false;
    options.timeout = kStoreTestTimeout;
    options.secret = secret_;
    auto store = std::make_shared<TCPStore>(options);
    if (!prefixed_) return store;
    return std::make_shared<PrefixStore>("pg0", store);
  }

 private:
  [[noreturn]] void serve(int portPipe[2], int stopPipe[2]) {
    ::close(portPipe[0]);
    ::close(stopPipe[1]);
    int code = 0;
    try {
      TCPStoreOptions options;
      options.host = "127.0.0.1";
      options.port = 0;
      options.isServer = true;
      options.timeout = kStoreTestTimeout;
      options.secret = secret_;
      TCPStore server(options);
      int port = server.port();
      if (::write(portPipe[1], &port, sizeof(port)) != sizeof(port)) code = 3;
      // Serve until the parent closes its end (or exits); a 10-minute cap so nothing outlives a
      // hung test.
      pollfd pfd{stopPipe[0], POLLIN, 0};
      for (int i = 0; i < 600 && ::poll(&pfd, 1, 1000) == 0; ++i) {
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "TCPStore server process: %s\n", e.what());
      code = 2;
    }
    std::fflush(stderr);
    ::_exit(code);
  }

  const bool prefixed_;
  const std::string secret_;
  pid_t pid_ = -1;
  int stopFd_ = -1;
  uint16_t port_ = 0;
};

#ifdef C10D_TEST_ETCD_STORE
// A fresh etcd per test; every client takes the job's one lease under the prefix.
class EtcdStoreFixture : public StoreFixture {
 public:
  std::shared_ptr<Store> make() override {
    EtcdStoreOptions o;
    o.endpoints = {server_.endpoint()};
    o.prefix = "conformance";
    o.timeout = kStoreTestTimeout;
    return std::make_shared<EtcdStore>(o);
  }
  // Every write is a Raft round and a contended add a retried transaction (~3 ms each here): 8 x
  // 1000 contended adds take half a minute. 4 MiB values: etcd's default limit is 1.5 MiB (the
  // test server raises it to 32 MiB); 16 MiB ones take 13 s through the JSON gateway.
  int contendedOpsPerRank() const override { return 100; }
  size_t largeValueBytes() const override { return 4 << 20; }

 private:
  ServerProcess server_{ServerProcess::Kind::kEtcd};
};
#endif

#ifdef C10D_TEST_REDIS_STORE
class RedisStoreFixture : public StoreFixture {
 public:
  std::shared_ptr<Store> make() override {
    RedisStoreOptions o;
    o.host = "127.0.0.1";
    o.port = server_.port();
    o.prefix = "conformance";
    o.timeout = kStoreTestTimeout;
    return std::make_shared<RedisStore>(o);
  }

 private:
  ServerProcess server_{ServerProcess::Kind::kRedis};
};
#endif

}  // namespace

void PrintTo(const StoreKind& kind, std::ostream* os) {
  *os << kind.name;
}

std::vector<StoreKind> allStoreKinds() {
  return {
      {"HashStore", [] { return std::make_unique<HashStoreFixture>(); }, {}},
      {"PrefixOverHashStore", [] { return std::make_unique<PrefixOverHashStoreFixture>(); }, {}},
      {"FileStore", [] { return std::make_unique<FileStoreFixture>(); }, {}},
      {"TCPStore", [] { return std::make_unique<TCPStoreFixture>(false); }, {}},
      {"PrefixOverTCPStore", [] { return std::make_unique<TCPStoreFixture>(true); }, {}},
      {"TCPStoreWithSecret",
       [] { return std::make_unique<TCPStoreFixture>(false, "conformance-secret"); },
       {}},
#ifdef C10D_TEST_ETCD_STORE
      {"EtcdStore", [] { return std::make_unique<EtcdStoreFixture>(); },
       [] { return ServerProcess::serverMissing(ServerProcess::Kind::kEtcd); }},
#endif
#ifdef C10D_TEST_REDIS_STORE
      {"RedisStore", [] { return std::make_unique<RedisStoreFixture>(); },
       [] { return ServerProcess::serverMissing(ServerProcess::Kind::kRedis); }},
#endif
  };
}

void runParallel(StoreFixture& fixture, int size, const std::function<void(int, int, Store&)>& fn) {
  if (fixture.sharedAcrossProcesses()) {
    MultiProcOptions options;
    options.timeout = std::chrono::milliseconds(120000);
    expectAllRanksOk(
        size,
        [&](int rank, int n) {
          auto store = fixture.make();
          fn(rank, n, *store);
        },
        options);
    return;
  }
  // In-process store: ranks are threads. Every blocking store call has a timeout, so join() ends.
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto store = fixture.make();
        fn(r, size, *store);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << r << " threw: " << e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
