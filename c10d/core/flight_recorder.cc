#include "c10d/core/flight_recorder.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/fast_clock.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

namespace {

void jsonString(std::ostream& os, const std::string& s) {
  os << '"';
  for (unsigned char c : s) {
    switch (c) {
      case '"':
        os << "\\\"";
        break;
      case '\\':
        os << "\\\\";
        break;
      case '\n':
        os << "\\n";
        break;
      case '\t':
        os << "\\t";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          os << buf;
        } else {
          os << c;
        }
    }
  }
  os << '"';
}

void jsonCounts(std::ostream& os, const std::vector<uint64_t>& v) {
  os << '[';
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  os << ']';
}

uint64_t payloadBytes(const OpDesc& d) {
  if (d.op == OpType::kCoalesced || d.op == OpType::kUnknown) return 0;
  uint64_t n = d.count;
  if (!d.sendCounts().empty()) {
    n = 0;
    for (uint64_t c : d.sendCounts()) n += c;
  }
  return n * elementSize(d.dtype);
}

}  // namespace

const char* FlightRecorder::toString(State s) {
  switch (s) {
    case State::kIssued:
      return "issued";
    case State::kStarted:
      return "started";
    case State::kCompleted:
      return "completed";
    case State::kFailed:
      return "failed";
  }
  return "unknown";
}

int64_t FlightRecorder::nowNs() {
  return fastNowNs();
}

FlightRecorder::FlightRecorder(size_t capacity, std::string group, std::string backend, int rank,
                               int size)
    : group_(std::move(group)),
      backend_(std::move(backend)),
      rank_(rank),
      size_(size),
      capacity_(capacity),
      ring_(capacity) {}

FlightRecorder::Id FlightRecorder::record(const OpDesc& desc, int64_t issueNs) {
  if (capacity_ == 0) return kNoId;
  SpinLockGuard lock(mu_);
  const Id id = next_++;
  Entry& e = ring_[id % ring_.size()];
  e.desc = desc;
  e.issueNs = issueNs;
  e.startNs = 0;
  e.endNs = 0;
  e.state = State::kIssued;
  e.error.clear();
  return id;
}

void FlightRecorder::onStart(Id id, int64_t ns) {
  if (id == kNoId) return;
  SpinLockGuard lock(mu_);
  if (id >= next_ || next_ - id > ring_.size()) return;  // overwritten
  Entry& e = ring_[id % ring_.size()];
  if (e.state != State::kIssued) return;
  e.startNs = ns;
  e.state = State::kStarted;
}

void FlightRecorder::onEnd(Id id, int64_t ns, const std::exception_ptr& error, int64_t startNs) {
  if (id == kNoId) return;
  std::string text = error ? detail::messageOf(error) : std::string();
  SpinLockGuard lock(mu_);
  if (id >= next_ || next_ - id > ring_.size()) return;
  Entry& e = ring_[id % ring_.size()];
  if (e.state == State::kCompleted || e.state == State::kFailed) return;
  if (startNs != 0 && e.state == State::kIssued) e.startNs = startNs;
  e.endNs = ns;
  e.state = error ? State::kFailed : State::kCompleted;
  e.error = std::move(text);
  const size_t k = std::min(static_cast<size_t>(e.desc.op), counters_.size() - 1);
  OpCounters& c = counters_[k];
  ++c.count;
  if (error) ++c.failed;
  c.bytes += payloadBytes(e.desc);
  const int64_t d = std::max<int64_t>(0, ns - e.issueNs);
  c.maxNs = std::max(c.maxNs, d);
  ++c.hist[bucketOf(d)];
}

int FlightRecorder::bucketOf(int64_t ns) {
  if (ns <= 0) return 0;
  const int log2 = 63 - __builtin_clzll(static_cast<unsigned long long>(ns));
  // The kSubBuckets bits below the leading one pick the sub-bucket.
  const int sub = log2 >= 3 ? static_cast<int>((ns >> (log2 - 3)) & (kSubBuckets - 1))
                            : static_cast<int>((ns << (3 - log2)) & (kSubBuckets - 1));
  return std::min(kBuckets - 1, log2 * kSubBuckets + sub);
}

double FlightRecorder::bucketMidUs(int b) {
  const int log2 = b / kSubBuckets;
  const int sub = b % kSubBuckets;
  const double lo = std::ldexp(1.0 + sub / double(kSubBuckets), log2);
  const double hi = std::ldexp(1.0 + (sub + 1) / double(kSubBuckets), log2);
  return (lo + hi) / 2 / 1000.0;
}

std::vector<FlightRecorder::Entry> FlightRecorder::snapshot() const {
  std::vector<Entry> out;
  out.reserve(capacity_);  // outside the lock
  SpinLockGuard lock(mu_);
  const Id n = std::min<Id>(next_, ring_.size());
  for (Id id = next_ - n; id < next_; ++id) out.push_back(ring_[id % ring_.size()]);
  return out;
}

bool FlightRecorder::position(Entry* out) const {
  SpinLockGuard lock(mu_);
  if (next_ == 0 || ring_.empty()) return false;
  const Id n = std::min<Id>(next_, ring_.size());
  for (Id id = next_ - n; id < next_; ++id) {
    const Entry& e = ring_[id % ring_.size()];
    if (e.state == State::kIssued || e.state == State::kStarted) {
      *out = e;
      return true;
    }
  }
  *out = ring_[(next_ - 1) % ring_.size()];
  return true;
}

