#include "c10d/backends/verbs/transport/shm/shm_transport.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

struct alignas(64) ShmTransport::RingCtl {
  std::atomic<uint64_t> head{0};  // bytes written (by the sender)
  // The sender's single-copy offer (see shm_transport.h): offerSeq counts offers posted; the one
  // numbered offerSeq is pending while offerDone (the receiver's count) is behind it. Its bytes
  // follow the ring's bytes up to `head` as it was when posted (the sender writes no more until
  // it is done). offerAddr / offerBytes are written before offerSeq (release).
  std::atomic<uint64_t> offerSeq{0};
  std::atomic<uint64_t> offerAddr{0};
  std::atomic<uint64_t> offerBytes{0};
  std::atomic<uint64_t> offerRevoked{0};  // the offer number the sender withdrew (op failed)
  char pad[24];
  std::atomic<uint64_t> tail{0};       // bytes read (by the receiver)
  std::atomic<uint64_t> offerDone{0};  // offers read (by the receiver)
  std::atomic<uint32_t> cmaOk{0};      // 1: the receiver can read the sender's memory
  char pad2[44];
};

struct alignas(64) ShmTransport::RankCtl {
  PaddedWaitWord doorbell[kNumChannels];
  // Set by the rank's destructor: its process may end now without that being a failure (a rank
  // that finished its last op and exited, while slower ranks finish theirs).
  alignas(64) std::atomic<uint32_t> departed{0};
  // Set by abortAll (the group was revoked or aborted on this rank): every peer's checkPeers
  // fails from then on, whatever it waits for (a barrier waits on every rank).
  std::atomic<uint32_t> revoked{0};
  // The op board (publishOp): a sequence lock, odd while being written, 0 before the first op.
  // The words are atomics (relaxed) so a torn read is a retry, not a data race.
  alignas(64) std::atomic<uint32_t> boardVersion{0};
  std::atomic<uint64_t> board[kWireWords];
  // Full fingerprints per barrier step (mod 3): written by this rank on every barrier (its own
  // line, so no traffic), read by peers only when the fingerprint hashes differed.
  alignas(64) OpDesc::Wire fp[3];
  // The CPU this rank's collective thread ran on when it last arrived at a barrier (-1: not
  // known); written beside fp, read by a waiter to notice that it shares its CPU (C10D_SHM_SPREAD).
  std::atomic<int32_t> cpu{-1};
  // Where peers find this rank's probe word (its address in this process, and its value), set
  // before the rank counts itself in at setup.
  alignas(64) std::atomic<uint64_t> cmaProbeAddr{0};
  std::atomic<uint64_t> cmaProbeValue{0};
};

// A rank's arrival at a barrier (StagingSlots' layout): `word` holds the barrier's number (mod
// 2^32) once the rank arrived, `hash` its fingerprint's hash; the small slot follows.
struct alignas(64) ShmTransport::Arrival {
  WaitWord word;
  std::atomic<uint64_t> hash{0};
  uint8_t small[kSmallSlotBytes];
};

ShmMapping::~ShmMapping() {
  if (base_ != nullptr) munmap(base_, bytes_);
}

namespace {

size_t alignUp(size_t x, size_t a) {
  return (x + a - 1) / a * a;
}

// The staging slot's size, agreed by the host's ranks (their layouts of the workspace must be
// equal): the first rank publishes its slot and ring sizes; a rank whose C10D_SHM_CHUNK is auto
// takes that slot size, one with an explicit value (or another ring size) that differs is refused,
// naming both values, before it maps anything.
size_t agreedSlotBytes(Store& store, int rank, int size, const VerbsConfig& cfg,
                       Milliseconds timeout) {
  const size_t mine = cfg.shmChunkBytes > 0 ? alignUp(cfg.shmChunkBytes, 4096) : 0;
  if (rank == 0) {
    const size_t slot = alignUp(resolveShmChunkBytes(mine, ranksOnThisHost(size)), 4096);
    store.set("shm/layout", std::to_string(slot) + " " + std::to_string(cfg.shmRingBytes));
    return slot;
  }
  store.wait({"shm/layout"}, timeout);
  const std::string layout = c10d::toString(store.get("shm/layout"));
  unsigned long long slot = 0, ring = 0;
  C10D_CHECK(std::sscanf(layout.c_str(), "%llu %llu", &slot, &ring) == 2 && slot > 0,
             "verbs/shm: rank ", rank, " read a malformed workspace layout '", layout,
             "' from the first rank of its host");
  C10D_CHECK_ARG(ring == cfg.shmRingBytes, "verbs/shm: rank ", rank, " of the ", size,
                 " on this host has C10D_SHM_RING=", cfg.shmRingBytes,
                 " but the host's first rank has ", ring,
                 ": every rank of a host must use the same value");
  C10D_CHECK_ARG(
      mine == 0 || mine == slot, "verbs/shm: rank ", rank, " of the ", size,
      " on this host has C10D_SHM_CHUNK=", cfg.shmChunkBytes, " (", mine,
      "-byte slots) but the host's first rank uses ", slot,
      "-byte slots: set the same value on every rank of a host, or leave it at 0 (auto)");
  return static_cast<size_t>(slot);
}

std::string randomName() {
  std::random_device rd;
  uint64_t a = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  char buf[64];
  std::snprintf(buf, sizeof(buf), "/c10d-verbs-%d-%016llx", static_cast<int>(getpid()),
                static_cast<unsigned long long>(a));
  return buf;
}

}  // namespace

