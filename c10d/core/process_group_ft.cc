// Fault tolerance: abort, revoke, agree, shrink (docs/fault-tolerance.md).
//
// Everything here goes through the store, which must outlive every rank; the backend supplies
// the teardown (doRevoke), the namespace (ftKeyPrefix) and its knowledge of dead processes
// (peerDead). Keys, under ftKeyPrefix():
//   revoked                "<rank>\n<reason>" of the first revoker (compareSet: first one wins)
//   agree/<k>/vote/<r>     rank r's flags in agreement k (16 hex digits)
//   agree/<k>/count        how many ranks voted in agreement k
//   agree/<k>/result       the decision, "<flags hex>|<failed ranks, comma-separated>"
//   shrink/<k>/...         the namespace of the group shrink() built after agreement k
#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <thread>

#include "c10d/base/abi.h"
#include "c10d/core/process_group.h"
#include "c10d/store/prefix_store.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

namespace {

using SteadyClock = std::chrono::steady_clock;

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

uint64_t parseHex(const std::string& s, const std::string& key) {
  C10D_CHECK(s.size() == 16 && s.find_first_not_of("0123456789abcdef") == std::string::npos,
             "malformed agreement value '", s, "' under store key ", key);
  return std::stoull(s, nullptr, 16);
}

std::string encode(const ProcessGroup::AgreeResult& r) {
  std::string s = hex(r.flags) + "|";
  for (size_t i = 0; i < r.failed.size(); ++i) s += (i ? "," : "") + std::to_string(r.failed[i]);
  return s;
}

ProcessGroup::AgreeResult decode(const std::string& s, const std::string& key, int size) {
  const size_t bar = s.find('|');
  C10D_CHECK(bar != std::string::npos, "malformed agreement '", s, "' under store key ", key);
  ProcessGroup::AgreeResult r;
  r.flags = parseHex(s.substr(0, bar), key);
  size_t at = bar + 1;
  while (at < s.size()) {
    size_t end = s.find(',', at);
    if (end == std::string::npos) end = s.size();
    const int f = std::stoi(s.substr(at, end - at));
    C10D_CHECK(f >= 0 && f < size, "agreement under ", key, " names rank ", f, " of ", size);
    r.failed.push_back(f);
    at = end + 1;
  }
  return r;
}

}  // namespace

void ProcessGroup::requireFaultTolerance(const char* op) const {
  if (ftKeyPrefix().empty()) {
    C10D_THROW(Error, op, ": the ", backendName(), " backend (group ", name(),
               ") does not support fault tolerance (abort/revoke/agree/shrink); the verbs "
               "backend does (docs/fault-tolerance.md)");
  }
}

std::exception_ptr ProcessGroup::revokedError() const {
  MutexLock lock(brokenMu_);
  return revoked_;
}

bool ProcessGroup::markRevoked(std::exception_ptr error, bool abort) {
  {
    MutexLock lock(brokenMu_);
    if (revoked_) return false;
    revoked_ = error;
    if (!broken_) broken_ = error;
    brokenSet_.store(true, std::memory_order_release);
    revokedSet_.store(true, std::memory_order_release);
  }
  doRevoke(std::move(error), abort);
  return true;
}

std::exception_ptr ProcessGroup::revokedErrorFrom(const std::string& record) const {
  const size_t nl = record.find('\n');
  int who = -1;
  try {
    who = std::stoi(record.substr(0, nl));
  } catch (const std::exception&) {
    who = -1;
  }
  const std::string reason = nl == std::string::npos ? std::string() : record.substr(nl + 1);
  const std::string learned =
      who == rank_ ? std::string() : detail::str(" (learned on rank ", rank_, ")");
  return std::make_exception_ptr(
      RevokedError(detail::str("process group ", name(), " was revoked by rank ", who,
                               reason.empty() ? std::string() : ": " + reason, learned),
                   who, reason));
}

void ProcessGroup::abort(const std::string& reason) {
  requireFaultTolerance("abort");
  auto err = std::make_exception_ptr(
      CommError(detail::str("process group ", name(), " was aborted on rank ", rank_,
                            reason.empty() ? std::string() : ": " + reason)));
  if (!markRevoked(err, /*abort=*/true)) doRevoke(revokedError(), /*abort=*/true);
}

void ProcessGroup::revoke(const std::string& reason) {
  requireFaultTolerance("revoke");
  if (revoked()) return;
  const std::string mine = detail::str(rank_, "\n", reason);
  std::string record = mine;
  try {
    record = toString(store_->compareSet(ftKeyPrefix() + "revoked", {}, toBytes(mine)));
  } catch (const std::exception& e) {
    // Without the record peers still fail promptly (the connections close), with CommError.
    std::fprintf(stderr,
                 "c10d: %s: rank %d could not record its revocation in the store (%s); "
                 "revoking locally\n",
                 name().c_str(), rank_, e.what());
  }
  markRevoked(revokedErrorFrom(record), /*abort=*/false);
}

