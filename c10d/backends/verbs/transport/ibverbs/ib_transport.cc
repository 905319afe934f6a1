// The ibverbs transport (see ib_transport.h for the protocol).
//
// Per (channel, peer) an Endpoint: one RC QP; the receive ring this rank exposes to the peer;
// the credit word the peer RDMA-writes its consumed count into. Data path:
//   trySend  registers the caller's buffer (MrCache), posts RDMA WRITE WITH IMM pieces (ringPieces:
//            no wrap, <= 1 MiB) into the peer's ring at our head; imm = piece length. Zero-copy:
//            sendsComplete() is false until the CQ reported every write, and the region stays
//            pinned in the cache (never evicted nor deregistered) until then: the endpoint keeps
//            a FIFO of {region, writes} per trySend, released as the writes complete (an RC send
//            queue completes in order).
//   tryRecv  copies from our ring (head advanced by receive completions) and RDMA-writes the new
//            tail, inline, into the peer's credit word.
// One CQ per channel (each channel belongs to one thread), polled while spinning, then armed
// (ibv_req_notify_cq) and slept on through its completion channel's fd, with an eventfd for
// wakeSelf(). A failed work completion is a CommError naming the peer and the status string.
#include "c10d/backends/verbs/transport/ibverbs/ib_transport.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <random>
#include <utility>

#include "c10d/backends/verbs/spin_wait.h"
#include "c10d/backends/verbs/transport/ibverbs/ib_addr.h"
#include "c10d/backends/verbs/transport/ibverbs/ibv_wrap.h"
#include "c10d/backends/verbs/transport/ibverbs/mr_cache.h"
#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/fd.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

namespace {

constexpr int kSqDepth = 256;
constexpr int kRqDepth = 256;
constexpr size_t kMaxPiece = 1 << 20;
// A credit word no ring can reach: "this peer abandoned the collective channel".
constexpr uint64_t kAbortedCredit = ~uint64_t(0);

class IbTransport : public Transport {
 public:
  IbTransport(Store& store, int rank, int size, const VerbsConfig& cfg, Milliseconds timeout);
  ~IbTransport() override;

  const char* name() const override { return "ibverbs"; }
  size_t trySend(int ch, int peer, const void* buf, size_t n) override;
  size_t tryRecv(int ch, int peer, void* buf, size_t n) override;
  uint32_t progressToken(int) override { return 0; }
  void wait(int ch, uint32_t token, const std::vector<Interest>& interests, Milliseconds maxWait,
            SpinWindow spin) override;
  void wakeSelf(int ch) override;
  // A peer that gave up on the collective streams (abortCollectives) wrote kAbortedCredit into
  // its credit word for us: it is gone for collectives, as a closed socket is on tcp.
  bool peerGone(int peer) override {
    return peer != rank_ && __atomic_load_n(&ep(kCollectiveChannel, peer).creditWord,
                                            __ATOMIC_ACQUIRE) == kAbortedCredit;
  }
  void checkPeers() override {
    for (int q = 0; q < size_; ++q) {
      if (peerGone(q)) {
        C10D_THROW(CommError, "verbs/ibverbs: rank ", rank_, ": rank ", q,
                   " abandoned the collective streams (it saw a mismatched collective or an "
                   "error); its collectives will not continue");
      }
    }
  }
  // Writes kAbortedCredit into every peer's credit word for this rank (an inline RDMA WRITE on
  // the collective channel), so their waits fail at the next check instead of at the timeout.
  void abortCollectives() override;
  bool sendsComplete(int ch) override {
    pollCq(ch);
    return inflight_[ch] == 0;
  }

 private:
  struct Endpoint {
    ibv_qp* qp = nullptr;
    std::vector<uint8_t> ring;  // receive ring (registered)
    ibv_mr* ringMr = nullptr;
    uint64_t creditWord = 0;  // peer writes its consumed count here
    ibv_mr* creditMr = nullptr;
    uint64_t recvHead = 0, recvTail = 0;  // bytes arrived / consumed in our ring
    uint64_t sendHead = 0;                // bytes written into the peer's ring
    int sqInflight = 0;
    IbAddress remote;
    // Regions pinned by trySend, oldest first, with how many of its writes are still unpolled.
    std::deque<std::pair<const MrRegion*, int>> pinned;
  };
  Endpoint& ep(int ch, int peer) { return eps_[ch * size_ + peer]; }
  int pollCq(int ch);
  void postRecvs(Endpoint& e, int n);
  void connect(Endpoint& e, const IbAddress& remote);
  // Posts an inline, signaled RDMA WRITE of `value` into the peer's credit word for `e` (our
  // consumed count, or kAbortedCredit); ibv_post_send's result. The caller counts sqInflight.
  int postCreditWrite(Endpoint& e, uint64_t value);

