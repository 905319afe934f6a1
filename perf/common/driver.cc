// The shared driver of the perf binaries: nccl-tests' run() / TimeTest() / BenchTime() for one
// process per rank over a c10d ProcessGroup.
//
// Per row (size), twice (out-of-place, then in-place): with -c, fill the inputs and run the op
// once (so the first timed op pays no setup); barrier; time -n iterations of -m ops each (waiting
// once at the end, or after every op with -z); combine the ranks' times with -a; then -c passes
// of: fresh data (a new seed), one op, every rank checks its own output against the reference it
// computes itself, wrong elements summed over ranks. Timed ops shift through the buffers as
// nccl-tests does so that back-to-back ops touch different memory where the size allows.
//
// Rank 0 prints; the other ranks only compute. The c10d binaries' ranks exchange times, counts
// and their "# Rank" lines through the group's Store (world.h), never through the backend under
// test; the MPI baselines' through MPI (mpi_driver.cc).
#include <sys/resource.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/config.h"
#include "c10d/base/error.h"
#include "perf/common/buffer.h"
#include "perf/common/collective.h"
#include "perf/common/data.h"
#include "perf/common/driver.h"
#include "perf/common/report.h"
#include "perf/common/world.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

void RunArgs::copy(void* dst, const void* src, size_t n) const {
  copyOnDevice(dst, src, n * elementSize(dtype), device);
}

namespace {

// Everything about one run that the row loops share.
class Driver {
 public:
  Driver(const Collective& coll, const PerfOptions& o, PerfRanks& ranks, Device device,
         JsonReport* json)
      : coll_(coll),
        o_(o),
        ranks_(ranks),
        rank_(ranks.rank()),
        n_(ranks.size()),
        device_(device),
        json_(json) {
    C10D_CHECK_ARG(!coll_.rooted || o_.root < n_, "root ", o_.root,
                   " (-r) is not a rank of a group of ", n_);
    const char* inject = std::getenv("C10D_PERF_INJECT_ERROR");
    inject_ = inject != nullptr && std::atoi(inject) != 0 && rank_ == n_ - 1;
    const char* minBw = std::getenv("NCCL_TESTS_MIN_BW");
    minBw_ = minBw ? std::atof(minBw) : -1;
  }

  bool isMain() const { return rank_ == 0; }

  void print(const std::string& s) const {
    if (!isMain()) return;
    std::fputs(s.c_str(), stdout);
    std::fflush(stdout);
  }

  void allocate() {
    // Send and receive buffers of maxBytes (every collective's buffers fit, as in nccl-tests),
    // plus host staging for the data and the reference.
    const size_t bytes = o_.maxBytes + 64;
    send_ = Buffer(bytes, device_);
    recv_ = Buffer(bytes, device_);
    if (o_.check > 0) {
      expected_.assign(bytes, 0);
      if (!device_.isCPU()) {
        hostSend_.assign(bytes, 0);
        hostRecv_.assign(bytes, 0);
      }
    }
  }

  // nccl-tests' threadRunTests + <op>RunTest: every type, op and root asked for.
  void runAll() {
    std::vector<std::pair<ReduceOp::Kind, std::string>> ops;
    if (coll_.opColumn) {
      for (size_t i = 0; i < o_.ops.size(); ++i) ops.emplace_back(o_.ops[i], o_.opNames[i]);
    } else {
      ops.emplace_back(ReduceOp::SUM, "none");
    }
    std::vector<int> roots{-1};
    if (coll_.rooted) {
      roots.clear();
      if (o_.root == -1) {
        for (int r = 0; r < n_; ++r) roots.push_back(r);
      } else {
        roots.push_back(o_.root);
      }
    }
    for (DataType t : o_.dtypes) {
      for (const auto& [op, opName] : ops) {
        if (coll_.reduces) {
          const std::string why = ranks_.unsupported(op, t, device_);
          if (!why.empty()) {
            print(detail::str("# Skipping ", toString(t), " ", opName, ": ", why, "\n"));
            continue;
          }
        }
        for (int root : roots) timeTest(t, op, opName, root);
      }
    }
  }

  int errors() { return static_cast<int>(ranks_.sum(errors_)); }
  double avgBusBw() const { return bwCount_ ? bwSum_ / bwCount_ : 0.0; }
  double minBw() const { return minBw_; }

 private:
  // Sizes and pointers of the current row.
  void setup(size_t size, DataType t) {
    es_ = elementSize(t);
    counts_ = coll_.counts(size / es_, es_, n_);
  }

