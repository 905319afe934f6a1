#include "c10d/backends/nccl/comm.h"

#include <cstring>
#include <thread>

#include "c10d/backends/nccl/cuda_check.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

namespace {

ncclConfig_t nonblockingConfig() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  return config;
}

}  // namespace

void waitReady(ncclComm_t comm, Clock::time_point deadline, const std::string& what) {
  auto sleep = std::chrono::microseconds(10);
  const auto start = Clock::now();
  for (;;) {
    ncclResult_t state = ncclInProgress;
    C10D_NCCL_CHECK(ncclCommGetAsyncError(comm, &state), comm, what);
    if (state == ncclSuccess) return;
    if (state != ncclInProgress) {
      throwNcclError(state, "ncclCommGetAsyncError (asynchronous error)", comm, what, __FILE__,
                     __LINE__);
    }
    const auto now = Clock::now();
    if (now >= deadline) {
      C10D_THROW(TimeoutError, "nccl: ", what, " was still in progress after ",
                 std::chrono::duration_cast<Milliseconds>(now - start).count(),
                 " ms (its timeout): are all ranks of the group calling it?");
    }
    std::this_thread::sleep_for(sleep);
    if (sleep < std::chrono::milliseconds(1)) sleep *= 2;
  }
}

ncclComm_t createComm(const UniqueIdBytes& id, int nranks, int rank, Milliseconds timeout,
                      const std::string& what) {
  const auto deadline = Clock::now() + timeout;
  ncclUniqueId uid;
  static_assert(sizeof(uid.internal) == kUniqueIdBytes, "ncclUniqueId is 128 bytes");
  std::memcpy(uid.internal, id.data(), kUniqueIdBytes);
  ncclConfig_t config = nonblockingConfig();
  ncclComm_t comm = nullptr;
  const ncclResult_t res = ncclCommInitRankConfig(&comm, nranks, uid, rank, &config);
  if (res != ncclSuccess && res != ncclInProgress) {
    if (comm != nullptr) abortComm(comm);
    throwNcclError(res, "ncclCommInitRankConfig", nullptr, what, __FILE__, __LINE__);
  }
  try {
    waitReady(comm, deadline, what);
  } catch (...) {
    abortComm(comm);
    throw;
  }
  return comm;
}

ncclComm_t splitComm(ncclComm_t parent, int color, int key, Milliseconds timeout,
                     const std::string& what) {
  const auto deadline = Clock::now() + timeout;
  ncclConfig_t config = nonblockingConfig();
  ncclComm_t child = nullptr;
  const ncclResult_t res = ncclCommSplit(parent, color, key, &child, &config);
  if (res != ncclSuccess && res != ncclInProgress) {
    if (child != nullptr) abortComm(child);
    throwNcclError(res, "ncclCommSplit", parent, what, __FILE__, __LINE__);
  }
  try {
    if (child != nullptr) waitReady(child, deadline, what);
    waitReady(parent, deadline, what + " (parent communicator)");
  } catch (...) {
    if (child != nullptr) abortComm(child);
    throw;
  }
  return child;
}

std::string abortComm(ncclComm_t comm) noexcept {
  if (comm == nullptr) return "";
  const ncclResult_t res = ncclCommAbort(comm);
  if (res == ncclSuccess || res == ncclInProgress) return "";
  try {
    return detail::str("ncclCommAbort failed: ", ncclErrorText(res, nullptr));
  } catch (...) {
    return "ncclCommAbort failed";
  }
}

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
