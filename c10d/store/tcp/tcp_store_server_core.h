// ServerCore: the TCPStore server's protocol engine, without sockets (internal to store/).
//
// The I/O loop (tcp_store_server.cc) owns the sockets and hands the core what it reads; the
// fuzzers (tests/fuzz/) hand it bytes directly. The core frames the input, runs the handshake
// (hello; HMAC authentication when it has a secret; the handshake deadline), applies the limits,
// executes requests against the key-value map, parks get / wait / multiGet until their keys exist,
// and queues every reply in its connection's output buffer for the loop to send. It never blocks,
// and reads time only through Hooks::clock.
//
// Threads: everything runs on the caller's (the loop's) thread, except waitForWorkers,
// numWorkers and numConnections, which any thread may call.
//
// Connections: open() creates one. The core closes a connection itself (marks it dead and logs
// why) on a malformed frame, a failed or expired handshake, or a refusal; the loop reports I/O
// ends through peerClosed() / fail(). A dead connection keeps its output (its last reply, e.g.
// "authentication failed", is still sent) until reapDead() frees it.
//
// Parked requests: a connection parks on the FIRST missing key only. When that key is set, the
// request is re-evaluated: either every key now exists and the reply is queued, or it parks on the
// next missing key. So a connection sits in at most one waiter list at a time.
//
// Accounting: every key is charged (key bytes + value bytes) to the connection that last wrote
// it; the per-client and total limits compare these sums, checked before anything is changed (a
// multiSet is refused or applied as a whole).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/fd.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/store/tcp/tcp_store_auth.h"
#include "c10d/store/tcp/tcp_store_config.h"
#include "c10d/store/tcp/tcp_store_protocol.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace tcpstore {

class ServerCore {
 public:
  using Bytes = std::vector<uint8_t>;
  using Clock = std::chrono::steady_clock;

  // What the core needs from outside; the defaults are stderr, steady_clock and getrandom.
  struct Hooks {
    std::function<void(const std::string&)> log;
    std::function<Clock::time_point()> clock;
    std::function<Nonce()> nonce;
  };

  enum class Phase : uint8_t { kHello, kAuth, kReady };
  // Connections past maxConnections kept until their hello, to be told why they are refused.
  static constexpr int64_t kRefusalSlots = 64;

  struct Conn {
    uint64_t id = 0;
    std::string peer;  // "ip:port", for log lines
    Bytes in;          // received, unprocessed bytes from inBegin on
    size_t inBegin = 0;
    Bytes out;  // queued reply bytes not yet sent, from outBegin on
    size_t outBegin = 0;
    bool dead = false;
    bool outQueued = false;  // listed in the output queue
    // Handshake.
    Phase phase = Phase::kHello;
    bool refused = false;       // opened past maxConnections: refused at its hello
    bool firstConnect = false;  // counted as a worker once the handshake succeeds
    Nonce clientNonce{};
    Nonce serverNonce{};
    // The parked request, if any.
    bool parked = false;
    Op parkedOp = Op::kWait;
    std::vector<std::string> parkedKeys;
    // The key whose waiter list holds this connection while it is parked ("" is a valid key:
    // `parked` alone says whether the connection is listed).
    std::string waitingOn;
    // Owned by the I/O loop: the socket and whether EPOLLOUT is registered.
    Fd fd;
    bool pollingOut = false;
  };

  // `name` starts every log line ("c10d TCPStore server on port 29500").
  ServerCore(ServerConfig config, std::string name, Hooks hooks = {});
  ~ServerCore();
  ServerCore(const ServerCore&) = delete;
  ServerCore& operator=(const ServerCore&) = delete;

  const ServerConfig& config() const { return config_; }

  // Whether a new connection should be taken at all. Past maxConnections a few more are taken
  // only to tell their clients why they are refused (at their hello); past those, a new
  // connection should be closed at once, after refuseUnseen().
  bool acceptingConnections() const {
    return numConns_.load() < config_.maxConnections + kRefusalSlots;
  }
  void refuseUnseen(const std::string& peer);
  // A new connection from `peer`; owned by the core until reapDead().
  Conn& open(std::string peer);
  // Bytes received on c: runs every complete frame until c parks, its output backs up or it dies.
  void received(Conn& c, const uint8_t* data, size_t n);
  // The peer closed its side (a truncated frame is logged).
  void peerClosed(Conn& c);
  // Closes c after an I/O error; logs `why` unless empty.
  void fail(Conn& c, const std::string& why);
  // c's output drained: runs the frames it queued behind the backlog.
  void resume(Conn& c);
  // Runs the frames queued behind parked requests answered since the last call.
  void runWoken();
  // Closes the connections whose handshake deadline passed; returns the next deadline
  // (time_point::max() when none is pending).
  Clock::time_point expireHandshakes();
  // Connections with output queued since the last call (their outQueued is cleared).
  void takeOutput(std::vector<uint64_t>* ids);
  // Frees the dead connections (closing their sockets).
  void reapDead();
  // Frees every connection at once, sending nothing (the server is stopping).
  void closeAll();
  // A connection by id: live ones only, or dead ones too (for a last flush).
  Conn* find(uint64_t id);
  Conn* findAny(uint64_t id);

