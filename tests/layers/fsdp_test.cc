// FullyShardedModel (ZeRO-3): k steps of forward (gather per unit, with and without prefetch) and
// backward (gather again, gradients reduce-scattered per unit) on N ranks equal one unsharded
// FlatOptimizer stepped with the mean gradient, bit for bit (the exact gradients of
// tests/layers/zero_fixture.h), for SGD / Adam / AdamW: every unit's gathered parameters equal the
// reference's at every unshard, the full parameters and the consolidated state equal it after the
// run; gradients of two backward passes accumulate; a full state and parameters loaded into a new
// model continue the same run; the memory the layer allocates is its shards plus at most two
// units' parameters and two units' gradients; with prefetch, the next unit's gather is in flight
// (issued, not yet waited for) whenever a unit computes, and without it none is; misuse and
// start-up differences are errors on every rank. Every CPU backend, world sizes 1-4.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <numeric>
#include <set>

#include "c10d/base/abi.h"
#include "c10d/core/backend_work.h"
#include "c10d/core/forwarding_group.h"
#include "c10d/layers/common/memory.h"
#include "c10d/layers/zero/fully_sharded.h"
#include "tests/common/multiproc.h"
#include "tests/layers/zero_fixture.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

using zero::FsdpOptions;
using zero::FsdpStepStats;
using zero::FullyShardedModel;
using zero::Pass;

using FsdpTest = ZeroTest;

// Parameters of kNumels grouped into units (a unit with an empty parameter, units of one).
const std::vector<size_t> kNumels{7, 1, 13, 0, 5, 33, 2, 9};
const std::vector<std::vector<size_t>> kUnits{{0, 1}, {2}, {3, 4}, {5, 6, 7}};

std::vector<std::vector<layers::Parameter>> unitsOf(ZeroModel& m,
                                                    const std::vector<std::vector<size_t>>& units) {
  const std::vector<layers::Parameter> all = m.parameters();
  std::vector<std::vector<layers::Parameter>> out;
  for (const auto& u : units) {
    out.emplace_back();
    for (size_t p : u) out.back().push_back(all[p]);
  }
  return out;
}

void expectViewsEqual(const std::vector<Tensor>& views, const std::vector<size_t>& unit,
                      const ReferenceOptimizer& ref, const std::string& what) {
  ASSERT_EQ(views.size(), unit.size()) << what;
  for (size_t i = 0; i < unit.size(); ++i) {
    EXPECT_TRUE(sameBits(views[i].ptr<float>(), ref.param(unit[i]), views[i].numel))
        << what << ": parameter " << unit[i];
  }
}

// Forwards every op to `inner` and logs, in order, each allgatherIntoTensor issued through it (with
// its output's numel, which names the unit where the units' padded sizes differ) and each wait()
// on its Work. The Work returned is a wrapper that completes with the inner one and logs wait().
class GatherLog : public ForwardingGroup {
 public:
  struct Event {
    bool wait = false;  // false: issued
    size_t gather = 0;  // index in issue order
  };

  explicit GatherLog(std::shared_ptr<ProcessGroup> inner)
      : ForwardingGroup(std::move(inner), "/gather-log") {}

  // The log so far (the model calls from one thread: no lock needed).
  const std::vector<Event>& events() const { return events_; }
  size_t gathers() const { return numels_.size(); }
  size_t numelOf(size_t gather) const { return numels_.at(gather); }
  bool waited(size_t gather) const { return waited_.at(gather); }

 protected:
  class LoggedWork : public BackendWork {
   public:
    LoggedWork(std::shared_ptr<Work> inner, std::function<void()> onWait)
        : BackendWork(inner->opType(), inner->sequenceNumber(), inner->groupName(),
                      inner->timeout()),
          inner_(std::move(inner)),
          onWait_(std::move(onWait)) {}
    bool wait(Milliseconds timeout) override {
      onWait_();
      try {
        inner_->wait(timeout);
        finish();
      } catch (...) {
        finish(std::current_exception());
      }
      return Work::wait(timeout);
    }

   private:
    const std::shared_ptr<Work> inner_;
    const std::function<void()> onWait_;
  };

