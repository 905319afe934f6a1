// c10d_trace on handcrafted dumps: the verdicts (first divergence; who waits, who never came,
// who left no dump) and clear errors for corrupt input. Dumps of a real hung job are read in
// tests/backends/diagnostics_test.cc.
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "tests/tools/trace_runner.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

std::string entry(uint64_t seq, const std::string& op, uint64_t count, const std::string& state,
                  const std::string& extra = "") {
  return "{\"seq\":" + std::to_string(seq) + ",\"coll_seq\":" + std::to_string(seq) + ",\"op\":\"" +
         op + "\",\"dtype\":\"float32\",\"count\":" + std::to_string(count) +
         ",\"tensors\":0,\"root\":-1,\"peer\":-1,\"reduce_op\":\"sum\",\"send_counts\":[],"
         "\"recv_counts\":[],\"state\":\"" +
         state + "\",\"issue_us\":1000,\"start_us\":1001,\"end_us\":" +
         (state == "completed" ? "1002" : "0") + ",\"error\":\"\"" + extra + "}";
}

std::string dump(int rank, int size, const std::vector<std::string>& entries,
                 const std::string& group = "verbs:world") {
  std::string s = "{\"format\":\"c10d-flight-recorder\",\"version\":1,\"group\":\"" + group +
                  "\",\"backend\":\"verbs\",\"rank\":" + std::to_string(rank) +
                  ",\"size\":" + std::to_string(size) +
                  ",\"pid\":1,\"host\":\"h\",\"reason\":\"timeout\",\"dumped_us\":5,"
                  "\"capacity\":100,\"recorded\":" +
                  std::to_string(entries.size()) + ",\"entries\":[";
  for (size_t i = 0; i < entries.size(); ++i) s += (i ? "," : "") + entries[i];
  return s + "]}";
}

class TraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/c10d-trace-test-XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    (void)std::system(cmd.c_str());
  }
  std::string write(const std::string& name, const std::string& text) {
    std::string p = dir_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }
  TraceRun run(const std::vector<std::string>& args) { return runTrace(args, dir_ + ".err"); }

  std::string dir_;
};

TEST_F(TraceTest, NamesTheRankThatNeverArrived) {
  // Ranks 0 and 1 wait in allreduce #5; rank 2 completed #4 and issued nothing after it.
  std::vector<std::string> done;
  for (int s = 0; s < 5; ++s) done.push_back(entry(s, "allreduce", 8, "completed"));
  auto waiting = done;
  waiting.push_back(entry(5, "allreduce", 8, "started"));
  write("r0.json", dump(0, 3, waiting));
  write("r1.json", dump(1, 3, waiting));
  write("r2.json", dump(2, 3, done));
  TraceRun r = run({dir_});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("ranks 0, 1 wait in allreduce #5 (float32 x 8, sum)"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("rank 2 never arrived at allreduce #5 (its last op: allreduce #4"),
            std::string::npos)
      << r.out;
}

TEST_F(TraceTest, DumpsWrittenAfterTheFailure) {
  // Dumped on demand after the error: the stuck op is "failed" on ranks 0 and 1.
  std::vector<std::string> done = {entry(0, "allreduce", 8, "completed")};
  auto failed = done;
  failed.push_back(entry(1, "allreduce", 8, "failed"));
  write("r0.json", dump(0, 3, failed));
  write("r1.json", dump(1, 3, failed));
  write("r2.json", dump(2, 3, done));
  TraceRun r = run({dir_});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("ranks 0, 1 failed in allreduce #1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 2 never arrived at allreduce #1"), std::string::npos) << r.out;
}

TEST_F(TraceTest, NamesRanksThatLeftNoDumpAndRanksBehind) {
  std::vector<std::string> a = {entry(0, "allreduce", 8, "completed"),
                                entry(1, "broadcast", 8, "started")};
  std::vector<std::string> b = {entry(0, "allreduce", 8, "started")};
  write("r0.json", dump(0, 4, a));
  write("r1.json", dump(1, 4, a));
  write("r2.json", dump(2, 4, b));
  TraceRun r = run({dir_});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("rank 2 is still at allreduce #0 (started)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ranks 0, 1 wait in broadcast #1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 3 left no dump"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("(no dump"), std::string::npos) << r.out;  // its table row
}