  void waitForWorkers(int n, Milliseconds timeout, uint16_t port) C10D_EXCLUDES(mu_);
  int64_t numWorkers() const C10D_EXCLUDES(mu_);
  int64_t numConnections() const { return numConns_.load(); }
  int64_t numKeys() const { return static_cast<int64_t>(kv_.size()); }
  // "" when the internal bookkeeping is consistent (charges sum to the per-client and total
  // counts, every parked connection sits in exactly the waiter list of its first missing key),
  // else what is wrong. O(keys + connections): for tests and the fuzzers.
  std::string checkInvariants() const;

 private:
  struct Entry {
    Bytes value;
    uint64_t owner = 0;  // the connection that last wrote it
  };
  // A change a request would make: key to hold valueBytes bytes.
  struct Change {
    const std::string* key;
    uint64_t valueBytes;
  };

  // --- framing, handshake, logging (tcp_store_server_core.cc) ---
  void processInput(Conn& c);
  bool handleHandshake(Conn& c, const uint8_t* body, size_t n, std::string* why);
  void completeHandshake(Conn& c);
  // Refuses c: logs "refused connection from <peer>: <why>", sends `status` + `reply`, closes.
  void refuse(Conn& c, Status status, const std::string& why, const std::string& reply);
  void queue(Conn& c, FrameWriter& w);
  void replyError(Conn& c, Status status, const std::string& msg);
  // Marks c dead (freed by reapDead); logs `why` unless empty.
  void closeConn(Conn& c, const std::string& why);
  // Logs one line about a peer, rate-limited (peers can trigger these at will).
  void logPeer(const std::string& line);

  // --- requests (tcp_store_server_ops.cc) ---
  // Executes one request frame; returns false (with *why) when it is malformed.
  bool handleFrame(Conn& c, const uint8_t* body, size_t n, std::string* why);
  // Whether c may make the changes; else *err names the limit, the key and the size.
  bool admit(const Conn& c, const char* op, const std::vector<Change>& changes, std::string* err);
  // Stores a value charged to c and wakes the connections waiting on the key.
  void store(const Conn& c, const std::string& key, Bytes value);
  bool eraseKey(const std::string& key);
  // Takes e's charge off its owner and the total / puts it on c (and makes c the owner).
  void release(const std::string& key, const Entry& e);
  void chargeTo(const Conn& c, const std::string& key, Entry& e);
  // Re-evaluates the requests parked on `key`, which now exists.
  void wakeWaiters(const std::string& key);
  // Parks c on a get / wait / multiGet, replying at once when every key exists.
  void park(Conn& c, Op op, std::vector<std::string> keys);
  // Replies to c's parked request if all its keys exist (true), else waits on the next missing one.
  bool tryCompleteParked(Conn& c);
  void unpark(Conn& c);

  const ServerConfig config_;
  const std::string name_;
  Hooks hooks_;

  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  uint64_t nextId_ = 16;
  std::unordered_map<std::string, Entry> kv_;
  std::unordered_map<uint64_t, uint64_t> clientBytes_;  // charged bytes by connection id
  uint64_t totalBytes_ = 0;
  std::unordered_map<std::string, std::vector<uint64_t>> waiters_;
  std::vector<uint64_t> woken_;  // connections whose parked request was answered, to resume
  std::vector<uint64_t> outQueue_;
  std::vector<uint64_t> dead_;
  std::deque<std::pair<Clock::time_point, uint64_t>> handshakes_;  // deadline order

  // Rate limit of peer-triggered log lines: kLogBurst per kLogWindow, then a count.
  Clock::time_point logWindowStart_{};
  int logLinesInWindow_ = 0;
  uint64_t logSuppressed_ = 0;

  mutable Mutex mu_;
  std::condition_variable workersCv_;
  int64_t workers_ C10D_GUARDED_BY(mu_) = 0;
  std::atomic<int64_t> numConns_{0};
};

}  // namespace tcpstore
C10D_NAMESPACE_END
}  // namespace c10d