  std::shared_ptr<Work> doAllgatherIntoTensor(Tensor output, Tensor input,
                                              const AllgatherOptions& opts, uint64_t seq) override {
    auto inner = ForwardingGroup::doAllgatherIntoTensor(output, input, opts, seq);
    const size_t gather = numels_.size();
    numels_.push_back(output.numel);
    waited_.push_back(false);
    events_.push_back({false, gather});
    auto work = std::make_shared<LoggedWork>(inner, [this, gather] {
      waited_[gather] = true;
      events_.push_back({true, gather});
    });
    std::weak_ptr<LoggedWork> weak = work;
    inner->then([weak](Work& done) {
      if (auto w = weak.lock()) w->finish(done.exception());
    });
    return work;
  }

 private:
  std::vector<Event> events_;
  std::vector<size_t> numels_;
  std::vector<bool> waited_;
};

// One training step as a framework runs it: forward unit by unit (each resharded after use but the
// last), backward last to first writing this rank's gradients of `step`; `passes` backward passes
// (the ones after the first write zeros: the sum must be the first pass's). `computing(u, pass)`,
// if given, runs where the framework would compute unit u (after its unshard() returned).
using ComputeHook = std::function<void(size_t unit, Pass pass)>;
void trainStep(FullyShardedModel& fsdp, const std::vector<std::vector<size_t>>& units, int rank,
               int step, const ReferenceOptimizer& ref, const std::string& what, int passes = 1,
               const ComputeHook& computing = nullptr) {
  const size_t n = units.size();
  for (size_t u = 0; u < n; ++u) {
    expectViewsEqual(fsdp.unshard(u, Pass::kForward), units[u], ref,
                     what + ", forward of unit " + std::to_string(u));
    if (computing) computing(u, Pass::kForward);
    if (u + 1 < n) fsdp.reshard(u);
  }
  for (int pass = 0; pass < passes; ++pass) {
    for (size_t u = n; u-- > 0;) {
      expectViewsEqual(fsdp.unshard(u, Pass::kBackward), units[u], ref,
                       what + ", backward of unit " + std::to_string(u));
      if (computing) computing(u, Pass::kBackward);
      const std::vector<Tensor> g = fsdp.grads(u);
      for (size_t i = 0; i < units[u].size(); ++i) {
        for (size_t e = 0; e < g[i].numel; ++e) {
          g[i].ptr<float>()[e] = pass == 0 ? gradValue(rank, units[u][i], e, step) : 0.0f;
        }
      }
      fsdp.reduceGrads(u);
    }
  }
}

void expectFullParamsEqual(FullyShardedModel& fsdp, const ReferenceOptimizer& ref,
                           const std::string& what) {
  std::vector<std::vector<float>> full;
  std::vector<Tensor> views;
  for (size_t n : kNumels) full.emplace_back(n, -1.0f);
  for (auto& f : full) views.push_back(tensorOf(f.data(), f.size()));
  fsdp.gatherParameters(views);
  for (size_t p = 0; p < kNumels.size(); ++p) {
    EXPECT_TRUE(sameBits(full[p].data(), ref.param(p), kNumels[p])) << what << ": parameter " << p;
  }
}

