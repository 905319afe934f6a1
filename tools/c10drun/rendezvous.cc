#include "tools/c10drun/rendezvous.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "c10d/base/abi.h"
#include "c10d/base/settings.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace run {
namespace {

std::string seconds(std::chrono::milliseconds ms) {
  std::ostringstream ss;
  ss << static_cast<double>(ms.count()) / 1000.0 << " s";
  return ss.str();
}

}  // namespace

ElasticRendezvous::ElasticRendezvous(std::shared_ptr<Store> store, std::string runId, int minNodes,
                                     int maxNodes, int maxRestarts, RendezvousConf conf,
                                     NodeDesc self, std::function<void(int ms)> idle,
                                     std::function<void(const std::string&)> log)
    : store_(std::move(store)),
      runId_(std::move(runId)),
      prefix_("rdzv/" + runId_ + "/"),
      minNodes_(minNodes),
      maxNodes_(maxNodes),
      maxRestarts_(maxRestarts),
      conf_(conf),
      self_(std::move(self)),
      idle_(std::move(idle)),
      log_(std::move(log)) {
  // `round` exists from here on, so that every move of it is a compareSet from a number.
  store_->compareSet(key("round"), Bytes{}, toBytes("0"));
}

std::string ElasticRendezvous::roundKey(int64_t r, const std::string& k) const {
  return prefix_ + "r" + std::to_string(r) + "/" + k;
}

std::string ElasticRendezvous::describe() const {
  return "rendezvous '" + runId_ + "' round " + std::to_string(current_.round);
}

int64_t ElasticRendezvous::readInt(const std::string& k, int64_t fallback) {
  if (!store_->check({k})) return fallback;
  const std::string v = toString(store_->get(k));
  long long n = 0;
  if (!parseInteger(v, std::numeric_limits<long long>::min(), std::numeric_limits<long long>::max(),
                    &n)) {
    throw RendezvousError("rendezvous store key '" + k + "' holds '" + v.substr(0, 64) +
                          "', not a number: is another program using --rdzv-id '" + runId_ + "'?");
  }
  return n;
}

int64_t ElasticRendezvous::readRound() {
  return readInt(key("round"), 0);
}

void ElasticRendezvous::advance(int64_t r) {
  const std::string inv = store_->getString(roundKey(r, "invalid"));
  const int64_t restarts = readInt(roundKey(r, "restarts"), 0) + (inv.rfind('F', 0) == 0 ? 1 : 0);
  // Every node computes the same count from round r; the first write wins, the others match it.
  store_->compareSet(roundKey(r + 1, "restarts"), Bytes{}, toBytes(std::to_string(restarts)));
  store_->compareSet(key("round"), toBytes(std::to_string(r)), toBytes(std::to_string(r + 1)));
}

std::string ElasticRendezvous::lastFailure(int64_t r) {
  for (int64_t q = r - 1; q >= 0; --q) {
    const std::string k = roundKey(q, "invalid");
    if (!store_->check({k})) continue;
    const std::string inv = store_->getString(k);
    if (inv.rfind('F', 0) == 0) return "round " + std::to_string(q) + " ended: " + inv.substr(1);
  }
  return "no failure recorded";
}

