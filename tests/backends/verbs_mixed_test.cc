// The verbs backend across "hosts": every rank sets its host identity (C10D_HOST_ID), so one
// machine plays several hosts. Ranks sharing an identity talk through shm, the others through tcp
// (MixedTransport). The conformance sweep runs against references computed in the test, for
// hosts of equal and unequal sizes, interleaved rank placement and a rank alone on its host, with
// the hierarchical allreduce, allgather and reduce_scatter (the defaults here; uneven hosts run
// the rings) and the flat rings forced; a
// rank that dies mid-job becomes CommError on every other rank, local or remote.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/backends/verbs/process_group_verbs.h"
#include "c10d/base/abi.h"
#include "c10d/store/file_store.h"
#include "tests/backends/conformance.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {
namespace {

using test::expectAllRanksOk;
using test::uniqueTempPath;

std::shared_ptr<ProcessGroupVerbs> makeOnHost(
    const std::string& path, int rank, int size, const std::string& host,
    Milliseconds timeout = Milliseconds(30000),
    const std::map<std::string, std::string>& config = {}) {
  auto store = std::make_shared<FileStore>(path, size);
  ProcessGroup::Options o;
  o.timeout = timeout;
  o.config = config;
  o.config["C10D_HOST_ID"] = host;
  return std::make_shared<ProcessGroupVerbs>(store, rank, size, o);
}

// hosts[r] is rank r's host; the transport each rank must pick follows from it. `config` is
// added to every rank's options.
void sweepOnHosts(const std::vector<std::string>& hosts, std::vector<size_t> counts,
                  const std::map<std::string, std::string>& config = {}) {
  const int size = static_cast<int>(hosts.size());
  const std::string path = uniqueTempPath("verbs-mixed");
  test::MultiProcOptions mp;
  mp.timeout = std::chrono::seconds(100);
  expectAllRanksOk(
      size,
      [&](int rank, int n) {
        auto pg = makeOnHost(path, rank, n, hosts[rank], Milliseconds(30000), config);
        int local = 0;
        for (const auto& h : hosts) local += h == hosts[rank];
        const std::string expected = local == n ? "shm" : local > 1 ? "shm+tcp" : "tcp";
        EXPECT_EQ(pg->transportName(), expected) << "rank " << rank;
        test::BackendParam p;
        p.backend = "verbs";
        test::SweepOptions o;
        o.counts = counts;
        test::runSweep(*pg, p, o);
      },
      mp);
}

TEST(VerbsMixed, TwoHostsOfTwo) {
  sweepOnHosts({"a", "a", "b", "b"}, {0, 1, 7, 70001});
}

TEST(VerbsMixed, InterleavedHostsOfThreeAndTwo) {
  sweepOnHosts({"a", "b", "a", "b", "a"}, {1, 7, 4099});
}

TEST(VerbsMixed, OneRankAloneOnItsHost) {
  sweepOnHosts({"a", "a", "b"}, {0, 1, 7, 70001});
}

// The hierarchical allreduce (the default across hosts above 64 KiB; forced here so that counts
// smaller than a host's rank count go through it too): three hosts of two (balanced: blocks of
// the host reduce-scatter cross three hosts at once) and two of three, interleaved; then the flat
// algorithms forced on the same layout. Allgather and reduce_scatter are two-level on both
// layouts by default (3 x 2: rings of three hosts; 2 x 3: rings of three ranks in each host).
TEST(VerbsMixed, ThreeHostsOfTwoHierarchical) {
  sweepOnHosts({"a", "a", "b", "b", "c", "c"}, {1, 5, 70001},
               {{"C10D_ALGO", "allreduce:hierarchical"}});
}

TEST(VerbsMixed, TwoHostsOfThreeHierarchical) {
  sweepOnHosts({"a", "b", "a", "b", "a", "b"}, {2, 6, 4099},
               {{"C10D_ALGO", "allreduce:hierarchical"}});
}

TEST(VerbsMixed, TwoHostsOfTwoFlatRingForced) {
  sweepOnHosts({"a", "a", "b", "b"}, {1, 70001},
               {{"C10D_ALGO", "allreduce:ring,allgather:ring,reduce_scatter:ring"}});
}

// A rank killed between two allreduces: every other rank, on its host (shm) or not (tcp), gets
// CommError (not a hang, not a timeout) from the second.
void killedRankCase(int victim) {
  const std::vector<std::string> hosts = {"a", "a", "b", "b"};
  const int size = 4;
  const std::string path = uniqueTempPath("verbs-mixed-kill");
  test::MultiProcOptions mp;
  mp.timeout = std::chrono::seconds(60);
  auto results = test::runRanks(
      size,
      [&](int rank, int n) {
        auto pg = makeOnHost(path, rank, n, hosts[rank], Milliseconds(20000));
        std::vector<float> v(1 << 16, 1.0f);
        Tensor t{v.data(), v.size(), DataType::kFloat32, Device::cpu()};
        pg->allreduce(t)->wait();
        // The victim dies only once every rank is past the first allreduce (which may still read
        // the victim's last bytes): what follows must fail, and only because of the death.
        pg->store()->add("past-first", 1);
        if (rank == victim) {
          while (pg->store()->add("past-first", 0) < n) usleep(1000);
          raise(SIGKILL);
        }
        const auto start = std::chrono::steady_clock::now();
        try {
          for (int i = 0; i < 1000; ++i) pg->allreduce(t)->wait();
          ADD_FAILURE() << "rank " << rank << ": allreduce went on without rank " << victim;
        } catch (const CommError& e) {
          const double s =
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          EXPECT_LT(s, 15.0) << "rank " << rank << " took " << s << " s to see the dead rank";
        } catch (const std::exception& e) {
          ADD_FAILURE() << "rank " << rank << ": expected CommError, got: " << e.what();
        }
        if (::testing::Test::HasFailure()) _exit(1);
      },
      mp);
  for (int r = 0; r < size; ++r) {
    if (r == victim) {
      EXPECT_EQ(results[r].signal, SIGKILL) << results[r].describe();
    } else {
      EXPECT_TRUE(results[r].ok()) << results[r].describe();
    }
  }
}

TEST(VerbsMixed, KilledRankBecomesCommErrorOnLocalAndRemotePeers) {
  killedRankCase(1);
}

TEST(VerbsMixed, KilledRankZeroBecomesCommErrorEverywhere) {
  killedRankCase(0);
}

// Ranks that finish their last op first and exit (shutting their group down) are not failures for
// the ranks still finishing theirs: the folded ranks of Rabenseifner / recursive doubling at
// non-power-of-two sizes leave early by design. Over shm (one host) and mixed hosts.
void finishAndExit(int size, std::map<std::string, std::string> config) {
  const std::string path = uniqueTempPath("verbs-exit");
  test::MultiProcOptions mp;
  mp.timeout = std::chrono::seconds(60);
  expectAllRanksOk(
      size,
      [&](int rank, int n) {
        auto store = std::make_shared<FileStore>(path, n);
        ProcessGroup::Options o;
        o.timeout = Milliseconds(20000);
        o.config = config;
        if (config.count("C10D_HOST_ID")) o.config["C10D_HOST_ID"] = rank % 2 ? "a" : "b";
        auto pg = std::make_shared<ProcessGroupVerbs>(store, rank, n, o);
        // Large enough that the last exchanges take a while after the folded rank is done.
        std::vector<float> v(1 << 20, 1.0f + rank);
        Tensor t{v.data(), v.size(), DataType::kFloat32, Device::cpu()};
        const float expect = n * (n + 1) / 2.0f;
        pg->allreduce(t)->wait();
        for (size_t i = 0; i < v.size(); ++i) {
          ASSERT_EQ(v[i], expect) << "rank " << rank << " element " << i;
        }
        pg.reset();  // and the process exits at once
      },
      mp);
}

TEST(VerbsExit, FoldedRanksLeaveEarlyOverShm) {
  for (int i = 0; i < 3; ++i) {
    finishAndExit(3, {{"C10D_ALGO", "allreduce:rabenseifner"}});
    finishAndExit(5, {{"C10D_ALGO", "allreduce:recursive_doubling"}});
  }
}

TEST(VerbsExit, FoldedRanksLeaveEarlyOverMixedHosts) {
  finishAndExit(5, {{"C10D_ALGO", "allreduce:rabenseifner"}, {"C10D_HOST_ID", ""}});
}

}  // namespace
}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