bool processAlive(int pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  // A zombie is dead for us: read the state letter of /proc/<pid>/stat.
  std::ifstream f("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(f, line)) return false;
  auto p = line.rfind(')');
  return !(p != std::string::npos && p + 2 < line.size() &&
           (line[p + 2] == 'Z' || line[p + 2] == 'X'));
}

static_assert(kNumChannels == 2, "busy_ is initialised for two channels");

ShmTransport::ShmTransport(Store& store, int rank, int size, const std::vector<int>& pids,
                           const VerbsConfig& cfg, Milliseconds timeout)
    : StagingSlots(agreedSlotBytes(store, rank, size, cfg, timeout)),
      rank_(rank),
      size_(size),
      ringBytes_(cfg.shmRingBytes),
      spinUs_(resolveSpinUs(cfg.spinUs, size)),
      busy_{BusyBudget(resolveBusyUs(cfg.busyUs, size)),
            BusyBudget(resolveBusyUs(cfg.busyUs, size))},
      pids_(pids),
      cmaBytes_(cfg.shmCmaBytes),
      spread_(cfg.shmSpread >= 0 ? cfg.shmSpread != 0 : ranksFitCpus(ranksOnThisHost(size))) {
  C10D_CHECK_ARG((ringBytes_ & (ringBytes_ - 1)) == 0, "shm ring bytes must be a power of two");
  size_t off = 4096;
  rankCtlOff_ = off;
  off = alignUp(off + sizeof(RankCtl) * size, 4096);
  arrivalOff_ = off;
  off = alignUp(off + sizeof(Arrival) * 2 * size, 4096);
  ringCtlOff_ = off;
  const size_t nRings = static_cast<size_t>(kNumChannels) * size * size;
  off = alignUp(off + sizeof(RingCtl) * nRings, 4096);
  ringDataOff_ = off;
  off += ringBytes_ * nRings;
  slotOff_ = off;
  off += slotBytes_ * 3 * size;
  const size_t total = off;

  Fd fd;
  // A constructor that throws runs no destructor: until this one returns, a failure (the store,
  // mmap, a peer) must remove the workspace rank 0 created, or it stays in /dev/shm.
  struct UnlinkOnThrow {
    const std::string* name = nullptr;
    ~UnlinkOnThrow() {
      if (name != nullptr) shm_unlink(name->c_str());
    }
  } created;
  if (rank == 0) {
    shmName_ = randomName();
    fd.reset(shm_open(shmName_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600));
    C10D_SYSCHECK(fd.get(), "shm_open(", shmName_, ") for the verbs workspace of ", size, " ranks");
    created.name = &shmName_;
    // tmpfs allocates pages as they are first touched: a workspace larger than what /dev/shm
    // has left would map, then kill the process with SIGBUS mid-collective (a container's
    // default /dev/shm is 64 MB). Refuse it here instead. (Not posix_fallocate: that would put
    // every page on this rank's NUMA node instead of the one of the rank first touching it.)
    struct statvfs vfs {};
    const unsigned long long freeBytes =
        fstatvfs(fd.get(), &vfs) == 0 ? static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize
                                      : ~0ull;  // unknown: let ftruncate and mmap decide
    if (freeBytes < total) {
      C10D_THROW(Error, "verbs/shm: the workspace of ", size, " ranks needs ", total,
                 " bytes of /dev/shm but it has ", freeBytes,
                 " free: make /dev/shm larger (docker run --shm-size), lower C10D_SHM_RING / "
                 "C10D_SHM_CHUNK, or set C10D_TRANSPORT=tcp");
    }
    if (ftruncate(fd.get(), static_cast<off_t>(total)) != 0) {
      int err = errno;
      C10D_THROW(Error, "ftruncate(", shmName_, ", ", total,
                 " bytes) failed: ", detail::errnoString(err), " (is /dev/shm large enough?)");
    }
    store.set("shm/name", shmName_);
  } else {
    store.wait({"shm/name"}, timeout);
    shmName_ = c10d::toString(store.get("shm/name"));
    fd.reset(shm_open(shmName_.c_str(), O_RDWR, 0600));
    if (!fd.valid()) {
      const int err = errno;
      C10D_THROW(Error, "verbs/shm: rank ", rank, " of ", size, " could not open the workspace ",
                 shmName_, " that rank 0 created: shm_open failed: ", detail::errnoString(err),
                 err == ENOENT ? " (removed from /dev/shm before every rank mapped it: by another "
                                 "process, or rank 0 gave up)"
                               : "");
    }
    // Mapping more than the file holds would be a SIGBUS at the first touch past its end.
    struct stat st {};
    C10D_SYSCHECK(fstat(fd.get(), &st), "fstat(", shmName_, ")");
    if (static_cast<unsigned long long>(st.st_size) != total) {
      C10D_THROW(Error, "verbs/shm: rank ", rank, " of ", size, " expects a workspace of ", total,
                 " bytes but ", shmName_, ", named in the store by the host's first rank, has ",
                 static_cast<long long>(st.st_size),
                 ": the ranks of this host disagree on the group (its size, or C10D_SHM_* "
                 "settings), or the store holds the name from another group made with the same "
                 "store prefix");
    }
  }
  void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED, fd.get(), 0);
  if (base == MAP_FAILED) {
    int err = errno;
    C10D_THROW(Error, "mmap of ", total, " bytes of ", shmName_, " failed on rank ", rank, ": ",
               detail::errnoString(err));
  }
  map_ = std::make_unique<ShmMapping>(base, total);
  slots_ = map_->base() + slotOff_;
  arrivals_ = map_->base() + arrivalOff_;
  for (int ch = 0; ch < kNumChannels; ++ch) {
    probed_[ch].assign(size, 0);
    taken_[ch].assign(size, 0);
  }
  if (cmaBytes_ > 0) {
    cmaProbe_ = 0xC10DC3A0C10DC3A0ull ^ (static_cast<uint64_t>(getpid()) << 20) ^
                reinterpret_cast<uintptr_t>(this);
    rankCtl(rank).cmaProbeValue.store(cmaProbe_, std::memory_order_relaxed);
    rankCtl(rank).cmaProbeAddr.store(reinterpret_cast<uintptr_t>(&cmaProbe_),
                                     std::memory_order_release);
  }
  if (store.add("shm/mapped", 1) == size) {
    shm_unlink(shmName_.c_str());
    if (cmaBytes_ > 0) store.set("shm/all_mapped", "1");
  }

  pidfds_.resize(size);
  for (int r = 0; r < size; ++r) {
    if (r == rank) continue;
#ifdef SYS_pidfd_open
    pidfds_[r].reset(static_cast<int>(syscall(SYS_pidfd_open, pids_[r], 0)));
#endif
  }
  // Every rank published its probe word before counting itself in: once all have, every probe
  // can be made; and once every rank has probed, every sender knows from its first send which
  // receivers read it directly (a receiver probing only at its first receive left its sender's
  // first large sends to the ring). Two store round trips, only with single copy on.
  if (cmaBytes_ > 0) {
    store.wait({"shm/all_mapped"}, timeout);
    for (int ch = 0; ch < kNumChannels; ++ch)
      for (int r = 0; r < size; ++r)
        if (r != rank) probeCma(ch, r);
    if (store.add("shm/probed", 1) == size) store.set("shm/all_probed", "1");
    store.wait({"shm/all_probed"}, timeout);
  }
  created.name = nullptr;  // the destructor unlinks it from here on
}

