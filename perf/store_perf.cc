// store_perf: store rendezvous scaling. For each N in --clients, one store server and N clients
// (real TCPStore objects, in --procs client processes, each driving its share with --threads
// threads) do what a job start does: every client add("arrived", 1); the last arriver sets
// "barrier"; every client waits on "barrier". Then, after a second such barrier, each client runs
// --ops add/get requests. One line per N:
//   clients 4096 rendezvous_ms 850 ops_per_s 120000 server_rss_kib_per_client 3.1
// rendezvous_ms: from before the first client is created until the last client returned from its
// wait (connects included). ops_per_s: all clients' add/get requests over the span from the first
// client leaving the second barrier to the last one finishing. Times come from CLOCK_MONOTONIC,
// which is shared by the processes. server_rss_kib_per_client: the server process's peak RSS
// (VmHWM, reset before each N) above its RSS before the clients, per client; the server's user
// memory only (socket buffers are kernel memory); printed with --procs > 1, where no client
// lives in the server's process.
//
// A thread drives its clients in turn (connect + add for each, then wait for each): N clients need
// not be N threads, which a host's pid_max (often 32,768) would not allow at 100K. Only a thread's
// first wait parks on the server; its other clients find the key already set.
//
// --store tcp (default): a TCPStoreServer in this process, TCPStore clients, their connections
// spread over --sources loopback source addresses (127.0.0.1, .2, ...: each has its own range of
// ephemeral ports, which one address runs out of near 28K connections to one server). --store URL:
// clients of that store (etcd://HOST:PORT/PREFIX, redis://HOST:PORT/PREFIX: a server someone
// started), made through the store registry; each N runs under its own prefix (PREFIX-N-PID), so
// counters start from zero. Those servers are separate processes, so their CPU is not in this
// process's. Their client libraries choose no source address, so for a URL on 127.0.0.1 --sources
// spreads the destination instead (127.0.0.1 .. 127.0.0.<sources>; the server must listen there):
// the same relief for the kernel's port search.
//
// Limits: the tool raises its soft RLIMIT_NOFILE to the hard limit, and refuses to start (saying
// what to change) when the hard limit, pid_max or the ports are too few for the run. It notes
// when the kernel dropped connections from a full listen queue (net.core.somaxconn,
// net.ipv4.tcp_max_syn_backlog): those clients wait a SYN retransmission (1 s or more).
#include <malloc.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "c10d/base/error.h"
#include "c10d/base/socket.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/store/store_registry.h"
#include "c10d/store/tcp/tcp_store.h"

