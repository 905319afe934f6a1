#include "tools/c10drun/options.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>

#include "c10d/base/abi.h"
#include "c10d/base/settings.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace run {
namespace {

constexpr const char* kDescription =
    "c10drun: launch PROGRAM as N local worker processes of a c10d job (torchrun's habits).";

constexpr const char* kFooter = R"(Each worker gets in its environment:
  RANK              node_rank * nproc_per_node + local_rank
  LOCAL_RANK        0 .. nproc_per_node-1
  WORLD_SIZE        nnodes * nproc_per_node
  LOCAL_WORLD_SIZE  nproc_per_node
  GROUP_RANK        node_rank (also GROUP_WORLD_SIZE = nnodes, ROLE_RANK, ROLE_WORLD_SIZE)
  MASTER_ADDR       --master-addr (default 127.0.0.1)
  MASTER_PORT       --master-port; on one node without it, a free port picked by the launcher
                    (a fresh one for each restart)
  C10D_RESTART_COUNT, TORCHELASTIC_RESTART_COUNT   0 for the first attempt, 1, 2, ... after restarts
  TORCHELASTIC_MAX_RESTARTS  --max-restarts
  OMP_NUM_THREADS   1 when nproc_per_node > 1 and it is not already set
  C10D_STORE_SECRET the TCPStore's shared secret: passed through when set (empty: no
                    authentication); else, on one node, a fresh random one per job. Multi-node
                    jobs must set the same one on every node.
Worker stdin is /dev/null. Each line a worker writes is prefixed with "[rank<RANK>]: " (stdout to
stdout, stderr to stderr); a last line without newline is completed at exit.

When a worker exits non-zero or is killed by a signal, the launcher names it, sends SIGTERM to the
others (to their process groups), SIGKILL after --grace-period-s, and then either restarts the whole
local group (up to --max-restarts times) or exits with the failed worker's exit code (1 if it was
killed by a signal). SIGINT/SIGTERM/SIGHUP/SIGQUIT sent to the launcher are forwarded to every
worker (a second one sends SIGKILL at once); the launcher then exits with 128+signal. Workers die
with the launcher even if it is SIGKILLed (PR_SET_PDEATHSIG).

Multi-node (static rendezvous, as torchrun --rdzv-backend=static): run one launcher per node with
the same --nnodes, --master-addr and --master-port and a distinct --node-rank. Restarts are local:
a launcher restarts only its own workers, so peers on other nodes must fail and restart too (e.g.
through their own launcher after a communication error).

Elastic (dynamic rendezvous, as torchrun --rdzv-backend c10d): run the same command on every node,
  c10drun --rdzv-backend c10d --rdzv-endpoint HOST:PORT --rdzv-id JOB --nnodes MIN:MAX ...
Nodes join rounds through a TCPStore at the endpoint, hosted by the launcher on that host (which
must outlive the job). A round closes at MAX nodes, or at >= MIN after last_call_timeout; node
ranks follow the nodes' addresses (--local-addr). A failed worker, a node whose heartbeat stops,
or a node waiting to join ends the round: all launchers stop their workers and re-join, and the
job goes on with the new size (>= MIN). Failures count against --max-restarts; workers get
TORCHELASTIC_RESTART_COUNT, TORCHELASTIC_RUN_ID and C10D_RDZV_ROUND, and a fresh MASTER_PORT on
group rank 0's node every round. --rdzv-conf (seconds): join_timeout=600, last_call_timeout=30,
close_timeout=30, keep_alive_interval=5, keep_alive_max_attempt=3, read_timeout=60, is_host.

Exit codes: 0 all workers succeeded; the failed worker's code (or 1); 2 bad usage or PROGRAM
cannot be executed; 128+signal when the launcher was signalled.)";