ShmTransport::~ShmTransport() {
  if (map_) rankCtl(rank_).departed.store(1, std::memory_order_seq_cst);
  if (rank_ == 0) shm_unlink(shmName_.c_str());  // ENOENT when everyone mapped it: fine
}

ShmTransport::RingCtl& ShmTransport::ring(int ch, int from, int to) const {
  size_t idx = (static_cast<size_t>(ch) * size_ + from) * size_ + to;
  return reinterpret_cast<RingCtl*>(map_->base() + ringCtlOff_)[idx];
}

uint8_t* ShmTransport::ringData(int ch, int from, int to) const {
  size_t idx = (static_cast<size_t>(ch) * size_ + from) * size_ + to;
  return map_->base() + ringDataOff_ + idx * ringBytes_;
}

ShmTransport::RankCtl& ShmTransport::rankCtl(int r) const {
  return reinterpret_cast<RankCtl*>(map_->base() + rankCtlOff_)[r];
}

ShmTransport::Arrival& ShmTransport::arrival(int r, uint64_t step) const {
  static_assert(sizeof(Arrival) == kArrivalBytes && offsetof(Arrival, small) == kArrivalHeaderBytes,
                "Arrival is StagingSlots' arrival layout");
  return reinterpret_cast<Arrival*>(map_->base() +
                                    arrivalOff_)[static_cast<size_t>(r) * 2 + step % 2];
}