  const IbvApi* api_;
  const int rank_;
  const int size_;
  const VerbsConfig cfg_;
  ibv_context* ctx_ = nullptr;
  ibv_pd* pd_ = nullptr;
  ibv_port_attr port_{};
  ibv_gid gid_{};
  ibv_comp_channel* chan_[kNumChannels] = {nullptr, nullptr};
  ibv_cq* cq_[kNumChannels] = {nullptr, nullptr};
  Fd eventFds_[kNumChannels];
  // The stall (its SpinWindow::since) whose spin a yield that gave the CPU away ended: its later
  // waits sleep at once.
  Clock::time_point yieldedStall_[kNumChannels]{};
  int inflight_[kNumChannels] = {0, 0};
  std::vector<Endpoint> eps_;
  std::unique_ptr<MrCache> mrs_[kNumChannels];
};

namespace {

// C10D_SPIN_US is resolved by connectTransport(); -1 (auto) is left only where a test builds the
// transport directly.
VerbsConfig withResolvedSpin(VerbsConfig c) {
  c.spinUs = resolveSpinUs(c.spinUs, ranksOnThisHost(1));
  return c;
}

}  // namespace

IbTransport::IbTransport(Store& store, int rank, int size, const VerbsConfig& cfg,
                         Milliseconds timeout)
    : api_(ibvApi(nullptr)),
      rank_(rank),
      size_(size),
      cfg_(withResolvedSpin(cfg)),
      eps_(kNumChannels * size) {
  C10D_CHECK(api_ != nullptr);
  int n = 0;
  ibv_device** list = api_->getDeviceList(&n);
  C10D_CHECK(list != nullptr && n > 0, "no RDMA device");
  ibv_device* dev = nullptr;
  for (int i = 0; i < n; ++i)
    if (cfg.ibDevice.empty() || cfg.ibDevice == api_->getDeviceName(list[i])) dev = list[i];
  if (cfg.ibDevice.empty()) dev = list[0];
  if (dev == nullptr) {
    api_->freeDeviceList(list);
    C10D_THROW(InvalidArgument, "verbs/ibverbs: C10D_IB_DEVICE=", cfg.ibDevice, " not found");
  }
  ctx_ = api_->openDevice(dev);
  const std::string devName = api_->getDeviceName(dev);
  api_->freeDeviceList(list);
  if (ctx_ == nullptr)
    C10D_THROW(Error, "ibverbs: ibv_open_device(", devName,
               ") failed: ", detail::errnoString(errno));
  C10D_IBV_CHECK(api_->queryPort(ctx_, static_cast<uint8_t>(cfg.ibPort), &port_), "device ",
                 devName, " port ", cfg.ibPort);
  C10D_CHECK(port_.state == IBV_PORT_ACTIVE, "verbs/ibverbs: port ", cfg.ibPort, " of ", devName,
             " is not active");
  C10D_IBV_CHECK(api_->queryGid(ctx_, static_cast<uint8_t>(cfg.ibPort), cfg.ibGidIndex, &gid_),
                 "GID index ", cfg.ibGidIndex);
  C10D_IBV_PTR(pd_, api_->allocPd(ctx_), devName);
  for (int ch = 0; ch < kNumChannels; ++ch) {
    C10D_IBV_PTR(chan_[ch], api_->createCompChannel(ctx_), devName);
    fcntl(chan_[ch]->fd, F_SETFL, fcntl(chan_[ch]->fd, F_GETFL) | O_NONBLOCK);
    C10D_IBV_PTR(cq_[ch], api_->createCq(ctx_, size * (kSqDepth + kRqDepth), nullptr, chan_[ch], 0),
                 devName);
    eventFds_[ch].reset(eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    C10D_SYSCHECK(eventFds_[ch].get(), "verbs/ibverbs: eventfd");
    ibv_pd* pd = pd_;
    const IbvApi* api = api_;
    mrs_[ch] = std::make_unique<MrCache>(
        [pd, api](void* addr, size_t len) {
          MrRegion r;
          ibv_mr* mr;
          C10D_IBV_PTR(mr, api->regMr(pd, addr, len, IBV_ACCESS_LOCAL_WRITE), len, " bytes");
          r.handle = mr;
          r.lkey = mr->lkey;
          r.rkey = mr->rkey;
          return r;
        },
        [api](const MrRegion& r) { api->deregMr(static_cast<ibv_mr*>(r.handle)); });
  }
  std::mt19937 rng(std::random_device{}());
  std::vector<std::vector<IbAddress>> mine(size, std::vector<IbAddress>(kNumChannels));
  const int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  for (int ch = 0; ch < kNumChannels; ++ch) {
    for (int q = 0; q < size; ++q) {
      if (q == rank) continue;
      Endpoint& e = ep(ch, q);
      ibv_qp_init_attr qa{};
      qa.send_cq = cq_[ch];
      qa.recv_cq = cq_[ch];
      qa.qp_type = IBV_QPT_RC;
      qa.cap.max_send_wr = kSqDepth;
      qa.cap.max_recv_wr = kRqDepth;
      qa.cap.max_send_sge = 1;
      qa.cap.max_recv_sge = 1;
      qa.cap.max_inline_data = 64;
      C10D_IBV_PTR(e.qp, api_->createQp(pd_, &qa), "to rank ", q);
      e.ring.assign(cfg.shmRingBytes, 0);
      C10D_IBV_PTR(e.ringMr, api_->regMr(pd_, e.ring.data(), e.ring.size(), access), "ring");
      C10D_IBV_PTR(e.creditMr, api_->regMr(pd_, &e.creditWord, sizeof(e.creditWord), access),
                   "credit word");
      IbAddress& a = mine[q][ch];
      a.lid = port_.lid;
      a.qpn = e.qp->qp_num;
      a.psn = rng() & 0xffffff;
      std::memcpy(a.gid, gid_.raw, 16);
      a.ringAddr = reinterpret_cast<uintptr_t>(e.ring.data());
      a.ringRkey = e.ringMr->rkey;
      a.ringBytes = e.ring.size();
      a.creditAddr = reinterpret_cast<uintptr_t>(&e.creditWord);
      a.creditRkey = e.creditMr->rkey;
      e.remote.psn = a.psn;  // our own send PSN, kept until connect()
    }
  }
  auto theirs = exchangeIbAddresses(store, rank, size, mine, timeout);
  for (int ch = 0; ch < kNumChannels; ++ch)
    for (int q = 0; q < size; ++q)
      if (q != rank) connect(ep(ch, q), theirs[q][ch]);
  // Every QP must be ready to receive before any peer writes: one more store round.
  store.set("ib/ready/" + std::to_string(rank), "1");
  std::vector<std::string> keys;
  for (int q = 0; q < size; ++q) keys.push_back("ib/ready/" + std::to_string(q));
  store.wait(keys, timeout);
}

void IbTransport::connect(Endpoint& e, const IbAddress& remote) {
  const uint32_t myPsn = e.remote.psn;
  e.remote = remote;
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = static_cast<uint8_t>(cfg_.ibPort);
  a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  C10D_IBV_CHECK(
      api_->modifyQp(e.qp, &a,
                     IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
      "to INIT");
  postRecvs(e, kRqDepth);
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = port_.active_mtu;
  a.dest_qp_num = remote.qpn;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.dlid = remote.lid;
  a.ah_attr.port_num = static_cast<uint8_t>(cfg_.ibPort);
  bool global = false;
  for (uint8_t b : remote.gid) global |= b != 0;
  if (global) {
    a.ah_attr.is_global = 1;
    std::memcpy(a.ah_attr.grh.dgid.raw, remote.gid, 16);
    a.ah_attr.grh.sgid_index = static_cast<uint8_t>(cfg_.ibGidIndex);
    a.ah_attr.grh.hop_limit = 64;
  }
  C10D_IBV_CHECK(
      api_->modifyQp(e.qp, &a,
                     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
      "to RTR (remote qpn ", remote.qpn, ")");
  a = ibv_qp_attr{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = 14;
  a.retry_cnt = 7;
  a.rnr_retry = 7;
  a.sq_psn = myPsn;
  a.max_rd_atomic = 1;
  C10D_IBV_CHECK(api_->modifyQp(e.qp, &a,
                                IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                                    IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC),
                 "to RTS");
}

IbTransport::~IbTransport() {
  for (auto& e : eps_) {
    if (e.qp) api_->destroyQp(e.qp);
    if (e.ringMr) api_->deregMr(e.ringMr);
    if (e.creditMr) api_->deregMr(e.creditMr);
  }
  for (auto& m : mrs_) m.reset();
  for (int ch = 0; ch < kNumChannels; ++ch) {
    if (cq_[ch]) api_->destroyCq(cq_[ch]);
    if (chan_[ch]) api_->destroyCompChannel(chan_[ch]);
    eventFds_[ch].reset();
  }
  if (pd_) api_->deallocPd(pd_);
  if (ctx_) api_->closeDevice(ctx_);
}

void IbTransport::postRecvs(Endpoint& e, int n) {
  for (int i = 0; i < n; ++i) {
    ibv_recv_wr wr{};
    ibv_recv_wr* bad = nullptr;
    wr.wr_id = reinterpret_cast<uintptr_t>(&e);
    C10D_IBV_CHECK(ibv_post_recv(e.qp, &wr, &bad), "posting a receive");
  }
}

int IbTransport::pollCq(int ch) {
  ibv_wc wc[32];
  int total = 0;
  for (;;) {
    int n = ibv_poll_cq(cq_[ch], 32, wc);
    if (n < 0) C10D_THROW(CommError, "ibverbs: ibv_poll_cq failed on rank ", rank_);
    for (int i = 0; i < n; ++i) {
      // Data writes carry the endpoint pointer with bit 0 set (endpoints are 8-byte aligned).
      const bool data = (wc[i].wr_id & 1) != 0;
      Endpoint* e = reinterpret_cast<Endpoint*>(wc[i].wr_id & ~uint64_t{1});
      const int peer = static_cast<int>((e - &eps_[ch * size_]));
      if (wc[i].status != IBV_WC_SUCCESS)
        C10D_THROW(CommError, "verbs/ibverbs: rank ", rank_, ": work completion with rank ", peer,
                   " failed: ", api_->wcStatusStr(wc[i].status), " (did rank ", peer, " die?)");
      if (wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        e->recvHead += ntohl(wc[i].imm_data);
        postRecvs(*e, 1);
      } else {
        --e->sqInflight;
        if (data) {
          --inflight_[ch];
          // The NIC is done reading this write's source: release its region's pin.
          if (!e->pinned.empty() && --e->pinned.front().second == 0) {
            mrs_[ch]->unpin(*e->pinned.front().first);
            e->pinned.pop_front();
          }
        }
      }
    }
    total += n;
    if (n < 32) return total;
  }
}

size_t IbTransport::trySend(int ch, int peer, const void* buf, size_t n) {
  pollCq(ch);
  Endpoint& e = ep(ch, peer);
  const uint64_t credit = __atomic_load_n(&e.creditWord, __ATOMIC_ACQUIRE);
  if (credit == kAbortedCredit) return 0;  // the peer left (peerGone): the caller's check throws
  size_t k = std::min<size_t>(n, e.remote.ringBytes - static_cast<size_t>(e.sendHead - credit));
  if (k == 0 || e.sqInflight >= kSqDepth - 4) return 0;
  // Pinned until the completion of every write posted below (counted in the FIFO entry as they
  // are posted, so that it stays right if a post fails).
  e.pinned.emplace_back(&mrs_[ch]->pin(buf, k), 0);
  const MrRegion& mr = *e.pinned.back().first;
  size_t sent = 0;
  for (const RingPiece& p : ringPieces(e.sendHead, k, e.remote.ringBytes, kMaxPiece)) {
    if (e.sqInflight >= kSqDepth - 4) break;
    ibv_sge sge{reinterpret_cast<uintptr_t>(buf) + p.srcOffset, static_cast<uint32_t>(p.len),
                mr.lkey};
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = reinterpret_cast<uintptr_t>(&e) | 1;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.imm_data = htonl(static_cast<uint32_t>(p.len));
    wr.wr.rdma.remote_addr = e.remote.ringAddr + p.offset;
    wr.wr.rdma.rkey = e.remote.ringRkey;
    C10D_IBV_CHECK(ibv_post_send(e.qp, &wr, &bad), "RDMA write to rank ", peer);
    ++e.sqInflight;
    ++inflight_[ch];
    ++e.pinned.back().second;
    sent += p.len;
  }
  if (e.pinned.back().second == 0) {
    e.pinned.pop_back();
    mrs_[ch]->unpin(mr);
  }
  e.sendHead += sent;
  return sent;
}

size_t IbTransport::tryRecv(int ch, int peer, void* buf, size_t n) {
  pollCq(ch);
  Endpoint& e = ep(ch, peer);
  size_t k = std::min<size_t>(n, static_cast<size_t>(e.recvHead - e.recvTail));
  if (k == 0 || e.sqInflight >= kSqDepth - 1) return 0;
  const size_t cap = e.ring.size();
  for (const RingPiece& p : ringPieces(e.recvTail, k, cap, cap))
    std::memcpy(static_cast<uint8_t*>(buf) + p.srcOffset, e.ring.data() + p.offset, p.len);
  e.recvTail += k;
  // Return the space: write our consumed count into the peer's credit word (inline).
  C10D_IBV_CHECK(postCreditWrite(e, e.recvTail), "credit write to rank ", peer);
  ++e.sqInflight;
  return k;
}

void IbTransport::wait(int ch, uint32_t, const std::vector<Interest>&, Milliseconds maxWait,
                       SpinWindow spin) {
  // The stall spins once (C10D_SPIN_US from spin.since, cut at spin.until, or by a yield that
  // gave the CPU away), then sleeps.
  const auto spinEnd =
      spin.since == Clock::time_point::min() || yieldedStall_[ch] == spin.since
          ? Clock::time_point::min()
          : std::min(spin.since + std::chrono::microseconds(cfg_.spinUs), spin.until);
  while (Clock::now() < spinEnd) {
    if (pollCq(ch) > 0) return;
    if (relax()) {
      yieldedStall_[ch] = spin.since;
      break;
    }
  }
  C10D_IBV_CHECK(ibv_req_notify_cq(cq_[ch], 0), "arming the CQ");
  if (pollCq(ch) > 0) return;
  pollfd p[2] = {{chan_[ch]->fd, POLLIN, 0}, {eventFds_[ch].get(), POLLIN, 0}};
  if (::poll(p, 2, static_cast<int>(maxWait.count())) > 0) {
    if (p[0].revents & POLLIN) {
      ibv_cq* cq;
      void* ctx;
      if (api_->getCqEvent(chan_[ch], &cq, &ctx) == 0) api_->ackCqEvents(cq, 1);
    }
    if (p[1].revents & POLLIN) {
      uint64_t v;
      ssize_t ignored = read(eventFds_[ch].get(), &v, sizeof(v));
      (void)ignored;
    }
  }
}

int IbTransport::postCreditWrite(Endpoint& e, uint64_t value) {
  ibv_sge sge{reinterpret_cast<uintptr_t>(&value), sizeof(value), 0};
  ibv_send_wr wr{};
  ibv_send_wr* bad = nullptr;
  wr.wr_id = reinterpret_cast<uintptr_t>(&e);
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = IBV_WR_RDMA_WRITE;
  wr.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED;  // inline: `value` is gone on return
  wr.wr.rdma.remote_addr = e.remote.creditAddr;
  wr.wr.rdma.rkey = e.remote.creditRkey;
  return ibv_post_send(e.qp, &wr, &bad);
}

void IbTransport::abortCollectives() {
  for (int q = 0; q < size_; ++q) {
    Endpoint& e = ep(kCollectiveChannel, q);
    if (q == rank_ || e.qp == nullptr || e.sqInflight >= kSqDepth - 1) continue;
    // Best effort (never throws): a peer we cannot tell still fails at its timeout.
    if (postCreditWrite(e, kAbortedCredit) == 0) ++e.sqInflight;
  }
}

void IbTransport::wakeSelf(int ch) {
  uint64_t one = 1;
  ssize_t ignored = write(eventFds_[ch].get(), &one, sizeof(one));
  (void)ignored;
}

}  // namespace

bool ibDeviceAvailable(const VerbsConfig&, std::string* reason) {
  return ibvListDevices(reason);
}

std::unique_ptr<Transport> makeIbTransport(Store& store, int rank, int size, const VerbsConfig& cfg,
                                           Milliseconds timeout) {
  std::string why;
  if (!ibDeviceAvailable(cfg, &why))
    C10D_THROW(InvalidArgument, "verbs: rank ", rank, ": C10D_TRANSPORT=ibverbs but ", why);
  return std::make_unique<IbTransport>(store, rank, size, cfg, timeout);
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
