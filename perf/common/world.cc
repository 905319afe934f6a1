#include "perf/common/world.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/launch_env.h"
#include "c10d/bootstrap/init.h"
#include "c10d/store/hash_store.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

std::string hostName() {
  char buf[1024] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  for (char* p = buf; *p; ++p) {  // nccl-tests prints the short name
    if (*p == '.') *p = '\0';
  }
  return buf;
}

LaunchInfo detectLaunch() {
  const LaunchEnv env = detectLaunchEnv();
  LaunchInfo info;
  if (env.launcher.empty()) return info;
  if (env.rank >= env.worldSize) {
    C10D_THROW(InvalidArgument, env.rankVar, "=", env.rank, " is not below ", env.sizeVar, "=",
               env.worldSize);
  }
  info.launcher = env.launcher;
  info.rank = env.rank;
  info.worldSize = env.worldSize;
  info.localRank = env.localRank;
  return info;
}

std::shared_ptr<ProcessGroup> createWorld(const LaunchInfo& launch, const PerfOptions& options) {
  InitOptions init;
  init.backend = options.backend;
  init.rank = launch.rank;
  init.worldSize = launch.worldSize;
  init.timeout = Milliseconds(static_cast<int64_t>(options.timeoutSec) * 1000);
  if (launch.launcher == "none") {
    init.store = std::make_shared<HashStore>(init.timeout);
  } else {
    // MASTER_ADDR / MASTER_PORT, or what c10d/base/launch_env.h derives for mpirun and srun.
    init.initMethod = "env://";
  }
  return c10d::init(init);
}

RankExchange::RankExchange(std::shared_ptr<Store> store, int rank, int size)
    : store_(std::move(store)), rank_(rank), size_(size) {}

std::string RankExchange::key(uint64_t round, int rank) const {
  return detail::str("c10d_perf/x/", round, "/", rank);
}

std::vector<std::string> RankExchange::allgather(const std::string& value) {
  const uint64_t round = round_++;
  if (size_ == 1) return {value};
  store_->set(key(round, rank_), value);
  std::vector<std::string> keys;
  for (int r = 0; r < size_; ++r) keys.push_back(key(round, r));
  std::vector<Bytes> values = store_->multiGet(keys);
  // Every rank has read round - 2 by now (it set its round - 1 key after reading round - 2), so
  // our key of that round can go: the store stays small however many rows run.
  if (round >= 2) store_->deleteKey(key(round - 2, rank_));
  std::vector<std::string> out;
  out.reserve(values.size());
  for (const auto& v : values) out.push_back(toString(v));
  return out;
}

double RankExchange::combine(double value, TimeCombine how) {
  std::vector<std::string> all =
      allgather(std::string(reinterpret_cast<const char*>(&value), sizeof(value)));
  std::vector<double> v(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    C10D_CHECK_EQ(all[i].size(), sizeof(double), "perf time exchange with rank ", i);
    std::memcpy(&v[i], all[i].data(), sizeof(double));
  }
  switch (how) {
    case TimeCombine::kRank0:
      return v[0];
    case TimeCombine::kMin:
      return *std::min_element(v.begin(), v.end());
    case TimeCombine::kMax:
      return *std::max_element(v.begin(), v.end());
    case TimeCombine::kAverage:
    default: {
      double s = 0;
      for (double x : v) s += x;
      return s / static_cast<double>(v.size());
    }
  }
}

void RankExchange::finish(Milliseconds timeout) {
  if (size_ == 1) return;
  if (rank_ != 0) {
    store_->set(detail::str("c10d_perf/done/", rank_), std::string("1"));
    return;
  }
  std::vector<std::string> keys;
  for (int r = 1; r < size_; ++r) keys.push_back(detail::str("c10d_perf/done/", r));
  store_->wait(keys, timeout);
}

int64_t RankExchange::sum(int64_t value) {
  int64_t total = 0;
  for (const auto& s : allgather(std::to_string(value))) total += std::stoll(s);
  return total;
}

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
