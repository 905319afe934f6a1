// c10d_micro: Google Benchmark micro-benchmarks of the pieces a small collective is made of, so
// that docs/performance.md can say where its microseconds go:
//
//   memcpy/<bytes>                      the copy ceiling of this machine's memory
//   reduce/<type>/<op>/<bytes>          the verbs reduce kernels (dst = dst op src; avg = sum, then
//                                       divide) — bytes_per_second counts the payload (the
//                                       kernel reads 2x and writes 1x it; memcpy reads 1x, writes
//                                       1x)
//   work/create_finish_wait             a Work made, completed and waited for (no group)
//   work/make_completed                 makeCompletedWork (what a local no-op returns)
//   opdesc/allreduce                    an allreduce's OpDesc filled in, as ProcessGroup does
//   opdesc/fingerprint                  its Wire and 64-bit hash (what verbs compares across ranks)
//   recorder/record                     FlightRecorder::record of one op
//   recorder/record_start_end           record + onStart + onEnd (one op's whole life in the ring)
//   clock/now_ns                        FlightRecorder::nowNs (read three times per op)
//   verbs/allreduce/world1/recorder:R   allreduce of 8 bytes + wait on a verbs group of 1 rank
//   verbs/allreduce/shm2/recorder:R     the same on 2 ranks (two groups in this process, one per
//                                       benchmark thread, over shm): Work, recorder, OpDesc,
//                                       fingerprint, engine and shm signalling together
//   shm/pingpong/<bytes>                one round trip over ShmTransport (2 threads, polling)
//   c10d/store/tcp/set_get                   TCPStore set + get of 8 bytes against an in-process
//   server
//
// R = 1: the flight recorder on (default), 0: C10D_FLIGHT_RECORDER_SIZE=0. Run with
// --benchmark_counters_tabular=true; --benchmark_filter picks a subset. The groups, transports
// and store are made on first use, kept for every run of their benchmarks, and shut down after
// the last one; every wait is bounded (30 s), so a broken setup fails, never hangs. Exit status 1
// when a benchmark failed (its error is in the output).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "c10d/backends/verbs/algorithms/reduce_kernels.h"
#include "c10d/backends/verbs/config.h"
#include "c10d/backends/verbs/fiber.h"
#include "c10d/backends/verbs/transport/shm/shm_transport.h"
#include "c10d/backends/verbs/transport/transport.h"
#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/bootstrap/registry.h"
#include "c10d/core/backend_work.h"
#include "c10d/core/flight_recorder.h"
#include "c10d/core/op_desc.h"
#include "c10d/core/process_group.h"
#include "c10d/core/reduce_op.h"
#include "c10d/store/hash_store.h"
#include "c10d/store/tcp/tcp_store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace micro {
namespace {

constexpr Milliseconds kTimeout{30000};

// Set by fail(): main() then exits 1 (Google Benchmark itself exits 0 after a skipped run).
std::atomic<bool> gFailed{false};

void fail(benchmark::State& st, const std::string& why) {
  gFailed = true;
  st.SkipWithError(why.c_str());
}

// ---- memory and reduce kernels ----------------------------------------------------------------

// Fills `n` elements of `t` with 1 (so sum, prod, min, max and avg stay finite and normal).
void fillOnes(void* buf, size_t n, DataType t) {
  auto fill = [&](auto one) {
    auto* p = static_cast<decltype(one)*>(buf);
    for (size_t i = 0; i < n; ++i) p[i] = one;
  };
  switch (t) {
    case DataType::kFloat32:
      return fill(1.0f);
    case DataType::kFloat64:
      return fill(1.0);
    case DataType::kFloat16:
      return fill(uint16_t{0x3C00});
    case DataType::kBFloat16:
      return fill(uint16_t{0x3F80});
    case DataType::kInt8:
      return fill(int8_t{1});
    case DataType::kUInt8:
    case DataType::kBool:
      return fill(uint8_t{1});
    case DataType::kInt32:
      return fill(int32_t{1});
    case DataType::kInt64:
      return fill(int64_t{1});
  }
}

void memcpyBench(benchmark::State& st, size_t bytes) {
  std::vector<char> src(bytes, 1), dst(bytes, 0);
  for (auto _ : st) {
    std::memcpy(dst.data(), src.data(), bytes);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * bytes));
}