  ReduceOp makeOp(ReduceOp::Kind k) const {
    return k == ReduceOp::PREMUL_SUM ? ReduceOp::premulSum(premulScalar(rank_)) : ReduceOp(k);
  }

  std::shared_ptr<Work> startColl(DataType t, ReduceOp::Kind op, int root, bool inPlace, int iter) {
    const size_t total = std::max(counts_.sendCount, counts_.recvCount) * es_;
    const size_t steps = total ? o_.maxBytes / total : 1;
    const size_t shift = steps ? total * (static_cast<size_t>(iter) % steps) : 0;
    char* recv = static_cast<char*>(recv_.data()) + shift;
    char* send = static_cast<char*>(send_.data()) + shift;
    RunArgs a;
    a.pg = ranks_.group();
    a.send = inPlace ? recv + counts_.sendInplaceOffset * es_ * rank_ : send;
    a.recv = inPlace ? recv + counts_.recvInplaceOffset * es_ * rank_ : recv;
    a.count = counts_.paramCount;
    a.dtype = t;
    a.op = makeOp(op);
    a.root = root;
    a.inPlace = inPlace;
    a.device = device_;
    return coll_.run(a);
  }

  // Ops in flight never share memory (nccl-tests gets this from its CUDA stream's ordering; a
  // CPU backend may run ops concurrently): op `iter` uses buffer slot iter % steps, and first
  // waits for the op still using that slot, if any. Small sizes thus keep -n ops in flight; sizes
  // near -e run one after the other.
  void issue(DataType t, ReduceOp::Kind op, int root, bool inPlace, int iter) {
    const size_t total = std::max(counts_.sendCount, counts_.recvCount) * es_;
    const size_t steps = total ? std::max<size_t>(1, o_.maxBytes / total) : 1;
    const size_t slot = static_cast<size_t>(iter) % steps;
    if (slot >= inFlight_.size()) inFlight_.resize(slot + 1);
    if (inFlight_[slot]) inFlight_[slot]->wait();
    inFlight_[slot] = startColl(t, op, root, inPlace, iter);
    if (o_.blocking) {
      inFlight_[slot]->wait();
      inFlight_[slot].reset();
    }
  }

  // Waits for every op in flight.
  void drain() {
    for (auto& w : inFlight_) {
      if (w) w->wait();
    }
    inFlight_.clear();
  }

  void barrier() { ranks_.barrier(); }

  // Fills inputs and the reference for one validation pass (nccl-tests' initData).
  void initData(DataType t, ReduceOp::Kind op, int root, int seed, bool inPlace) {
    const bool host = device_.isCPU();
    char* recv = host ? static_cast<char*>(recv_.data()) : hostRecv_.data();
    char* send = host ? static_cast<char*>(send_.data()) : hostSend_.data();
    std::memset(recv, 0, counts_.recvCount * es_);
    InitArgs a;
    a.dtype = t;
    a.op = op;
    a.root = root;
    a.seed = seed;
    a.inPlace = inPlace;
    a.rank = rank_;
    a.nranks = n_;
    a.counts = counts_;
    a.input = inPlace ? recv + counts_.sendInplaceOffset * es_ * rank_ : send;
    a.recv = recv;
    a.expected = expected_.data();
    coll_.initData(a);
    if (!host) {
      copyFromHost(recv_.data(), recv, counts_.recvCount * es_, device_);
      if (!inPlace) copyFromHost(send_.data(), send, counts_.sendCount * es_, device_);
    }
  }

  // The number of wrong elements in this rank's output after a validation op.
  int64_t checkData(DataType t, bool inPlace) {
    const size_t offset = inPlace ? counts_.recvInplaceOffset * es_ * rank_ : 0;
    const size_t bytes = counts_.recvCount * es_;
    char* got = static_cast<char*>(recv_.data()) + offset;
    if (!device_.isCPU()) {
      copyToHost(hostRecv_.data(), got, bytes, device_);
      got = hostRecv_.data();
    }
    if (inject_ && counts_.recvCount > 0) {
      corruptElement(got, 0, t);  // C10D_PERF_INJECT_ERROR: one bad value
    }
    return countWrong(got, expected_.data(), counts_.recvCount, t);
  }

