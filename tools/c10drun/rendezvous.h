// The dynamic rendezvous of c10drun (torchrun's c10d/etcd rendezvous): launchers ("nodes") join
// numbered rounds through a Store; a closed round is a job of N nodes with ranks, a master, and a
// restart count; a failure or a newcomer ends the round and everyone joins the next one.
//
// Written against the abstract Store only (add, compareSet, check, get, set, multiGet, wait), so
// that any store with those semantics serves: the launcher-hosted TCPStore (--rdzv-backend c10d)
// or an EtcdStore (etcd). All keys live under "rdzv/<run id>/":
//   round                 the current round R (missing: 0); moved R -> R+1 by compareSet
//   r<R>/joined           add() counter: a joining node's slot
//   r<R>/node/<slot>      the node's record: "<addr>\n<id>"
//   r<R>/closed           the member count N, set once by compareSet: slots < N are members
//   r<R>/restarts         restarts before round R (written before `round` moves to R)
//   r<R>/master           "<addr>:<port>" of the round's workers' TCPStore (group rank 0 picks it)
//   r<R>/hb/<rank>        a member's heartbeat counter, bumped every keep_alive_interval
//   r<R>/done/<rank>      a member whose workers all succeeded
//   r<R>/waiting          add() counter of nodes that came while R ran and wait for R+1
//   r<R>/left/<rank>      a member's launcher is exiting (the store's host waits for these)
//   r<R>/invalid          why R ended, set once by compareSet: "F<text>" a failure (counts as a
//                         restart), "M<text>" a membership change (does not)
//
// Closing a round: the MAX-th joiner closes it at MAX; otherwise, once MIN have joined, any member
// closes it with the count it reads when last_call_timeout has passed since it saw MIN. Group
// ranks are the members sorted by (address, id): the same answer on every node. A round that
// never reaches MIN within join_timeout is an error naming the round and who joined.
//
// Threads: none; one object per launcher, used from its one thread. Every wait is bounded
// (join_timeout, close_timeout, the store's own timeout on each request); waits sleep in steps of
// at most kPollStep through `idle`, which the launcher uses to watch its signals and may throw
// to abandon the rendezvous. Errors are RendezvousError naming the run id, the round and the
// node; store failures (the store's host died) come out as the store's CommError/TimeoutError.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/store/store.h"
#include "tools/c10drun/options.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace run {

// The rendezvous cannot go on (join timeout, no restarts left, a member's record missing).
class RendezvousError : public Error {
 public:
  explicit RendezvousError(const std::string& msg) : Error(msg) {}
};

// This launcher as its peers see it.
struct NodeDesc {
  std::string addr;  // where its workers can be reached (MASTER_ADDR when it is group rank 0)
  std::string id;    // unique in the job: "<host name>:<launcher pid>"
  std::string describe() const { return addr + " (" + id + ")"; }
};

// A closed round this node is a member of.
struct RoundInfo {
  int64_t round = 0;
  int groupRank = 0;
  int groupWorldSize = 0;
  std::vector<NodeDesc> members;  // by group rank
  std::string masterAddr;
  int masterPort = 0;
  int restartCount = 0;
};

class ElasticRendezvous {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr std::chrono::milliseconds kPollStep{50};

  // `idle(ms)` waits about ms milliseconds (the launcher polls its signals in it).
  ElasticRendezvous(std::shared_ptr<Store> store, std::string runId, int minNodes, int maxNodes,
                    int maxRestarts, RendezvousConf conf, NodeDesc self,
                    std::function<void(int ms)> idle, std::function<void(const std::string&)> log);

  // Joins the first round that takes this node and returns it once closed. `pickPort` gives the
  // workers' store port when this node is group rank 0. Throws RendezvousError when no round
  // took it within join_timeout, or when the restarts so far exceed --max-restarts (naming why
  // the last round ended).
  RoundInfo next(const std::function<int()>& pickPort);

  // While the round runs, every --monitor-interval-ms: beats this node's heartbeat when due and
  // checks the round. Returns why the round is over (the text of r<R>/invalid, after setting it
  // when this node found the reason: a member's heartbeat stale, or a waiting node while the
  // round has fewer than MAX), or nullopt while it goes on.
  std::optional<std::string> check();

  // Ends the round for everyone (first reason wins). `failure`: counts as a restart.
  void invalidate(const std::string& reason, bool failure);

  // This node's workers all succeeded: records it, so that peers do not take its silence for a
  // death.
  void markDone();
  // Whether every member of the round is done (the store's host waits for it before leaving).
  bool allDone();

  // This launcher is exiting: records it in the last round it was a member of.
  void leave();
  // The store's host, exiting: waits until every other member of its last round has left (it
  // may still need to read why the job ends), at most `timeout`. Returns whether all left.
  bool waitForPeersToLeave(std::chrono::milliseconds timeout);

  const NodeDesc& self() const { return self_; }
  std::string describe() const;  // "rendezvous 'job' round R"

 private:
  std::string key(const std::string& k) const { return prefix_ + k; }
  std::string roundKey(int64_t r, const std::string& k) const;
  int64_t readRound();
  int64_t readInt(const std::string& k, int64_t fallback);
  void advance(int64_t r);
  std::string lastFailure(int64_t r);
  RoundInfo finishClose(int64_t r, int slot, int members, const std::function<int()>& pickPort);

  std::shared_ptr<Store> store_;
  std::string runId_;
  std::string prefix_;
  int minNodes_;
  int maxNodes_;
  int maxRestarts_;
  RendezvousConf conf_;
  NodeDesc self_;
  std::function<void(int)> idle_;
  std::function<void(const std::string&)> log_;

  // The running round (current_.round: also the round being joined).
  RoundInfo current_;
  std::optional<RoundInfo> lastMembership_;  // the last round this node was a member of
  bool running_ = false;
  int64_t beat_ = 0;
  Clock::time_point nextBeat_;
  std::vector<std::string> lastBeats_;       // per member: the last heartbeat value seen
  std::vector<Clock::time_point> lastSeen_;  // per member: when it last changed
};

}  // namespace run
C10D_NAMESPACE_END
}  // namespace c10d
