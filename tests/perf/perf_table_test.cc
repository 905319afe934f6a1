// Unit tests of the perf binaries' pieces that need no communication: the per-collective tables
// (sizes, counts, bus-bandwidth factors for n = 1..4, as nccl-tests computes them), flag parsing,
// the number formatting, and the validation data (exact references, the checker catching a bad
// element).
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "perf/common/collectives.h"
#include "perf/common/data.h"
#include "perf/common/options.h"
#include "perf/common/report.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {
namespace {

struct Expect {
  const Collective* coll;
  const char* name;
  // bytes = count * typeSize * algMult(n); busbw = algbw * factor(n)
  bool splitsOverRanks;  // counts per rank = (count / n) rounded to 16 bytes
  double (*factor)(int n);
};

double two(int n) {
  return 2.0 * (n - 1) / n;
}
double one(int) {
  return 1.0;
}
double frac(int n) {
  return static_cast<double>(n - 1) / n;
}

const Expect kExpect[] = {
    {&kAllReduce, "AllReduce", false, two},
    {&kAllGather, "AllGather", true, frac},
    {&kBroadcast, "Broadcast", false, one},
    {&kReduce, "Reduce", false, one},
    {&kReduceScatter, "ReduceScatter", true, frac},
    {&kAlltoAll, "AlltoAll", true, frac},
    {&kGather, "Gather", true, frac},
    {&kScatter, "Scatter", true, frac},
    {&kSendRecv, "SendRecv", false, one},
};

TEST(PerfTable, BusBandwidthFactorsMatchNcclTests) {
  for (const auto& e : kExpect) {
    EXPECT_STREQ(e.coll->name, e.name);
    for (int n = 1; n <= 4; ++n) {
      const size_t count = 1000;
      double alg = 0, bus = 0;
      e.coll->bandwidth(count, 4, 1e-3, n, &alg, &bus);
      // nccl-tests: algbw counts the whole (all ranks') buffer for the split collectives.
      const double bytes = 4.0 * count * (e.splitsOverRanks ? n : 1);
      EXPECT_NEAR(alg, bytes / 1e9 / 1e-3, 1e-12) << e.name << " n=" << n;
      EXPECT_NEAR(bus, alg * e.factor(n), 1e-12) << e.name << " n=" << n;
    }
  }
  // Spot values: allreduce n=4 is 1.5x, n=1 is 0.
  double alg = 0, bus = 0;
  kAllReduce.bandwidth(250, 4, 1e-6, 4, &alg, &bus);
  EXPECT_DOUBLE_EQ(alg, 1.0);
  EXPECT_DOUBLE_EQ(bus, 1.5);
  kAllReduce.bandwidth(250, 4, 1e-6, 1, &alg, &bus);
  EXPECT_DOUBLE_EQ(bus, 0.0);
  kAllGather.bandwidth(250, 4, 1e-6, 4, &alg, &bus);
  EXPECT_DOUBLE_EQ(alg, 4.0);
  EXPECT_DOUBLE_EQ(bus, 3.0);
}

TEST(PerfTable, CountsFollowNcclTests) {
  // size 1 MiB of float = 262144 elements; odd sizes too.
  for (size_t size : {size_t(0), size_t(8), size_t(100), size_t(1000), size_t(1) << 20}) {
    for (size_t es : {size_t(1), size_t(2), size_t(4), size_t(8)}) {
      const size_t count = size / es;
      for (int n = 1; n <= 4; ++n) {
        const size_t base = (count / n) & ~(16 / es - 1);
        SCOPED_TRACE(testing::Message() << "size=" << size << " es=" << es << " n=" << n);
        CollCounts c = kAllReduce.counts(count, es, n);
        EXPECT_EQ(c.sendCount, count);
        EXPECT_EQ(c.recvCount, count);
        EXPECT_EQ(c.paramCount, count);
        for (const Collective* k : {&kBroadcast, &kReduce, &kSendRecv}) {
          CollCounts d = k->counts(count, es, n);
          EXPECT_EQ(d.sendCount, count);
          EXPECT_EQ(d.paramCount, count);
          EXPECT_EQ(d.sendInplaceOffset + d.recvInplaceOffset, 0u);
        }
        c = kAllGather.counts(count, es, n);  // size = total output bytes
        EXPECT_EQ(c.paramCount, base);
        EXPECT_EQ(c.sendCount, base);
        EXPECT_EQ(c.recvCount, base * n);
        EXPECT_EQ(c.sendInplaceOffset, base);
        EXPECT_EQ(c.recvInplaceOffset, 0u);
        c = kReduceScatter.counts(count, es, n);  // size = total input bytes
        EXPECT_EQ(c.paramCount, base);
        EXPECT_EQ(c.sendCount, base * n);
        EXPECT_EQ(c.recvCount, base);
        EXPECT_EQ(c.recvInplaceOffset, base);
        c = kAlltoAll.counts(count, es, n);
        EXPECT_EQ(c.paramCount, base);
        EXPECT_EQ(c.sendCount, base * n);
        EXPECT_EQ(c.recvCount, base * n);
        c = kGather.counts(count, es, n);
        EXPECT_EQ(c.sendCount, base);
        EXPECT_EQ(c.recvCount, base * n);
        EXPECT_EQ(c.sendInplaceOffset, base);
        c = kScatter.counts(count, es, n);
        EXPECT_EQ(c.recvCount, base);
        EXPECT_EQ(c.sendCount, base * n);
        EXPECT_EQ(c.recvInplaceOffset, base);
        // Every buffer fits in the maxBytes-sized buffers the driver allocates.
        for (const auto& e : kExpect) {
          CollCounts x = e.coll->counts(count, es, n);
          EXPECT_LE(std::max(x.sendCount, x.recvCount) * es, size) << e.name;
        }
      }
    }
  }
  // The table's "size" column is max(send, recv) bytes: all_gather 1 MiB over 3 ranks of float
  // = 3 * 87376 elements (87381 rounded down to a multiple of 4).
  CollCounts c = kAllGather.counts((1 << 20) / 4, 4, 3);
  EXPECT_EQ(c.paramCount, 87380u);
  EXPECT_EQ(c.recvCount * 4, 1048560u);
}

TEST(PerfTable, TableFlags) {
  EXPECT_TRUE(kBroadcast.rooted && kReduce.rooted && kGather.rooted && kScatter.rooted);
  EXPECT_FALSE(kAllReduce.rooted || kAllGather.rooted || kAlltoAll.rooted || kSendRecv.rooted);
  EXPECT_TRUE(kAllReduce.reduces && kReduce.reduces && kReduceScatter.reduces);
  EXPECT_FALSE(kAllGather.opColumn || kBroadcast.opColumn || kAlltoAll.opColumn);
  EXPECT_FALSE(kAlltoAll.checkInPlace || kSendRecv.checkInPlace);
}

TEST(PerfOptions, SizesAndFlags) {
  size_t b = 0;
  EXPECT_TRUE(parseSize("4K", &b));
  EXPECT_EQ(b, 4096u);
  EXPECT_TRUE(parseSize("64M", &b));
  EXPECT_EQ(b, 64u << 20);
  EXPECT_TRUE(parseSize("1G", &b));
  EXPECT_EQ(b, 1u << 30);
  EXPECT_TRUE(parseSize("123", &b));
  EXPECT_EQ(b, 123u);
  EXPECT_FALSE(parseSize("12Q", &b));
  EXPECT_FALSE(parseSize("x", &b));
  // The spellings every byte-size setting takes (c10d/base/settings.h's parseByteSize).
  EXPECT_TRUE(parseSize("4KiB", &b));
  EXPECT_EQ(b, 4096u);
  EXPECT_TRUE(parseSize("2gib", &b));
  EXPECT_EQ(b, 2ull << 30);

  std::vector<std::string> words{
      "x", "-b",        "8",    "-e",       "128M", "-f",         "2",   "-n", "5",          "-w",
      "0", "-c",        "0",    "-o",       "all",  "-d",         "all", "-z", "1",          "-a",
      "3", "--backend", "gloo", "--device", "cpu",  "--minbytes", "16",  "-J", "/tmp/x.json"};
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  PerfOptions o;
  ParseResult r = parseOptions(static_cast<int>(argv.size()), argv.data(), &o);
  ASSERT_EQ(r.action, ParseResult::kRun) << r.message;
  EXPECT_EQ(o.minBytes, 16u);
  EXPECT_EQ(o.maxBytes, 128u << 20);
  EXPECT_EQ(o.stepFactor, 2u);
  EXPECT_EQ(o.iters, 5);
  EXPECT_EQ(o.warmupIters, 0);
  EXPECT_EQ(o.check, 0);
  EXPECT_EQ(o.ops.size(), 6u);
  EXPECT_EQ(o.ops[5], ReduceOp::PREMUL_SUM);
  EXPECT_EQ(o.dtypes.size(), 8u);
  EXPECT_EQ(o.blocking, 1);
  EXPECT_EQ(o.average, TimeCombine::kMax);
  EXPECT_EQ(o.backend, "gloo");
  EXPECT_EQ(o.jsonPath, "/tmp/x.json");

  PerfOptions d;  // nccl-tests' defaults
  EXPECT_EQ(d.minBytes, 32u << 20);
  EXPECT_EQ(d.iters, 20);
  EXPECT_EQ(d.warmupIters, 1);
  EXPECT_EQ(d.check, 1);
  EXPECT_EQ(d.average, TimeCombine::kAverage);

  auto parse = [](std::vector<std::string> w) {
    std::vector<char*> a;
    for (auto& s : w) a.push_back(s.data());
    PerfOptions o;
    return parseOptions(static_cast<int>(a.size()), a.data(), &o);
  };
  EXPECT_EQ(parse({"x", "-b", "2M", "-e", "1M"}).action, ParseResult::kError);
  EXPECT_EQ(parse({"x", "-o", "xor"}).action, ParseResult::kError);
  EXPECT_EQ(parse({"x", "-d", "quad"}).action, ParseResult::kError);
  EXPECT_EQ(parse({"x", "-n"}).action, ParseResult::kError);
  EXPECT_EQ(parse({"x", "-q", "1"}).action, ParseResult::kError);
  EXPECT_EQ(parse({"x", "--device", "tpu"}).action, ParseResult::kError);
  EXPECT_EQ(parse({"x", "-h"}).action, ParseResult::kHelp);

  // Errors name the flag and the bad value.
  ParseResult bad = parse({"x", "-n", "ten"});
  EXPECT_EQ(bad.action, ParseResult::kError);
  EXPECT_NE(bad.message.find("invalid value 'ten' for iters (-n) (expected an integer in [1, "),
            std::string::npos)
      << bad.message;
  bad = parse({"x", "-w", "-1"});
  EXPECT_NE(bad.message.find("invalid value '-1' for warmup_iters (-w)"), std::string::npos)
      << bad.message;
  bad = parse({"x", "-b", "12Q"});
  EXPECT_EQ(bad.action, ParseResult::kError);
  EXPECT_NE(bad.message.find("invalid size specified for 'minbytes': '12Q'"), std::string::npos)
      << bad.message;
  // nccl-tests reads its integer flags with strtol(..., 0): hex and octal too.
  std::vector<std::string> hex{"x", "-n", "0x10", "-w", "010"};
  std::vector<char*> hexArgv;
  for (auto& w : hex) hexArgv.push_back(w.data());
  PerfOptions h;
  ASSERT_EQ(parseOptions(static_cast<int>(hexArgv.size()), hexArgv.data(), &h).action,
            ParseResult::kRun);
  EXPECT_EQ(h.iters, 16);
  EXPECT_EQ(h.warmupIters, 8);
}

TEST(PerfReport, FormatsAsNcclTests) {
  EXPECT_EQ(floatStr(12.3456, 7), "  12.35");
  EXPECT_EQ(floatStr(12345.67, 7), "12345.7");
  EXPECT_EQ(floatStr(123456.7, 7), " 123457");
  EXPECT_EQ(floatStr(1e9, 7), "1.0e+09");
  EXPECT_EQ(floatStr(1e9, 6), " 1e+09");
  EXPECT_EQ(floatStr(1234567.0, 7), "1234567");
  EXPECT_EQ(floatStr(0.001, 6), "  0.00");
  EXPECT_EQ(rowPreamble(1024, 256, "float", "sum", -1),
            "        1024           256     float     sum      -1");
  EXPECT_EQ(rowBody(12.34, 0.08, 0.12, true, 0), "    12.34    0.08    0.12       0");
  EXPECT_EQ(rowBody(12.34, 0.08, 0.12, false, 0), "    12.34    0.08    0.12    N/A");
  EXPECT_EQ(rankLine(0, 0, 12345, "hostname", 0, "[cpu]", "gloo"),
            "#  Rank  0 Group  0 Pid  12345 on   hostname device  0 [cpu] gloo\n");
  const std::string f = footer(0, 1.5, -1, "all_reduce_perf");
  EXPECT_NE(f.find("# Out of bounds values : 0 OK\n"), std::string::npos);
  EXPECT_NE(f.find("# Avg bus bandwidth    : 1.5 \n"), std::string::npos);
  EXPECT_NE(f.find("# Collective test concluded: all_reduce_perf\n"), std::string::npos);
  EXPECT_NE(footer(2, 1.5, -1, "x").find(": 2 FAILED"), std::string::npos);
  EXPECT_EQ(peakRssLine({"2048", "307200", "1024"}),
            "# Peak RSS per rank    : max 300.0 MiB (rank 1), min 1.0 MiB\n");
  EXPECT_EQ(peakRssLine({"-1", "512"}),
            "# Peak RSS per rank    : max 0.5 MiB (rank 1), min 0.5 MiB\n");
  EXPECT_EQ(peakRssLine({"-1"}), "# Peak RSS per rank    : unknown\n");

  ParsedRow row;
  ASSERT_TRUE(parseRow(rowPreamble(1024, 256, "float", "sum", -1) +
                           rowBody(12.34, 0.08, 0.12, true, 3) + rowBody(1, 2, 3, false, 0),
                       &row));
  EXPECT_EQ(row.size, 1024u);
  EXPECT_EQ(row.count, 256u);
  EXPECT_EQ(row.type, "float");
  EXPECT_EQ(row.root, -1);
  EXPECT_EQ(row.wrong[0], 3);
  EXPECT_EQ(row.wrong[1], -1);
  EXPECT_DOUBLE_EQ(row.busBw[1], 3.0);
  EXPECT_FALSE(parseRow("# comment", &row));
}

TEST(PerfData, ReferencesAreExactAndTheCheckerCatchesOneBadElement) {
  const ReduceOp::Kind ops[] = {ReduceOp::SUM, ReduceOp::PRODUCT, ReduceOp::MIN,
                                ReduceOp::MAX, ReduceOp::AVG,     ReduceOp::PREMUL_SUM};
  const size_t count = 257;
  for (DataType t : allDataTypes()) {
    const size_t es = elementSize(t);
    for (ReduceOp::Kind op : ops) {
      for (int n : {1, 2, 3, 4, 8}) {
        SCOPED_TRACE(testing::Message() << toString(t) << " " << toString(op) << " n=" << n);
        // Reduce the ranks' inputs the way a backend would (in the type, in rank order, with
        // c10d's reference kernels) and compare with fillReduced.
        std::vector<char> acc(count * es), in(count * es), want(count * es);
        for (int r = 0; r < n; ++r) {
          fillInput(in.data(), count, 5, t, op, 7, r, n);
          if (op == ReduceOp::PREMUL_SUM) scale(in.data(), in.data(), count, t, premulScalar(r));
          if (r == 0) {
            acc = in;
          } else {
            reduceInto(acc.data(), in.data(), count, t,
                       op == ReduceOp::PREMUL_SUM || op == ReduceOp::AVG ? ReduceOp::SUM : op);
          }
        }
        if (op == ReduceOp::AVG) divide(acc.data(), count, t, n);
        fillReduced(want.data(), count, 5, t, op, 7, n);
        EXPECT_EQ(countWrong(acc.data(), want.data(), count, t), 0);
        corruptElement(acc.data(), 100, t);
        EXPECT_EQ(countWrong(acc.data(), want.data(), count, t), 1);
      }
    }
  }
}

TEST(PerfData, InputsDependOnRankIndexAndSeed) {
  std::vector<float> a(64), b(64), c(64);
  fillInput(a.data(), 64, 0, DataType::kFloat32, ReduceOp::SUM, 1, 0, 2);
  fillInput(b.data(), 64, 0, DataType::kFloat32, ReduceOp::SUM, 1, 1, 2);
  fillInput(c.data(), 64, 0, DataType::kFloat32, ReduceOp::SUM, 2, 0, 2);
  EXPECT_GT(countWrong(a.data(), b.data(), 64, DataType::kFloat32), 32);
  EXPECT_GT(countWrong(a.data(), c.data(), 64, DataType::kFloat32), 32);
  std::vector<float> d(64);
  fillInput(d.data(), 64, 0, DataType::kFloat32, ReduceOp::SUM, 1, 0, 2);
  EXPECT_EQ(countWrong(a.data(), d.data(), 64, DataType::kFloat32), 0);
}

}  // namespace
}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
