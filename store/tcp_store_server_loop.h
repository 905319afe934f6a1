// TCPStoreServer::Loop: the server's state and its event loop (internal to store/).
//
// Everything below `private:` is touched only by the loop thread ("c10d-tcpstore") except the
// worker count (mu_) and the connection count (atomic). Connections are identified by a 64-bit id
// (the epoll user data); a connection that fails is marked dead and freed at the end of the loop
// iteration, so handlers never see a dangling Conn.
//
// Parked requests (get / wait / multiGet of missing keys): the connection records the request and
// registers itself on the FIRST missing key only. When that key is set, the request is
// re-evaluated: either every key now exists and the reply is pushed, or it registers on the next
// missing key. So a connection sits in at most one waiter list at a time.
#pragma once

#include <sys/epoll.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "store/socket.h"
#include "store/tcp_store_protocol.h"
#include "store/tcp_store_server.h"

namespace c10d {

class TCPStoreServer::Loop {
 public:
  Loop(const std::string& bindAddress, uint16_t port);
  ~Loop();

  uint16_t port() const { return port_; }
  void waitForWorkers(int n, Milliseconds timeout);
  int64_t numWorkers() const;
  int64_t numConnections() const { return numConns_.load(); }

 private:
  using Bytes = std::vector<uint8_t>;

  struct Conn {
    uint64_t id = 0;
    net::Fd fd;
    std::string peer;
    Bytes in;  // received, unprocessed bytes from inBegin on
    size_t inBegin = 0;
    Bytes out;  // reply bytes not yet sent, from outBegin on
    size_t outBegin = 0;
    bool pollingOut = false;  // EPOLLOUT registered
    bool dead = false;
    // The parked request, if any.
    bool parked = false;
    tcpstore::Op parkedOp = tcpstore::Op::kWait;
    std::vector<std::string> parkedKeys;
    std::string waitingOn;  // the key whose waiter list holds this connection
  };

  // --- event loop and I/O (tcp_store_server.cc) ---
  void run();
  void acceptAll();
  void onReadable(Conn& c);
  void onWritable(Conn& c);
  // Runs every complete frame in c.in until the connection parks, its output backs up, or it dies.
  void processInput(Conn& c);
  // Queues a reply frame and tries to send it right away.
  void reply(Conn& c, tcpstore::FrameWriter& w);
  void flush(Conn& c);
  // Marks c dead (freed by reapDead); logs `why` to stderr unless empty.
  void closeConn(Conn& c, const std::string& why);
  void reapDead();
  Conn* find(uint64_t id);

  // --- requests (tcp_store_server_ops.cc) ---
  // Executes one request frame; returns false (with *why) when it is malformed.
  bool handleFrame(Conn& c, const uint8_t* body, size_t n, std::string* why);
  // Stores a value and wakes the connections waiting on the key.
  void setKey(const std::string& key, Bytes value);
  // Re-evaluates the requests parked on `key`, which now exists.
  void wakeWaiters(const std::string& key);
  // Parks c on a get / wait / multiGet, replying at once when every key exists.
  void park(Conn& c, tcpstore::Op op, std::vector<std::string> keys);
  // Replies to c's parked request if all its keys exist (true), else waits on the next missing one.
  bool tryCompleteParked(Conn& c);
  void unpark(Conn& c);
  void replyError(Conn& c, tcpstore::Status status, const std::string& msg);

  net::Fd listenFd_;
  net::Fd epollFd_;
  net::Fd wakeFd_;
  net::Fd spareFd_;  // kept open so that EMFILE can still accept-and-close
  uint16_t port_ = 0;

  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;
  uint64_t nextId_ = 16;
  std::unordered_map<std::string, Bytes> kv_;
  std::unordered_map<std::string, std::vector<uint64_t>> waiters_;
  std::vector<uint64_t> runnable_;  // connections unparked this iteration, to resume
  std::vector<uint64_t> dead_;
  Bytes scratch_;
  bool loggedEmfile_ = false;

  mutable std::mutex mu_;
  std::condition_variable workersCv_;
  int64_t workers_ = 0;  // guarded by mu_
  std::atomic<int64_t> numConns_{0};

  std::thread thread_;  // last: started after everything above exists
};

}  // namespace c10d
