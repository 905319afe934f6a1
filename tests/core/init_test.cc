// Tests for c10d/bootstrap/init.h: every init URL form (and malformed ones), environment variables,
// and rendezvous / init over file://, tcp:// and env:// with 4 real processes.
#include "c10d/bootstrap/init.h"
#include "c10d/base/settings.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

#include "c10d/base/abi.h"
#include "c10d/store/hash_store.h"
#include "c10d/store/store.h"
#include "tests/common/multiproc.h"
#include "tests/core/fake_backend.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace {

using std::chrono::milliseconds;

// Sets (or with nullptr unsets) an environment variable for the scope, restoring it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    if (old != nullptr) old_ = old, had_ = true;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_.c_str(), old_.c_str(), 1);
    } else {
      unsetenv(name_.c_str());
    }
  }

 private:
  std::string name_;
  std::string old_;
  bool had_ = false;
};

void expectBadUrl(const std::string& url, const std::string& problem) {
  try {
    parseInitUrl(url);
    ADD_FAILURE() << "expected InvalidArgument for " << url;
  } catch (const InvalidArgument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'" + url + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(problem), std::string::npos) << "'" << problem << "' not in: " << msg;
  }
}

TEST(InitUrl, GoodForms) {
  auto e = parseInitUrl("env://");
  EXPECT_EQ(e.scheme, "env");
  EXPECT_TRUE(e.query.empty());
  auto t = parseInitUrl("tcp://10.1.2.3:29500?rank=2&world_size=8");
  EXPECT_EQ(t.scheme, "tcp");
  EXPECT_EQ(t.host, "10.1.2.3");
  EXPECT_EQ(t.port, 29500);
  EXPECT_EQ(t.query.at("rank"), "2");
  EXPECT_EQ(t.query.at("world_size"), "8");
  auto h = parseInitUrl("tcp://node-7.cluster:1");
  EXPECT_EQ(h.host, "node-7.cluster");
  EXPECT_EQ(h.port, 1);
  auto v6 = parseInitUrl("tcp://[::1]:65535?world_size=2");
  EXPECT_EQ(v6.host, "::1");
  EXPECT_EQ(v6.port, 65535);
  auto f = parseInitUrl("file:///tmp/some dir/store?rank=0&world_size=1");
  EXPECT_EQ(f.scheme, "file");
  EXPECT_EQ(f.path, "/tmp/some dir/store");
  EXPECT_EQ(parseInitUrl("env://?rank=1&world_size=2").query.at("rank"), "1");
}

TEST(InitUrl, Malformed) {
  expectBadUrl("localhost:29500", "missing scheme");
  expectBadUrl("udp://h:1", "unknown scheme 'udp'");
  expectBadUrl("tcp://", "missing host and port");
  expectBadUrl("tcp://:29500", "missing host");
  expectBadUrl("tcp://host", "missing port");
  expectBadUrl("tcp://host:", "missing port");
  expectBadUrl("tcp://host:http", "port 'http' is not a number");
  expectBadUrl("tcp://host:0", "out of range");
  expectBadUrl("tcp://host:65536", "out of range");
  expectBadUrl("tcp://host:-1", "out of range");
  expectBadUrl("tcp://host:99999999999999999999", "not a number");
  expectBadUrl("tcp://::1:29500", "IPv6 hosts go in brackets");
  expectBadUrl("tcp://[::1:29500", "unterminated '['");
  expectBadUrl("tcp://[::1]", "missing port");
  expectBadUrl("tcp://[::1]x:1", "after the IPv6 host");
  expectBadUrl("tcp://h:1/path", "unexpected path after the port");
  expectBadUrl("tcp://h:1?rank=1&size=2", "unknown query key 'size'");
  expectBadUrl("tcp://h:1?rank=one", "rank='one' is not an integer");
  expectBadUrl("tcp://h:1?rank=", "rank='' is not an integer");
  expectBadUrl("tcp://h:1?rank", "not key=value");
  expectBadUrl("tcp://h:1?rank=-1&world_size=2", "negative");
  expectBadUrl("tcp://h:1?world_size=0", "world_size=0");
  expectBadUrl("tcp://h:1?rank=2&world_size=2", "rank=2 is not below world_size=2");
  expectBadUrl("tcp://h:1?rank=0&rank=1", "given twice");
  expectBadUrl("file://relative/path?rank=0&world_size=1", "is relative");
  expectBadUrl("file://", "missing file path");
  expectBadUrl("env://host", "after env://");
}

TEST(InitEnv, EnvInt) {
  {
    ScopedEnv e("C10D_TEST_INT", nullptr);
    EXPECT_EQ(envInt("C10D_TEST_INT", 17), 17);
  }
  {
    ScopedEnv e("C10D_TEST_INT", "42");
    EXPECT_EQ(envInt("C10D_TEST_INT", 0), 42);
    EXPECT_THROW(envInt("C10D_TEST_INT", 0, 0, 10), InvalidArgument);
  }
  for (const char* bad : {"4x", "x", " 4", "+4", "1e3", "99999999999"}) {
    ScopedEnv e("C10D_TEST_INT", bad);
    try {
      envInt("C10D_TEST_INT", 0);
      ADD_FAILURE() << bad;
    } catch (const InvalidArgument& ex) {
      EXPECT_NE(std::string(ex.what()).find("C10D_TEST_INT"), std::string::npos) << ex.what();
    }
  }
  {
    ScopedEnv e("LOCAL_RANK", "3");
    EXPECT_EQ(localRank(), 3);
  }
  ScopedEnv e("LOCAL_RANK", nullptr);
  EXPECT_EQ(localRank(), 0);
}

