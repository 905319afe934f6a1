// P2PEngine: user-level send/recv (tags, recv from any source) over channel 1 of a Transport.
//
// Thread: one, "c10d-verbs-p2p", started by the constructor and joined by stop() / the
// destructor. It owns channel 1 of the transport. send() and recv() only queue the op (under mu_)
// and wake the thread; the thread streams each peer's sends in order (a 16-byte header: magic,
// tag, length; then the payload), reads every incoming message as soon as it arrives, delivers it
// to the first posted recv that matches (source or any source, and tag) or keeps it as
// "unexpected" until one is posted. So sends never wait for the matching recv (no deadlock when
// two ranks send to each other first), at the price of a copy for unexpected messages: only of
// what arrived before the recv was posted, since a recv posted while its message is still
// arriving takes it over (the part buffered so far is copied, the rest is read straight into the
// recv's buffer). A sendrecv whose send goes out first thus copies a ring's worth, not the message.
//
// Completion: the thread finishes each Work. A dead peer (CommError from the transport) fails
// every pending Work and is reported through `onError` (the group then marks itself broken);
// stop() fails what is still pending with Error("shut down"). A recv whose size differs from the
// message fails with Error naming both sizes (the payload is drained, never buffered whole).
// Work::wait's own timeout bounds every caller.
//
// Untrusted lengths: a header's length is believed only as far as memory goes. A message that no
// posted recv of exactly that size takes is kept (or drained) only up to `maxUnexpectedBytes`
// (0: this host's physical memory); a header announcing more is a corrupt stream: CommError naming
// the peer and the length, for every op that needs that peer.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "c10d/backends/verbs/spin_wait.h"
#include "c10d/backends/verbs/transport/transport.h"
#include "c10d/base/abi.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/base/types.h"
#include "c10d/core/backend_work.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

class P2PEngine {
 public:
  // sliceUs: the thread's scheduler slice (requestShortSlice; 0: the default).
  P2PEngine(Transport& t, int rank, int size, std::string groupName,
            std::function<void(std::exception_ptr)> onError, size_t maxUnexpectedBytes = 0,
            int sliceUs = 0);
  // An engine without its thread, driven by poll() on the caller's thread: for the fuzzer
  // (tests/fuzz/verbs_p2p_fuzzer.cc), where a thread per input would cost more than the input.
  struct ManualDrive {};
  P2PEngine(Transport& t, int rank, int size, std::string groupName,
            std::function<void(std::exception_ptr)> onError, size_t maxUnexpectedBytes,
            ManualDrive);
  ~P2PEngine();
  P2PEngine(const P2PEngine&) = delete;
  P2PEngine& operator=(const P2PEngine&) = delete;

  std::shared_ptr<Work> send(Tensor t, int dst, int tag, uint64_t seq, Milliseconds timeout)
      C10D_EXCLUDES(mu_);
  // src == -1: any source.
  std::shared_ptr<Work> recv(Tensor t, int src, int tag, uint64_t seq, Milliseconds timeout)
      C10D_EXCLUDES(mu_);
  // Fails what is pending (with `why` when given, else Error "... shut down") and joins the
  // thread. Idempotent.
  void stop(std::exception_ptr why = nullptr) C10D_EXCLUDES(mu_);
  // One round of the p2p thread's loop (manual engines only): hands over new ops, moves every
  // peer's streams, completes finished sends. Returns whether anything progressed; never blocks.
  // An error fails every op and goes to onError, as on the thread.
  bool poll() C10D_EXCLUDES(mu_);

 private:
  struct Header {
    uint32_t magic;
    int32_t tag;
    uint64_t len;
  };
  struct SendOp {
    std::shared_ptr<BackendWork> work;
    int peer;
    Header hdr;
    const uint8_t* data;
    size_t done = 0;  // bytes of header + payload sent
  };
  struct RecvOp {
    std::shared_ptr<BackendWork> work;
    int src;
    int tag;
    uint8_t* data;
    size_t len;
  };
  // An unexpected message's payload: not zero-filled (every byte is received before it is read),
  // so a large one costs page faults only as far as it has arrived.
  struct Payload {
    std::unique_ptr<uint8_t[]> bytes;
    size_t size = 0;
    static Payload of(size_t n) { return Payload{std::unique_ptr<uint8_t[]>(new uint8_t[n]), n}; }
  };
  struct Incoming {
    Header hdr{};
    size_t hdrDone = 0;
    bool matched = false;  // payload goes to `target`
    bool discard = false;  // payload of a size-mismatched message: dropped
    RecvOp target{};
    Payload buf;  // unexpected payload (neither matched nor discarded)
    size_t done = 0;
  };
  struct Unexpected {
    int src;
    int tag;
    Payload data;
  };

  void loop() C10D_EXCLUDES(mu_);
  // The loop's work between two waits; *pending: ops are outstanding. Throws what the loop
  // treats as fatal.
  bool round(bool* pending) C10D_EXCLUDES(mu_);
  void fatal(std::exception_ptr e) C10D_EXCLUDES(mu_);
  bool progressSends(int peer);
  bool progressIncoming(int peer);
  void deliverPosted(RecvOp op);
  // Fails `op`, which matched a message of `len` bytes from `peer` (a size mismatch).
  void failMismatched(const RecvOp& op, uint64_t len, int peer, int tag) const;
  // A recv posted while an unmatched message from `peer` is still arriving takes it over.
  bool adoptArriving(RecvOp& op, int peer);
  void failAll(std::exception_ptr e) C10D_EXCLUDES(mu_);
  // `peer` is gone (or its stream broke): fails the ops that need it, keeps the others.
  void peerFailed(int peer, std::exception_ptr e);

  Transport& t_;
  const int rank_;
  const int size_;
  const std::string group_;
  std::function<void(std::exception_ptr)> onError_;
  const size_t maxUnexpectedBytes_;

  Mutex mu_;
  std::vector<SendOp> newSends_ C10D_GUARDED_BY(mu_);
  std::vector<RecvOp> newRecvs_ C10D_GUARDED_BY(mu_);
  std::exception_ptr failed_ C10D_GUARDED_BY(mu_);  // set once a peer failed
  std::atomic<bool> stop_{false};

  // Thread-owned state.
  std::vector<std::deque<SendOp>> sends_;
  std::list<RecvOp> posted_;
  std::vector<Incoming> incoming_;
  std::vector<std::exception_ptr> gone_;  // per peer: why it is gone (null while alive)
  std::deque<Unexpected> unexpected_;
  std::vector<std::shared_ptr<BackendWork>>
      unfinished_;                   // sent, awaiting the transport's completion
  std::vector<uint8_t> drain_;       // where discarded payloads are read to
  std::vector<Interest> interests_;  // what the last round waits for

  std::thread thread_;
};

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