// Parses a positive count: an integer, or (for --nproc-per-node) cpu / gpu / auto as torchrun.
int countGpus() {
  int n = 0;
  DIR* dir = opendir("/dev");
  if (dir == nullptr) return 0;
  while (dirent* e = readdir(dir)) {
    const char* name = e->d_name;
    if (std::strncmp(name, "nvidia", 6) != 0 || name[6] == '\0') continue;
    bool digits = true;
    for (const char* p = name + 6; *p; ++p) digits = digits && *p >= '0' && *p <= '9';
    n += digits ? 1 : 0;
  }
  closedir(dir);
  return n;
}

int parseInt(const std::string& opt, const std::string& text) {
  long long v = 0;
  if (!parseInteger(text, INT32_MIN, INT32_MAX, &v)) {
    throw UsageError(opt + ": not an integer: '" + text + "'");
  }
  return static_cast<int>(v);
}

int parseNproc(const std::string& text) {
  if (text == "cpu") return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (text == "gpu") {
    int gpus = countGpus();
    if (gpus == 0) throw UsageError("--nproc-per-node gpu: no GPU found (/dev/nvidia<N>)");
    return gpus;
  }
  if (text == "auto") {
    int gpus = countGpus();
    return gpus > 0 ? gpus : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  return parseInt("--nproc-per-node", text);
}

// --nnodes N or MIN:MAX (torchrun's spelling; a static job needs MIN == MAX).
std::pair<int, int> parseNnodes(const std::string& text) {
  auto colon = text.find(':');
  if (colon == std::string::npos) {
    int n = parseInt("--nnodes", text);
    return {n, n};
  }
  return {parseInt("--nnodes", text.substr(0, colon)),
          parseInt("--nnodes", text.substr(colon + 1))};
}

bool parseBool(const std::string& key, const std::string& v) {
  if (v == "1" || v == "true" || v == "True" || v == "yes") return true;
  if (v == "0" || v == "false" || v == "False" || v == "no") return false;
  throw UsageError("--rdzv-conf " + key + "=" + v + ": not a boolean (true/false/1/0)");
}

std::chrono::milliseconds parseSeconds(const std::string& key, const std::string& v) {
  errno = 0;
  char* end = nullptr;
  double s = std::strtod(v.c_str(), &end);
  if (v.empty() || *end != '\0' || errno == ERANGE || !(s > 0) || s > 7 * 24 * 3600) {
    throw UsageError("--rdzv-conf " + key + "=" + v + ": not a number of seconds in (0, 604800]");
  }
  return std::chrono::milliseconds(std::max<long long>(1, std::llround(s * 1000)));
}

// "join_timeout=60,last_call_timeout=5": torchrun's keys (timeouts in seconds), plus
// close_timeout, keep_alive_interval, keep_alive_max_attempt, read_timeout and is_host.
RendezvousConf parseRdzvConf(const std::string& text) {
  RendezvousConf c;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) throw UsageError("--rdzv-conf: '" + item + "' is not key=value");
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    if (key == "join_timeout" || key == "timeout") {
      c.joinTimeout = parseSeconds(key, value);
    } else if (key == "last_call_timeout") {
      c.lastCallTimeout = parseSeconds(key, value);
    } else if (key == "close_timeout") {
      c.closeTimeout = parseSeconds(key, value);
    } else if (key == "keep_alive_interval") {
      c.keepAliveInterval = parseSeconds(key, value);
    } else if (key == "read_timeout") {
      c.readTimeout = parseSeconds(key, value);
    } else if (key == "keep_alive_max_attempt") {
      c.keepAliveMaxAttempt = parseInt("--rdzv-conf keep_alive_max_attempt", value);
      if (c.keepAliveMaxAttempt < 1 || c.keepAliveMaxAttempt > 1000) {
        throw UsageError("--rdzv-conf keep_alive_max_attempt must be in [1, 1000] (got " + value +
                         ")");
      }
    } else if (key == "is_host") {
      c.isHost = parseBool(key, value);
    } else {
      throw UsageError("--rdzv-conf: unknown key '" + key +
                       "' (known: join_timeout, last_call_timeout, close_timeout, "
                       "keep_alive_interval, keep_alive_max_attempt, read_timeout, is_host)");
    }
  }
  return c;
}

