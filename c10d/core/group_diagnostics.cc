#include "c10d/core/group_diagnostics.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <thread>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/rank_list.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

namespace {

// A position as published: "<seq> <op> <waiting|idle|failed>".
struct Position {
  bool known = false;
  bool waiting = false;
  bool failed = false;  // the rank's op failed with a communication error (it left the op)
  uint64_t seq = 0;
  std::string op;
};

std::string encode(const Position& p) {
  return detail::str(p.seq, " ", p.op, " ", p.failed ? "failed" : p.waiting ? "waiting" : "idle");
}

Position decode(const std::string& s) {
  Position p;
  std::istringstream is(s);
  std::string state;
  if (is >> p.seq >> p.op >> state) {
    p.known = true;
    p.waiting = state == "waiting";
    p.failed = state == "failed";
  }
  return p;
}

// `group` made safe as a file name: "verbs:world/group1" -> "verbs_world_group1".
std::string fileSafe(const std::string& group) {
  std::string s = group;
  for (char& c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '.';
    if (!ok) c = '_';
  }
  return s;
}

}  // namespace

GroupDiagnostics::GroupDiagnostics(std::shared_ptr<Store> store, int64_t instance,
                                   std::string group, std::string backend, int rank, int size,
                                   DiagnosticsConfig cfg)
    : store_(std::move(store)),
      instance_(instance),
      group_(group),
      rank_(rank),
      size_(size),
      cfg_(std::move(cfg)),
      recorder_(cfg_.flightRecorderSize, std::move(group), std::move(backend), rank, size) {}

std::string GroupDiagnostics::key(const std::string& what) const {
  return detail::str("c10d/diag/", instance_, "/", what);
}

std::string GroupDiagnostics::dumpPath() const {
  if (cfg_.flightRecorderDir.empty()) return "";
  return detail::str(cfg_.flightRecorderDir, "/", fileSafe(group_), ".rank", rank_, ".json");
}

void GroupDiagnostics::dump(const std::string& path, const std::string& reason) const {
  recorder_.dump(path, reason);
}

std::exception_ptr GroupDiagnostics::onFailure(std::exception_ptr error) {
  if (!error) return error;
  bool timeout = false, comm = false;
  try {
    std::rethrow_exception(error);
  } catch (const TimeoutError&) {
    timeout = true;
  } catch (const CommError&) {
    comm = true;
  } catch (...) {
  }
  // Other errors (an abort, a shutdown, a mismatch found before communicating) say it all.
  if (!timeout && !comm) return error;
  // A failure reported while the first one's report runs (the backend's deadline and the
  // caller's Work::wait expire together) waits for it, then carries the same report.
  MutexLock lock(reportMu_);
  if (failed_.load()) {
    if (timeout && !report_.empty()) {
      const std::string text = detail::messageOf(error);
      if (text.find(report_) == std::string::npos) {
        return std::make_exception_ptr(TimeoutError(text + "; " + report_));
      }
    }
    return error;
  }
  failed_.store(true);
  std::exception_ptr result = error;
  if (comm) publishFailure();
  if (timeout) {
    report_ = desyncReport(false);
    if (!report_.empty()) {
      result = std::make_exception_ptr(TimeoutError(detail::messageOf(error) + "; " + report_));
    }
  } else if (peerTimedOut()) {
    // The connection was lost to a peer that gave up on its own timeout (it breaks its group or
    // exits, closing its sockets): the cause is whoever that peer waited for, so this error
    // carries the desync report too. Without a timed-out peer it stays as it is: the others are
    // still in the op, and a report now would call them silent.
    report_ = desyncReport(true);
    if (!report_.empty()) {
      result = std::make_exception_ptr(CommError(detail::messageOf(error) + "; " + report_));
    }
  }
  if (recorder_.capacity() == 0) return result;
  const std::string reason = timeout ? "timeout" : "communication error";
  const std::string path = dumpPath();
  if (!path.empty()) {
    try {
      recorder_.dump(path, reason + ": " + detail::messageOf(error));
      std::fprintf(stderr, "c10d: group %s (rank %d): flight record written to %s\n",
                   group_.c_str(), rank_, path.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "c10d: group %s (rank %d): %s\n", group_.c_str(), rank_, e.what());
    }
  } else {
    std::fprintf(stderr,
                 "c10d: group %s (rank %d) failed (%s); its last ops (set "
                 "C10D_FLIGHT_RECORDER_DIR to dump all %zu):\n%s",
                 group_.c_str(), rank_, reason.c_str(), recorder_.capacity(),
                 recorder_.summary(4).c_str());
  }
  return result;
}

