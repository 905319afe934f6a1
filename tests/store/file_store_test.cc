// FileStore-specific behaviour: who removes the file, and errors that name the path. (The Store
// semantics themselves are checked by the conformance suite.)
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/store/file_store.h"
#include "tests/common/multiproc.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

TEST(FileStoreTest, FileKeptWhileUsersRemainRemovedAfterLast) {
  const std::string path = uniqueTempPath("fs-users");
  auto a = std::make_unique<FileStore>(path, 3, Milliseconds(5000));
  auto b = std::make_unique<FileStore>(path, 3, Milliseconds(5000));
  auto c = std::make_unique<FileStore>(path, 3, Milliseconds(5000));
  a->set("k", std::string("v"));
  a.reset();
  EXPECT_TRUE(exists(path));
  b.reset();
  EXPECT_TRUE(exists(path));
  EXPECT_EQ(c->getString("k"), "v");  // the last user still works
  c->set("k2", std::string("v2"));
  c.reset();
  EXPECT_FALSE(exists(path));
}

TEST(FileStoreTest, NotRemovedBeforeAllUsersJoined) {
  const std::string path = uniqueTempPath("fs-join");
  {
    FileStore first(path, 2, Milliseconds(5000));
    first.set("early", std::string("1"));
  }
  // Only 1 of 2 users has come and gone: the file (and its data) stay for the second.
  ASSERT_TRUE(exists(path));
  {
    FileStore second(path, 2, Milliseconds(5000));
    EXPECT_EQ(second.getString("early"), "1");
  }
  EXPECT_FALSE(exists(path));
}

TEST(FileStoreTest, RemovedAfterLastOfNProcesses) {
  const std::string path = uniqueTempPath("fs-procs");
  constexpr int kUsers = 4;
  MultiProcOptions options;
  options.timeout = std::chrono::milliseconds(60000);
  expectAllRanksOk(
      kUsers,
      [&](int rank, int size) {
        FileStore store(path, size, Milliseconds(20000));
        store.add("joined", 1);
        store.set("rank" + std::to_string(rank), std::string("x"));
        for (int r = 0; r < size; ++r) store.wait({"rank" + std::to_string(r)});
        // Leave one by one; whoever is still here sees the file.
        std::this_thread::sleep_for(std::chrono::milliseconds(30 * rank));
        EXPECT_TRUE(exists(path));
      },
      options);
  EXPECT_FALSE(exists(path));
}

TEST(FileStoreTest, NegativeNumUsersNeverRemoves) {
  const std::string path = uniqueTempPath("fs-keep");
  { FileStore store(path, -1); }
  { FileStore store(path, -1); }
  EXPECT_TRUE(exists(path));
  ::unlink(path.c_str());
}

TEST(FileStoreTest, ZeroNumUsersIsInvalid) {
  const std::string path = uniqueTempPath("fs-zero");
  EXPECT_THROW(FileStore(path, 0), InvalidArgument);
  EXPECT_FALSE(exists(path));
}

TEST(FileStoreTest, OpenErrorNamesPathAndErrno) {
  const std::string path = "/nonexistent-c10d-dir/sub/store";
  try {
    FileStore store(path, 1);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("errno 2"), std::string::npos) << msg;
  }
}

TEST(FileStoreTest, CorruptFileErrorNamesPath) {
  const std::string path = uniqueTempPath("fs-garbage");
  std::ofstream(path) << "this is not a FileStore log";
  try {
    FileStore store(path, -1);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
  ::unlink(path.c_str());
}

TEST(FileStoreTest, InternalUserCountersAreNotKeys) {
  const std::string path = uniqueTempPath("fs-numkeys");
  FileStore a(path, 2);
  FileStore b(path, 2);
  EXPECT_EQ(a.getNumKeys(), 0);
  b.set("x", std::string("1"));
  EXPECT_EQ(a.getNumKeys(), 1);
  EXPECT_EQ(a.path(), path);
}

// Threads of one process share a FileStore object (the in-process mutex) and also use a second
// object on the same path (the flock): add stays exact.
TEST(FileStoreTest, ThreadsShareFileStores) {
  const std::string path = uniqueTempPath("fs-threads");
  constexpr int kThreads = 4;
  constexpr int kAdds = 200;
  {
    FileStore a(path, 2, Milliseconds(20000));
    FileStore b(path, 2, Milliseconds(20000));
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        FileStore& store = t % 2 ? a : b;
        for (int i = 0; i < kAdds; ++i) store.add("n", 1);
        store.set("done" + std::to_string(t), std::string("1"));
        EXPECT_EQ(store.getString("done" + std::to_string(kThreads - 1 - t)), "1");
      });
    }
    for (auto& th : threads) th.join();
    EXPECT_EQ(a.add("n", 0), kThreads * kAdds);
    EXPECT_EQ(b.getString("n"), std::to_string(kThreads * kAdds));
  }
  EXPECT_FALSE(exists(path));
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