struct RawOptions {
  std::string nproc = "1";
  std::string nnodes = "1";
  int nodeRank = 0;
  std::string masterAddr = "127.0.0.1";
  int masterPort = 0;
  bool masterPortGiven = false;
  bool standalone = false;
  int maxRestarts = 0;
  int monitorIntervalMs = 100;
  double gracePeriodS = 5.0;
  std::string rdzvBackend = "static";
  std::string rdzvEndpoint;
  std::string rdzvId = "none";
  std::string rdzvConf;
  std::string localAddr;
};

void buildApp(CLI::App& app, RawOptions& raw) {
  app.description(kDescription);
  app.footer(kFooter);
  app.prefix_command();  // stop at PROGRAM; the rest is PROGRAM's
  app.add_option("--nproc-per-node,--nproc_per_node", raw.nproc,
                 "Workers on this node: a number, or cpu, gpu, auto (default 1)")
      ->type_name("N");
  app.add_option("--nnodes", raw.nnodes,
                 "Nodes in the job (default 1); MIN:MAX with a dynamic --rdzv-backend")
      ->type_name("M");
  app.add_option("--node-rank,--node_rank", raw.nodeRank, "This node's rank in [0, nnodes)")
      ->type_name("K");
  app.add_option("--master-addr,--master_addr", raw.masterAddr,
                 "Address of rank 0's node (default 127.0.0.1)")
      ->type_name("ADDR");
  app.add_option("--master-port,--master_port", raw.masterPort,
                 "Port on the master (required with --nnodes > 1; default: a free port)")
      ->type_name("PORT");
  app.add_flag("--standalone", raw.standalone, "Single-node job on a free port (as torchrun)");
  app.add_option("--max-restarts,--max_restarts", raw.maxRestarts,
                 "Restarts after a failure (default 0): of the local group; elastic: of the job")
      ->type_name("R");
  app.add_option("--rdzv-backend,--rdzv_backend", raw.rdzvBackend,
                 "static (default), c10d (a TCPStore at --rdzv-endpoint) or etcd")
      ->type_name("NAME");
  app.add_option("--rdzv-endpoint,--rdzv_endpoint", raw.rdzvEndpoint,
                 "HOST[:PORT] of the rendezvous store (c10d: port 29400 by default)")
      ->type_name("HOST:PORT");
  app.add_option("--rdzv-id,--rdzv_id", raw.rdzvId,
                 "Job id: launchers with the same id rendezvous together (default none)")
      ->type_name("ID");
  app.add_option("--rdzv-conf,--rdzv_conf", raw.rdzvConf,
                 "key=value,... join_timeout, last_call_timeout, close_timeout, "
                 "keep_alive_interval (s), keep_alive_max_attempt, read_timeout, is_host")
      ->type_name("CONF");
  app.add_option("--local-addr,--local_addr", raw.localAddr,
                 "This node's address as the other nodes reach it (default: host name)")
      ->type_name("ADDR");
  app.add_option("--monitor-interval-ms,--monitor_interval_ms", raw.monitorIntervalMs,
                 "Worker poll period in ms (default 100)")
      ->type_name("MS");
  app.add_option("--grace-period-s,--grace_period_s", raw.gracePeriodS,
                 "Seconds between SIGTERM and SIGKILL when stopping workers (default 5)")
      ->type_name("S");
}