void GroupDiagnostics::publishFailure() {
  if (!exchangesPositions()) return;
  FlightRecorder::Entry mine;
  if (!recorder_.position(&mine)) return;
  Position p;
  p.known = true;
  p.failed = true;
  p.seq = mine.desc.seq;
  p.op = toString(mine.desc.op);
  try {
    store_->set(key(detail::str("pos/", rank_)), encode(p));
  } catch (const std::exception&) {
    // The store may be what failed; the others then see this rank as silent.
  }
}

bool GroupDiagnostics::peerTimedOut() {
  if (!exchangesPositions()) return false;
  // A peer's transport may close the connection the moment its op times out (Gloo's pair does),
  // a few milliseconds before that peer publishes its position: look for a short while.
  const auto deadline = std::chrono::steady_clock::now() +
                        std::min(Milliseconds(100), Milliseconds(cfg_.desyncWaitMs));
  try {
    for (;;) {
      for (int r = 0; r < size_; ++r) {
        if (r == rank_) continue;
        const std::string k = key(detail::str("pos/", r));
        if (store_->check({k}) && decode(store_->getString(k)).waiting) return true;
      }
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(Milliseconds(10));
    }
  } catch (const std::exception&) {
    // The store may be gone too: no report.
  }
  return false;
}

std::string GroupDiagnostics::desyncReport(bool commFailed) {
  if (!exchangesPositions()) return "";
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  std::vector<Position> pos(size_);
  FlightRecorder::Entry mine;
  if (recorder_.position(&mine)) {
    pos[rank_].known = true;
    pos[rank_].seq = mine.desc.seq;
    pos[rank_].op = toString(mine.desc.op);
    pos[rank_].waiting = mine.state == FlightRecorder::State::kIssued ||
                         mine.state == FlightRecorder::State::kStarted;
    pos[rank_].failed = commFailed;
  }
  std::string storeProblem;
  try {
    if (pos[rank_].known) store_->set(key(detail::str("pos/", rank_)), encode(pos[rank_]));
    std::vector<std::string> others;
    for (int r = 0; r < size_; ++r) {
      if (r != rank_) others.push_back(key(detail::str("pos/", r)));
    }
    try {
      store_->wait(others, Milliseconds(cfg_.desyncWaitMs));
    } catch (const TimeoutError&) {
      // Some never answer: report them as silent.
    }
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      const std::string k = key(detail::str("pos/", r));
      if (store_->check({k})) pos[r] = decode(store_->getString(k));
    }
  } catch (const std::exception& e) {
    storeProblem = detail::str(" (the store failed during the exchange: ", e.what(), ")");
  }

  // Group the ranks: silent, failed, idle (after an op), waiting in an op (by seq).
  std::vector<int> silent;
  std::map<uint64_t, std::pair<std::string, std::vector<int>>> waiting, idle, failed;
  for (int r = 0; r < size_; ++r) {
    if (!pos[r].known) {
      silent.push_back(r);
    } else {
      auto& m = pos[r].failed ? failed : pos[r].waiting ? waiting : idle;
      auto& slot = m[pos[r].seq];
      slot.first = pos[r].op;
      slot.second.push_back(r);
    }
  }
  std::vector<std::string> parts;
  const uint64_t front = waiting.empty() ? 0 : waiting.rbegin()->first;
  for (const auto& [seq, v] : waiting) {
    if (seq == front) continue;
    parts.push_back(detail::str(formatRanks(v.second), v.second.size() == 1 ? " is" : " are",
                                " still at ", v.first, " #", seq));
  }
  for (const auto& [seq, v] : idle) {
    parts.push_back(detail::str(formatRanks(v.second), v.second.size() == 1 ? " is" : " are",
                                " in no op of this group (last completed ", v.first, " #", seq,
                                ")"));
  }
  for (const auto& [seq, v] : failed) {
    parts.push_back(detail::str(formatRanks(v.second), " failed in ", v.first, " #", seq,
                                " with a communication error"));
  }
  if (!waiting.empty()) {
    const auto& v = waiting.rbegin()->second;
    parts.push_back(detail::str(formatRanks(v.second), " wait", v.second.size() == 1 ? "s" : "",
                                " in ", v.first, " #", front));
  }
  if (!silent.empty()) {
    parts.push_back(detail::str(formatRanks(silent), silent.size() == 1 ? " is" : " are",
                                " silent: no position published within ", cfg_.desyncWaitMs,
                                " ms (stopped, dead, or not in an op of this group)"));
  }
  if (silent.empty() && idle.empty() && failed.empty() && waiting.size() == 1) {
    parts.push_back("no rank is behind (the op is stuck in the transport)");
  }
  std::string text =
      "desync report of group " + group_ + " from rank " + std::to_string(rank_) + ": ";
  for (size_t i = 0; i < parts.size(); ++i) text += (i ? "; " : "") + parts[i];
  const auto ms = std::chrono::duration_cast<Milliseconds>(Clock::now() - start).count();
  return text + storeProblem + detail::str(" [", ms, " ms]");
}