OpStats FlightRecorder::stats() const {
  OpStats s;
  s.group = group_;
  s.rank = rank_;
  SpinLockGuard lock(mu_);
  for (size_t k = 0; k < counters_.size(); ++k) {
    const OpCounters& c = counters_[k];
    if (c.count == 0) continue;
    OpStats::Row r;
    r.op = static_cast<OpType>(k);
    r.count = c.count;
    r.failed = c.failed;
    r.bytes = c.bytes;
    r.maxUs = c.maxNs / 1000.0;
    auto quantile = [&](double q) {
      // The bucket holding the ceil(q * count)-th smallest duration.
      const uint64_t want = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(q * c.count)));
      uint64_t seen = 0;
      for (int b = 0; b < kBuckets; ++b) {
        seen += c.hist[b];
        if (seen >= want) return std::min(bucketMidUs(b), r.maxUs);
      }
      return r.maxUs;
    };
    r.p50Us = quantile(0.50);
    r.p99Us = quantile(0.99);
    s.rows.push_back(r);
  }
  return s;
}

std::string OpStats::table() const {
  std::ostringstream os;
  os << "# c10d stats: group " << group << " rank " << rank << "\n";
  os << std::left << std::setw(24) << "# op" << std::right << std::setw(10) << "count"
     << std::setw(8) << "failed" << std::setw(16) << "bytes" << std::setw(12) << "p50 (us)"
     << std::setw(12) << "p99 (us)" << std::setw(12) << "max (us)"
     << "\n";
  os << std::fixed << std::setprecision(1);
  for (const Row& r : rows) {
    os << std::left << std::setw(24) << (std::string("  ") + c10d::toString(r.op)) << std::right
       << std::setw(10) << r.count << std::setw(8) << r.failed << std::setw(16) << r.bytes
       << std::setw(12) << r.p50Us << std::setw(12) << r.p99Us << std::setw(12) << r.maxUs << "\n";
  }
  return os.str();
}

std::string FlightRecorder::toJson(const std::string& reason) const {
  const std::vector<Entry> entries = snapshot();
  // Steady-clock times become wall-clock microseconds through one offset taken now.
  const int64_t wallNowUs = std::chrono::duration_cast<std::chrono::microseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count();
  const int64_t steadyNowNs = nowNs();
  auto wallUs = [&](int64_t ns) -> int64_t {
    return ns == 0 ? 0 : wallNowUs - (steadyNowNs - ns) / 1000;
  };
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  uint64_t nextSeq = 0;
  {
    SpinLockGuard lock(mu_);
    nextSeq = next_;
  }
  std::ostringstream os;
  os << "{\"format\":\"c10d-flight-recorder\",\"version\":1,\"group\":";
  jsonString(os, group_);
  os << ",\"backend\":";
  jsonString(os, backend_);
  os << ",\"rank\":" << rank_ << ",\"size\":" << size_ << ",\"pid\":" << getpid() << ",\"host\":";
  jsonString(os, host);
  os << ",\"reason\":";
  jsonString(os, reason);
  os << ",\"dumped_us\":" << wallNowUs << ",\"capacity\":" << capacity_
     << ",\"recorded\":" << nextSeq << ",\"entries\":[";
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    const OpDesc& d = e.desc;
    os << (i ? ",\n" : "\n") << "{\"seq\":" << d.seq << ",\"coll_seq\":" << d.collSeq
       << ",\"op\":\"" << c10d::toString(d.op) << "\",\"dtype\":\"" << c10d::toString(d.dtype)
       << "\",\"count\":" << d.count << ",\"tensors\":" << d.tensors << ",\"root\":" << d.root
       << ",\"peer\":" << d.peer << ",\"reduce_op\":\""
       << (d.hasReduceOp ? c10d::toString(d.reduceOp) : "") << "\",\"send_counts\":";
    jsonCounts(os, d.sendCounts());
    os << ",\"recv_counts\":";
    jsonCounts(os, d.recvCounts());
    os << ",\"state\":\"" << toString(e.state) << "\",\"issue_us\":" << wallUs(e.issueNs)
       << ",\"start_us\":" << wallUs(e.startNs) << ",\"end_us\":" << wallUs(e.endNs)
       << ",\"error\":";
    jsonString(os, e.error);
    os << "}";
  }
  os << "\n]}\n";
  return os.str();
}

void FlightRecorder::dump(const std::string& path, const std::string& reason) const {
  const std::string text = toJson(reason);
  const std::string tmp = detail::str(path, ".tmp.", getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int err = errno;
    C10D_THROW(Error, "flight recorder of group ", group_, " (rank ", rank_,
               "): cannot create dump file '", tmp, "': ", detail::errnoString(err));
  }
  size_t off = 0;
  int err = 0;
  while (off < text.size()) {
    const ssize_t n = ::write(fd, text.data() + off, text.size() - off);
    if (n < 0) {
      if (errno == EINTR) continue;
      err = errno;
      break;
    }
    off += static_cast<size_t>(n);
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    C10D_THROW(Error, "flight recorder of group ", group_, " (rank ", rank_,
               "): cannot write dump file '", path, "': ", detail::errnoString(err));
  }
}

std::string FlightRecorder::summary(size_t n) const {
  std::vector<Entry> entries = snapshot();
  const size_t from = entries.size() > n ? entries.size() - n : 0;
  std::ostringstream os;
  const int64_t now = nowNs();
  for (size_t i = from; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    os << "  " << c10d::toString(e.desc.op) << " #" << e.desc.seq << " (" << e.desc.describe()
       << "): " << toString(e.state);
    if (e.endNs != 0) {
      os << " in " << (e.endNs - e.issueNs) / 1000 << " us";
    } else {
      os << ", pending for " << (now - e.issueNs) / 1000000 << " ms";
    }
    if (!e.error.empty()) os << " (" << e.error.substr(0, 200) << ")";
    os << "\n";
  }
  return os.str();
}

C10D_NAMESPACE_END
}  // namespace c10d