Options validate(const RawOptions& raw, const CLI::App& app, std::vector<std::string> rest) {
  Options o;
  o.nprocPerNode = parseNproc(raw.nproc);
  if (o.nprocPerNode < 1) {
    throw UsageError("--nproc-per-node must be >= 1 (got " + raw.nproc + ")");
  }
  auto [minNodes, maxNodes] = parseNnodes(raw.nnodes);
  if (minNodes < 1 || maxNodes < minNodes) {
    throw UsageError("--nnodes " + raw.nnodes + ": need 1 <= MIN <= MAX");
  }
  o.rdzvBackend = raw.rdzvBackend;
  if (o.rdzvBackend != "static" && o.rdzvBackend != "c10d" && o.rdzvBackend != "etcd") {
    throw UsageError("--rdzv-backend '" + o.rdzvBackend + "' is not one of static, c10d, etcd");
  }
  if (!o.elastic() && minNodes != maxNodes) {
    throw UsageError("--nnodes " + raw.nnodes +
                     ": a node range needs a dynamic rendezvous (--rdzv-backend c10d or etcd)");
  }
  o.minNodes = minNodes;
  o.nnodes = maxNodes;
  if (o.elastic()) {
    o.rdzvEndpoint = raw.rdzvEndpoint;
    if (o.rdzvEndpoint.empty()) {
      throw UsageError("--rdzv-backend " + o.rdzvBackend + " needs --rdzv-endpoint HOST[:PORT]");
    }
    o.rdzvId = raw.rdzvId;
    if (o.rdzvId.empty() || o.rdzvId.find('/') != std::string::npos) {
      throw UsageError("--rdzv-id must be a non-empty name without '/' (got '" + o.rdzvId + "')");
    }
    o.rdzvConf = parseRdzvConf(raw.rdzvConf);
    for (const char* opt : {"--node-rank", "--master-addr", "--master-port", "--standalone"}) {
      if (app.count(opt) > 0) {
        throw UsageError(std::string(opt) + " does not go with --rdzv-backend " + o.rdzvBackend +
                         ": the rendezvous assigns node ranks and the master of each round");
      }
    }
  } else {
    for (const char* opt : {"--rdzv-endpoint", "--rdzv-id", "--rdzv-conf"}) {
      if (app.count(opt) > 0) {
        throw UsageError(std::string(opt) +
                         " needs a dynamic rendezvous (--rdzv-backend c10d or etcd)");
      }
    }
  }
  o.localAddr = raw.localAddr;
  o.nodeRank = raw.nodeRank;
  if (o.nodeRank < 0 || o.nodeRank >= o.nnodes) {
    throw UsageError("--node-rank " + std::to_string(o.nodeRank) + " is out of range [0, " +
                     std::to_string(o.nnodes) + ") for --nnodes " + std::to_string(o.nnodes));
  }
  if (static_cast<long long>(o.nnodes) * o.nprocPerNode > INT32_MAX) {
    throw UsageError("world size nnodes * nproc-per-node is too large");
  }
  o.masterAddr = raw.masterAddr;
  if (o.masterAddr.empty()) throw UsageError("--master-addr must not be empty");
  bool portGiven = app.count("--master-port") > 0 && !raw.standalone;
  if (portGiven && (raw.masterPort < 1 || raw.masterPort > 65535)) {
    throw UsageError("--master-port must be in [1, 65535] (got " + std::to_string(raw.masterPort) +
                     ")");
  }
  o.masterPort = portGiven ? raw.masterPort : 0;
  if (o.nnodes > 1 && o.masterPort == 0 && !o.elastic()) {
    throw UsageError("--master-port is required with --nnodes " + std::to_string(o.nnodes) +
                     " (every node must rendezvous on the same MASTER_ADDR:MASTER_PORT)");
  }
  o.maxRestarts = raw.maxRestarts;
  if (o.maxRestarts < 0) {
    throw UsageError("--max-restarts must be >= 0 (got " + std::to_string(o.maxRestarts) + ")");
  }
  o.monitorIntervalMs = raw.monitorIntervalMs;
  if (o.monitorIntervalMs < 1 || o.monitorIntervalMs > 60000) {
    throw UsageError("--monitor-interval-ms must be in [1, 60000] (got " +
                     std::to_string(o.monitorIntervalMs) + ")");
  }
  o.gracePeriodS = raw.gracePeriodS;
  if (!(o.gracePeriodS >= 0 && o.gracePeriodS <= 3600)) {
    throw UsageError("--grace-period-s must be in [0, 3600] (got " +
                     std::to_string(o.gracePeriodS) + ")");
  }

  if (!rest.empty() && rest.front() == "--") {
    rest.erase(rest.begin());
  } else if (!rest.empty() && rest.front().size() > 1 && rest.front()[0] == '-') {
    throw UsageError("unknown option '" + rest.front() +
                     "' (use -- before a PROGRAM that starts "
                     "with '-')");
  }
  if (rest.empty()) throw UsageError("missing PROGRAM to run");
  o.program = rest.front();
  o.args.assign(rest.begin() + 1, rest.end());
  o.programPath = resolveProgram(o.program);
  return o;
}