namespace {

using namespace c10d;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

struct Config {
  uint16_t port = 0;  // TCPStore
  int sources = 1;    // loopback source (TCPStore) or destination (URL) addresses 127.0.0.1..N
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

// One thread's clients: global indices [first, first + count).
struct Batch {
  Shared* shared = nullptr;
  int first = 0;
  int count = 0;
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

// The source address of client `index`: the clients take the addresses in turn.
std::string sourceAddress(int index, int sources) {
  return "127.0.0." + std::to_string(1 + index % sources);
}

// `url` with its host 127.0.0.1 replaced by client `index`'s loopback address.
std::string spreadUrl(const std::string& url, int index, int sources) {
  const std::string host = "://127.0.0.1:";
  const size_t at = url.find(host);
  if (sources <= 1 || at == std::string::npos) return url;
  return url.substr(0, at) + "://" + sourceAddress(index, sources) + ":" +
         url.substr(at + host.size());
}

// add(counterKey); the last arriver releases everyone. Waiting is separate (see waitAll).
void arrive(Store& store, const std::string& name, int total) {
  if (store.add(name + "/arrived", 1) == total) store.set(name + "/go", "1");
}

void waitAll(const std::vector<std::shared_ptr<Store>>& clients, const std::string& name) {
  for (const auto& c : clients) c->wait({name + "/go"});
}

void* clientMain(void* arg) {
  // On a small machine the client threads would starve the server's one thread; in a real job
  // the clients live on other hosts. Raising our own niceness needs no privilege.
  setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10);
  const auto* batch = static_cast<const Batch*>(arg);
  Shared* shared = batch->shared;
  const Config& cfg = shared->cfg;
  Result mine;
  try {
    std::vector<std::shared_ptr<Store>> clients;
    clients.reserve(static_cast<size_t>(batch->count));
    for (int i = 0; i < batch->count; ++i) {
      if (cfg.url.empty()) {
        TCPStoreOptions o;
        o.host = "127.0.0.1";
        o.port = cfg.port;
        o.timeout = cfg.timeout;
        if (cfg.sources > 1) o.sourceAddress = sourceAddress(batch->first + i, cfg.sources);
        clients.push_back(std::make_shared<TCPStore>(o));
      } else {
        clients.push_back(
            createStoreFromUrl(spreadUrl(cfg.url, batch->first + i, cfg.sources), cfg.timeout));
      }
      arrive(*clients.back(), "rdv", cfg.total);
    }
    waitAll(clients, "rdv");
    mine.rendezvousEnd = nowNs();
    for (const auto& c : clients) arrive(*c, "ops", cfg.total);
    waitAll(clients, "ops");
    mine.opsStart = nowNs();
    for (int c = 0; c < batch->count; ++c) {
      Store& store = *clients[static_cast<size_t>(c)];
      const std::string key =
          "ops/" + std::to_string(getpid()) + "/" + std::to_string(batch->first + c);
      for (int i = 0; i < cfg.ops; ++i) {
        if (i % 2 == 0) {
          store.add(key, 1);
        } else {
          store.get(key);
        }
      }
    }
    mine.opsEnd = nowNs();
  } catch (const std::exception& e) {
    MutexLock lock(shared->mu);
    if (shared->firstError.empty()) shared->firstError = e.what();
    shared->result.failures += batch->count;
    return nullptr;
  }
  MutexLock lock(shared->mu);
  Result& r = shared->result;
  r.rendezvousEnd = std::max(r.rendezvousEnd, mine.rendezvousEnd);
  r.opsStart = std::min(r.opsStart, mine.opsStart);
  r.opsEnd = std::max(r.opsEnd, mine.opsEnd);
  return nullptr;
}

// Runs clients [first, first + count) on at most `threads` threads with small stacks; returns
// their combined result.
Result runClients(const Config& cfg, int first, int count, int threads) {
  Shared shared;
  shared.cfg = cfg;
  threads = std::max(1, std::min(threads, count));
  std::vector<Batch> batches(static_cast<size_t>(threads));
  for (int t = 0, next = first; t < threads; ++t) {
    const int n = count / threads + (t < count % threads ? 1 : 0);
    batches[static_cast<size_t>(t)] = {&shared, next, n};
    next += n;
  }
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, 256 * 1024);
  std::vector<pthread_t> running;
  running.reserve(batches.size());
  for (Batch& b : batches) {
    pthread_t t;
    int rc = pthread_create(&t, &attr, clientMain, &b);
    if (rc != 0) {
      std::fprintf(stderr, "store_perf: pthread_create failed for clients %d-%d: %s\n", b.first,
                   b.first + b.count - 1, detail::errnoString(rc).c_str());
      MutexLock lock(shared.mu);
      shared.result.failures += b.count;
      continue;
    }
    running.push_back(t);
  }
  pthread_attr_destroy(&attr);
  for (pthread_t t : running) pthread_join(t, nullptr);
  return joinedResult(shared);
}

// The clients of process p of `procs`: [*first, *first + *count).
void shareOf(int total, int procs, int p, int* first, int* count) {
  *count = total / procs + (p < total % procs ? 1 : 0);
  *first = p * (total / procs) + std::min(p, total % procs);
}

// Forks `procs` processes that each run their share of the clients; combines their results.
Result runProcesses(const Config& cfg, int procs, int threads) {
  struct Child {
    pid_t pid;
    int readFd;
  };
  std::vector<Child> children;
  std::fflush(stdout);
  std::fflush(stderr);
  // Every child is forked before any client starts: a fork while the server thread serves the
  // first children's clients could hand a child a library lock held at that instant.
  int gate[2];
  if (pipe(gate) != 0) {
    std::perror("store_perf: pipe");
    Result none;
    none.failures = cfg.total;
    return none;
  }
  for (int p = 0; p < procs; ++p) {
    int first = 0, count = 0;
    shareOf(cfg.total, procs, p, &first, &count);
    int fds[2];
    if (pipe(fds) != 0) {
      std::perror("store_perf: pipe");
      break;
    }
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[0]);
      close(gate[1]);
      char go;
      if (read(gate[0], &go, 1) != 0) _exit(1);  // EOF: the parent forked every child
      Result r = runClients(cfg, first, count, threads);
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
  close(gate[0]);
  close(gate[1]);
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

// A number from a /proc file (the first field of its first line, or field `index`); -1 if absent.
int64_t procNumber(const char* path, int index = 0) {
  std::ifstream in(path);
  int64_t v = -1;
  for (int i = 0; i <= index && (in >> v); ++i) {
  }
  return in ? v : -1;
}

// A line "Name:  123 kB" of /proc/self/status, in KiB; -1 if absent.
int64_t statusKib(const char* name) {
  std::ifstream in("/proc/self/status");
  const std::string prefix = std::string(name) + ":";
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) return std::atoll(line.c_str() + prefix.size());
  }
  return -1;
}