RoundInfo ElasticRendezvous::next(const std::function<int()>& pickPort) {
  running_ = false;
  const Clock::time_point deadline = Clock::now() + conf_.joinTimeout;
  const std::string who = "node " + self_.describe();
  int64_t waitingOn = -1;
  for (;;) {
    const int64_t r = readRound();
    current_.round = r;
    if (store_->check({roundKey(r, "closed")})) {
      if (store_->check({roundKey(r, "invalid")})) {
        advance(r);
        continue;
      }
      const int64_t members = readInt(roundKey(r, "closed"), 0);
      if (waitingOn != r) {
        // torchrun's "waiting" node: the members see the count and end the round for us
        // (unless it is full).
        store_->add(roundKey(r, "waiting"), 1);
        waitingOn = r;
        log_(describe() + " is running with " + std::to_string(members) + " of " +
             std::to_string(maxNodes_) + " nodes; " + who + " waits for the next round");
      }
      if (Clock::now() >= deadline) {
        throw RendezvousError(describe() + ": no round took " + who + " within join_timeout " +
                              seconds(conf_.joinTimeout) + " (round " + std::to_string(r) +
                              " runs with " + std::to_string(members) + " of at most " +
                              std::to_string(maxNodes_) + " nodes)");
      }
      idle_(static_cast<int>(kPollStep.count()));
      continue;
    }
    const int64_t restarts = readInt(roundKey(r, "restarts"), 0);
    if (restarts > maxRestarts_) {
      throw RendezvousError(describe() + ": no restarts left (--max-restarts " +
                            std::to_string(maxRestarts_) + " used up); " + lastFailure(r));
    }
    const int slot = static_cast<int>(store_->add(roundKey(r, "joined"), 1) - 1);
    store_->set(roundKey(r, "node/" + std::to_string(slot)), self_.addr + "\n" + self_.id);
    log_(who + " joined " + describe() + " (slot " + std::to_string(slot) + ", waiting for " +
         std::to_string(minNodes_) + ".." + std::to_string(maxNodes_) + " nodes)");
    std::optional<Clock::time_point> lastCall;
    for (;;) {
      if (store_->check({roundKey(r, "closed")})) {
        const int64_t members = readInt(roundKey(r, "closed"), 0);
        if (slot < members) return finishClose(r, slot, static_cast<int>(members), pickPort);
        break;  // closed without us: wait for the next round
      }
      const int64_t joined = readInt(roundKey(r, "joined"), 0);
      if (joined >= maxNodes_) {
        store_->compareSet(roundKey(r, "closed"), Bytes{}, toBytes(std::to_string(maxNodes_)));
        continue;
      }
      if (joined >= minNodes_) {
        if (!lastCall) {
          lastCall = Clock::now() + conf_.lastCallTimeout;
        } else if (Clock::now() >= *lastCall) {
          store_->compareSet(roundKey(r, "closed"), Bytes{}, toBytes(std::to_string(joined)));
          continue;
        }
      }
      if (Clock::now() >= deadline) {
        std::string names;
        for (int64_t s = 0; s < joined; ++s) {
          const std::string k = roundKey(r, "node/" + std::to_string(s));
          std::string rec = store_->check({k}) ? store_->getString(k) : "?";
          std::replace(rec.begin(), rec.end(), '\n', ' ');
          names += (s > 0 ? ", " : "") + rec;
        }
        throw RendezvousError(describe() + ": only " + std::to_string(joined) + " of the " +
                              std::to_string(minNodes_) + " nodes needed (--nnodes " +
                              std::to_string(minNodes_) + ":" + std::to_string(maxNodes_) +
                              ") joined within join_timeout " + seconds(conf_.joinTimeout) +
                              " (joined: " + names + ")");
      }
      idle_(static_cast<int>(kPollStep.count()));
    }
  }
}

RoundInfo ElasticRendezvous::finishClose(int64_t r, int slot, int members,
                                         const std::function<int()>& pickPort) {
  std::vector<std::string> keys;
  for (int s = 0; s < members; ++s) keys.push_back(roundKey(r, "node/" + std::to_string(s)));
  try {
    store_->wait(keys, conf_.closeTimeout);
  } catch (const TimeoutError&) {
    throw RendezvousError(describe() + " closed with " + std::to_string(members) +
                          " members, but not all wrote their record within close_timeout " +
                          seconds(conf_.closeTimeout) + " (a node died while joining?)");
  }
  std::vector<Bytes> records = store_->multiGet(keys);
  std::vector<std::pair<NodeDesc, int>> nodes;  // with their slot
  for (int s = 0; s < members; ++s) {
    const std::string rec = toString(records[s]);
    const size_t nl = rec.find('\n');
    nodes.push_back(
        {NodeDesc{rec.substr(0, nl), nl == std::string::npos ? "" : rec.substr(nl + 1)}, s});
  }
  std::sort(nodes.begin(), nodes.end(), [](const auto& a, const auto& b) {
    return std::tie(a.first.addr, a.first.id, a.second) <
           std::tie(b.first.addr, b.first.id, b.second);
  });
  RoundInfo info;
  info.round = r;
  info.groupWorldSize = members;
  for (int g = 0; g < members; ++g) {
    info.members.push_back(nodes[g].first);
    if (nodes[g].second == slot) info.groupRank = g;
  }
  const std::string me = std::to_string(info.groupRank);
  store_->set(roundKey(r, "hb/" + me), std::string("0"));
  if (info.groupRank == 0) {
    store_->set(roundKey(r, "master"), self_.addr + ":" + std::to_string(pickPort()));
  }
  std::string master;
  try {
    store_->wait({roundKey(r, "master")}, conf_.closeTimeout);
    master = store_->getString(roundKey(r, "master"));
  } catch (const TimeoutError&) {
    throw RendezvousError(describe() + ": group rank 0, node " + info.members[0].describe() +
                          ", did not publish the master address within close_timeout " +
                          seconds(conf_.closeTimeout));
  }
  const size_t colon = master.rfind(':');
  info.masterAddr = master.substr(0, colon);
  info.masterPort = std::atoi(master.substr(colon + 1).c_str());
  info.restartCount = static_cast<int>(readInt(roundKey(r, "restarts"), 0));

  current_ = info;
  lastMembership_ = info;
  running_ = true;
  beat_ = 0;
  const Clock::time_point now = Clock::now();
  nextBeat_ = now + conf_.keepAliveInterval;
  lastBeats_.assign(members, std::string());
  lastSeen_.assign(members, now);
  return info;
}

