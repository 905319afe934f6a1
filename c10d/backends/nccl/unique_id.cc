#include "c10d/backends/nccl/unique_id.h"

#include <algorithm>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/core/rendezvous_wait.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

std::string uniqueIdKey(uint64_t n) {
  return detail::str("nccl/uid/", n);
}

UniqueIdBytes exchangeUniqueId(Store& store, int rank, const std::string& key, Milliseconds timeout,
                               const std::function<UniqueIdBytes()>& generate,
                               const std::string& groupName) {
  if (rank == 0) {
    C10D_CHECK(generate != nullptr, "nccl: no unique-id generator for group ", groupName);
    UniqueIdBytes id = generate();
    store.set(key, Bytes(id.begin(), id.end()));
    return id;
  }
  try {
    RankWait how;
    how.group = groupName;
    how.rank = rank;
    how.what = "published the NCCL unique id";
    how.timeout = timeout;
    waitForRanks(store, {key}, {0}, how);
  } catch (const TimeoutError& e) {
    C10D_THROW(TimeoutError, "nccl: rank ", rank, " of group ", groupName, " waited ",
               timeout.count(), " ms for the NCCL unique id under store key '", key,
               "', which rank 0 sets when it creates the communicator (is rank 0 alive and "
               "running the same ops?): ",
               e.what());
  }
  const Bytes value = store.get(key);
  C10D_CHECK(value.size() == kUniqueIdBytes, "nccl: rank ", rank, " of group ", groupName,
             ": store key '", key, "' holds ", value.size(),
             " bytes, expected an NCCL unique id of ", kUniqueIdBytes);
  UniqueIdBytes id{};
  std::copy(value.begin(), value.end(), id.begin());
  return id;
}

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
