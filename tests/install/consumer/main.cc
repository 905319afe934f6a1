// Links against an installed c10d: uses a store, the registry, a Tensor view and a layer (the
// sampler; the Reducer and ZeRO headers must compile from the install tree too). Its own
// core/options.h and base/error.h come first on the include path: c10d's headers must not pick
// them up, nor they c10d's.
#include "base/error.h"
#include "core/options.h"

#include <c10d/base/config.h>
#include <c10d/c10d.h>
#include <c10d/layers/data/distributed_sampler.h>
#include <c10d/layers/ddp/reducer.h>
#include <c10d/layers/zero/sharded_optimizer.h>
#include <c10d/store/hash_store.h>

#include <cstdio>

#ifdef C10D_CONSUMER_EXPECT_CXX20  // built -std=c++20: c10d's flags must not have lowered it
static_assert(__cplusplus >= 202002L, "c10d's compile flags overrode the consumer's -std=c++20");
#endif
#include <memory>
#include <vector>

int main() {
  auto store = std::make_shared<c10d::HashStore>();
  store->set("key", std::string("value"));
  if (store->getString("key") != "value") return 1;
  float x[4] = {1, 2, 3, 4};
  c10d::Tensor t = c10d::tensorOf(x, 4);
  std::printf("c10d %s: tensor of %zu bytes; backends:", C10D_VERSION, t.nbytes());
  for (const auto& name : c10d::registeredBackends()) std::printf(" %s", name.c_str());
  std::printf("\n");
  c10d::data::DistributedSampler sampler(10, 3, 1, {/*shuffle=*/false, 0, false});
  if (sampler.indices() != std::vector<size_t>({1, 4, 7, 0})) return 1;
  if (consumer::optionsMarker() != 7 || consumer::errorMarker() != 11) return 1;
  return t.nbytes() == 16 ? 0 : 1;
}