void ElasticRendezvous::invalidate(const std::string& reason, bool failure) {
  store_->compareSet(roundKey(current_.round, "invalid"), Bytes{},
                     toBytes((failure ? "F" : "M") + reason));
}

std::optional<std::string> ElasticRendezvous::check() {
  if (!running_) return std::nullopt;
  const int64_t r = current_.round;
  const std::string invalidKey = roundKey(r, "invalid");
  auto ended = [&]() -> std::optional<std::string> {
    if (!store_->check({invalidKey})) return std::nullopt;
    running_ = false;
    return store_->getString(invalidKey).substr(1);
  };
  if (auto why = ended()) return why;
  const Clock::time_point now = Clock::now();
  if (now < nextBeat_) return std::nullopt;
  nextBeat_ = now + conf_.keepAliveInterval;
  store_->set(roundKey(r, "hb/" + std::to_string(current_.groupRank)), std::to_string(++beat_));

  const auto staleAfter = conf_.keepAliveInterval * conf_.keepAliveMaxAttempt;
  for (int g = 0; g < current_.groupWorldSize; ++g) {
    if (g == current_.groupRank) continue;
    const std::string hb = roundKey(r, "hb/" + std::to_string(g));
    const std::string v = store_->check({hb}) ? store_->getString(hb) : std::string();
    if (v != lastBeats_[g]) {
      lastBeats_[g] = v;
      lastSeen_[g] = now;
      continue;
    }
    if (now - lastSeen_[g] < staleAfter) continue;
    if (store_->check({roundKey(r, "done/" + std::to_string(g))})) {
      lastSeen_[g] = Clock::time_point::max() - staleAfter;  // finished: silent on purpose
      continue;
    }
    const auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - lastSeen_[g]);
    invalidate("node " + current_.members[g].describe() + " (group rank " + std::to_string(g) +
                   ") is gone: no heartbeat for " + seconds(silent) + " (keep_alive_interval " +
                   seconds(conf_.keepAliveInterval) + " x " +
                   std::to_string(conf_.keepAliveMaxAttempt) + ")",
               true);
    return ended();
  }
  if (current_.groupWorldSize < maxNodes_) {
    const int64_t waiting = readInt(roundKey(r, "waiting"), 0);
    if (waiting > 0 && !store_->check({roundKey(r, "done/0")})) {
      // A finishing job (a member done) is not restarted for a newcomer.
      bool anyDone = false;
      for (int g = 1; g < current_.groupWorldSize && !anyDone; ++g) {
        anyDone = store_->check({roundKey(r, "done/" + std::to_string(g))});
      }
      if (!anyDone) {
        invalidate(std::to_string(waiting) + " node(s) waiting to join (the round has " +
                       std::to_string(current_.groupWorldSize) + " of at most " +
                       std::to_string(maxNodes_) + ")",
                   false);
        return ended();
      }
    }
  }
  return std::nullopt;
}

void ElasticRendezvous::markDone() {
  store_->set(roundKey(current_.round, "done/" + std::to_string(current_.groupRank)),
              std::string("1"));
}

void ElasticRendezvous::leave() {
  if (!lastMembership_) return;
  store_->set(
      roundKey(lastMembership_->round, "left/" + std::to_string(lastMembership_->groupRank)),
      std::string("1"));
}

bool ElasticRendezvous::waitForPeersToLeave(std::chrono::milliseconds timeout) {
  if (!lastMembership_) return true;
  std::vector<std::string> keys;
  for (int g = 0; g < lastMembership_->groupWorldSize; ++g) {
    if (g != lastMembership_->groupRank) {
      keys.push_back(roundKey(lastMembership_->round, "left/" + std::to_string(g)));
    }
  }
  const Clock::time_point deadline = Clock::now() + timeout;
  while (!store_->check(keys)) {
    if (Clock::now() >= deadline) return false;
    idle_(static_cast<int>(kPollStep.count()));
  }
  return true;
}

bool ElasticRendezvous::allDone() {
  std::vector<std::string> keys;
  for (int g = 0; g < current_.groupWorldSize; ++g) {
    keys.push_back(roundKey(current_.round, "done/" + std::to_string(g)));
  }
  return store_->check(keys);
}

}  // namespace run
C10D_NAMESPACE_END
}  // namespace c10d
