// store_perf: store rendezvous scaling. For each N in --clients, one store server and N clients
// (threads here, or --procs processes each running a share of the threads) do what a job start
// does: every client add("arrived", 1); the last arriver sets
// "barrier"; every client waits on "barrier". Then, after a second such barrier, each client runs
// --ops add/get requests. One line per N:
//   clients 4096 rendezvous_ms 850 ops_per_s 120000
// rendezvous_ms: from before the first client is created until the last client returned from its
// wait (connects included). ops_per_s: all clients' add/get requests over the span from the first
// client leaving the second barrier to the last one finishing. Times come from CLOCK_MONOTONIC,
// which is shared by the processes.
//
// --store tcp (default): a TCPStoreServer in this process, TCPStore clients. --store URL: clients
// of that store (etcd://HOST:PORT/PREFIX, redis://HOST:PORT/PREFIX: a server someone started),
// made through the store registry; each N runs under its own prefix (PREFIX-N-PID), so counters
// start from zero. Those servers are separate processes, so their CPU is not in this process's.
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "base/error.h"
#include "base/socket.h"
#include "base/thread_annotations.h"
#include "store/store_registry.h"
#include "store/tcp/tcp_store.h"

namespace {

using namespace c10d;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Config {
  uint16_t port = 0;  // TCPStore
  std::string url;    // any other store: its URL (with this run's prefix)
  int total = 0;      // clients in the whole run (all processes)
  int ops = 0;
  Milliseconds timeout{120000};
};

// Timestamps gathered from a group of clients (one process).
struct Result {
  int64_t rendezvousEnd = 0;     // max over clients
  int64_t opsStart = INT64_MAX;  // min over clients
  int64_t opsEnd = 0;            // max over clients
  int64_t failures = 0;
};

struct Shared {
  Config cfg;
  Mutex mu;
  Result result C10D_GUARDED_BY(mu);
  std::string firstError C10D_GUARDED_BY(mu);
};

// The combined result once every client thread has been joined, reporting the first error.
// Unchecked: reads `shared` without the lock, which is safe because no client thread is left.
Result joinedResult(const Shared& shared) C10D_NO_THREAD_SAFETY_ANALYSIS {
  if (!shared.firstError.empty()) {
    std::fprintf(stderr, "store_perf: %lld clients failed; first error: %s\n",
                 static_cast<long long>(shared.result.failures), shared.firstError.c_str());
  }
  return shared.result;
}

// add(counterKey); the last arriver releases everyone; everyone waits.
void barrier(Store& store, const std::string& name, int total) {
  if (store.add(name + "/arrived", 1) == total) store.set(name + "/go", "1");
  store.wait({name + "/go"});
}

void* clientMain(void* arg) {
  // On a small machine thousands of client threads would starve the server's one thread; in a
  // real job the clients live on other hosts. Raising our own niceness needs no privilege.
  setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10);
  auto* shared = static_cast<Shared*>(arg);
  const Config& cfg = shared->cfg;
  Result mine;
  try {
    std::shared_ptr<Store> client;
    if (cfg.url.empty()) {
      TCPStoreOptions o;
      o.host = "127.0.0.1";
      o.port = cfg.port;
      o.timeout = cfg.timeout;
      client = std::make_shared<TCPStore>(o);
    } else {
      client = createStoreFromUrl(cfg.url, cfg.timeout);
    }
    Store& store = *client;
    barrier(store, "rdv", cfg.total);
    mine.rendezvousEnd = nowNs();
    barrier(store, "ops", cfg.total);
    mine.opsStart = nowNs();
    static std::atomic<int> nextClient{0};
    const std::string key = "ops/" + std::to_string(getpid()) + "/" + std::to_string(nextClient++);
    for (int i = 0; i < cfg.ops; ++i) {
      if (i % 2 == 0) {
        store.add(key, 1);
      } else {
        store.get(key);
      }
    }
    mine.opsEnd = nowNs();
  } catch (const std::exception& e) {
    MutexLock lock(shared->mu);
    if (shared->firstError.empty()) shared->firstError = e.what();
    ++shared->result.failures;
    return nullptr;
  }
  MutexLock lock(shared->mu);
  Result& r = shared->result;
  r.rendezvousEnd = std::max(r.rendezvousEnd, mine.rendezvousEnd);
  r.opsStart = std::min(r.opsStart, mine.opsStart);
  r.opsEnd = std::max(r.opsEnd, mine.opsEnd);
  return nullptr;
}

// Runs `count` client threads with small stacks; returns their combined result.
Result runClients(const Config& cfg, int count) {
  Shared shared;
  shared.cfg = cfg;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  std::vector<pthread_t> threads;
  threads.reserve(count);
  for (int i = 0; i < count; ++i) {
    pthread_t t;
    int rc = pthread_create(&t, &attr, clientMain, &shared);
    if (rc != 0) {
      std::fprintf(stderr, "store_perf: pthread_create failed for client %d: %s\n", i,
                   detail::errnoString(rc).c_str());
      MutexLock lock(shared.mu);
      ++shared.result.failures;
      continue;
    }
    threads.push_back(t);
  }
  pthread_attr_destroy(&attr);
  for (pthread_t t : threads) pthread_join(t, nullptr);
  return joinedResult(shared);
}