TEST_P(FsdpTest, StepsEqualOneOptimizerOverTheMeanGradient) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("fsdp-ref");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    for (bool prefetch : {true, false}) {
      for (const optim::OptimizerOptions& o : referenceOptimizers()) {
        const std::string what = o.describe() + (prefetch ? ", prefetch" : ", no prefetch") +
                                 " on rank " + std::to_string(rank);
        ZeroModel m(kNumels, rank);
        FsdpOptions fo;
        fo.optimizer = o;
        fo.prefetch = prefetch;
        FullyShardedModel fsdp(unitsOf(m, kUnits), pg, fo);
        ReferenceOptimizer ref(o, kNumels);
        const size_t units = kUnits.size();
        for (int s = 0; s < 3; ++s) {
          const std::string at = what + ", step " + std::to_string(s + 1);
          trainStep(fsdp, kUnits, rank, s, ref, at, s == 1 ? 2 : 1);
          const FsdpStepStats st = fsdp.step();
          ref.step(size, s);
          EXPECT_EQ(st.step, static_cast<uint64_t>(s + 1)) << at;
          // Forward gathers every unit, the first backward all but the last (kept from forward),
          // a second backward every unit again; with prefetch, all but the first of each pass.
          const size_t passes = s == 1 ? 2 : 1;
          EXPECT_EQ(st.gathers, units + (units - 1) + (passes - 1) * units) << at;
          EXPECT_EQ(st.gathersPrefetched, prefetch ? st.gathers - passes : 0) << at;
          EXPECT_EQ(st.reduceScatters, (s == 1 ? 2 : 1) * units) << at;
        }
        expectFullParamsEqual(fsdp, ref, what + ": gatherParameters");
        // Every rank holds 1/N of every unit, padded: (2 + k) * sum ceil(U_u / N) floats.
        size_t local = 0;
        for (const auto& u : kUnits) {
          size_t numel = 0;
          for (size_t p : u) numel += kNumels[p];
          local += (numel + static_cast<size_t>(size) - 1) / static_cast<size_t>(size);
        }
        EXPECT_EQ(fsdp.localNumel(), local) << what;
        EXPECT_EQ(fsdp.localStateBytes(), o.slotNames().size() * local * sizeof(float)) << what;
        for (int dst : {0, size - 1}) {
          const optim::OptimizerState full = fsdp.consolidateState(dst);
          if (rank == dst) {
            expectStateEqual(full, ref.state(), what + ": consolidateState");
          } else {
            EXPECT_TRUE(full.slots.empty()) << what;
          }
        }
      }
    }
    pg->barrier()->wait();
  });
}

// Parameter groups and clip_grad_norm_ over the shards (the padding of each unit's chunks
// included, which must not count): equal to the unsharded reference, norm and update.
TEST_P(FsdpTest, ParameterGroupsAndGradientClipping) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("fsdp-groups");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    const std::vector<optim::ParamGroup> groups = {{{1, 4}, 0.25, 0.0}, {{7}, 0.001, 0.5}};
    for (const optim::OptimizerOptions& o : referenceOptimizers()) {
      for (double normType : {2.0, double(INFINITY)}) {
        const std::string what = o.describe() + ", norm " + std::to_string(normType);
        ZeroModel m(kNumels, rank);
        FsdpOptions fo;
        fo.optimizer = o;
        fo.paramGroups = groups;
        fo.clip = {0.5, normType};
        FullyShardedModel fsdp(unitsOf(m, kUnits), pg, fo);
        ReferenceOptimizer ref(o, kNumels, groups, fo.clip);
        for (int s = 0; s < 3; ++s) {
          trainStep(fsdp, kUnits, rank, s, ref, what);
          const FsdpStepStats st = fsdp.step();
          ref.step(size, s);
          EXPECT_DOUBLE_EQ(st.gradNorm, ref.lastNorm()) << what << ", step " << s + 1;
          EXPECT_GT(st.gradNorm, 0.5) << what << ": the test means to clip";
        }
        expectFullParamsEqual(fsdp, ref, what);
      }
    }
    pg->barrier()->wait();
  });
}

// A full state and full parameters (as a checkpoint saved at any world size holds them) loaded into
// a fresh model: the next step equals the uninterrupted reference's.
TEST_P(FsdpTest, LoadedStateAndParametersContinueTheRun) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("fsdp-load");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    const optim::OptimizerOptions o = referenceOptimizers()[1];  // Adam
    ReferenceOptimizer ref(o, kNumels);
    for (int s = 0; s < 2; ++s) ref.step(size, s);
    ZeroModel m(kNumels, rank);
    FsdpOptions fo;
    fo.optimizer = o;
    FullyShardedModel fsdp(unitsOf(m, kUnits), pg, fo);
    std::vector<Tensor> full;
    for (size_t p = 0; p < kNumels.size(); ++p) {
      full.push_back(tensorOf(const_cast<float*>(ref.param(p)), kNumels[p]));
    }
    fsdp.loadParameters(full);
    fsdp.loadState(ref.state());
    EXPECT_EQ(fsdp.steps(), 2u);
    trainStep(fsdp, kUnits, rank, 2, ref, "after loading");
    fsdp.step();
    ref.step(size, 2);
    expectFullParamsEqual(fsdp, ref, "after loading and one step");
    pg->barrier()->wait();
  });
}