// op AVG: what the verbs engine does for it (reduce as SUM, divide once at the end).
void reduceBench(benchmark::State& st, DataType t, ReduceOp::Kind op, size_t bytes) {
  const size_t n = bytes / elementSize(t);
  std::vector<char> src(bytes), dst(bytes);
  fillOnes(src.data(), n, t);
  fillOnes(dst.data(), n, t);
  for (auto _ : st) {
    verbs::reduceTo(dst.data(), src.data(), n, t, verbs::baseKind(op));
    if (op == ReduceOp::AVG) divide(dst.data(), n, t, 2);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * bytes));
}

// ---- Work, OpDesc, recorder -------------------------------------------------------------------

void workCreateFinishWait(benchmark::State& st) {
  uint64_t seq = 0;
  for (auto _ : st) {
    auto w = std::make_shared<BackendWork>(OpType::kAllreduce, seq++, "micro:world");
    w->finish();
    w->wait();
    benchmark::DoNotOptimize(w.get());
  }
}

void workMakeCompleted(benchmark::State& st) {
  uint64_t seq = 0;
  for (auto _ : st) {
    auto w = makeCompletedWork(OpType::kAllreduce, seq++, "micro:world");
    benchmark::DoNotOptimize(w.get());
  }
}

// The OpDesc ProcessGroup::allreduce fills in for one float tensor of 2 elements.
OpDesc allreduceDesc(uint64_t seq) {
  OpDesc d;
  d.op = OpType::kAllreduce;
  d.seq = seq;
  d.collSeq = seq;
  d.dtype = DataType::kFloat32;
  d.count = 2;
  d.reduceOp = ReduceOp::SUM;
  d.hasReduceOp = true;
  return d;
}

void opDescBuild(benchmark::State& st) {
  uint64_t seq = 0;
  for (auto _ : st) {
    OpDesc d = allreduceDesc(seq++);
    benchmark::DoNotOptimize(&d);
  }
}

void opDescFingerprint(benchmark::State& st) {
  OpDesc d = allreduceDesc(0);
  for (auto _ : st) {
    ++d.collSeq;
    OpDesc::Wire w = d.wire();
    uint64_t h = OpDesc::hash(w);
    benchmark::DoNotOptimize(h);
  }
}

void recorderRecord(benchmark::State& st, bool wholeLife) {
  FlightRecorder rec(2000, "micro:world", "micro", 0, 1);
  uint64_t seq = 0;
  const OpDesc d = allreduceDesc(0);
  for (auto _ : st) {
    OpDesc op = d;
    op.seq = op.collSeq = seq++;
    const FlightRecorder::Id id = rec.record(op, FlightRecorder::nowNs());
    if (wholeLife) {
      rec.onStart(id, FlightRecorder::nowNs());
      rec.onEnd(id, FlightRecorder::nowNs(), nullptr);
    }
  }
}

// What the verbs engine's inline path pays for its fiber: a task started and run to its end (two
// switches), and a task that suspends once and is resumed (four).
void fiberStartReturn(benchmark::State& st) {
  verbs::Fiber f;
  int n = 0;
  for (auto _ : st) f.start([](void* a) { ++*static_cast<int*>(a); }, &n);
  benchmark::DoNotOptimize(n);
}

void fiberSuspendResume(benchmark::State& st) {
  verbs::Fiber f;
  for (auto _ : st) {
    f.start([](void* a) { static_cast<verbs::Fiber*>(a)->suspend(); }, &f);
    f.resume();
  }
}

void clockNow(benchmark::State& st) {
  for (auto _ : st) benchmark::DoNotOptimize(FlightRecorder::nowNs());
}

// ---- process groups ---------------------------------------------------------------------------

ProcessGroup::Options groupOptions(bool recorder) {
  ProcessGroup::Options o;
  o.timeout = kTimeout;
  o.groupName = recorder ? "micro" : "micro-norec";
  if (!recorder) o.config["C10D_FLIGHT_RECORDER_SIZE"] = "0";
  return o;
}