  // nccl-tests' BenchTime: one half (out-of-place or in-place) of a row.
  void benchTime(DataType t, ReduceOp::Kind op, int root, bool inPlace) {
    if (o_.check) initData(t, op, root, 99, inPlace);
    startColl(t, op, root, inPlace, 0)->wait();
    barrier();

    const auto t0 = std::chrono::steady_clock::now();
    for (int iter = 0; iter < o_.iters; ++iter) {
      if (o_.aggIters == 1) {
        issue(t, op, root, inPlace, iter);
        continue;
      }
      // -m: one coalesced group per iteration. Groups run one after the other (the ops of one
      // group may share buffers when m * size exceeds -e: their results are not checked).
      drain();
      ranks_.startCoalescing();
      for (int a = 0; a < o_.aggIters; ++a) startColl(t, op, root, inPlace, iter * o_.aggIters + a);
      inFlight_.push_back(ranks_.endCoalescing());
      if (o_.blocking) drain();
    }
    drain();
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double deltaSec = sec / (static_cast<double>(o_.iters) * o_.aggIters);
    deltaSec = ranks_.combine(deltaSec, o_.average);

    double algBw = 0, busBw = 0;
    coll_.bandwidth(counts_.paramCount, es_, deltaSec, n_, &algBw, &busBw);

    const bool reportErrors = o_.check > 0 && (coll_.checkInPlace || !inPlace);
    int64_t wrong = 0;
    for (int c = 0; c < o_.check; ++c) {
      ++rep_;
      initData(t, op, root, rep_, inPlace);
      startColl(t, op, root, inPlace, 0)->wait();
      int64_t local = reportErrors ? checkData(t, inPlace) : 0;
      if (local != 0) ++errors_;
      wrong = ranks_.sum(local);
      if (wrong) break;
    }
    print(rowBody(deltaSec * 1e6, algBw, busBw, reportErrors, wrong));
    if (json_) json_->rowResult(inPlace, deltaSec * 1e6, algBw, busBw, reportErrors, wrong);
    bwSum_ += busBw;
    ++bwCount_;
  }

  static size_t nextSize(size_t size, size_t factor, size_t step) {
    size_t next = factor > 1 ? size * factor : size + step;
    return next > size ? next : size + 1;  // -b 0 -f 2 would otherwise never end
  }

  // nccl-tests' TimeTest: warm-up over every size, then one row per size.
  void timeTest(DataType t, ReduceOp::Kind op, const std::string& opName, int root) {
    barrier();
    for (size_t size = o_.minBytes; size <= o_.maxBytes; size = nextSize(size, 2, 0)) {
      setup(size, t);
      for (int i = 0; i < o_.warmupIters; ++i) issue(t, op, root, false, i);
      drain();
    }
    for (size_t size = o_.minBytes; size <= o_.maxBytes;
         size = nextSize(size, o_.stepFactor, o_.stepBytes)) {
      setup(size, t);
      const size_t bytes = std::max(counts_.sendCount, counts_.recvCount) * es_;
      print(rowPreamble(bytes, counts_.paramCount, toString(t), opName, root));
      if (json_) json_->beginRow(bytes, counts_.paramCount, toString(t), opName, root);
      benchTime(t, op, root, false);
      benchTime(t, op, root, true);
      print("\n");
      if (json_) json_->endRow(o_.iters);
    }
  }

  const Collective& coll_;
  const PerfOptions& o_;
  PerfRanks& ranks_;
  const int rank_;
  const int n_;
  const Device device_;
  JsonReport* json_;
  bool inject_ = false;
  double minBw_ = -1;

  std::vector<std::shared_ptr<Work>> inFlight_;  // by buffer slot (issue())
  Buffer send_, recv_;
  std::vector<char> hostSend_, hostRecv_, expected_;
  CollCounts counts_;
  size_t es_ = 1;
  int rep_ = 0;
  int64_t errors_ = 0;
  double bwSum_ = 0;
  int bwCount_ = 0;
};

// PerfRanks over a c10d ProcessGroup: barriers and coalescing through the group, numbers and
// strings through its Store (RankExchange), not through the backend under test.
class GroupRanks : public PerfRanks {
 public:
  explicit GroupRanks(std::shared_ptr<ProcessGroup> pg)
      : pg_(std::move(pg)), ex_(pg_->store(), pg_->rank(), pg_->size()) {}
  int rank() const override { return pg_->rank(); }
  int size() const override { return pg_->size(); }
  ProcessGroup* group() override { return pg_.get(); }
  std::string unsupported(ReduceOp::Kind op, DataType type, Device device) override {
    if (pg_->supports(op, type, device)) return "";
    return detail::str("backend ", pg_->backendName(), " does not support it on ",
                       toString(device));
  }
  void barrier() override { pg_->barrier()->wait(); }
  void startCoalescing() override { pg_->startCoalescing(); }
  std::shared_ptr<Work> endCoalescing() override { return pg_->endCoalescing(); }
  double combine(double value, TimeCombine how) override { return ex_.combine(value, how); }
  int64_t sum(int64_t value) override { return ex_.sum(value); }
  std::vector<std::string> allgather(const std::string& value) override {
    return ex_.allgather(value);
  }
  RankExchange& exchange() { return ex_; }