// Memory, measured (c10d/layers/common/memory.h): construction allocates exactly the parameter and
// gradient shards and the state ((2 + k) * L floats, L = sum ceil(U_u / N)); a training step's peak
// is within two units' full parameters and two units' full gradients above that, and reaches the
// two units' parameters and two units' gradients (without prefetch it would stay at three;
// PrefetchedGatherIsInFlightWhileAUnitComputes checks the prefetch itself); after the step nothing
// is left. Without prefetch and without overlapReduce, the peak is one unit's parameters and
// gradients.
TEST_P(FsdpTest, CountedMemoryIsAShardAndTwoUnits) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("fsdp-memory");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    std::vector<size_t> numels;
    std::vector<std::vector<size_t>> units;
    for (size_t u = 0; u < 8; ++u) {  // 8 units of a 10000-float weight and a 100-float bias
      units.push_back({numels.size(), numels.size() + 1});
      numels.push_back(10000);
      numels.push_back(100);
    }
    const size_t total = std::accumulate(numels.begin(), numels.end(), size_t{0});
    const auto n = static_cast<size_t>(size);
    const size_t chunk = (10100 + n - 1) / n;
    const size_t unitBytes = n * chunk * sizeof(float);  // F
    const std::string what = "rank " + std::to_string(rank) + " of " + std::to_string(size);

    ZeroModel m(numels, rank);
    FsdpOptions fo;
    fo.optimizer = referenceOptimizers()[1];       // Adam: two slots
    ReferenceOptimizer ref(fo.optimizer, numels);  // its state is counted too: before `before`
    const int64_t before = layers::layerMemory().liveBytes;
    FullyShardedModel fsdp(unitsOf(m, units), pg, fo);
    const int64_t built = layers::layerMemory().liveBytes - before;
    EXPECT_EQ(built, static_cast<int64_t>(4 * 8 * chunk * sizeof(float)))
        << what << ": construction allocated other than two shards and Adam's two slots";
    layers::resetLayerMemoryPeak();
    trainStep(fsdp, units, rank, 0, ref, what);
    const FsdpStepStats st = fsdp.step();
    const int64_t peak = static_cast<int64_t>(st.layerPeakBytes) - before;
    EXPECT_LE(peak, built + static_cast<int64_t>(4 * unitBytes + chunk * sizeof(float)))
        << what << ": more than two units' parameters and gradients above the shards";
    // Backward holds unit u's parameters and gradients, unit u + 1's gradients (in reduction) and
    // unit u - 1's parameters (prefetched): 4F, where without prefetch it would be 3F.
    EXPECT_GE(peak, built + static_cast<int64_t>(4 * unitBytes))
        << what << ": never held a prefetched unit's parameters beside a unit in backward and two "
        << "units' gradients (no prefetch?)";
    if (size > 1) {  // what one unsharded model holds: parameters, gradients, Adam's state
      EXPECT_LT(peak, static_cast<int64_t>(4 * total * sizeof(float))) << what;
    }
    EXPECT_EQ(st.layerBytes - static_cast<size_t>(before), static_cast<size_t>(built))
        << what << ": a step left memory behind";
    EXPECT_EQ(st.shardBytes, 2 * 8 * chunk * sizeof(float)) << what;

    // Neither prefetch nor overlapReduce: a unit's backward holds its parameters and gradients,
    // nothing else (2F); with the reduce-scatter left in flight it would be 3F.
    FsdpOptions lean = fo;
    lean.prefetch = false;
    lean.overlapReduce = false;
    const int64_t before2 = layers::layerMemory().liveBytes;
    {
      FullyShardedModel small(unitsOf(m, units), pg, lean);
      layers::resetLayerMemoryPeak();
      trainStep(small, units, rank, 0, ref, what + ", lean");
      const FsdpStepStats st2 = small.step();
      const int64_t peak2 = static_cast<int64_t>(st2.layerPeakBytes) - before2;
      EXPECT_LE(peak2, built + static_cast<int64_t>(2 * unitBytes + chunk * sizeof(float)))
          << what << ": without prefetch and overlap, more than one unit's parameters and "
          << "gradients above the shards";
      EXPECT_GE(peak2, built + static_cast<int64_t>(2 * unitBytes)) << what;
    }
    pg->barrier()->wait();
  });
}