// `size` verbs groups of one world in this process, made concurrently (setup is collective).
std::vector<std::shared_ptr<ProcessGroup>> makeGroups(int size, bool recorder) {
  auto store = std::make_shared<HashStore>(kTimeout);
  std::vector<std::shared_ptr<ProcessGroup>> groups(static_cast<size_t>(size));
  std::vector<std::exception_ptr> errors(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        groups[r] = createProcessGroup("verbs", store, r, size, groupOptions(recorder));
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
  return groups;
}

// Groups made on first use, by (size, recorder); shut down by shutdownAll().
std::mutex gGroupsMu;
std::map<std::pair<int, bool>, std::vector<std::shared_ptr<ProcessGroup>>> gGroups;

std::vector<std::shared_ptr<ProcessGroup>>& groups(int size, bool recorder) {
  std::lock_guard<std::mutex> lock(gGroupsMu);
  auto& g = gGroups[{size, recorder}];
  if (g.empty()) g = makeGroups(size, recorder);
  return g;
}

void shutdownAll() {
  std::lock_guard<std::mutex> lock(gGroupsMu);
  for (auto& [key, g] : gGroups) {
    std::vector<std::thread> threads;
    for (auto& pg : g) threads.emplace_back([&pg] { pg->shutdown(); });
    for (auto& t : threads) t.join();
  }
  gGroups.clear();
}

// Allreduce of 2 floats + wait, on this thread's rank of a `size`-rank group (Threads(size)).
void verbsAllreduce(benchmark::State& st, int size, bool recorder) {
  std::shared_ptr<ProcessGroup> pg;
  try {
    pg = groups(size, recorder).at(static_cast<size_t>(st.thread_index()));
  } catch (const std::exception& e) {
    fail(st, e.what());
    return;
  }
  float data[2] = {1.0f, 2.0f};
  Tensor t(data, 2, DataType::kFloat32);
  AllreduceOptions opts;
  opts.reduceOp = ReduceOp::MAX;  // stays finite
  for (auto _ : st) pg->allreduce(t, opts)->wait();
}

// ---- shm transport ----------------------------------------------------------------------------

struct ShmPair {
  std::unique_ptr<verbs::ShmTransport> t[2];
};

std::once_flag gShmOnce;
std::unique_ptr<ShmPair> gShm;
std::string gShmError;

ShmPair* shmPair() {
  std::call_once(gShmOnce, [] {
    auto pair = std::make_unique<ShmPair>();
    HashStore store(kTimeout);
    const std::vector<int> pids{getpid(), getpid()};
    const verbs::VerbsConfig cfg = verbs::VerbsConfig::load();
    std::exception_ptr errors[2];
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r) {
      threads.emplace_back([&, r] {
        try {
          pair->t[r] = std::make_unique<verbs::ShmTransport>(store, r, 2, pids, cfg, kTimeout);
        } catch (...) {
          errors[r] = std::current_exception();
        }
      });
    }
    for (auto& th : threads) th.join();
    for (auto& e : errors) {
      if (!e) continue;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& ex) {
        gShmError = ex.what();
      }
      return;
    }
    gShm = std::move(pair);
  });
  return gShm.get();
}

// Moves exactly `n` bytes, polling; false past the deadline.
template <typename Fn>
bool pollAll(Fn step, size_t n, std::chrono::steady_clock::time_point deadline) {
  size_t done = 0;
  for (uint32_t spins = 0; done < n; ++spins) {
    done += step(done);
    if ((spins & 0xffff) == 0xffff && std::chrono::steady_clock::now() > deadline) return false;
  }
  return true;
}

// Thread 0 sends `bytes` to thread 1, which sends them back: one round trip per iteration.
void shmPingPong(benchmark::State& st, size_t bytes) {
  ShmPair* pair = shmPair();
  if (pair == nullptr) {
    fail(st, "ShmTransport setup failed: " + gShmError);
    return;
  }
  const int me = st.thread_index(), peer = 1 - me;
  verbs::ShmTransport& t = *pair->t[me];
  std::vector<char> out(bytes, static_cast<char>(me)), in(bytes);
  const int ch = verbs::kCollectiveChannel;
  auto send = [&](size_t done) { return t.trySend(ch, peer, out.data() + done, bytes - done); };
  auto recv = [&](size_t done) { return t.tryRecv(ch, peer, in.data() + done, bytes - done); };
  for (auto _ : st) {
    const auto deadline = std::chrono::steady_clock::now() + kTimeout;
    const bool ok = me == 0 ? pollAll(send, bytes, deadline) && pollAll(recv, bytes, deadline)
                            : pollAll(recv, bytes, deadline) && pollAll(send, bytes, deadline);
    if (!ok) {
      fail(st, "shm ping-pong: no progress in 30 s");
      break;
    }
  }
  st.SetBytesProcessed(static_cast<int64_t>(st.iterations() * bytes * 2));
}

// ---- TCPStore ---------------------------------------------------------------------------------