namespace {

// Copies k bytes into / out of a ring of `bytes` (a power of two) at stream position `pos`.
void ringPut(uint8_t* ring, size_t bytes, uint64_t pos, const void* src, size_t k) {
  const size_t off = pos & (bytes - 1);
  const size_t first = std::min(k, bytes - off);
  std::memcpy(ring + off, src, first);
  if (k > first) std::memcpy(ring, static_cast<const uint8_t*>(src) + first, k - first);
}

void ringGet(const uint8_t* ring, size_t bytes, uint64_t pos, void* dst, size_t k) {
  const size_t off = pos & (bytes - 1);
  const size_t first = std::min(k, bytes - off);
  std::memcpy(dst, ring + off, first);
  if (k > first) std::memcpy(static_cast<uint8_t*>(dst) + first, ring, k - first);
}

}  // namespace

size_t ShmTransport::trySend(int ch, int peer, const void* buf, size_t n) {
  return trySendHdr(ch, peer, nullptr, 0, buf, n);
}

size_t ShmTransport::trySendHdr(int ch, int peer, const void* hdr, size_t hn, const void* buf,
                                size_t n) {
  RingCtl& r = ring(ch, rank_, peer);
  // Single copy off here (the default): no offer of ours can be pending, so none is looked at.
  const uint64_t offered = cmaBytes_ > 0 ? r.offerSeq.load(std::memory_order_relaxed) : 0;
  // Nothing more on this stream until the receiver has read our offer (its bytes come first).
  if (cmaBytes_ > 0 && offered != r.offerDone.load(std::memory_order_acquire)) return 0;
  const uint64_t head = r.head.load(std::memory_order_relaxed);
  const uint64_t tail = r.tail.load(std::memory_order_acquire);
  const size_t space = ringBytes_ - static_cast<size_t>(head - tail);
  const size_t kh = std::min(hn, space);
  // Single copy: the header (if any) through the ring, then an offer for the whole buffer.
  const bool offer =
      kh == hn && n >= cmaBytes_ && cmaBytes_ > 0 && r.cmaOk.load(std::memory_order_relaxed) != 0;
  const size_t kb = offer ? 0 : std::min(n, space - kh);
  if (kh + kb == 0 && !offer) return 0;
  uint8_t* data = ringData(ch, rank_, peer);
  if (kh) ringPut(data, ringBytes_, head, hdr, kh);
  if (kb) ringPut(data, ringBytes_, head + kh, buf, kb);
  r.head.store(head + kh + kb, std::memory_order_release);
  if (offer) {
    r.offerAddr.store(reinterpret_cast<uintptr_t>(buf), std::memory_order_relaxed);
    r.offerBytes.store(n, std::memory_order_relaxed);
    r.offerSeq.store(offered + 1, std::memory_order_release);
    unacked_[ch].push_back(peer);
    ++offersPosted_[ch];
  }
  WaitWord& db = rankCtl(peer).doorbell[ch];
  db.value.fetch_add(1, std::memory_order_seq_cst);
  wake(db);
  return kh + (offer ? n : kb);
}