// Prefetch, seen at the group: where the framework computes unit u, the gather of the unit it
// computes next (u + 1 in forward, u - 1 in backward) is in flight (issued, not yet waited for),
// no other is, and it was issued before unit u's own gather was waited for (fully_sharded.h);
// without prefetch none is in flight there. Counting gathers or bytes cannot tell a prefetch of
// the wrong unit, or one waited for at once, from a real one; this can. Units of distinct padded
// sizes, so that a gather's size names its unit.
const std::vector<size_t> kPrefetchNumels{40, 64, 4, 24, 100, 8};
const std::vector<std::vector<size_t>> kPrefetchUnits{{0}, {1, 2}, {3}, {4, 5}};

std::string unitList(const std::set<size_t>& units) {
  std::string s = "{";
  for (size_t u : units) s += (s.size() > 1 ? ", " : "") + std::to_string(u);
  return s + "}";
}

TEST_P(FsdpTest, PrefetchedGatherIsInFlightWhileAUnitComputes) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("fsdp-prefetch");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    const auto n = static_cast<size_t>(size);
    for (bool prefetch : {true, false}) {
      auto log = std::make_shared<GatherLog>(pg);
      ZeroModel m(kPrefetchNumels, rank);
      FsdpOptions fo;
      fo.optimizer = referenceOptimizers()[0];
      fo.prefetch = prefetch;
      FullyShardedModel fsdp(unitsOf(m, kPrefetchUnits), log, fo);
      ReferenceOptimizer ref(fo.optimizer, kPrefetchNumels);
      const size_t units = kPrefetchUnits.size();
      std::map<size_t, size_t> unitOfNumel;  // a unit gather's output numel: N * C_u
      for (size_t u = 0; u < units; ++u) unitOfNumel[n * ((fsdp.unitNumel(u) + n - 1) / n)] = u;
      ASSERT_EQ(unitOfNumel.size(), units) << "the units' padded sizes must differ";
      auto unitOf = [&](size_t gather) {
        const auto it = unitOfNumel.find(log->numelOf(gather));
        return it == unitOfNumel.end() ? units : it->second;  // `units`: not a unit's gather
      };
      auto issuedAt = [&](size_t gather) {
        const auto& ev = log->events();
        size_t i = 0;
        while (ev[i].wait || ev[i].gather != gather) ++i;
        return i;
      };
      std::string what;
      size_t mark = log->events().size();  // the log's end at the previous compute
      auto computing = [&](size_t u, Pass pass) {
        const bool forward = pass == Pass::kForward;
        const std::string at =
            what + ", " + (forward ? "forward" : "backward") + " of unit " + std::to_string(u);
        std::set<size_t> want;
        if (prefetch && forward && u + 1 < units) want.insert(u + 1);
        if (prefetch && !forward && u > 0) want.insert(u - 1);
        std::set<size_t> inFlight;
        std::vector<size_t> inFlightGathers;
        for (size_t g = 0; g < log->gathers(); ++g) {
          if (log->waited(g)) continue;
          inFlight.insert(unitOf(g));
          inFlightGathers.push_back(g);
        }
        EXPECT_EQ(inFlight, want) << at << ": gathers in flight for units " << unitList(inFlight)
                                  << ", want " << unitList(want)
                                  << " (prefetch off, of the wrong unit, or waited for at once)";
        const auto& ev = log->events();
        for (size_t i = mark; i < ev.size(); ++i) {
          if (!ev[i].wait || unitOf(ev[i].gather) != u) continue;
          for (size_t g : inFlightGathers) {
            EXPECT_LT(issuedAt(g), i)
                << at << ": unit " << unitOf(g) << "'s gather was issued after unit " << u
                << "'s was waited for";
          }
        }
        mark = ev.size();
      };
      for (int s = 0; s < 2; ++s) {
        what = std::string(prefetch ? "prefetch" : "no prefetch") + ", rank " +
               std::to_string(rank) + ", step " + std::to_string(s + 1);
        trainStep(fsdp, kPrefetchUnits, rank, s, ref, what, s == 1 ? 2 : 1, computing);
        fsdp.step();
        ref.step(size, s);
      }
    }
    pg->barrier()->wait();
  });
}

