// One rank of a multi-host test, run by the harness on a virtual host (tests/netns/) or by c10drun
// there. The group comes from env:// (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, LOCAL_RANK) as
// users make it; what the rank does is C10D_NETNS_MODE:
//
//   sweep      every collective of the conformance sweep (tests/backends/conformance.h), each
//              result compared with the reference computed here. C10D_NETNS_BACKEND names the
//              backend, C10D_NETNS_COUNTS the element counts ("0,1,7,4099"),
//              C10D_NETNS_EXPECT a substring the group's describe() must hold ("shm+tcp").
//   fail       allreduces of 1 MiB until one fails (the test breaks the network meanwhile): after
//              the first, creates C10D_NETNS_READY.<rank>; prints "NETNS-ERROR <kind> <seconds>:
//              <message>" for the failure and exits C10D_NETNS_ERROR_EXIT (default 0), or exits 3
//              if 100000 allreduces succeed.
//   wire       one allreduce, allgather and reduce_scatter of C10D_NETNS_WIRE_BYTES (the
//              allgather's output, the reduce_scatter's input) after a warm-up of each; local rank
//              0 of each host prints "NETNS-WIRE <op> <bytes> <tx>", tx being what the host's links
//              (all but lo) sent during the op, from /proc/net/dev (the host's own network
//              namespace), barriers around it.
//
// Every rank checks that it runs where the harness said: gethostname() == C10D_NETNS_HOST.
// Exit codes: 0 passed; 1 a check failed (gtest's report on stdout); 2 bad environment;
// 3 no failure seen in `fail` mode.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/error.h"
#include "c10d/bootstrap/init.h"
#include "tests/backends/conformance.h"

namespace {

std::string env(const char* name, const char* fallback = nullptr) {
  const char* v = std::getenv(name);
  if (v != nullptr && *v != '\0') return v;
  if (fallback != nullptr) return fallback;
  std::fprintf(stderr, "netns_worker: %s is not set\n", name);
  std::exit(2);
}

std::shared_ptr<c10d::ProcessGroup> makeGroup() {
  c10d::InitOptions o;
  o.backend = env("C10D_NETNS_BACKEND");
  o.timeout = c10d::Milliseconds(std::atoi(env("C10D_NETNS_TIMEOUT_MS", "60000").c_str()));
  return c10d::init(o);
}

void expectOnMyHost() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  ASSERT_EQ(std::string(host), env("C10D_NETNS_HOST")) << "rank " << env("RANK");
}

TEST(NetnsWorker, sweep) {
  expectOnMyHost();
  auto pg = makeGroup();
  const std::string want = env("C10D_NETNS_EXPECT", "");
  EXPECT_NE(pg->describe().find(want), std::string::npos)
      << "rank " << pg->rank() << ": group is " << pg->describe() << ", expected " << want;
  c10d::test::BackendParam p;
  p.backend = pg->backendName();
  c10d::test::SweepOptions o;
  o.counts.clear();
  std::stringstream counts(env("C10D_NETNS_COUNTS", "0,1,7,4099"));
  for (std::string c; std::getline(counts, c, ',');) o.counts.push_back(std::stoul(c));
  c10d::test::runSweep(*pg, p, o);
  std::printf("rank %d of %d on %s: %s sweep done\n", pg->rank(), pg->size(),
              env("C10D_NETNS_HOST").c_str(), pg->describe().c_str());
}

