// ProcessGroupNccl: construction, device state and communicators, the launch path, coalescing,
// sub-groups and shutdown. The collectives are in collectives.cc and p2p.cc, the watchdog in
// watchdog.cc.
#include "c10d/backends/nccl/process_group_nccl.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "c10d/backends/nccl/comm.h"
#include "c10d/backends/nccl/cuda_check.h"
#include "c10d/backends/nccl/cuda_stream.h"
#include "c10d/backends/nccl/device_state.h"
#include "c10d/backends/nccl/launch.h"
#include "c10d/backends/nccl/nccl_types.h"
#include "c10d/backends/nccl/nccl_work.h"
#include "c10d/backends/nccl/pending_works.h"
#include "c10d/backends/nccl/unique_id.h"
#include "c10d/base/abi.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

ProcessGroupNccl::ProcessGroupNccl(std::shared_ptr<Store> store, int rank, int size,
                                   Options options)
    : ProcessGroupNccl(std::move(store), rank, size, std::move(options), SplitFrom{}) {}

ProcessGroupNccl::ProcessGroupNccl(std::shared_ptr<Store> store, int rank, int size,
                                   Options options, const SplitFrom& split)
    : ProcessGroup(std::move(store), rank, size, std::move(options)),
      config_(parseConfig(this->options().config)),
      pending_(std::make_unique<PendingWorks>()) {
  std::string why;
  deviceCount_ = cudaDeviceCount(&why);
  if (deviceCount_ <= 0) {
    C10D_THROW(Error, "nccl: cannot create rank ", rank, " of group ", name(), ": ", why);
  }
  C10D_CHECK_ARG(config_.deviceId < deviceCount_, "nccl: config device_id=", config_.deviceId,
                 " but this host has ", deviceCount_, " CUDA device(s) (group ", name(), ")");
  if (split.parent) {
    const int device = split.parent->device;
    auto ds = std::make_shared<DeviceState>(device, config_.highPriorityStream);
    DeviceGuard guard(device);
    {
      MutexLock lock(split.parent->mu);
      C10D_CHECK(split.parent->comm != nullptr, "nccl: the parent communicator of group ", name(),
                 " on cuda:", device, " was aborted");
      ds->comm = splitComm(split.parent->comm, split.color, split.key, this->options().timeout,
                           detail::str("ncclCommSplit for group ", name(), " on cuda:", device,
                                       " (rank ", rank, " of ", size, ")"));
    }
    commCounter_ = 1;
    devices_[device] = ds;
    lastDevice_.store(device);
  } else if (config_.eagerInit) {
    initCommunicator(Device::cuda(defaultDevice()));
  }
  startWatchdog();
}

ProcessGroupNccl::~ProcessGroupNccl() {
  shutdown();
}

bool ProcessGroupNccl::supports(ReduceOp::Kind op, DataType dtype, Device device) const {
  return supportsDevice(device) && supportsReduce(op, dtype);
}

bool ProcessGroupNccl::supportsDevice(Device device) const {
  return device.isCUDA() && device.index >= 0 && device.index < deviceCount_;
}

size_t ProcessGroupNccl::pendingWorks() const {
  return pending_->size();
}

void ProcessGroupNccl::initCommunicator(Device device) {
  C10D_CHECK_ARG(supportsDevice(device), "nccl: initCommunicator: device ", toString(device),
                 " is not a CUDA device of this host (", deviceCount_, " device(s)) in group ",
                 name());
  deviceState(device.index);
}

bool ProcessGroupNccl::hasCommunicator(Device device) const {
  auto ds = device.isCUDA() ? findDeviceState(device.index) : nullptr;
  if (!ds) return false;
  MutexLock lock(ds->mu);
  return ds->comm != nullptr;
}

std::shared_ptr<DeviceState> ProcessGroupNccl::findDeviceState(int device) const {
  MutexLock lock(devicesMu_);
  auto it = devices_.find(device);
  return it == devices_.end() ? nullptr : it->second;
}