// Never the whole model (train_mlp --mode zero3's start-up, evaluation and checkpoints): the
// UnitInit constructor makes each unit's values in turn (rank 0's kept), holding one unit beyond
// the shards and state; forEachUnit shows every unit's full parameters in order, holding at most
// two units (one without prefetch) and nothing after; consolidateUnitState, unit after unit, is
// consolidateState. The layers' own allocations, counted (c10d/layers/common/memory.h); train_mlp's
// TrainMlpMemory test measures the processes' RSS.
TEST_P(FsdpTest, UnitByUnitStartUpVisitsAndState) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("fsdp-units");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    const auto n = static_cast<size_t>(size);
    size_t largest = 0;  // the largest unit's N * C_u floats
    for (const auto& u : kUnits) {
      size_t numel = 0;
      for (size_t p : u) numel += kNumels[p];
      largest = std::max(largest, (numel + n - 1) / n * n);
    }
    for (bool prefetch : {true, false}) {
      const std::string what =
          std::string(prefetch ? "prefetch" : "no prefetch") + " on rank " + std::to_string(rank);
      ZeroModel m(kNumels, rank);
      auto units = unitsOf(m, kUnits);
      for (auto& u : units) {
        for (layers::Parameter& param : u) {
          param.data = Tensor(nullptr, param.data.numel, DataType::kFloat32);
        }
      }
      FsdpOptions fo;
      fo.optimizer = referenceOptimizers()[1];  // Adam
      fo.prefetch = prefetch;
      ReferenceOptimizer ref(fo.optimizer, kNumels);
      std::vector<size_t> initialized;
      const int64_t before = layers::layerMemory().liveBytes;
      layers::resetLayerMemoryPeak();
      FullyShardedModel fsdp(units, pg, fo, [&](size_t u, const std::vector<Tensor>& views) {
        initialized.push_back(u);
        ASSERT_EQ(views.size(), kUnits[u].size()) << what;
        for (size_t i = 0; i < views.size(); ++i) {
          std::copy(m.data(kUnits[u][i]).begin(), m.data(kUnits[u][i]).end(),
                    views[i].ptr<float>());
        }
      });
      const layers::LayerMemory built = layers::layerMemory();
      EXPECT_EQ(initialized, std::vector<size_t>({0, 1, 2, 3})) << what;
      // 4 KiB: the start-up check's exchanges of a few integers per rank.
      EXPECT_LE(built.peakBytes - before,
                built.liveBytes - before + static_cast<int64_t>(largest * sizeof(float)) + 4096)
          << what << ": start-up held more than one unit beyond the shards and state";
      expectFullParamsEqual(fsdp, ref, what + ": rank 0's initial values");
      trainStep(fsdp, kUnits, rank, 0, ref, what);
      fsdp.step();
      ref.step(size, 0);

      std::vector<size_t> visited;
      layers::resetLayerMemoryPeak();
      fsdp.forEachUnit([&](size_t u, const std::vector<Tensor>& views) {
        visited.push_back(u);
        expectViewsEqual(views, kUnits[u], ref, what + ": forEachUnit");
      });
      const layers::LayerMemory after = layers::layerMemory();
      EXPECT_EQ(visited, std::vector<size_t>({0, 1, 2, 3})) << what;
      EXPECT_EQ(after.liveBytes, built.liveBytes) << what << ": forEachUnit left units gathered";
      EXPECT_LE(after.peakBytes - built.liveBytes,
                static_cast<int64_t>((prefetch ? 2 : 1) * largest * sizeof(float)))
          << what << ": forEachUnit held more units than it gathers at once";

      for (int dst : {0, size - 1}) {
        optim::OptimizerState byUnit;
        for (size_t u = 0; u < kUnits.size(); ++u) {
          for (auto& slots : fsdp.consolidateUnitState(u, dst)) {
            byUnit.slots.push_back(std::move(slots));
          }
        }
        const optim::OptimizerState full = fsdp.consolidateState(dst);
        if (rank == dst) {
          ASSERT_EQ(byUnit.slots.size(), kNumels.size()) << what;
          EXPECT_TRUE(byUnit.slots == full.slots) << what << ": consolidateUnitState, dst " << dst;
          expectStateEqual(full, ref.state(), what + ": consolidateState");
        } else {
          EXPECT_TRUE(byUnit.slots.empty()) << what;
        }
      }
    }
    pg->barrier()->wait();
  });
}