void tcpStoreSetGet(benchmark::State& st) {
  std::unique_ptr<TCPStore> server, client;
  try {
    TCPStoreOptions so;
    so.port = 0;
    so.isServer = true;
    so.secret = "";
    so.timeout = kTimeout;
    server = std::make_unique<TCPStore>(so);
    TCPStoreOptions co;
    co.port = server->port();
    co.secret = "";
    co.timeout = kTimeout;
    client = std::make_unique<TCPStore>(co);
  } catch (const std::exception& e) {
    fail(st, e.what());
    return;
  }
  const Bytes value(8, 7);
  for (auto _ : st) {
    client->set("micro/key", value);
    Bytes got = client->get("micro/key");
    benchmark::DoNotOptimize(got.data());
  }
}

// ---- registration -----------------------------------------------------------------------------

std::string sizeName(size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + "M";
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return std::to_string(bytes >> 10) + "K";
  return std::to_string(bytes);
}

void registerAll() {
  for (size_t bytes : {size_t{64} << 10, size_t{1} << 20, size_t{16} << 20}) {
    benchmark::RegisterBenchmark(("memcpy/" + sizeName(bytes)).c_str(), memcpyBench, bytes);
  }
  const DataType types[] = {DataType::kFloat32,  DataType::kFloat64, DataType::kFloat16,
                            DataType::kBFloat16, DataType::kInt8,    DataType::kUInt8,
                            DataType::kInt32,    DataType::kInt64};
  const std::pair<ReduceOp::Kind, const char*> ops[] = {{ReduceOp::SUM, "sum"},
                                                        {ReduceOp::PRODUCT, "prod"},
                                                        {ReduceOp::MIN, "min"},
                                                        {ReduceOp::MAX, "max"},
                                                        {ReduceOp::AVG, "avg"}};
  for (DataType t : types) {
    for (const auto& [op, name] : ops) {
      const size_t bytes = size_t{1} << 20;
      benchmark::RegisterBenchmark(
          ("reduce/" + std::string(toString(t)) + "/" + name + "/" + sizeName(bytes)).c_str(),
          reduceBench, t, op, bytes);
    }
  }
  for (size_t bytes : {size_t{64} << 10, size_t{16} << 20}) {
    benchmark::RegisterBenchmark(("reduce/float/sum/" + sizeName(bytes)).c_str(), reduceBench,
                                 DataType::kFloat32, ReduceOp::SUM, bytes);
  }
  benchmark::RegisterBenchmark("work/create_finish_wait", workCreateFinishWait);
  benchmark::RegisterBenchmark("work/make_completed", workMakeCompleted);
  benchmark::RegisterBenchmark("opdesc/allreduce", opDescBuild);
  benchmark::RegisterBenchmark("opdesc/fingerprint", opDescFingerprint);
  benchmark::RegisterBenchmark("recorder/record", recorderRecord, false);
  benchmark::RegisterBenchmark("recorder/record_start_end", recorderRecord, true);
  benchmark::RegisterBenchmark("clock/now_ns", clockNow);
  benchmark::RegisterBenchmark("fiber/start_return", fiberStartReturn);
  benchmark::RegisterBenchmark("fiber/suspend_resume", fiberSuspendResume);
  if (isBackendRegistered("verbs")) {
    for (bool rec : {true, false}) {
      const std::string suffix = rec ? "/recorder:1" : "/recorder:0";
      benchmark::RegisterBenchmark(("verbs/allreduce/world1" + suffix).c_str(), verbsAllreduce, 1,
                                   rec)
          ->Threads(1)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("verbs/allreduce/shm2" + suffix).c_str(), verbsAllreduce, 2,
                                   rec)
          ->Threads(2)
          ->UseRealTime();
    }
  }
  for (size_t bytes : {size_t{8}, size_t{4} << 10, size_t{64} << 10}) {
    benchmark::RegisterBenchmark(("shm/pingpong/" + sizeName(bytes)).c_str(), shmPingPong, bytes)
        ->Threads(2)
        ->UseRealTime();
  }
  benchmark::RegisterBenchmark("store/tcp/set_get", tcpStoreSetGet)->UseRealTime();
}

}  // namespace
}  // namespace micro
C10D_NAMESPACE_END
}  // namespace c10d

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  c10d::micro::registerAll();
  benchmark::RunSpecifiedBenchmarks();
  c10d::micro::shutdownAll();
  benchmark::Shutdown();
  if (c10d::micro::gFailed) {
    std::fprintf(stderr, "c10d_micro: a benchmark failed (see its error above)\n");
    return 1;
  }
  return 0;
}