bool ShmTransport::sendsComplete(int ch) {
  std::vector<int>& u = unacked_[ch];
  if (u.empty()) return true;
  // A peer gone will never read: its offer is dropped, as bytes left in its ring would be. The
  // check costs a syscall, so it runs on every 64th call only.
  const bool checkGone = (++goneCheck_[ch] & 63) == 0;
  size_t k = 0;
  for (int peer : u) {
    RingCtl& r = ring(ch, rank_, peer);
    const uint64_t seq = r.offerSeq.load(std::memory_order_relaxed);
    if (r.offerDone.load(std::memory_order_acquire) == seq) continue;
    if (checkGone && peerGone(peer)) {
      r.offerRevoked.store(seq, std::memory_order_release);
      continue;
    }
    u[k++] = peer;
  }
  u.resize(k);
  return u.empty();
}

void ShmTransport::revokeSends(int ch) {
  for (int peer : unacked_[ch]) {
    RingCtl& r = ring(ch, rank_, peer);
    r.offerRevoked.store(r.offerSeq.load(std::memory_order_relaxed), std::memory_order_seq_cst);
  }
  unacked_[ch].clear();
}

void ShmTransport::probeCma(int ch, int peer) {
  const RankCtl& c = rankCtl(peer);
  const uint64_t addr = c.cmaProbeAddr.load(std::memory_order_acquire);
  if (addr == 0) return;  // not mapped yet (or single copy off there): try again later
  const uint64_t want = c.cmaProbeValue.load(std::memory_order_relaxed);
  uint64_t got = 0;
  iovec local{&got, sizeof(got)};
  iovec remote{reinterpret_cast<void*>(addr), sizeof(got)};
  const ssize_t k = process_vm_readv(pids_[peer], &local, 1, &remote, 1, 0);
  const bool ok = k == static_cast<ssize_t>(sizeof(got)) && got == want;
  probed_[ch][peer] = ok ? 1 : -1;
  if (ok) ring(ch, peer, rank_).cmaOk.store(1, std::memory_order_relaxed);
}

size_t ShmTransport::tryRecv(int ch, int peer, void* buf, size_t n) {
  return tryRecvHdr(ch, peer, nullptr, 0, buf, n);
}

size_t ShmTransport::tryRecvHdr(int ch, int peer, void* hdr, size_t hn, void* buf, size_t n) {
  RingCtl& r = ring(ch, peer, rank_);
  // A peer offers only to a receiver that proved it can read it, which only a receiver with
  // single copy on does (probeCma): with it off (the default) no offer is ever looked for.
  uint64_t offered = 0;
  if (cmaBytes_ > 0) {
    if (probed_[ch][peer] == 0) probeCma(ch, peer);
    // The offer count before the head: an offer seen implies the ring bytes ahead of it are too.
    offered = r.offerSeq.load(std::memory_order_acquire);
  }
  const uint64_t tail = r.tail.load(std::memory_order_relaxed);
  const uint64_t head = r.head.load(std::memory_order_acquire);
  const size_t avail = static_cast<size_t>(head - tail);
  if (avail == 0 && cmaBytes_ > 0 && offered != r.offerDone.load(std::memory_order_relaxed))
    return readOffer(ch, peer, r, offered, hdr, hn, buf, n);
  const size_t kh = std::min(hn, avail);
  const size_t kb = std::min(n, avail - kh);
  if (kh + kb == 0) return 0;
  const uint8_t* data = ringData(ch, peer, rank_);
  if (kh) ringGet(data, ringBytes_, tail, hdr, kh);
  if (kb) ringGet(data, ringBytes_, tail + kh, buf, kb);
  r.tail.store(tail + kh + kb, std::memory_order_release);
  WaitWord& db = rankCtl(peer).doorbell[ch];
  db.value.fetch_add(1, std::memory_order_seq_cst);
  wake(db);
  return kh + kb;
}

