// ProcessGroupGloo: construction, the worker queue, error conversion and shutdown. The collectives
// live in collectives_reduce.cc, collectives_data.cc and p2p.cc.
#include "c10d/backends/gloo/process_group_gloo.h"

#include <pthread.h>
#include <signal.h>

#include <gloo/allgather.h>
#include <gloo/common/error.h>
#include <gloo/rendezvous/context.h>
#include <gloo/transport/pair.h>
#include <gloo/transport/tcp/address.h>
#include <gloo/transport/tcp/attr.h>
#include <gloo/transport/tcp/device.h>
#include <gloo/transport/unbound_buffer.h>

#include <sstream>

#include "c10d/backends/gloo/helpers.h"
#include "c10d/backends/gloo/p2p_waiters.h"
#include "c10d/backends/gloo/p2p_work.h"
#include "c10d/backends/gloo/socket_names.h"
#include "c10d/backends/gloo/store_adapter.h"
#include "c10d/base/abi.h"
#include "c10d/base/rank_list.h"
#include "c10d/core/group_diagnostics.h"
#include "c10d/core/rendezvous_wait.h"
#include "c10d/store/prefix_store.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

namespace {

// Gloo writes to its sockets without MSG_NOSIGNAL, so a write to a peer that just died raises
// SIGPIPE, whose default action kills this whole process (seen as a flaky killed-rank test).
// Threads that write through Gloo block it instead: the write then fails with EPIPE and Gloo
// reports an error. The worker blocks it for its lifetime (the p2p waiters it starts inherit
// that); connect() blocks it while Gloo creates its device, so Gloo's loop thread inherits the
// blocked mask too, and restores the caller's mask after consuming a SIGPIPE raised meanwhile.
void blockSigpipe(sigset_t* old) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &s, old);
}