TEST_F(TraceTest, NamesTheFirstDivergence) {
  std::vector<std::string> r0 = {entry(0, "allreduce", 8, "completed"),
                                 entry(1, "allreduce", 8, "completed"),
                                 entry(2, "allreduce", 16, "started")};
  std::vector<std::string> r1 = {entry(0, "allreduce", 8, "completed"),
                                 entry(1, "allreduce", 8, "completed"),
                                 entry(2, "broadcast", 16, "started")};
  write("r0.json", dump(0, 3, r0));
  write("r1.json", dump(1, 3, r1));
  write("r2.json", dump(2, 3, r0));
  TraceRun r = run({dir_});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("first divergence at #2: ranks 0, 2 called allreduce #2 (float32 x 16, "
                       "sum); rank 1 called broadcast #2"),
            std::string::npos)
      << r.out;
}

TEST_F(TraceTest, GroupsAreAnalysedApart) {
  write("a0.json", dump(0, 2, {entry(0, "allreduce", 8, "started")}, "verbs:world"));
  write("a1.json", dump(1, 2, {entry(0, "allreduce", 8, "started")}, "verbs:world"));
  write("b0.json", dump(0, 2, {entry(0, "barrier", 0, "completed")}, "verbs:world/group1"));
  TraceRun r = run({dir_});
  ASSERT_EQ(r.exitCode, 0) << r.describe();
  EXPECT_NE(r.out.find("group verbs:world (2 ranks, 2 dumps)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("group verbs:world/group1 (2 ranks, 1 dumps)"), std::string::npos) << r.out;
}

struct Corrupt {
  const char* name;
  std::string text;
  std::string expected;
};

TEST_F(TraceTest, CorruptInputGivesClearErrors) {
  const std::string good = entry(0, "allreduce", 8, "completed");
  std::string badSeq = good;
  badSeq.replace(badSeq.find("\"seq\":0"), 7, "\"seq\":\"x\"");
  std::string badState = entry(1, "allreduce", 8, "exploded");
  const std::vector<Corrupt> cases = {
      {"notjson", "{\"format\": \"c10d-flight-rec", "not valid JSON"},
      {"format", "{\"format\":\"nccl\",\"version\":1}",
       "field 'format' is 'nccl', expected 'c10d-flight-recorder'"},
      {"noentries", dump(0, 2, {}).replace(dump(0, 2, {}).find(",\"entries\":[]"), 13, ""),
       "missing field 'entries'"},
      {"seqtype", dump(0, 2, {badSeq}),
       "entries[0]: field 'seq' is string, expected an unsigned integer"},
      {"state", dump(0, 2, {good, badState}), "entries[1]: state 'exploded'"},
      {"order", dump(0, 2, {entry(3, "allreduce", 8, "completed"), good}),
       "entries[1]: seq 0 after seq 3"},
      {"rank", dump(5, 2, {good}), "rank 5 is out of range for size 2"},
      {"version", dump(0, 2, {}).replace(dump(0, 2, {}).find("\"version\":1"), 11, "\"version\":7"),
       "version 7 (this tool reads version 1)"},
  };
  for (const Corrupt& c : cases) {
    const std::string path = write(std::string(c.name) + ".json", c.text);
    TraceRun r = run({path});
    EXPECT_EQ(r.exitCode, 2) << c.name << ": " << r.describe();
    EXPECT_NE(r.err.find(path), std::string::npos) << c.name << ": " << r.err;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.name << ": " << r.err;
    ::unlink(path.c_str());
  }
}

TEST_F(TraceTest, DuplicateRanksMissingFilesAndEmptyDirectories) {
  const std::string d = dump(1, 2, {entry(0, "allreduce", 8, "completed")});
  const std::string a = write("a.json", d);
  const std::string b = write("b.json", d);
  TraceRun r = run({a, b});
  EXPECT_EQ(r.exitCode, 2) << r.describe();
  EXPECT_NE(r.err.find("two dumps of rank 1 of group verbs:world: " + a + " and " + b),
            std::string::npos)
      << r.err;

  r = run({dir_ + "/nonexistent.json"});
  EXPECT_EQ(r.exitCode, 2) << r.describe();
  EXPECT_NE(r.err.find("nonexistent.json: cannot read the file"), std::string::npos) << r.err;

  const std::string empty = dir_ + "/empty";
  ASSERT_EQ(::mkdir(empty.c_str(), 0755), 0);
  r = run({empty});
  EXPECT_EQ(r.exitCode, 2) << r.describe();
  EXPECT_NE(r.err.find("no *.json flight records"), std::string::npos) << r.err;

  r = run({});
  EXPECT_EQ(r.exitCode, 2) << r.describe();
  EXPECT_NE(r.err.find("usage"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