std::string GroupDiagnostics::stragglerReport(Milliseconds timeout) {
  if (!store_ || size_ < 2 || recorder_.capacity() == 0) return "";
  const uint64_t call = stragglerCalls_.fetch_add(1);
  // "<seq>:<us>" of each completed collective (p2p ops are not comparable across ranks).
  std::string mine;
  for (const auto& e : recorder_.snapshot()) {
    const OpType op = e.desc.op;
    if (e.state != FlightRecorder::State::kCompleted || op == OpType::kSend ||
        op == OpType::kRecv || op == OpType::kRecvAnySource)
      continue;
    mine += detail::str(e.desc.seq, ":", (e.endNs - e.issueNs) / 1000, " ");
  }
  try {
    store_->set(key(detail::str("strag/", call, "/", rank_)), mine);
    if (rank_ != 0) return "";
    std::map<uint64_t, std::vector<std::pair<int64_t, int>>> bySeq;  // seq -> (us, rank)
    std::vector<int> missing;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (int r = 0; r < size_; ++r) {
      const std::string k = key(detail::str("strag/", call, "/", r));
      const auto left = std::max(Milliseconds(0), std::chrono::duration_cast<Milliseconds>(
                                                      deadline - std::chrono::steady_clock::now()));
      try {
        store_->wait({k}, left);
      } catch (const TimeoutError&) {
        missing.push_back(r);
        continue;
      }
      std::istringstream is(store_->getString(k));
      std::string item;
      while (is >> item) {
        const auto colon = item.find(':');
        if (colon == std::string::npos) continue;
        bySeq[std::strtoull(item.c_str(), nullptr, 10)].push_back(
            {std::strtoll(item.c_str() + colon + 1, nullptr, 10), r});
      }
    }
    std::vector<uint64_t> lastCount(size_, 0);
    std::vector<std::vector<int64_t>> leads(size_);
    uint64_t compared = 0, firstSeq = 0, lastSeq = 0;
    for (auto& [seq, v] : bySeq) {
      if (static_cast<int>(v.size()) < 2) continue;
      std::sort(v.begin(), v.end());
      if (compared++ == 0) firstSeq = seq;
      lastSeq = seq;
      ++lastCount[v[0].second];
      leads[v[0].second].push_back(v[1].first - v[0].first);
    }
    std::ostringstream os;
    os << "c10d: straggler summary of group " << group_ << " (" << size_ << " ranks, " << compared
       << " collectives";
    if (compared > 0) os << " #" << firstSeq << "-#" << lastSeq;
    os << "): the rank that arrived last (shortest time in the op) per collective\n";
    std::vector<int> order(size_);
    for (int r = 0; r < size_; ++r) order[r] = r;
    std::stable_sort(order.begin(), order.end(),
                     [&](int a, int b) { return lastCount[a] > lastCount[b]; });
    for (int r : order) {
      if (lastCount[r] == 0) continue;
      auto& l = leads[r];
      std::nth_element(l.begin(), l.begin() + l.size() / 2, l.end());
      os << "  rank " << r << " arrived last in " << lastCount[r] << " ("
         << (100 * lastCount[r] / std::max<uint64_t>(1, compared)) << "%), a median "
         << l[l.size() / 2] << " us after the next-to-last\n";
    }
    if (!missing.empty()) {
      os << "  " << formatRanks(missing) << " sent no times within " << timeout.count() << " ms\n";
    }
    return os.str();
  } catch (const std::exception& e) {
    return detail::str("c10d: straggler summary of group ", group_, " failed: ", e.what(), "\n");
  }
}

C10D_NAMESPACE_END
}  // namespace c10d