class SigpipeBlocked {
 public:
  SigpipeBlocked() { blockSigpipe(&old_); }
  ~SigpipeBlocked() {
    sigset_t pipe, pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    if (!sigismember(&old_, SIGPIPE) && sigpending(&pending) == 0 &&
        sigismember(&pending, SIGPIPE)) {
      const timespec zero{0, 0};
      sigtimedwait(&pipe, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlocked(const SigpipeBlocked&) = delete;
  SigpipeBlocked& operator=(const SigpipeBlocked&) = delete;

 private:
  sigset_t old_;
};

std::string join(const std::vector<std::string>& v, char sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += sep;
    out += v[i];
  }
  return out;
}

std::vector<std::string> splitLines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

// Gloo keys each rank's address record by its rank ("3" in Gloo 0.5, "rank_3" in Gloo 2023).
// Given the key a wait timed out on, "rank 3 never published its address record", naming every
// rank whose record is still missing; the bare key when it does not end in a rank.
std::string missingAddressRecords(Store& store, const std::string& timedOutKey, int self,
                                  int size) {
  const size_t digits = timedOutKey.find_last_not_of("0123456789") + 1;
  if (digits == timedOutKey.size() || timedOutKey.size() - digits > 9) {
    return "key '" + timedOutKey + "' was never set";
  }
  const std::string prefix = timedOutKey.substr(0, digits);
  std::vector<int> missing;
  try {
    for (int r = 0; r < size; ++r) {
      if (r != self && !store.check({prefix + std::to_string(r)})) missing.push_back(r);
    }
  } catch (const std::exception&) {
    missing.clear();  // the store failed too: name the rank the wait was for
  }
  if (missing.empty()) missing.push_back(std::stoi(timedOutKey.substr(digits)));
  return formatRanks(missing) +
         (missing.size() == 1 ? " never published its" : " never published their") +
         " Gloo address record";
}

bool isTimeoutMessage(const std::string& msg) {
  return msg.find("Timed out") != std::string::npos || msg.find("timed out") != std::string::npos;
}

}  // namespace

ProcessGroupGloo::ProcessGroupGloo(std::shared_ptr<Store> store, int rank, int size,
                                   Options options)
    : ProcessGroup(std::move(store), rank, size, std::move(options)),
      config_(parseGlooConfig(this->options().config)) {
  connect();
  waiters_ = std::make_unique<glooimpl::P2pWaiters>(config_.maxP2pThreads);
  worker_ = std::thread([this] { workerLoop(); });
}

ProcessGroupGloo::~ProcessGroupGloo() {
  shutdown();
}

void ProcessGroupGloo::connect() {
  SigpipeBlocked noSigpipe;
  ::gloo::transport::tcp::attr attr;
  if (!config_.ifname.empty()) {
    attr.iface = config_.ifname;
    boundAddress_ = "interface " + config_.ifname;
  } else {
    attr.hostname = config_.hostname.empty() ? defaultGlooBindAddress() : config_.hostname;
    boundAddress_ = attr.hostname;
  }
  // Each rank counts the gloo groups it built over this store; every rank builds them in the same
  // order, so the count scopes this group's rendezvous keys even when a store is reused.
  const int64_t instance = store()->add("gloo/instances/rank" + std::to_string(rank()), 1);
  auto scoped = std::make_shared<PrefixStore>("gloo/" + std::to_string(instance), store());
  std::unique_ptr<GlooStoreAdapter> adapter;
  try {
    device_ = ::gloo::transport::tcp::CreateDevice(attr);
    // Join first, through the wait that reports who is missing (gloo's own wait names a key).
    std::vector<std::string> joinKeys;
    std::vector<int> ranks;
    for (int r = 0; r < size(); ++r) {
      joinKeys.push_back("join/" + std::to_string(r));
      ranks.push_back(r);
    }
    scoped->set(joinKeys[rank()], std::string("1"));
    RankWait how;
    how.group = name();
    how.rank = rank();
    how.timeout = options().timeout;
    how.progressMs = diagnostics().config().rendezvousProgressMs;
    waitForRanks(*scoped, joinKeys, ranks, how);
    adapter = std::make_unique<GlooStoreAdapter>(scoped, options().timeout);
    auto context = std::make_shared<::gloo::rendezvous::Context>(rank(), size());
    context->setTimeout(options().timeout);
    context->connectFullMesh(*adapter, device_);
    context_ = std::move(context);
  } catch (const TimeoutError& e) {
    // Every rank joined, then one never published Gloo's address record: the store's own
    // message names only a key, so name the group, this rank and the ranks whose record is missing.
    const std::string key = adapter ? adapter->timedOutKey() : std::string();
    if (key.empty()) throw;
    throw TimeoutError(detail::str(
        "gloo: rank ", rank(), " of group ", name(), " (size ", size(),
        "): every rank joined, but ", missingAddressRecords(*scoped, key, rank(), size()),
        " within ", options().timeout.count(), " ms (key 'gloo/", instance, "/", key,
        "'): a rank that joined stopped or stalled before connecting. The store said: ", e.what()));
  } catch (const c10d::Error&) {
    throw;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    auto text = detail::str("gloo: rank ", rank(), " of group ", name(), " (size ", size(),
                            ") could not connect its full mesh from ", boundAddress_, " within ",
                            options().timeout.count(), " ms: ", msg);
    if (isTimeoutMessage(msg)) throw TimeoutError(text);
    throw CommError(text);
  }
  // Publish our sockets as Gloo prints addresses, so that a gloo error quoting one can be turned
  // into a rank (read back lazily, only when an error happens: peerFromMessage).
  scoped->set("sockets/" + std::to_string(rank()), join(glooimpl::ownTcpAddresses(), '\n'));
  peerStore_ = scoped;
}

bool ProcessGroupGloo::supports(ReduceOp::Kind op, DataType dtype, Device device) const {
  // Every op the core defines, on every dtype: what Gloo lacks is built from its untyped
  // allreduce/reduce plus the core's reduction kernels (see README / helpers.h).
  return device.isCPU() && isDefined(op, dtype);
}

std::shared_ptr<Work> ProcessGroupGloo::enqueue(OpType op, uint64_t seq, Milliseconds timeout,
                                                TaskFn fn) {
  auto work = std::make_shared<BackendWork>(op, seq, name(), timeout);
  if (size() == 1) return enqueueWork(std::move(work), std::move(fn));
  // Collectives only (p2p goes through postP2p): check the ranks agree before moving data.
  OpDesc desc = currentOp();
  return enqueueWork(std::move(work),
                     [this, desc = std::move(desc), timeout, fn = std::move(fn)]() {
                       checkAgreement(desc, timeout);
                       return fn();
                     });
}

// Why a check before every collective, even by default: Gloo's device thread throws
// gloo::EnforceNotMet when a peer's message is larger than the buffer this rank posted for it (a
// rank with a larger count), and an exception escaping that thread terminates the process. The
// cheapest guard that covers every op is one allgather of a few bytes (one message per pair on
// Gloo's ring/bruck allgather) before the op. It compares the whole description (op, dtype,
// count, root, reduce op, the rank's collective count), as verbs does: comparing only the bytes
// moved let a dtype of the same width sum wrong bits, a broadcast meet an allreduce (a hang) and
// two roots deliver wrong data, silently. Every rank compares every rank's entry, so every rank
// raises the same error, before any of the op's data moved: the group stays usable. The check
// uses a tag no collective uses.
void ProcessGroupGloo::checkAgreement(const OpDesc& desc, Milliseconds timeout) {
  OpDesc::Wire mine = desc.wire();  // non-const: gloo's setInput takes T*
  std::vector<OpDesc::Wire> all(size());
  ::gloo::AllgatherOptions o(context_);
  o.setInput(&mine, 1);
  o.setOutput(all.data(), all.size());
  o.setTag(kAgreementTag);
  o.setTimeout(glooimpl::glooTimeout(timeout));
  ::gloo::allgather(o);
  // Every rank sees the same `all`, so every rank takes the same branch below.
  bool partsOnly = false;
  for (int r = 0; r < size(); ++r) {
    if (all[r] == all[0]) continue;
    if (!onlyPartsDiffer(all[r], all[0])) {
      partsOnly = false;
      break;
    }
    partsOnly = true;
  }
  if (partsOnly) {
    // Same op and totals, tensors sized differently: one more allgather (error path only) of the
    // sizes themselves, so the message names the tensor and both ranks' values.
    std::vector<uint64_t> mineParts = desc.parts();
    std::vector<uint64_t> allParts(mineParts.size() * static_cast<size_t>(size()));
    ::gloo::AllgatherOptions p(context_);
    p.setInput(mineParts.data(), mineParts.size());
    p.setOutput(allParts.data(), allParts.size());
    p.setTag(kPartsTag);
    p.setTimeout(glooimpl::glooTimeout(timeout));
    ::gloo::allgather(p);
    for (int r = 0; r < size(); ++r) {
      if (all[r] == mine) continue;
      const auto first = allParts.begin() + static_cast<ptrdiff_t>(r * mineParts.size());
      throw CollectiveMismatchError(
          partsMismatchMessage(name(), rank(), desc, r,
                               std::vector<uint64_t>(first, first + mineParts.size())) +
          detail::str(" (seen by rank ", rank(), ")"));
    }
  }
  for (int r = 0; r < size(); ++r) {
    if (all[r] == mine) continue;
    throw mismatchError(name(), rank(), desc, r, OpDesc::fromWire(all[r]),
                        detail::str(" (seen by rank ", rank(), ")"));
  }
}

std::shared_ptr<Work> ProcessGroupGloo::enqueueWork(std::shared_ptr<BackendWork> work, TaskFn fn) {
  std::exception_ptr refuse;
  {
    MutexLock lock(mu_);
    if (stopping_) {
      refuse =
          std::make_exception_ptr(Error(work->describe() + ": group " + name() + " was shut down"));
    } else if (auto broken = brokenError()) {
      refuse = brokenFor(*work, broken);
    } else {
      queue_.push_back(Task{work, std::move(fn)});
      cv_.notify_one();
      return work;
    }
  }
  work->finish(refuse);
  return work;
}

void ProcessGroupGloo::workerLoop() {
  pthread_setname_np(pthread_self(), "c10d-gloo");
  blockSigpipe(nullptr);
  for (;;) {
    Task task;
    {
      MutexLock lock(mu_);
      lock.wait(cv_, [&]() C10D_REQUIRES(mu_) { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    if (auto broken = brokenError()) {
      task.work->finish(brokenFor(*task.work, broken));
      continue;
    }
    try {
      task.work->markStarted();
      Continuation cont = task.run();
      task.run = nullptr;  // drop captured buffers before completing
      if (!cont) {
        task.work->finish();
        continue;
      }
      auto work = task.work;
      bool submitted = waiters_->submit([this, work, cont = std::move(cont)]() mutable {
        runContinuation(work, std::move(cont));
      });
      if (!submitted) {
        work->finish(std::make_exception_ptr(
            Error(work->describe() + ": group " + name() + " was shut down")));
      }
    } catch (...) {
      task.run = nullptr;
      task.work->finish(handleFailure(*task.work, std::current_exception()));
    }
  }
}

void ProcessGroupGloo::runContinuation(const std::shared_ptr<BackendWork>& work,
                                       Continuation cont) {
  try {
    cont();
    work->finish();
  } catch (...) {
    work->finish(handleFailure(*work, std::current_exception()));
  }
}

std::exception_ptr ProcessGroupGloo::brokenFor(const Work& work, std::exception_ptr first) const {
  return detail::withMessage(
      first, work.describe() + ": not run: group " + name() +
                 " is unusable after an earlier failure: " + detail::messageOf(first));
}

// Which rank a Gloo error's "[ip]:port" belongs to. Gloo quotes its pair's `peer_`, which
// depending on the Gloo version and on which side connected is the peer's listening address as
// the rendezvous published it (Debian's 0.5 never re-reads it after accepting) or the peer's
// connected socket. The first is still in the store under Gloo's own key "<r>"; each rank
// publishes the second ("sockets/<r>", socket_names.h) after connecting. Read only when an error
// happens.
std::string ProcessGroupGloo::peerFromMessage(const std::string& msg) const {
  if (!peerStore_) return "";
  auto named = [](int j, const std::string& hostPort) {
    return "rank " + std::to_string(j) + " (" + hostPort + " in gloo's message)";
  };
  for (int j = 0; j < size(); ++j) {
    if (j == rank()) continue;
    try {
      // Gloo's rendezvous value for rank j: one serialized address per pair, ranks other than j
      // in order.
      const std::string rendezvousKey = std::to_string(j);
      if (size() > 1 && peerStore_->check({rendezvousKey})) {
        const std::vector<char> blob =
            GlooStoreAdapter::unframe(rendezvousKey, peerStore_->get(rendezvousKey));
        const size_t entry = blob.size() / static_cast<size_t>(size() - 1);
        if (entry > 0 && blob.size() % static_cast<size_t>(size() - 1) == 0) {
          const size_t index = static_cast<size_t>(rank() < j ? rank() : rank() - 1);
          const std::vector<char> bytes(blob.begin() + index * entry,
                                        blob.begin() + (index + 1) * entry);
          const std::string a = ::gloo::transport::tcp::Address(bytes).str();
          const std::string hostPort = a.substr(0, a.find('$'));  // "[ip]:port$seq"
          if (glooimpl::quotesAddress(msg, hostPort)) return named(j, hostPort);
        }
      }
    } catch (const std::exception&) {
      // Newer Gloo publishes its rendezvous value in another form (Address() then throws):
      // the sockets below still name the rank.
    }
    try {
      const std::string socketsKey = "sockets/" + std::to_string(j);
      if (peerStore_->check({socketsKey})) {
        for (const std::string& hostPort : splitLines(peerStore_->getString(socketsKey))) {
          if (glooimpl::quotesAddress(msg, hostPort)) return named(j, hostPort);
        }
      }
    } catch (const std::exception&) {
      // The store may be gone too, or a value not in the form expected; the message then quotes
      // gloo only.
    }
  }
  return "";
}

std::exception_ptr ProcessGroupGloo::handleFailure(const Work& work, std::exception_ptr error) {
  std::exception_ptr converted;
  try {
    std::rethrow_exception(error);
  } catch (const InvalidArgument&) {
    return error;  // raised before communicating: the group is still consistent
  } catch (const c10d::Error&) {
    converted = error;
  } catch (const ::gloo::IoException& e) {
    const std::string msg = e.what();
    if (isTimeoutMessage(msg)) {
      converted = std::make_exception_ptr(
          TimeoutError(detail::str(work.describe(), " (rank ", rank(), ") timed out after ",
                                   work.timeout().count(), " ms waiting for a peer; gloo: ", msg)));
    } else {
      std::string peer = peerFromMessage(msg);
      converted = std::make_exception_ptr(
          CommError(detail::str(work.describe(), " (rank ", rank(), ") lost its connection to ",
                                peer.empty() ? std::string("a peer") : peer, "; gloo: ", msg)));
    }
  } catch (const std::exception& e) {
    converted = std::make_exception_ptr(
        Error(detail::str(work.describe(), " (rank ", rank(), ") failed in gloo: ", e.what())));
  } catch (...) {
    converted = std::make_exception_ptr(
        Error(detail::str(work.describe(), " (rank ", rank(), ") failed in gloo")));
  }
  // The transport is now in an unknown state (gloo's docs): break the group and fail what waits.
  converted = diagnoseFailure(converted);
  setBroken(converted);
  std::deque<Task> queued;
  {
    MutexLock lock(mu_);
    queued.swap(queue_);
  }
  for (Task& t : queued) t.work->finish(brokenFor(*t.work, converted));
  return converted;
}

void ProcessGroupGloo::shutdown() {
  shutdownDiagnostics();  // C10D_STRAGGLER_REPORT: needs only the store; idempotent
  std::deque<Task> queued;
  std::vector<std::shared_ptr<glooimpl::P2pWork>> posted;
  {
    MutexLock lock(mu_);
    if (stopping_ && !worker_.joinable()) return;
    stopping_ = true;
    queued.swap(queue_);
    for (auto& w : posted_) {
      if (auto p = w.lock()) posted.push_back(std::move(p));
    }
    posted_.clear();
    cv_.notify_all();
  }
  for (Task& t : queued) {
    t.work->finish(std::make_exception_ptr(
        Error(t.work->describe() + ": group " + name() + " was shut down before it ran")));
  }
  for (auto& p : posted) p->cancel("group " + name() + " was shut down");
  if (worker_.joinable()) {
    // Dropping the last reference from a callback on the worker itself cannot join it.
    if (worker_.get_id() == std::this_thread::get_id()) {
      worker_.detach();
    } else {
      worker_.join();
    }
  }
  if (waiters_) waiters_->stop();
}

C10D_NAMESPACE_END
}  // namespace c10d