// Forks `procs` processes that each run their share of the clients; combines their results.
Result runProcesses(const Config& cfg, int procs) {
  struct Child {
    pid_t pid;
    int readFd;
  };
  std::vector<Child> children;
  std::fflush(stdout);
  std::fflush(stderr);
  for (int p = 0; p < procs; ++p) {
    const int count = cfg.total / procs + (p < cfg.total % procs ? 1 : 0);
    int fds[2];
    if (pipe(fds) != 0) {
      std::perror("store_perf: pipe");
      break;
    }
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      Result r = runClients(cfg, count);
      ssize_t n = write(fds[1], &r, sizeof(r));
      _exit(n == static_cast<ssize_t>(sizeof(r)) ? 0
                                                 : 1);  // no destructors: the server is not ours
    }
    close(fds[1]);
    if (pid < 0) {
      std::perror("store_perf: fork");
      close(fds[0]);
      break;
    }
    children.push_back({pid, fds[0]});
  }
  Result total;
  total.failures = cfg.total;
  if (static_cast<int>(children.size()) == procs) total.failures = 0;
  for (const Child& c : children) {
    Result r;
    if (read(c.readFd, &r, sizeof(r)) != static_cast<ssize_t>(sizeof(r))) r.failures = 1;
    close(c.readFd);
    int status = 0;
    waitpid(c.pid, &status, 0);
    total.rendezvousEnd = std::max(total.rendezvousEnd, r.rendezvousEnd);
    total.opsStart = std::min(total.opsStart, r.opsStart);
    total.opsEnd = std::max(total.opsEnd, r.opsEnd);
    total.failures += r.failures;
  }
  return total;
}

// `url` with "-SUFFIX" appended to its path (the store's prefix), before any query.
std::string withPrefixSuffix(const std::string& url, const std::string& suffix) {
  const size_t q = url.find('?');
  const std::string base = url.substr(0, q);
  const std::string query = q == std::string::npos ? "" : url.substr(q);
  const size_t path = base.find('/', base.find("://") + 3);
  return (path == std::string::npos ? base + "/perf" : base) + "-" + suffix + query;
}

std::vector<int> parseList(const std::string& s) {
  std::vector<int> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) out.push_back(std::stoi(item));
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Store rendezvous scaling: N clients add, then wait on a barrier key"};
  std::string storeUrl = "tcp";
  std::string clientList = "256,512,1024,2048,4096";
  int ops = 50;
  int procs = 1;
  int timeoutS = 120;
  app.add_option("--clients", clientList, "comma-separated client counts")->capture_default_str();
  app.add_option("--ops", ops, "add/get requests per client in the ops phase")
      ->capture_default_str();
  app.add_option("--procs", procs, "client processes (each runs a share of the client threads)")
      ->capture_default_str();
  app.add_option("--timeout", timeoutS, "store timeout in seconds")->capture_default_str();
  app.add_option("--store", storeUrl,
                 "tcp (an in-process TCPStoreServer) or a store URL (etcd://HOST:PORT/PREFIX, "
                 "redis://HOST:PORT/PREFIX)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  const uint64_t fdLimit = c10d::net::raiseFdLimit();
  const std::vector<int> counts = parseList(clientList);
  for (int n : counts) {
    if (procs <= 1 && fdLimit < static_cast<uint64_t>(2 * n + 64)) {
      std::fprintf(stderr,
                   "store_perf: %d clients need about %d file descriptors; the limit is %llu\n", n,
                   2 * n + 64, static_cast<unsigned long long>(fdLimit));
      return 1;
    }
  }
  int failed = 0;
  for (int n : counts) {
    std::unique_ptr<c10d::TCPStoreServer> server;
    Config cfg;
    if (storeUrl == "tcp") {
      server = std::make_unique<c10d::TCPStoreServer>("", 0);
      cfg.port = server->port();
    } else {
      cfg.url = withPrefixSuffix(storeUrl, std::to_string(n) + "-" + std::to_string(getpid()));
    }
    cfg.total = n;
    cfg.ops = ops;
    cfg.timeout = c10d::Milliseconds(timeoutS * 1000);
    const int64_t start = nowNs();
    Result r = procs > 1 ? runProcesses(cfg, std::min(procs, n)) : runClients(cfg, n);
    if (r.failures > 0) {
      std::fprintf(stderr, "store_perf: %lld of %d clients failed\n",
                   static_cast<long long>(r.failures), n);
      ++failed;
      continue;
    }
    const double rdvMs = static_cast<double>(r.rendezvousEnd - start) / 1e6;
    const double opsSpan = static_cast<double>(r.opsEnd - r.opsStart) / 1e9;
    const double opsPerS = opsSpan > 0 ? static_cast<double>(n) * ops / opsSpan : 0;
    std::printf("clients %d rendezvous_ms %.0f ops_per_s %.0f\n", n, rdvMs, opsPerS);
    std::fflush(stdout);
  }
  return failed == 0 ? 0 : 1;
}