size_t ShmTransport::readOffer(int ch, int peer, RingCtl& r, uint64_t seq, void* hdr, size_t hn,
                               void* buf, size_t n) {
  const uint64_t addr = r.offerAddr.load(std::memory_order_relaxed);
  const uint64_t bytes = r.offerBytes.load(std::memory_order_relaxed);
  uint64_t& taken = taken_[ch][peer];
  const int who = groupRank(peer);
  auto revoked = [&] {
    if (r.offerRevoked.load(std::memory_order_seq_cst) != seq) return;
    C10D_THROW(CommError, "verbs/shm: rank ", who, " withdrew a single-copy send of ", bytes,
               " bytes at byte ", taken, " (its op failed); seen by rank ", groupRank(rank_));
  };
  revoked();
  // The offer is a stretch of the stream like any other: the header first if one is expected.
  const size_t left = static_cast<size_t>(bytes - taken);
  const size_t kh = std::min(hn, left);
  const size_t kb = std::min(n, left - kh);
  if (kh + kb == 0) return 0;
  iovec local[2];
  int nl = 0;
  if (kh) local[nl++] = iovec{hdr, kh};
  if (kb) local[nl++] = iovec{buf, kb};
  iovec remote{reinterpret_cast<void*>(addr + taken), kh + kb};
  const ssize_t k = process_vm_readv(pids_[peer], local, nl, &remote, 1, 0);
  if (k < 0) {
    const int err = errno;
    revoked();  // a buffer freed after its op failed reads as EFAULT: say why
    C10D_THROW(CommError, "verbs/shm: single-copy read of ", kh + kb, " bytes from rank ", who,
               " (pid ", pids_[peer], ") failed: ", detail::errnoString(err), "; seen by rank ",
               groupRank(rank_), " (C10D_SHM_CMA=0 turns single-copy sends off)");
  }
  // Withdrawn while we read: what we read may have changed under us.
  revoked();
  taken += static_cast<uint64_t>(k);
  if (taken == bytes) {
    taken = 0;
    r.offerDone.store(seq, std::memory_order_release);
    WaitWord& db = rankCtl(peer).doorbell[ch];
    db.value.fetch_add(1, std::memory_order_seq_cst);
    wake(db);
  }
  return static_cast<size_t>(k);
}

uint32_t ShmTransport::progressToken(int ch) {
  return rankCtl(rank_).doorbell[ch].value.load(std::memory_order_seq_cst);
}

void ShmTransport::wait(int ch, uint32_t token, const std::vector<Interest>& /*interests*/,
                        Milliseconds maxWait, SpinWindow spin) {
  WaitWord& db = rankCtl(rank_).doorbell[ch];
  auto changed = [&] { return db.value.load(std::memory_order_acquire) != token; };
  if (changed()) return;
  if (spin.since != Clock::time_point::min()) {
    // The stall's spin phase: the busy budget and C10D_SPIN_US from `since`, cut short by a
    // yield that gave the CPU away. A later wait of a long stall polls the busy budget once more
    // (20 us per maxWait slice) and then sleeps.
    BusyBudget& busy = busy_[ch];
    if (busy.poll(changed)) return;  // no clock read
    const auto start = busy.pollStart();
    const auto spinEnd =
        yieldedStall_[ch] == spin.since
            ? Clock::time_point::min()
            : std::min(spin.since + std::chrono::microseconds(busy.current() + spinUs_),
                       spin.until);
    while (Clock::now() < spinEnd) {
      bool yieldedAway = false;
      for (int k = 0; k < 8 && !yieldedAway; ++k) {
        if (changed()) {
          busy.record(Clock::now() - start);
          return;
        }
        yieldedAway = relax(busy.max() > 0, &pids_);
      }
      if (yieldedAway) {
        yieldedStall_[ch] = spin.since;
        break;
      }
    }
    busy.record(Clock::now() - start);
  }
  if (maxWait <= Milliseconds::zero()) return;
  int ms = static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(10, maxWait.count())));
  sleepOn(db, token, ms);
}

void ShmTransport::wakeSelf(int ch) {
  WaitWord& db = rankCtl(rank_).doorbell[ch];
  db.value.fetch_add(1, std::memory_order_seq_cst);
  wake(db);
}

bool ShmTransport::peerGone(int r) {
  if (r == rank_) return false;
  // Destroyed its group (the process may live on): gone for this group as much as an exit.
  if (rankCtl(r).departed.load(std::memory_order_acquire) != 0) return true;
  if (pidfds_[r].valid()) {
    pollfd p{pidfds_[r].get(), POLLIN, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR));
  }
  return !processAlive(pids_[r]);
}