std::exception_ptr ProcessGroup::learnRevocation() {
  if (revoked()) return revokedError();
  const std::string prefix = ftKeyPrefix();
  if (prefix.empty() || !store_) return nullptr;
  std::string record;
  try {
    if (!store_->check({prefix + "revoked"})) return nullptr;
    record = store_->getString(prefix + "revoked");
  } catch (const std::exception&) {
    return nullptr;  // the store is gone too: the op keeps the error it saw
  }
  markRevoked(revokedErrorFrom(record), /*abort=*/false);
  return revokedError();
}

ProcessGroup::AgreeResult ProcessGroup::agree(uint64_t flags, Milliseconds timeout) {
  requireFaultTolerance("agree");
  if (timeout == kUnsetTimeout) timeout = Milliseconds(diagConfig_.ftDetectMs);
  C10D_CHECK_ARG(timeout >= Milliseconds::zero(), "agree: rank ", rank_, " of group ", name(),
                 ": timeout ", timeout.count(), " ms is negative");
  if (declaredFailed_.empty()) declaredFailed_.assign(static_cast<size_t>(size_), 0);
  const uint64_t k = agreeCount_++;
  const std::string pre = detail::str(ftKeyPrefix(), "agree/", k, "/");
  const std::string resultKey = pre + "result", countKey = pre + "count";
  auto voteKey = [&pre](int r) { return detail::str(pre, "vote/", r); };

  // What to return once a decision is in the store (whoever wrote it).
  auto adopt = [&](const std::string& value) {
    AgreeResult r = decode(value, resultKey, size_);
    for (int f : r.failed) declaredFailed_[static_cast<size_t>(f)] = 1;
    if (declaredFailed_[static_cast<size_t>(rank_)]) {
      auto err = std::make_exception_ptr(RevokedError(
          detail::str("agree #", k, " in group ", name(), ": rank ", rank_,
                      " was declared failed by the other ranks (it did not take part within "
                      "their timeout: stopped, or slower than C10D_FT_DETECT_MS); it is fenced "
                      "out of the group"),
          -1, "declared failed by agreement"));
      markRevoked(err, /*abort=*/false);
      std::rethrow_exception(err);
    }
    return r;
  };

  store_->set(voteKey(rank_), hex(flags));
  store_->add(countKey, 1);
  int expected = 0;
  for (char f : declaredFailed_) expected += f ? 0 : 1;

  std::vector<char> voted(static_cast<size_t>(size_), 0);
  const auto start = SteadyClock::now();
  const auto deadline = start + timeout;
  auto lastScan = start - Milliseconds(50);  // scan on the first poll
  for (int poll = 0;; ++poll) {
    if (store_->check({resultKey})) return adopt(store_->getString(resultKey));
    const auto now = SteadyClock::now();
    const bool late = now >= deadline;
    // Fast path: every rank not failed before voted (one counter read).
    bool complete = store_->add(countKey, 0) >= expected;
    // Otherwise, now and then (and once late): who has not voted, and may we stop waiting?
    if (!complete && (late || now - lastScan >= Milliseconds(50))) {
      lastScan = now;
      complete = true;
      for (int r = 0; r < size_; ++r) {
        if (declaredFailed_[static_cast<size_t>(r)] || voted[static_cast<size_t>(r)]) continue;
        if (store_->check({voteKey(r)})) {
          voted[static_cast<size_t>(r)] = 1;
        } else if (!late && !peerDead(r)) {
          complete = false;
        }
      }
    }
    if (complete) {
      AgreeResult mine;
      for (int r = 0; r < size_; ++r) {
        const std::string key = voteKey(r);
        if (!declaredFailed_[static_cast<size_t>(r)] && store_->check({key})) {
          mine.flags &= parseHex(store_->getString(key), key);
        } else {
          mine.failed.push_back(r);
        }
      }
      // The first decision written is the decision: every caller returns it.
      return adopt(toString(store_->compareSet(resultKey, {}, toBytes(encode(mine)))));
    }
    std::this_thread::sleep_for(poll < 50 ? Milliseconds(2) : Milliseconds(10));
  }
}

std::shared_ptr<ProcessGroup> ProcessGroup::shrink(Milliseconds timeout) {
  requireFaultTolerance("shrink");
  if (!revoked()) revoke(detail::str("shrink() called on rank ", rank_));
  const uint64_t k = agreeCount_;
  const AgreeResult r = agree(~uint64_t(0), timeout);
  std::vector<int> members;
  for (int q = 0; q < size_; ++q)
    if (!std::binary_search(r.failed.begin(), r.failed.end(), q)) members.push_back(q);
  const int newRank =
      static_cast<int>(std::find(members.begin(), members.end(), rank_) - members.begin());
  Options o = options_;
  o.groupName = detail::str(options_.groupName, "/shrink", k);
  auto store = std::make_shared<PrefixStore>(detail::str(ftKeyPrefix(), "shrink/", k), store_);
  auto pg = createSubgroup(std::move(store), newRank, static_cast<int>(members.size()), o);
  C10D_CHECK(pg != nullptr, "backend ", backendName(), " created no shrunken group of ", name());
  return pg;
}

C10D_NAMESPACE_END
}  // namespace c10d
