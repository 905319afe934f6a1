// membw: the memory-bandwidth ceiling for same-host collectives on this machine.
//
// Measures streaming bandwidth (read, write, copy, and the f32 sum kernel dst = a + b) over a
// cache-resident and a DRAM-sized buffer, with 1..T threads at once (T ranks on one host share
// one memory system), then states what that allows for the verbs backend's shm allreduce.
//
// Ceiling model (bytes moved per allreduce byte, per rank, for the direct shm algorithm):
//   copy in   read input + write own slot                       2
//   reduce    read 1/n of every rank's slot + write own piece    1 + 1/n
//   copy out  read every piece + write output                    2
//   total     5 + 1/n bytes through the memory hierarchy per byte of message per rank; of that
//   only ~3 (read input, write output + its write-allocate read) must reach DRAM when the staging
//   slots (3 x chunk x n) stay in the last-level cache.
// All n ranks share the machine's bandwidth B, so the time for S bytes is ~ n * k * S / B and
//   busbw = 2(n-1)/n * S / t  ~  2(n-1) * B / (n^2 * k)       (k = 3 cached, 5 + 1/n not);
// an estimate, not a bound: caches absorb part of the traffic and ranks overlap.
//
// Usage: membw [--threads T] [--mib M]   (default T = 2, M = 64)
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

enum class Kernel { kRead, kWrite, kCopy, kSum };
const char* name(Kernel k) {
  switch (k) {
    case Kernel::kRead:
      return "read";
    case Kernel::kWrite:
      return "write";
    case Kernel::kCopy:
      return "copy";
    case Kernel::kSum:
      return "sum f32";
  }
  return "?";
}
// Bytes each kernel moves per element-byte of the buffer.
double bytesPer(Kernel k) {
  switch (k) {
    case Kernel::kRead:
      return 1;
    case Kernel::kWrite:
      return 1;
    case Kernel::kCopy:
      return 2;
    case Kernel::kSum:
      return 3;
  }
  return 1;
}

struct Buffers {
  std::vector<float> a, b, c;
  explicit Buffers(size_t n) : a(n, 1.0f), b(n, 2.0f), c(n, 0.0f) {}
};

volatile float sink;

void runKernel(Kernel k, Buffers& buf) {
  const size_t n = buf.a.size();
  float* __restrict a = buf.a.data();
  float* __restrict b = buf.b.data();
  float* __restrict c = buf.c.data();
  switch (k) {
    case Kernel::kRead: {
      float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
      for (size_t i = 0; i + 3 < n; i += 4) {
        s0 += a[i];
        s1 += a[i + 1];
        s2 += a[i + 2];
        s3 += a[i + 3];
      }
      sink = s0 + s1 + s2 + s3;
      break;
    }
    case Kernel::kWrite:
      std::memset(c, 0, n * sizeof(float));
      break;
    case Kernel::kCopy:
      std::memcpy(c, a, n * sizeof(float));
      break;
    case Kernel::kSum:
      for (size_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
      break;
  }
}

// Aggregate GB/s of `threads` threads each running kernel k over its own `bytes` buffers.
double measure(Kernel k, int threads, size_t bytes) {
  const size_t n = bytes / sizeof(float);
  std::vector<Buffers*> bufs;
  for (int t = 0; t < threads; ++t) bufs.push_back(new Buffers(n));
  const int reps = static_cast<int>(std::max<size_t>(3, (size_t{256} << 20) / bytes));
  std::atomic<int> ready{0};
  std::vector<double> secs(threads);
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t) {
    ts.emplace_back([&, t] {
      runKernel(k, *bufs[t]);  // warm up (and fault the pages in)
      ready.fetch_add(1);
      while (ready.load() < threads) {
      }
      auto t0 = Clock::now();
      for (int r = 0; r < reps; ++r) runKernel(k, *bufs[t]);
      secs[t] = std::chrono::duration<double>(Clock::now() - t0).count();
    });
  }
  for (auto& t : ts) t.join();
  for (auto* b : bufs) delete b;
  const double slowest = *std::max_element(secs.begin(), secs.end());
  return threads * reps * bytes * bytesPer(k) / slowest / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  int maxThreads = 2;
  size_t mib = 64;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) {
      maxThreads = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--mib" && i + 1 < argc) {
      mib = std::max(1, std::atoi(argv[++i]));
    } else {
      std::printf("usage: membw [--threads T] [--mib M]\n");
      return a == "-h" || a == "--help" ? 0 : 2;
    }
  }
  std::printf("# membw: aggregate GB/s (bytes read + written), %u hardware threads\n",
              std::thread::hardware_concurrency());
  std::printf("# %-8s %8s %8s %10s\n", "kernel", "buffer", "threads", "GB/s");
  double copyDram = 0;
  for (size_t bytes : {size_t{256} << 10, mib << 20}) {
    for (Kernel k : {Kernel::kRead, Kernel::kWrite, Kernel::kCopy, Kernel::kSum}) {
      for (int t = 1; t <= maxThreads; t *= 2) {
        double gbs = measure(k, t, bytes);
        if (k == Kernel::kCopy && bytes == (mib << 20)) copyDram = std::max(copyDram, gbs);
        std::printf("  %-8s %6zuKiB %8d %10.2f\n", name(k), bytes >> 10, t, gbs);
      }
    }
  }
  std::printf("# ceiling for the verbs shm allreduce, from DRAM copy bandwidth B = %.2f GB/s:\n",
              copyDram);
  std::printf("#   busbw ~ 2(n-1) B / (n^2 k); k = 3 (slots cached) .. 5+1/n (not cached)\n");
  for (int n : {2, 4, 8}) {
    const double cached = 2.0 * (n - 1) * copyDram / (n * n * 3.0);
    const double uncached = 2.0 * (n - 1) * copyDram / (n * n * (5.0 + 1.0 / n));
    std::printf("#   n=%d: %.2f GB/s (cached slots) .. %.2f GB/s (uncached)\n", n, cached,
                uncached);
  }
  return 0;
}