TEST_P(FsdpTest, MisuseAndStartUpDifferencesAreErrorsOnEveryRank) {
  const BackendParam bp = p();
  const std::string path = uniqueTempPath("fsdp-errors");
  expectAllRanksOk(ws(), [&](int rank, int size) {
    auto pg = makeGroup(bp, path, rank, size);
    const int odd = size - 1;
    const std::string oddRank = "rank " + std::to_string(odd);
    FsdpOptions fo;
    fo.optimizer = referenceOptimizers()[0];
    auto attempt = [&](const std::vector<std::vector<size_t>>& units, const FsdpOptions& o,
                       const std::vector<std::string>& parts, const std::string& what) {
      ZeroModel m(kNumels, rank);
      expectThrowWith<InvalidArgument>([&] { FullyShardedModel f(unitsOf(m, units), pg, o); },
                                       parts, what);
    };
    if (size > 1) {
      std::vector<std::vector<size_t>> other = kUnits;
      if (rank == odd) other = {{0, 1, 2}, {3, 4}, {5, 6, 7}};
      attempt(other, fo, {"number of units differs", oddRank + " has 3"}, "unit count");
      other = kUnits;
      if (rank == odd) other = {{0}, {1, 2}, {3, 4}, {5, 6, 7}};
      attempt(other, fo, {"parameter counts differs", oddRank}, "unit layout");
      FsdpOptions noPrefetch = fo;
      if (rank == odd) noPrefetch.prefetch = false;
      attempt(kUnits, noPrefetch, {"prefetch differs", oddRank + " has false"}, "prefetch");
    }
    attempt({{0, 1}, {}, {2, 3, 4, 5, 6, 7}}, fo, {"unit 1 has no parameters"}, "empty unit");
    FsdpOptions badGroup = fo;
    badGroup.paramGroups = {{{3, 8}, 0.1, 0.0}};
    attempt(kUnits, badGroup, {"parameter group 0 names parameter 8"}, "group out of range");
    FsdpOptions badClip = fo;
    badClip.clip.maxNorm = -1;
    attempt(kUnits, badClip, {"maxGradNorm", "-1"}, "negative clip");
    if (size > 1) {
      FsdpOptions clip = fo;
      if (rank == odd) clip.clip.maxNorm = 2.0;
      attempt(kUnits, clip, {"clip.maxNorm differs", oddRank + " has 2"}, "clip differs");
    }
    EXPECT_THROW(FullyShardedModel({}, nullptr), InvalidArgument);

    // Misuse leaves the model usable; the run after it still equals the reference.
    ZeroModel m(kNumels, rank);
    FullyShardedModel fsdp(unitsOf(m, kUnits), pg, fo);
    expectThrowWith<InvalidArgument>([&] { fsdp.unshard(4, Pass::kForward); },
                                     {"unit 4 out of range", "4 units"}, "unshard range");
    expectThrowWith<InvalidArgument>([&] { fsdp.grads(1); }, {"unit 1", "not in backward"},
                                     "grads before backward");
    expectThrowWith<InvalidArgument>([&] { fsdp.reduceGrads(2); }, {"unit 2", "not in backward"},
                                     "reduce before backward");
    std::vector<Tensor> wrong(kNumels.size());
    expectThrowWith<InvalidArgument>([&] { fsdp.loadParameters(wrong); },
                                     {"parameter 0 ('p0')", "7 float32"}, "load bad views");
    fsdp.unshard(3, Pass::kBackward);
    expectThrowWith<InvalidArgument>([&] { fsdp.step(); }, {"unit 3", "reduceGrads(3) first"},
                                     "step in backward");
    fsdp.grads(3);
    fsdp.reduceGrads(3);
    expectThrowWith<InvalidArgument>([&] { fsdp.reduceGrads(3); }, {"unit 3", "not in backward"},
                                     "reduce twice");
    fsdp.step();
    // The group is still in step: a new model's run equals the reference.
    ZeroModel m2(kNumels, rank);
    FullyShardedModel clean(unitsOf(m2, kUnits), pg, fo);
    ReferenceOptimizer ref2(fo.optimizer, kNumels);
    trainStep(clean, kUnits, rank, 0, ref2, "after misuse");
    clean.step();
    ref2.step(size, 0);
    expectFullParamsEqual(clean, ref2, "after misuse");
    pg->barrier()->wait();
  });
}

INSTANTIATE_TEST_SUITE_P(Backends, FsdpTest, ::testing::ValuesIn(conformanceCases({1, 2, 3, 4})),
                         zeroCaseName);
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(FsdpTest);

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
