// Where a perf process sits in the job, and the out-of-band exchanges the driver needs (rank
// lines, times, error counts) over the group's Store, so that they never disturb the backend
// being measured.
//
// Launchers: c10drun / torchrun, mpirun (Open MPI) and srun (Slurm), read by
// c10d::detectLaunchEnv (c10d/base/launch_env.h, shared with init()), which also says where rank
// 0's TCPStore is (MASTER_ADDR / MASTER_PORT, else the first Slurm host, or 127.0.0.1 for mpirun on
// one host; port 29500). None of them: a single process (world size 1) with an in-process store.
// Single-threaded use; every blocking call has the store's timeout.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/core/process_group.h"
#include "perf/common/options.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class Store;

namespace perf {

struct LaunchInfo {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;
  std::string launcher = "none";  // "env", "mpirun", "srun", "none"
};

// Reads the variables above. Throws InvalidArgument naming a malformed variable.
LaunchInfo detectLaunch();

// This host's short name (up to the first '.'), as nccl-tests prints it; "unknown" on failure.
std::string hostName();

// Creates the world group with c10d::init (env://, or an in-process store for a single process).
std::shared_ptr<ProcessGroup> createWorld(const LaunchInfo& launch, const PerfOptions& options);

// Out-of-band collectives over a Store: every rank calls them in the same order.
class RankExchange {
 public:
  RankExchange(std::shared_ptr<Store> store, int rank, int size);

  // Every rank's `value`, in rank order.
  std::vector<std::string> allgather(const std::string& value);
  // Combines one double per rank as nccl-tests' -a does (rank 0's, mean, min or max).
  double combine(double value, TimeCombine how);
  int64_t sum(int64_t value);
  // The last call before exiting: rank 0 (which hosts the TCPStore under env://) waits until
  // every other rank says it is done with the store, so that nobody loses the server mid-call.
  // Other ranks must not use the store after it.
  void finish(Milliseconds timeout);

 private:
  std::string key(uint64_t round, int rank) const;

  std::shared_ptr<Store> store_;
  int rank_;
  int size_;
  uint64_t round_ = 0;
};

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