void ShmTransport::checkPeers() {
  for (int r = 0; r < size_; ++r) {
    if (r != rank_ && rankCtl(r).revoked.load(std::memory_order_acquire) != 0)
      C10D_THROW(CommError, "verbs/shm: rank ", groupRank(r),
                 " revoked or aborted the group; seen by rank ", groupRank(rank_));
    // A peer that shut its group down and exited is not a failure unless an op still waits on it
    // (Comm::run checks the peers of its pending operations itself).
    if (peerGone(r) && rankCtl(r).departed.load(std::memory_order_seq_cst) == 0)
      C10D_THROW(CommError, "verbs/shm: rank ", groupRank(r), " (pid ", pids_[r],
                 ") on this host died; seen by rank ", groupRank(rank_));
  }
}

void ShmTransport::publishOp(const OpDesc::Wire& w) {
  RankCtl& c = rankCtl(rank_);
  uint64_t words[kWireWords];
  std::memcpy(words, &w, sizeof(words));
  const uint32_t v = c.boardVersion.load(std::memory_order_relaxed);
  c.boardVersion.store(v + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (int i = 0; i < kWireWords; ++i) c.board[i].store(words[i], std::memory_order_relaxed);
  c.boardVersion.store(v + 2, std::memory_order_release);
}

bool ShmTransport::peerOp(int r, OpDesc::Wire* out) const {
  const RankCtl& c = rankCtl(r);
  const uint32_t v = c.boardVersion.load(std::memory_order_acquire);
  if (v == 0 || (v & 1) != 0) return false;
  uint64_t words[kWireWords];
  for (int i = 0; i < kWireWords; ++i) words[i] = c.board[i].load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (c.boardVersion.load(std::memory_order_relaxed) != v) return false;
  std::memcpy(out, words, sizeof(words));
  return true;
}

void ShmTransport::abortCollectives() {
  rankCtl(rank_).departed.store(1, std::memory_order_seq_cst);
}

bool ShmTransport::peerRevoked() {
  for (int r = 0; r < size_; ++r)
    if (rankCtl(r).revoked.load(std::memory_order_relaxed) != 0) return true;
  return false;
}

void ShmTransport::abortAll() {
  rankCtl(rank_).revoked.store(1, std::memory_order_seq_cst);
  abortCollectives();
  // Peers sleeping on their doorbells look now rather than at their next slice.
  for (int r = 0; r < size_; ++r) {
    for (int ch = 0; ch < kNumChannels; ++ch) {
      WaitWord& db = rankCtl(r).doorbell[ch];
      db.value.fetch_add(1, std::memory_order_seq_cst);
      wake(db);
    }
  }
}

void ShmTransport::barrier(const CheckFn& check, const OpDesc::Wire* fp,
                           Clock::time_point spinUntil) {
  if (!barrierWait(check, fp, spinUntil)) return;
  // The hashes differed: name a rank whose full fingerprint differs from ours. Every rank stored
  // its fingerprint for this step before arriving, and none overwrites it before every rank has
  // left the next barrier (three sets).
  const OpDesc::Wire& mine = rankCtl(rank_).fp[step_ % 3];
  for (int r = 0; r < size_; ++r) {
    const OpDesc::Wire& theirs = rankCtl(r).fp[step_ % 3];
    if (r != rank_ && theirs != mine) throw Mismatch{groupRank(r), theirs};
  }
}

bool ShmTransport::barrierWait(const CheckFn& check, const OpDesc::Wire* fp,
                               Clock::time_point spinUntil) {
  ++step_;
  // A barrier without a fingerprint counts as the all-zero one (hash and full form alike).
  static const OpDesc::Wire kNone{};
  static const uint64_t kNoneHash = OpDesc::hash(kNone);
  const OpDesc::Wire& w = fp != nullptr ? *fp : kNone;
  const uint64_t h = fp != nullptr ? OpDesc::hash(w) : kNoneHash;
  RankCtl& me = rankCtl(rank_);
  std::memcpy(&me.fp[step_ % 3], &w, sizeof(w));
  if (spread_) me.cpu.store(sched_getcpu(), std::memory_order_relaxed);  // glibc: rseq, no syscall
  // Arriving: the hash, then the number (release: it publishes the fingerprint and the slots).
  const uint32_t tag = static_cast<uint32_t>(step_);
  Arrival& mine = arrival(rank_, step_);
  mine.hash.store(h, std::memory_order_relaxed);
  mine.word.value.store(tag, std::memory_order_release);
  // Then every peer's arrival. A peer's word for this barrier's parity goes from the number two
  // barriers back to this one; it cannot move on to the next before this rank arrives there.
  auto arrived = [&](int r) {
    return arrival(r, step_).word.value.load(std::memory_order_acquire) == tag;
  };
  int next = 0;  // the peers below `next` arrived
  auto allArrived = [&] {
    for (; next < size_; ++next)
      if (next != rank_ && !arrived(next)) return false;
    return true;
  };
  // The direct collectives (and so barriers) run on the collective channel's thread.
  BusyBudget& busy = busy_[kCollectiveChannel];
  // The common case, peers that arrive while we poll: no clock read, no CheckFn made. Two pauses
  // before the first poll (hidden in the wait for the peers): polling a peer's line right after
  // arriving slows small allreduces (c10d/backends/verbs/README.md).
  bool all = allArrived();
  if (!all) {
    for (int k = 0; k < 2; ++k) cpuPause();
    all = busy.poll(allArrived);
  }
  // A peer asleep on our word is woken only now, after the polling: a fence right after the
  // store would wait for the line to come back from the peers polling it (most of a small
  // allreduce's time), here it has. (Store, fence, then the sleepers: no wake-up is lost.)
  std::atomic_thread_fence(std::memory_order_seq_cst);
  wake(mine.word);
  if (!all) {
    const auto start = busy.pollStart();
    if (spread_) spreadIfSharingCpu();
    auto checkAll = [&] {
      check();
      // A rank gone before it arrived cannot come any more (had it arrived, its word was
      // written before it left). All the ranks gone are named: one that failed first and left
      // may be seen before the rank that started it all.
      bool missing = false;
      PeerLeft left;
      for (int r = 0; r < size_; ++r) {
        if (r == rank_ || !peerGone(r)) continue;
        left.ranks.push_back(groupRank(r));
        missing = missing || !arrived(r);
      }
      if (missing) throw left;
    };
    // One peer at a time: a sleeper is woken by the peer it waits for.
    while (!allArrived()) {
      WaitWord& word = arrival(next, step_).word;
      const uint32_t seen = word.value.load(std::memory_order_seq_cst);
      const int r = next;
      waitUntil(
          word, seen, [&] { return arrived(r); }, 0, spinUs_, busy.max() > 0, &pids_, checkAll,
          spinUntil);
    }
    busy.record(Clock::now() - start);
  }
  // Every rank compares each peer's hash with its own: if any two differ, every rank finds one
  // that differs from its own.
  for (int r = 0; r < size_; ++r)
    if (r != rank_ && arrival(r, step_).hash.load(std::memory_order_relaxed) != h) return true;
  return false;
}

void ShmTransport::spreadIfSharingCpu() {
  const int mine = sched_getcpu();
  if (mine < 0) return;
  bool shared = false;
  for (int r = 0; r < size_ && !shared; ++r)
    shared = r != rank_ && rankCtl(r).cpu.load(std::memory_order_relaxed) == mine;
  if (!shared) return;
  const auto now = Clock::now();
  if (now - lastSpread_ < kSpreadEvery) return;
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
  // A CPU this thread may run on where no rank of the host last arrived.
  int target = -1;
  for (int c = 0; c < CPU_SETSIZE && target < 0; ++c) {
    if (c == mine || !CPU_ISSET(c, &allowed)) continue;
    bool used = false;
    for (int r = 0; r < size_ && !used; ++r)
      used = rankCtl(r).cpu.load(std::memory_order_relaxed) == c;
    if (!used) target = c;
  }
  if (target < 0) return;
  lastSpread_ = now;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(target, &one);
  // Pid 0: this thread. Leaving the current CPU out of its mask migrates it before the call
  // returns; putting the mask back leaves it there, pinned to nothing.
  if (sched_setaffinity(0, sizeof(one), &one) != 0) return;
  sched_setaffinity(0, sizeof(allowed), &allowed);
  rankCtl(rank_).cpu.store(target, std::memory_order_relaxed);
  ++spreads_;
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