TEST(NetnsWorker, fail) {
  expectOnMyHost();
  auto pg = makeGroup();
  std::vector<float> v(1 << 18, 1.0f);
  c10d::Tensor t{v.data(), v.size(), c10d::DataType::kFloat32, c10d::Device::cpu()};
  pg->allreduce(t)->wait();
  ASSERT_EQ(v[0], static_cast<float>(pg->size()));
  const std::string ready = env("C10D_NETNS_READY") + "." + std::to_string(pg->rank());
  close(open(ready.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
  const auto start = std::chrono::steady_clock::now();
  auto report = [&](const char* kind, const std::exception& e) {
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("NETNS-ERROR %s %.2f: %s\n", kind, s, e.what());
    std::fflush(stdout);
    // The group is broken: leave without waiting for its threads in destructors.
    std::_Exit(std::atoi(env("C10D_NETNS_ERROR_EXIT", "0").c_str()));
  };
  try {
    for (int i = 0; i < 100000; ++i) pg->allreduce(t)->wait();
  } catch (const c10d::TimeoutError& e) {
    report("TimeoutError", e);
  } catch (const c10d::CommError& e) {
    report("CommError", e);
  } catch (const std::exception& e) {
    report("other", e);
  }
  std::printf("netns_worker: 100000 allreduces succeeded; the network never failed\n");
  std::fflush(stdout);
  std::_Exit(3);
}

// Bytes sent by this network namespace's interfaces other than lo (/proc/net/dev).
uint64_t txBytes() {
  std::ifstream in("/proc/net/dev");
  uint64_t total = 0;
  for (std::string line; std::getline(in, line);) {
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name == "lo") continue;
    std::istringstream fields(line.substr(colon + 1));
    uint64_t v[9] = {};
    for (uint64_t& x : v) fields >> x;
    total += v[8];  // 8 receive counters, then the bytes sent
  }
  return total;
}

TEST(NetnsWorker, wire) {
  expectOnMyHost();
  auto pg = makeGroup();
  const size_t bytes = std::stoul(env("C10D_NETNS_WIRE_BYTES"));
  const bool reporter = env("LOCAL_RANK") == "0";
  const size_t n = static_cast<size_t>(pg->size());
  ASSERT_EQ(bytes % (n * sizeof(float)), 0u) << "C10D_NETNS_WIRE_BYTES must split into floats";
  std::vector<float> data(bytes / sizeof(float), static_cast<float>(pg->rank() + 1));
  std::vector<float> mine(data.size() / n, static_cast<float>(pg->rank() + 1));
  c10d::Tensor whole{data.data(), data.size(), c10d::DataType::kFloat32, c10d::Device::cpu()};
  c10d::Tensor block{mine.data(), mine.size(), c10d::DataType::kFloat32, c10d::Device::cpu()};
  auto measure = [&](const char* name, const std::function<void()>& op) {
    op();  // warm-up: connections and buffers
    pg->barrier()->wait();
    const uint64_t before = txBytes();
    pg->barrier()->wait();
    op();
    pg->barrier()->wait();
    const uint64_t after = txBytes();
    if (reporter)
      std::printf("NETNS-WIRE %s %zu %llu\n", name, bytes,
                  static_cast<unsigned long long>(after - before));
    std::fflush(stdout);
    pg->barrier()->wait();  // the other local ranks wait until the reading is done
  };
  measure("allreduce", [&] { pg->allreduce(whole)->wait(); });
  // Two allreduces: n (n + 1) / 2 after the first, n times that after the second.
  const float want = static_cast<float>(n * n * (n + 1) / 2);
  EXPECT_EQ(data.front(), want);
  EXPECT_EQ(data.back(), want);
  measure("allgather", [&] { pg->allgatherIntoTensor(whole, block)->wait(); });
  for (size_t i = 0; i < data.size(); ++i) {
    const size_t r = i / mine.size();
    ASSERT_EQ(data[i], static_cast<float>(r + 1)) << "allgather block " << r << ", element " << i;
  }
  // Every rank's input is now the same gathered buffer: block r sums to n (r + 1).
  measure("reduce_scatter", [&] { pg->reduceScatterTensor(block, whole)->wait(); });
  for (float v : mine) ASSERT_EQ(v, static_cast<float>(n * static_cast<size_t>(pg->rank() + 1)));
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const std::string mode = env("C10D_NETNS_MODE");
  if (mode != "sweep" && mode != "fail" && mode != "wire") {
    std::fprintf(stderr, "netns_worker: C10D_NETNS_MODE=%s: expected sweep, fail or wire\n",
                 mode.c_str());
    return 2;
  }
  ::testing::GTEST_FLAG(filter) = "NetnsWorker." + mode;
  return RUN_ALL_TESTS();
}