std::shared_ptr<DeviceState> ProcessGroupNccl::deviceState(int device) {
  if (auto ds = findDeviceState(device)) return ds;
  auto ds = std::make_shared<DeviceState>(device, config_.highPriorityStream);
  const uint64_t n = commCounter_++;
  const std::string what = detail::str("creating NCCL communicator #", n, " of group ", name(),
                                       " on cuda:", device, " (rank ", rank(), " of ", size(), ")");
  UniqueIdBytes id{};
  auto generate = [&] {
    ncclUniqueId uid;
    C10D_NCCL_CHECK(ncclGetUniqueId(&uid), nullptr, what);
    UniqueIdBytes out{};
    std::memcpy(out.data(), uid.internal, kUniqueIdBytes);
    return out;
  };
  if (size() == 1) {
    id = generate();
  } else {
    C10D_CHECK_ARG(store() != nullptr, "nccl: group ", name(), " has no store to share the NCCL ",
                   "unique id through");
    id = exchangeUniqueId(*store(), rank(), uniqueIdKey(n), options().timeout, generate, name());
  }
  {
    DeviceGuard guard(device);
    ds->setUnsharedComm(createComm(id, size(), rank(), options().timeout, what));
  }
  MutexLock lock(devicesMu_);
  devices_[device] = ds;
  return ds;
}

int ProcessGroupNccl::defaultDevice() const {
  const int last = lastDevice_.load();
  if (last >= 0) return last;
  if (config_.deviceId >= 0) return config_.deviceId;
  int current = 0;
  C10D_CUDA_CHECK(cudaGetDevice(&current), "group ", name());
  return current;
}

std::string ProcessGroupNccl::describeOp(OpType op, uint64_t seq, int device) const {
  return detail::str(toString(op), " #", seq, " in group ", name(), " on cuda:", device);
}

void ProcessGroupNccl::checkOpen(OpType op) const {
  if (stopping_.load()) {
    C10D_THROW(Error, toString(op), ": process group ", name(), " was shut down");
  }
}

std::shared_ptr<Work> ProcessGroupNccl::launch(OpType op, uint64_t seq, Milliseconds timeout,
                                               int device, std::vector<Tensor> tensors, Body body) {
  checkOpen(op);
  const bool coalescing = isCoalescing();
  if (coalescing && coalescingDevice_ >= 0 && coalescingDevice_ != device) {
    C10D_THROW(InvalidArgument, describeOp(op, seq, device), ": a coalesced block of group ",
               name(), " already runs on cuda:", coalescingDevice_, " (one device per block)");
  }
  std::shared_ptr<DeviceState> ds = deviceState(device);
  lastDevice_.store(device);
  auto work = std::make_shared<NcclWork>(op, seq, name(), timeout, ds->shared, std::move(tensors),
                                         config_.blockingWait);
  DeviceGuard guard(device);
  MutexLock lock(ds->mu);
  if (ds->comm == nullptr || ds->shared->failed.load()) {
    if (std::exception_ptr e = ds->shared->error()) std::rethrow_exception(e);
    C10D_THROW(Error, describeOp(op, seq, device), ": the communicator was aborted");
  }
  Launch l;
  l.comm = ds->comm;
  l.stream = ds->stream;
  l.device = device;
  l.rank = rank();
  l.size = size();
  l.scratch = ds->scratch;
  l.work = work.get();
  std::vector<std::function<void()>> after;
  l.after = coalescing ? &coalescedAfter_ : &after;

  // The op stream waits for what the caller queued on its current stream so far.
  C10D_CUDA_CHECK(cudaEventRecord(ds->syncEvent, currentStream(device)), l.what());
  C10D_CUDA_CHECK(cudaStreamWaitEvent(ds->stream, ds->syncEvent, 0), l.what());

  if (coalescing) {
    if (!groupOpen_) {
      C10D_NCCL_CHECK(ncclGroupStart(), ds->comm, l.what());
      groupOpen_ = true;
      coalescingDevice_ = device;
    }
    body(l);
    coalescedWorks_.push_back(work);
    return work;
  }

  if (config_.detail && op != OpType::kSend && op != OpType::kRecv) {
    try {
      checkAgreement(*ds, l.what(), timeout);
    } catch (const CollectiveMismatchError&) {
      throw;  // the check itself completed on every rank: the communicator is fine
    } catch (...) {
      std::exception_ptr e = std::current_exception();
      lock.unlock();
      abortAll(e, detail::str("the C10D_DEBUG=DETAIL check of ", l.what(), " failed"));
      throw;
    }
  }
  C10D_NCCL_CHECK(ncclGroupStart(), ds->comm, l.what());
  try {
    body(l);
  } catch (...) {
    ncclGroupEnd();  // closes the group; a failed NCCL call has already put it in error
    throw;
  }
  const auto deadline = Clock::now() + timeout;
  try {
    const ncclResult_t res = ncclGroupEnd();
    if (res == ncclInProgress) {
      waitReady(ds->comm, deadline, l.what());
    } else {
      C10D_NCCL_CHECK(res, ds->comm, l.what());
    }
  } catch (...) {
    // The communicator is in an unknown state: nothing more can run on it.
    std::exception_ptr e = std::current_exception();
    lock.unlock();
    abortAll(e, detail::str("launching ", l.what(), " failed"));
    throw;
  }
  for (auto& f : after) f();
  auto event = std::make_shared<CompletionEvent>(ds->shared, ds->shared->events.get());
  C10D_CUDA_CHECK(cudaEventRecord(event->get(), ds->stream), l.what());
  work->setEvent(std::move(event));
  // Added under the device's lock, so the pending list holds a stream's ops in stream order.
  NcclWork* raw = work.get();
  pending_->add({work, deadline, [raw] { return raw->eventFired(); }, work->where(), device});
  lock.unlock();
  notifyWatchdog();
  return work;
}

