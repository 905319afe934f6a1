// The shm workspace barrier (ShmTransport::barrier): each rank arrives in lines of its own, and
// the smallest allreduces and broadcasts ride in the small slot beside the arrival. These cases
// run those paths back to back with the ranks out of step, where a slot reused one barrier too
// early, or read under the wrong barrier's number, gives wrong bits.
#include <unistd.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/backends/verbs/process_group_verbs.h"
#include "c10d/backends/verbs/transport/transport.h"
#include "c10d/base/abi.h"
#include "tests/backends/verbs_test_util.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {
namespace {

using test::uniqueTempPath;

// Rank r's element j at op i: small integers, exact in float sums.
float valueOf(int r, int i, size_t j) {
  return static_cast<float>((r * 7 + i * 3 + static_cast<int>(j)) % 101);
}

// Ops on the small slots (allreduce and broadcast up to kSmallSlotBytes), on the staging slots
// (allreduce just above), and barriers, interleaved; each rank in turn dawdles (up to 50 us, or
// a yield) before an op, so the others arrive first, read early, or run an op ahead.
void outOfStep(int size, int ops) {
  const std::string path = uniqueTempPath("verbs-shm-barrier");
  constexpr size_t kSmallFloats = StagingSlots::kSmallSlotBytes / sizeof(float);
  test::expectAllRanksOk(size, [&](int rank, int n) {
    auto pg = makeVerbs(path, rank, n, {});
    ASSERT_EQ(pg->transportName(), "shm");
    std::mt19937 rng(1234 + rank);
    for (int i = 0; i < ops; ++i) {
      if (i % n == rank) {
        const unsigned us = rng() % 60;
        if (us < 10) {
          sched_yield();
        } else {
          usleep(us - 10);
        }
      }
      const int kind = i % 5;
      if (kind == 4) {
        pg->barrier()->wait();
        continue;
      }
      // 1 .. kSmallFloats elements, the slot's exact size included; kind 2: just above it.
      const size_t count = kind == 2 ? kSmallFloats + 1 + i % 7 : 1 + (i * 37) % kSmallFloats;
      std::vector<float> x(count);
      for (size_t j = 0; j < count; ++j) x[j] = valueOf(rank, i, j);
      if (kind == 3) {
        const int root = (i / 5) % n;
        BroadcastOptions o;
        o.rootRank = root;
        pg->broadcast(tensorOf(x.data(), count), o)->wait();
        for (size_t j = 0; j < count; ++j)
          ASSERT_EQ(x[j], valueOf(root, i, j)) << "broadcast op " << i << " element " << j;
        continue;
      }
      pg->allreduce(tensorOf(x.data(), count))->wait();
      for (size_t j = 0; j < count; ++j) {
        float want = 0;
        for (int r = 0; r < n; ++r) want += valueOf(r, i, j);
        ASSERT_EQ(x[j], want) << "allreduce op " << i << " of " << count << " element " << j;
      }
    }
  });
}

TEST(VerbsShmBarrier, SmallSlotsWithRanksOutOfStep2) {
  outOfStep(2, 2000);
}
TEST(VerbsShmBarrier, SmallSlotsWithRanksOutOfStep3) {
  outOfStep(3, 1000);
}

}  // namespace
}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