void expectRendezvousError(const std::string& url, const std::string& piece) {
  try {
    rendezvous(url, -1, -1, milliseconds(100));
    ADD_FAILURE() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find(piece), std::string::npos) << e.what();
  }
}

TEST(InitEnv, MissingAndInvalidVariables) {
  ScopedEnv a("MASTER_ADDR", "127.0.0.1");
  ScopedEnv p("MASTER_PORT", "29500");
  ScopedEnv r("RANK", "0");
  ScopedEnv w("WORLD_SIZE", "2");
  {
    ScopedEnv x("MASTER_ADDR", nullptr);
    expectRendezvousError("env://", "MASTER_ADDR");
  }
  {
    ScopedEnv x("MASTER_PORT", nullptr);
    expectRendezvousError("env://", "MASTER_PORT");
  }
  {
    ScopedEnv x("MASTER_PORT", "70000");
    expectRendezvousError("env://", "MASTER_PORT");
  }
  {
    ScopedEnv x("RANK", nullptr);
    expectRendezvousError("env://", "RANK");
  }
  {
    ScopedEnv x("RANK", "zero");
    expectRendezvousError("env://", "RANK");
  }
  {
    ScopedEnv x("WORLD_SIZE", nullptr);
    expectRendezvousError("env://", "WORLD_SIZE");
  }
  {
    ScopedEnv x("RANK", "2");
    expectRendezvousError("env://", "rank 2 is not below world size 2");
  }
  // Missing rank for tcp:// and file://.
  expectRendezvousError("tcp://127.0.0.1:1?world_size=2", "no rank given");
  expectRendezvousError("file:///tmp/x?rank=0", "no world_size given");
  // An explicit argument overrides the URL, and is still checked.
  try {
    rendezvous("file:///tmp/x?rank=0&world_size=2", 5, -1, milliseconds(100));
    ADD_FAILURE();
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("rank 5"), std::string::npos) << e.what();
  }
  InitOptions io;
  io.store = std::make_shared<HashStore>();
  EXPECT_THROW(init(io), InvalidArgument);  // store without rank / world size
}

// A port that was free a moment ago (the tests below bind it right after).
int freePort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  EXPECT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  socklen_t len = sizeof(addr);
  EXPECT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  close(fd);
  return ntohs(addr.sin_port);
}

// Every rank publishes its rank through the store and reads everyone's, then (through init)
// builds a fake group and checks its rank and size.
void exchange(const Rendezvous& rv, int rank, int size) {
  ASSERT_NE(rv.store, nullptr);
  EXPECT_EQ(rv.rank, rank);
  EXPECT_EQ(rv.worldSize, size);
  rv.store->set("r" + std::to_string(rank), std::to_string(rank * 10));
  for (int r = 0; r < size; ++r) {
    EXPECT_EQ(rv.store->getString("r" + std::to_string(r)), std::to_string(r * 10));
  }
  // Keep the store (and rank 0's server) alive until everyone has read.
  rv.store->add("done", 1);
  if (rank == 0) {
    while (rv.store->add("done", 0) < size) std::this_thread::sleep_for(milliseconds(5));
  }
}

TEST(Rendezvous, FileFourProcesses) {
  const std::string path = test::uniqueTempPath("rdzv-file");
  test::MultiProcOptions mo;
  mo.timeout = milliseconds(30000);
  test::expectAllRanksOk(
      4,
      [&](int rank, int size) {
        const std::string url = "file://" + path + "?world_size=" + std::to_string(size);
        exchange(rendezvous(url + "&rank=" + std::to_string(rank), -1, -1, milliseconds(10000)),
                 rank, size);
      },
      mo);
}

TEST(Rendezvous, TcpFourProcesses) {
  const int port = freePort();
  test::MultiProcOptions mo;
  mo.timeout = milliseconds(30000);
  test::expectAllRanksOk(
      4,
      [&](int rank, int size) {
        // The rank comes from the argument, the world size from the URL.
        const std::string url = "tcp://127.0.0.1:" + std::to_string(port) + "?world_size=4";
        exchange(rendezvous(url, rank, -1, milliseconds(10000)), rank, size);
      },
      mo);
}

TEST(Rendezvous, EnvFourProcessesThroughInit) {
  const int port = freePort();
  test::MultiProcOptions mo;
  mo.timeout = milliseconds(30000);
  test::expectAllRanksOk(
      4,
      [&](int rank, int size) {
        setenv("MASTER_ADDR", "127.0.0.1", 1);
        setenv("MASTER_PORT", std::to_string(port).c_str(), 1);
        setenv("RANK", std::to_string(rank).c_str(), 1);
        setenv("WORLD_SIZE", std::to_string(size).c_str(), 1);
        test::registerFakeBackend();
        InitOptions io;
        io.backend = "fake";
        io.timeout = milliseconds(10000);
        io.groupName = "trainers";
        auto pg = init(io);
        ASSERT_NE(pg, nullptr);
        EXPECT_EQ(pg->rank(), rank);
        EXPECT_EQ(pg->size(), size);
        EXPECT_EQ(pg->name(), "fake:trainers");
        EXPECT_EQ(pg->options().timeout, milliseconds(10000));
        // The group's store is shared: a monitoredBarrier through it succeeds on every rank.
        pg->monitoredBarrier(milliseconds(10000), true);
        Rendezvous rv{pg->store(), rank, size};
        exchange(rv, rank, size);
      },
      mo);
}

}  // namespace
C10D_NAMESPACE_END
}  // namespace c10d