// TcpExt counter `name` from /proc/net/netstat (header line, then values); -1 if absent.
int64_t tcpExt(const std::string& name) {
  std::ifstream in("/proc/net/netstat");
  std::string names, values;
  while (std::getline(in, names) && std::getline(in, values)) {
    if (names.rfind("TcpExt:", 0) != 0) continue;
    std::istringstream n(names), v(values);
    std::string key, val;
    while (n >> key && v >> val) {
      if (key == name) return std::atoll(val.c_str());
    }
  }
  return -1;
}

// What this run needs of the host, checked before it starts; "" when it fits, else what to do.
struct Plan {
  int total = 0;
  int procs = 1;    // client processes (1: clients are threads of the server's process)
  int threads = 0;  // client threads per process
  int sources = 1;  // loopback source (TCPStore) or destination (URL) addresses
  bool tcp = true;  // an in-process TCPStoreServer
};

std::string checkPlan(const Plan& p, uint64_t fdLimit, uint64_t hardLimit) {
  constexpr int kSpareFds = 64;
  int first = 0, perProc = 0;
  shareOf(p.total, p.procs, 0, &first, &perProc);
  // The server holds one descriptor per client; each client process one per client it runs (two
  // for Redis: a waiting client subscribes on a second connection).
  const int perClient = p.tcp ? 1 : 2;
  const int64_t clientFds = static_cast<int64_t>(perProc) * perClient + kSpareFds;
  const int64_t serverFds = (p.tcp ? p.total : 0) + (p.procs <= 1 ? clientFds : kSpareFds);
  const int64_t needFds = std::max(serverFds, clientFds);
  std::ostringstream why;
  const int64_t low = procNumber("/proc/sys/net/ipv4/ip_local_port_range", 0);
  const int64_t high = procNumber("/proc/sys/net/ipv4/ip_local_port_range", 1);
  const int64_t perSource = (p.total + p.sources - 1) / p.sources;
  if (low > 0 && high >= low && perSource > (high - low + 1) * 9 / 10) {
    why << perSource << " connections from each of " << p.sources
        << " source addresses to one server; net.ipv4.ip_local_port_range (" << low << "-" << high
        << ") leaves " << (high - low + 1) << " ports per address: use --sources "
        << (p.total + (high - low + 1) * 9 / 10 - 1) / ((high - low + 1) * 9 / 10) << " or more";
    return why.str();
  }
  if (static_cast<uint64_t>(needFds) > fdLimit) {
    why << p.total << " clients need " << needFds << " file descriptors in one process ("
        << (serverFds >= clientFds ? "the server's" : "each client process's")
        << "), but the limit is " << fdLimit
        << (fdLimit < hardLimit ? " (raising it to the hard limit failed)" : "")
        << " and the hard limit (ulimit -Hn) is " << hardLimit
        << ", which only a process with CAP_SYS_RESOURCE can raise: start store_perf with a higher"
           " hard limit (as root with that capability `prlimit --nofile=N:N store_perf ...`; "
           "LimitNOFILE=N in a systemd unit; `docker run --ulimit nofile=N:N`), N at least "
        << needFds << " and at most fs.nr_open (" << procNumber("/proc/sys/fs/nr_open") << ")";
    if (serverFds < clientFds) why << ", or use more --procs";
    return why.str();
  }
  const int64_t pidMax = procNumber("/proc/sys/kernel/pid_max");
  const int64_t threads =
      static_cast<int64_t>(p.procs) * std::min(p.threads, std::max(perProc, 1)) + p.procs;
  if (pidMax > 0 && threads + 1024 > pidMax) {
    why << p.procs << " processes of " << p.threads << " threads need " << threads
        << " task ids; kernel.pid_max is " << pidMax << ": use fewer --threads";
    return why.str();
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Store rendezvous scaling: N clients add, then wait on a barrier key"};
  std::string storeUrl = "tcp";
  std::string clientList = "256,512,1024,2048,4096";
  int ops = 50;
  int procs = 1;
  int threads = 256;
  int sources = 0;
  int timeoutS = 120;
  bool planOnly = false;
  app.add_option("--clients", clientList, "comma-separated client counts")->capture_default_str();
  app.add_option("--ops", ops, "add/get requests per client in the ops phase")
      ->capture_default_str();
  app.add_option("--procs", procs, "client processes (each runs a share of the clients)")
      ->capture_default_str();
  app.add_option("--threads", threads,
                 "client threads per process; each drives its share of the process's clients")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--sources", sources,
                 "loopback addresses 127.0.0.1..N the clients' connections come from (TCPStore; "
                 "0: one per 4,096 clients) or go to (a URL on 127.0.0.1; 0: 1)")
      ->check(CLI::Range(0, 254))
      ->capture_default_str();
  app.add_option("--timeout", timeoutS, "store timeout in seconds")->capture_default_str();
  app.add_option("--store", storeUrl,
                 "tcp (an in-process TCPStoreServer) or a store URL (etcd://HOST:PORT/PREFIX, "
                 "redis://HOST:PORT/PREFIX)")
      ->capture_default_str();
  app.add_flag("--plan", planOnly,
               "check that the host's limits allow each run, print the plan, run nothing");
  CLI11_PARSE(app, argc, argv);

  const uint64_t fdLimit = c10d::net::raiseFdLimit();
  rlimit rl{};
  getrlimit(RLIMIT_NOFILE, &rl);
  const std::vector<int> counts = parseList(clientList);
  const bool tcp = storeUrl == "tcp";
  auto sourcesFor = [&](int n) {
    return sources > 0 ? sources : std::min(254, std::max(1, (n + 4095) / 4096));
  };
  for (int n : counts) {
    Plan plan;
    plan.total = n;
    plan.procs = std::max(1, std::min(procs, n));
    plan.threads = threads;
    plan.sources = tcp ? sourcesFor(n) : std::max(1, sources);
    plan.tcp = tcp;
    const std::string why = checkPlan(plan, fdLimit, static_cast<uint64_t>(rl.rlim_max));
    if (!why.empty()) {
      std::fprintf(stderr, "store_perf: %s\n", why.c_str());
      return 1;
    }
    if (planOnly) {
      std::printf("plan: clients %d procs %d threads %d sources %d\n", n, plan.procs, plan.threads,
                  plan.sources);
    }
  }
  if (planOnly) return 0;
  std::printf("# fd limit %" PRIu64 " (hard %" PRIu64 "), somaxconn %" PRId64
              ", tcp_max_syn_backlog %" PRId64 ", %d client processes x %d threads\n",
              fdLimit, static_cast<uint64_t>(rl.rlim_max),
              procNumber("/proc/sys/net/core/somaxconn"),
              procNumber("/proc/sys/net/ipv4/tcp_max_syn_backlog"), procs, threads);
  int failed = 0;
  for (int n : counts) {
    std::unique_ptr<c10d::TCPStoreServer> server;
    Config cfg;
    if (tcp) {
      server = std::make_unique<c10d::TCPStoreServer>("", 0);
      cfg.port = server->port();
      cfg.sources = sourcesFor(n);
    } else {
      cfg.url = withPrefixSuffix(storeUrl, std::to_string(n) + "-" + std::to_string(getpid()));
      cfg.sources = std::max(1, sources);
    }
    cfg.total = n;
    cfg.ops = ops;
    cfg.timeout = c10d::Milliseconds(timeoutS * 1000);
    // Peak RSS from here on (writing 5 to clear_refs resets VmHWM to the current RSS).
    {
      std::ofstream reset("/proc/self/clear_refs");
      reset << "5";
    }
    malloc_trim(0);  // the previous N's freed memory would otherwise be reused unseen
    const int64_t rssBefore = statusKib("VmRSS");
    const int64_t overflowsBefore = tcpExt("ListenOverflows");
    const int64_t start = nowNs();
    const int nprocs = std::min(procs, n);
    Result r = nprocs > 1 ? runProcesses(cfg, nprocs, threads) : runClients(cfg, 0, n, threads);
    const int64_t rssPeak = statusKib("VmHWM");
    const int64_t overflows = tcpExt("ListenOverflows") - overflowsBefore;
    if (r.failures > 0) {
      std::fprintf(stderr, "store_perf: %lld of %d clients failed\n",
                   static_cast<long long>(r.failures), n);
      ++failed;
      continue;
    }
    const double rdvMs = static_cast<double>(r.rendezvousEnd - start) / 1e6;
    const double opsSpan = static_cast<double>(r.opsEnd - r.opsStart) / 1e9;
    const double opsPerS = opsSpan > 0 ? static_cast<double>(n) * ops / opsSpan : 0;
    std::printf("clients %d rendezvous_ms %.0f ops_per_s %.0f", n, rdvMs, opsPerS);
    if (tcp && nprocs > 1 && rssBefore >= 0 && rssPeak >= rssBefore) {
      std::printf(" server_rss_kib_per_client %.2f", static_cast<double>(rssPeak - rssBefore) / n);
    }
    std::printf("\n");
    if (overflows > 0) {
      // Host-wide counters: other programs' listen queues count too.
      std::printf("# %" PRId64
                  " connections dropped by full listen queues during this run (TcpExt "
                  "ListenOverflows; raise net.core.somaxconn / net.ipv4.tcp_max_syn_backlog)\n",
                  overflows);
    }
    std::fflush(stdout);
  }
  return failed == 0 ? 0 : 1;
}
