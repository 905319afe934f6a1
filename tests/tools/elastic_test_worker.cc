// Worker program for the elastic c10drun tests: a job that survives re-forming.
//
//   train STEPS DIR [STEP_MS]  init(env://) on the default backend, then allreduce steps from the
//                              checkpoint in DIR up to STEPS: each step sums {rank + 1, step,
//                              1} over the world and checks the result against the world size
//                              of this round (W(W+1)/2, W * step, W); rank 0 then writes the step
//                              to DIR/step (atomic rename) and appends "step S world W round R" to
//                              DIR/log. Prints "ready round R rank K world W" first and "finished
//                              world W" last. A failed collective (a peer died) exits 1.
//   fail CODE                  exits CODE at once (a job that can never succeed).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "c10d/bootstrap/init.h"
#include "c10d/core/work.h"
#include "c10d/store/store.h"

namespace {

int readStep(const std::string& dir) {
  std::ifstream in(dir + "/step");
  int step = 0;
  return (in >> step) ? step : 0;
}

// The log line first, then the checkpoint: a worker stopped in between replays the step (logged
// twice), never skips one.
void writeStep(const std::string& dir, int step, int world, const std::string& round) {
  {
    std::ofstream log(dir + "/log", std::ios::app);
    log << "step " << step << " world " << world << " round " << round << "\n";
  }
  const std::string tmp = dir + "/step.tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << step << "\n";
  }
  if (std::rename(tmp.c_str(), (dir + "/step").c_str()) != 0) {
    throw std::runtime_error("rename " + tmp + " failed");
  }
}

int train(int steps, const std::string& dir, int stepMs) {
  const char* roundEnv = std::getenv("C10D_RDZV_ROUND");
  const std::string round = roundEnv != nullptr ? roundEnv : "?";
  c10d::InitOptions io;
  io.timeout = std::chrono::milliseconds(5000);  // a dead peer: an error within 5 s
  auto pg = c10d::init(io);
  const int rank = pg->rank();
  const int world = pg->size();
  std::printf("ready round %s rank %d world %d\n", round.c_str(), rank, world);
  std::fflush(stdout);
  // Every rank starts from the same step: rank 0's checkpoint, broadcast.
  std::vector<int64_t> start = {rank == 0 ? readStep(dir) : 0};
  pg->broadcast(c10d::tensorOf(start.data(), 1), {})->wait();
  for (int step = static_cast<int>(start[0]) + 1; step <= steps; ++step) {
    std::vector<int64_t> v = {rank + 1, step, 1};
    pg->allreduce(c10d::tensorOf(v.data(), v.size()))->wait();
    const int64_t w = world;
    if (v[0] != w * (w + 1) / 2 || v[1] != w * step || v[2] != w) {
      std::fprintf(stderr, "step %d: allreduce gave {%lld, %lld, %lld}, want {%lld, %lld, %lld}\n",
                   step, static_cast<long long>(v[0]), static_cast<long long>(v[1]),
                   static_cast<long long>(v[2]), static_cast<long long>(w * (w + 1) / 2),
                   static_cast<long long>(w * step), static_cast<long long>(w));
      return 2;
    }
    if (rank == 0) writeStep(dir, step, world, round);
    std::this_thread::sleep_for(std::chrono::milliseconds(stepMs));
  }
  pg->barrier()->wait();
  std::printf("finished world %d\n", world);
  std::fflush(stdout);
  // Rank 0 hosts the group's TCPStore: it leaves last.
  if (rank != 0) {
    pg->store()->add("elastic_worker/left", 1);
  } else {
    for (int i = 0; i < 500 && pg->store()->add("elastic_worker/left", 0) < world - 1; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 100;
  const std::string mode = argv[1];
  try {
    if (mode == "train" && argc >= 4) {
      return train(std::atoi(argv[2]), argv[3], argc >= 5 ? std::atoi(argv[4]) : 50);
    }
    if (mode == "fail" && argc >= 3) return std::atoi(argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "elastic_test_worker: %s\n", e.what());
    return 1;
  }
  return 100;
}