// Checks that `path` is an executable regular file; returns 0 or the errno execve would give.
int checkExecutable(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return errno;
  if (S_ISDIR(st.st_mode)) return EISDIR;
  if (access(path.c_str(), X_OK) != 0) return errno;
  return 0;
}

}  // namespace

std::string resolveProgram(const std::string& program) {
  if (program.empty()) throw UsageError("cannot execute '': empty PROGRAM");
  int err = ENOENT;
  if (program.find('/') != std::string::npos) {
    err = checkExecutable(program);
    if (err == 0) return program;
  } else {
    const char* pathEnv = std::getenv("PATH");
    std::string path = pathEnv != nullptr ? pathEnv : "/usr/local/bin:/usr/bin:/bin";
    size_t start = 0;
    // As execvp: the first executable match wins; EACCES is reported only if nothing matched.
    while (start <= path.size()) {
      size_t end = path.find(':', start);
      if (end == std::string::npos) end = path.size();
      std::string dir = path.substr(start, end - start);
      std::string candidate = (dir.empty() ? std::string(".") : dir) + "/" + program;
      int e = checkExecutable(candidate);
      if (e == 0) return candidate;
      if (e == EACCES) err = EACCES;
      start = end + 1;
    }
  }
  throw UsageError("cannot execute '" + program + "': " + detail::errnoString(err));
}

std::string usageText() {
  RawOptions raw;
  CLI::App app{kDescription, "c10drun"};
  buildApp(app, raw);
  std::string text = app.help();
  // CLI11 2.1 cannot name the pass-through part; replace its usage line with ours.
  const std::string cliUsage = "Usage: c10drun [OPTIONS]";
  auto at = text.find(cliUsage);
  if (at != std::string::npos) {
    text.replace(at, cliUsage.size(), "Usage: c10drun [OPTIONS] [--] PROGRAM [ARGS...]");
  }
  return text;
}

ParseResult parseOptions(int argc, const char* const* argv) {
  ParseResult result;
  RawOptions raw;
  CLI::App app{kDescription, "c10drun"};
  buildApp(app, raw);
  try {
    app.parse(argc, argv);
    result.options = validate(raw, app, app.remaining());
    result.run = true;
  } catch (const CLI::CallForHelp&) {
    std::cout << usageText() << std::flush;
    result.exitCode = 0;
  } catch (const CLI::ParseError& e) {
    std::cerr << "c10drun: " << e.what() << "\nRun 'c10drun --help' for usage.\n";
    result.exitCode = kUsageExitCode;
  } catch (const UsageError& e) {
    std::cerr << "c10drun: " << e.what() << "\n";
    if (std::string(e.what()).rfind("cannot execute", 0) != 0) {
      std::cerr << "Run 'c10drun --help' for usage.\n";
    }
    result.exitCode = kUsageExitCode;
  }
  return result;
}

}  // namespace run
C10D_NAMESPACE_END
}  // namespace c10d