void ProcessGroupNccl::checkAgreement(DeviceState& ds, const std::string& what,
                                      Milliseconds timeout) {
  ds.mu.assertHeld();  // launch() holds it (DeviceState is incomplete in our header)
  const OpDesc& desc = currentOp();
  const OpDesc::Wire mine = desc.wire();
  constexpr size_t kBytes = sizeof(OpDesc::Wire);
  const size_t n = static_cast<size_t>(size());
  if (ds.fingerprints == nullptr) {
    C10D_CUDA_CHECK(cudaMalloc(&ds.fingerprints, kBytes * (n + 1)), what,
                    ": C10D_DEBUG=DETAIL fingerprint buffer");
  }
  auto* base = static_cast<uint8_t*>(ds.fingerprints);
  std::vector<OpDesc::Wire> all(n);
  // Bounded: a rank that never issues this op leaves the allgather pending.
  const auto deadline = Clock::now() + timeout;
  C10D_CUDA_CHECK(cudaMemcpyAsync(base, &mine, kBytes, cudaMemcpyHostToDevice, ds.stream), what);
  // In a group of its own, launched as launch() launches ops (a nonblocking communicator may
  // answer ncclInProgress).
  C10D_NCCL_CHECK(ncclGroupStart(), ds.comm, what);
  C10D_NCCL_CHECK(ncclAllGather(base, base + kBytes, kBytes, ncclUint8, ds.comm, ds.stream),
                  ds.comm, what, " (C10D_DEBUG=DETAIL check)");
  const ncclResult_t res = ncclGroupEnd();
  if (res == ncclInProgress) {
    waitReady(ds.comm, deadline, what);
  } else {
    C10D_NCCL_CHECK(res, ds.comm, what, " (C10D_DEBUG=DETAIL check)");
  }
  C10D_CUDA_CHECK(
      cudaMemcpyAsync(all.data(), base + kBytes, kBytes * n, cudaMemcpyDeviceToHost, ds.stream),
      what);
  for (;;) {
    const cudaError_t q = cudaStreamQuery(ds.stream);
    if (q == cudaSuccess) break;
    if (q != cudaErrorNotReady) C10D_CUDA_CHECK(q, what, " (C10D_DEBUG=DETAIL check)");
    if (Clock::now() >= deadline) {
      C10D_THROW(TimeoutError, what,
                 ": the C10D_DEBUG=DETAIL check (an allgather of every "
                 "rank's op description) did not complete within ",
                 timeout.count(), " ms: a rank did not issue this collective");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  for (int r = 0; r < size(); ++r) {
    if (all[r] == mine) continue;
    throw mismatchError(name(), rank(), desc, r, OpDesc::fromWire(all[r]),
                        detail::str(" (seen by rank ", rank(), ", C10D_DEBUG=DETAIL)"));
  }
}

void ProcessGroupNccl::doStartCoalescing() {
  checkOpen(OpType::kCoalesced);
  groupOpen_ = false;
  coalescingDevice_ = -1;
  coalescedAfter_.clear();
  coalescedWorks_.clear();
}

std::shared_ptr<Work> ProcessGroupNccl::doEndCoalescing(std::vector<std::shared_ptr<Work>> works,
                                                        uint64_t seq) {
  if (!groupOpen_) {
    // Nothing was launched (every op moved no data): the ops' own Works are complete already.
    return ProcessGroup::doEndCoalescing(std::move(works), seq);
  }
  const int device = coalescingDevice_;
  std::vector<std::function<void()>> after;
  after.swap(coalescedAfter_);
  std::vector<std::shared_ptr<NcclWork>> members;
  members.swap(coalescedWorks_);
  groupOpen_ = false;
  coalescingDevice_ = -1;

  std::shared_ptr<DeviceState> ds = findDeviceState(device);
  C10D_CHECK(ds != nullptr, "nccl: coalesced block of group ", name(), " lost cuda:", device);
  const Milliseconds timeout = options().timeout;
  auto work = std::make_shared<NcclWork>(OpType::kCoalesced, seq, name(), timeout, ds->shared,
                                         std::vector<Tensor>{}, config_.blockingWait);
  DeviceGuard guard(device);
  MutexLock lock(ds->mu);
  const std::string what = describeOp(OpType::kCoalesced, seq, device);
  const auto deadline = Clock::now() + timeout;
  try {
    const ncclResult_t res = ncclGroupEnd();
    if (ds->comm == nullptr) C10D_THROW(Error, what, ": the communicator was aborted");
    if (res == ncclInProgress) {
      waitReady(ds->comm, deadline, what);
    } else {
      C10D_NCCL_CHECK(res, ds->comm, what);
    }
  } catch (...) {
    std::exception_ptr e = std::current_exception();
    lock.unlock();
    for (auto& m : members) m->finish(e);
    abortAll(e, detail::str("launching ", what, " failed"));
    throw;
  }
  for (auto& f : after) f();
  auto event = std::make_shared<CompletionEvent>(ds->shared, ds->shared->events.get());
  C10D_CUDA_CHECK(cudaEventRecord(event->get(), ds->stream), what);

  const auto now = Clock::now();
  members.push_back(work);
  for (auto& m : members) {
    m->setEvent(event);
    NcclWork* raw = m.get();
    pending_->add({m, now + m->timeout(), [raw] { return raw->eventFired(); }, m->where(), device});
  }
  lock.unlock();
  notifyWatchdog();
  return work;
}

std::shared_ptr<ProcessGroup> ProcessGroupNccl::createSubgroup(std::shared_ptr<Store> store,
                                                               int rank, int size,
                                                               Options options) {
  // Every rank of the parent is in this sub-group, so every rank gets here, in the same order:
  // ncclCommSplit (collective over the parent) is safe. Each rank has the same communicators,
  // because every rank ran the same ops.
  if (config_.split && size == this->size() && !aborted_.load()) {
    std::shared_ptr<DeviceState> only;
    {
      MutexLock lock(devicesMu_);
      if (devices_.size() == 1) only = devices_.begin()->second;
    }
    if (only) {
      SplitFrom split;
      split.parent = only;
      split.color = 0;
      split.key = rank;
      return std::shared_ptr<ProcessGroup>(
          new ProcessGroupNccl(std::move(store), rank, size, std::move(options), split));
    }
  }
  return std::make_shared<ProcessGroupNccl>(std::move(store), rank, size, std::move(options));
}

void ProcessGroupNccl::shutdown() {
  shutdownDiagnostics();  // C10D_STRAGGLER_REPORT: needs only the store; idempotent
  {
    MutexLock lock(shutdownMu_);
    if (shutDown_) return;
    shutDown_ = true;
  }
  stopping_.store(true);
  try {
    if (groupOpen_) {
      ncclGroupEnd();  // a coalesced block left open: close it (its ops may fail)
      groupOpen_ = false;
    }
    const auto deadline = Clock::now() + Milliseconds(config_.shutdownGraceMs);
    while (!pending_->empty() && Clock::now() < deadline && !aborted_.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (!pending_->empty()) {
      abortAll(std::make_exception_ptr(Error(detail::str(
                   "nccl: process group ", name(), " was shut down with ops in flight (they did ",
                   "not finish within shutdown_grace_ms=", config_.shutdownGraceMs, ")"))),
               "the group was shut down");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "c10d nccl: shutdown of %s: %s\n", name().c_str(), e.what());
  } catch (...) {
    std::fprintf(stderr, "c10d nccl: shutdown of group failed\n");
  }
  stopWatchdog();
  // Anything a last poll put back after an abort: nothing will poll it again.
  pending_->failAll([&](const Work& w, const std::string& where) {
    return std::make_exception_ptr(
        Error(detail::str(w.describe(), " on ", where, " (rank ", rank(), " of ", size(),
                          "): process group ", name(), " was shut down before it completed")));
  });
  std::map<int, std::shared_ptr<DeviceState>> devices;
  {
    MutexLock lock(devicesMu_);
    devices.swap(devices_);
  }
  devices.clear();  // aborts the communicators, frees streams and events
}

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