 private:
  std::shared_ptr<ProcessGroup> pg_;
  RankExchange ex_;
};

int run(int argc, char** argv, const Collective& coll, const std::string& program,
        const PerfOptions& o) {
  const LaunchInfo launch = detectLaunch();
  const Device device = o.device == "cuda" ? Device::cuda(launch.localRank) : Device::cpu();
  selectDevice(device);
  std::shared_ptr<ProcessGroup> pg = createWorld(launch, o);
  C10D_CHECK_ARG(pg->supportsDevice(device), "backend ", pg->backendName(), " cannot use device ",
                 toString(device), " (--device)");
  PerfSetup setup;
  setup.backendName = pg->backendName();
  setup.backendDesc = pg->describe();
  setup.versionLine = detail::str("# c10d version ", C10D_VERSION, " backend ", pg->backendName(),
                                  " device ", toString(device), " world size ", pg->size(),
                                  " launcher ", launch.launcher, "\n");
  setup.device = device;
  GroupRanks ranks(pg);
  const int rc = runPerfTable(argc, argv, coll, program, o, setup, ranks);
  pg->shutdown();
  // Rank 0 serves the store: it leaves last.
  ranks.exchange().finish(Milliseconds(static_cast<int64_t>(o.timeoutSec) * 1000));
  return rc;
}

// This process's peak resident set (getrusage's ru_maxrss, KiB): buffers, staging, library.
long peakRssKib() {
  rusage u{};
  return getrusage(RUSAGE_SELF, &u) == 0 ? u.ru_maxrss : -1;
}

}  // namespace

int runPerfTable(int argc, char** argv, const Collective& coll, const std::string& program,
                 const PerfOptions& o, const PerfSetup& setup, PerfRanks& ranks) {
  const Device device = setup.device;
  std::unique_ptr<JsonReport> json;
  if (ranks.rank() == 0 && !o.jsonPath.empty()) {
    json = std::make_unique<JsonReport>(argc, argv, program, o);
    json->setWorld(setup.backendName, toString(device), ranks.size());
  }
  Driver d(coll, o, ranks, device, json.get());

  d.print(detail::str("# Collective test starting: ", program, "\n"));
  d.print(setup.versionLine);
  d.print(optionLine(o));
  d.print(blockingLine(o.blocking));
  d.print("#\n# Using devices\n");
  const std::string host = hostName();
  const std::string desc = describeDevice(device);
  const int devIndex = device.isCPU() ? 0 : device.index;
  std::vector<std::string> lines = ranks.allgather(rankLine(
      ranks.rank(), 0, static_cast<int>(getpid()), host, devIndex, desc, setup.backendDesc));
  for (const auto& l : lines) d.print(l);
  if (json) {
    // Each line parses back the way nccl-tests' parseRankInfo reads it.
    for (size_t r = 0; r < lines.size(); ++r) {
      int rank = 0, group = 0, pid = 0, dev = 0;
      char h[1024] = {0}, info[1024] = {0};
      std::sscanf(lines[r].c_str(), "#  Rank %d Group %d Pid %d on %1023s device %d %1023[^\n]",
                  &rank, &group, &pid, h, &dev, info);
      json->addDevice(rank, pid, h, dev, info);
    }
  }

  d.allocate();
  d.print(tableHeader());
  d.runAll();
  const int errors = d.errors();
  d.print(peakRssLine(ranks.allgather(std::to_string(peakRssKib()))));
  d.print(footer(errors, d.avgBusBw(), d.minBw(), program));
  if (json) {
    json->finish(errors, d.avgBusBw(), d.minBw());
    json->write(o.jsonPath);
  }
  const bool bwFailed = d.minBw() >= 0 && d.avgBusBw() < d.minBw() * 0.9;
  return errors != 0 || bwFailed ? 1 : 0;
}

int perfMain(int argc, char** argv, const Collective& coll) {
  PerfOptions o;
  std::string program;
  if (int code = startPerfMain(argc, argv, &o, &program); code >= 0) return code;
  try {
    return run(argc, argv, coll, program, o);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "%s: error: %s\n", program.c_str(), e.what());
    return 1;
  }
}

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
