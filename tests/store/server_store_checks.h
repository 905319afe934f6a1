// Checks shared by the tests of stores kept in a server process (etcd_store_test,
// redis_store_test): a set from another process wakes a waiter promptly (pushed, not polled), and
// a killed server turns blocked and new calls into a CommError naming the endpoint within the
// timeout.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/store/store.h"
#include "tests/common/multiproc.h"
#include "tests/store/store_servers.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

using MakeStore = std::function<std::shared_ptr<Store>(Milliseconds timeout)>;

inline int64_t monotonicNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Rank 1 sets a key holding the time just before its set; rank 0, blocked in wait() (and, for a
// second key, in get()), must wake within kMaxWakeMs of it. A store that polled once a second
// would fail; steady_clock is CLOCK_MONOTONIC, shared by the processes.
inline void expectPromptWakeups(const MakeStore& make) {
  constexpr int64_t kMaxWakeMs = 400;  // generous for a loaded 2-core machine under sanitizers
  expectAllRanksOk(
      2,
      [&](int rank, int) {
        auto store = make(Milliseconds(20000));
        if (rank == 1) {
          for (const char* key : {"wake-wait", "wake-get"}) {
            store->wait({std::string("ready-") + key}, Milliseconds(20000));
            std::this_thread::sleep_for(std::chrono::milliseconds(200));  // rank 0 is blocked
            store->set(key, std::to_string(monotonicNs()));
          }
          return;
        }
        store->set("ready-wake-wait", std::string("1"));
        store->wait({"wake-wait"}, Milliseconds(20000));
        const int64_t woke = monotonicNs();
        const int64_t lagMs = (woke - std::stoll(store->getString("wake-wait"))) / 1000000;
        EXPECT_LT(lagMs, kMaxWakeMs) << "wait() woke " << lagMs << " ms after the set";
        store->set("ready-wake-get", std::string("1"));
        const std::string v = store->getString("wake-get");
        const int64_t lagGetMs = (monotonicNs() - std::stoll(v)) / 1000000;
        EXPECT_LT(lagGetMs, kMaxWakeMs) << "get() woke " << lagGetMs << " ms after the set";
      },
      MultiProcOptions{std::chrono::milliseconds(60000), {}});
}

// Kills the server while one thread is blocked in wait(); that wait and every later call must
// throw CommError naming the endpoint well within the store's timeout (not hang, not wait it out).
inline void expectServerLossIsNamed(ServerProcess& server, const MakeStore& make) {
  constexpr Milliseconds kTimeout{10000};
  auto store = make(kTimeout);
  store->set("before", std::string("x"));
  const auto start = std::chrono::steady_clock::now();
  std::string waitError;
  bool waitThrewComm = false;
  std::thread waiter([&] {
    try {
      store->wait({"never-set"}, kTimeout);
    } catch (const CommError& e) {
      waitThrewComm = true;
      waitError = e.what();
    } catch (const std::exception& e) {
      waitError = std::string("not a CommError: ") + e.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  server.kill();
  waiter.join();
  const auto waitMs =
      std::chrono::duration_cast<Milliseconds>(std::chrono::steady_clock::now() - start);
  EXPECT_TRUE(waitThrewComm) << waitError;
  EXPECT_NE(waitError.find(server.endpoint()), std::string::npos) << waitError;
  EXPECT_LT(waitMs.count(), kTimeout.count() / 2) << "the blocked wait noticed late: " << waitError;

  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& op : std::vector<std::function<void()>>{
           [&] { store->set("after", std::string("y")); }, [&] { store->get("before"); },
           [&] { store->add("counter", 1); }, [&] { store->check({"before"}); }}) {
    try {
      op();
      ADD_FAILURE() << "a call succeeded with the server gone";
    } catch (const CommError& e) {
      EXPECT_NE(std::string(e.what()).find(server.endpoint()), std::string::npos) << e.what();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not a CommError: " << e.what();
    }
  }
  EXPECT_LT(std::chrono::duration_cast<Milliseconds>(std::chrono::steady_clock::now() - t0).count(),
            kTimeout.count() / 2);
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
