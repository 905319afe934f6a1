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
//
// Every rank checks that it runs where the harness said: gethostname() == C10D_NETNS_HOST.
// Exit codes: 0 passed; 1 a check failed (gtest's report on stdout); 2 bad environment;
// 3 no failure seen in `fail` mode.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"
#include "bootstrap/init.h"
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

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const std::string mode = env("C10D_NETNS_MODE");
  if (mode != "sweep" && mode != "fail") {
    std::fprintf(stderr, "netns_worker: C10D_NETNS_MODE=%s: expected sweep or fail\n",
                 mode.c_str());
    return 2;
  }
  ::testing::GTEST_FLAG(filter) = "NetnsWorker." + mode;
  return RUN_ALL_TESTS();
}
