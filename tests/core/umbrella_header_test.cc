// The umbrella header alone gives the whole public core API: this file includes nothing else of
// c10d and uses what the README promises through it (init, collectives, broadcastCoalesced). A
// declaration missing from <c10d/c10d.h> fails the build of this test.
#include <c10d/c10d.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/common/multiproc.h"

namespace {

TEST(UmbrellaHeader, BroadcastCoalescedThroughC10dHOnly) {
  const std::string path = c10d::test::uniqueTempPath("umbrella");
  c10d::test::expectAllRanksOk(2, [&](int rank, int size) {
    c10d::InitOptions o;
    o.initMethod =
        "file://" + path + "?rank=" + std::to_string(rank) + "&world_size=" + std::to_string(size);
    o.timeout = c10d::Milliseconds(30000);
    auto pg = c10d::init(o);
    std::vector<float> a(5, static_cast<float>(rank + 1));
    std::vector<int64_t> b(3, rank == 0 ? 42 : -1);
    auto work = c10d::broadcastCoalesced(
        *pg, {c10d::tensorOf(a.data(), a.size()), c10d::tensorOf(b.data(), b.size())},
        /*bucketBytes=*/16, /*root=*/0);
    work->wait();
    EXPECT_EQ(a, std::vector<float>(5, 1.0f));
    EXPECT_EQ(b, std::vector<int64_t>(3, 42));
    EXPECT_GT(c10d::kDefaultBroadcastBucketBytes, 0u);
    pg->barrier()->wait();
  });
}

}  // namespace
