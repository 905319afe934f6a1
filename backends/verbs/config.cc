#include "backends/verbs/config.h"

#include <cstdlib>
#include <functional>
#include <iomanip>
#include <vector>

#include "backends/verbs/algo_select.h"
#include "c10d/error.h"

namespace c10d {
namespace verbs {

namespace {

struct Setting {
  const char* name;
  const char* description;
  std::function<void(VerbsConfig&, const std::string&)> parse;
  std::function<std::string(const VerbsConfig&)> show;
};

size_t parseSize(const char* name, const std::string& v) {
  char* end = nullptr;
  unsigned long long x = std::strtoull(v.c_str(), &end, 10);
  std::string suffix = end ? end : "";
  if (end == v.c_str()) C10D_THROW(InvalidArgument, name, "='", v, "' is not a size");
  if (suffix == "K" || suffix == "k" || suffix == "KiB")
    x <<= 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB")
    x <<= 20;
  else if (!suffix.empty())
    C10D_THROW(InvalidArgument, name, "='", v, "': unknown suffix");
  return static_cast<size_t>(x);
}

int parseInt(const char* name, const std::string& v) {
  char* end = nullptr;
  long x = std::strtol(v.c_str(), &end, 10);
  if (end == v.c_str() || *end != '\0')
    C10D_THROW(InvalidArgument, name, "='", v, "' is not an integer");
  return static_cast<int>(x);
}

const std::vector<Setting>& table() {
  static const std::vector<Setting> t = {
      {"C10D_TRANSPORT", "auto | shm | tcp | ibverbs: force one transport for every peer",
       [](VerbsConfig& c, const std::string& v) {
         if (v != "auto" && v != "shm" && v != "tcp" && v != "ibverbs")
           C10D_THROW(InvalidArgument, "C10D_TRANSPORT='", v, "': expected auto|shm|tcp|ibverbs");
         c.transport = v;
       },
       [](const VerbsConfig& c) { return c.transport; }},
      {"C10D_ALGO", "algorithm overrides, e.g. allreduce:ring,broadcast:chain",
       [](VerbsConfig& c, const std::string& v) {
         AlgoSelector::parseOverrides(v);  // validates
         c.algo = v;
       },
       [](const VerbsConfig& c) { return c.algo; }},
      {"C10D_HOST_ID",
       "this rank's host identity: ranks with equal ones talk through shm (default: the kernel's "
       "boot id and the hostname)",
       [](VerbsConfig& c, const std::string& v) { c.hostId = v; },
       [](const VerbsConfig& c) { return c.hostId; }},
      {"C10D_SHM_CHUNK", "shm: bytes per rank per pipeline step of the direct collectives",
       [](VerbsConfig& c, const std::string& v) {
         c.shmChunkBytes = parseSize("C10D_SHM_CHUNK", v);
         C10D_CHECK_ARG(c.shmChunkBytes >= 4096, "C10D_SHM_CHUNK must be >= 4096");
       },
       [](const VerbsConfig& c) { return std::to_string(c.shmChunkBytes); }},
      {"C10D_SHM_RING", "shm: bytes of each per-pair stream ring (power of two)",
       [](VerbsConfig& c, const std::string& v) {
         size_t x = parseSize("C10D_SHM_RING", v);
         C10D_CHECK_ARG(x >= 4096 && (x & (x - 1)) == 0, "C10D_SHM_RING='", v,
                        "' must be a power of two >= 4096");
         c.shmRingBytes = x;
       },
       [](const VerbsConfig& c) { return std::to_string(c.shmRingBytes); }},
      {"C10D_INLINE_BYTES",
       "collectives of at most this many bytes start on the caller's thread when nothing is "
       "queued (0: every op goes through the engine thread)",
       [](VerbsConfig& c, const std::string& v) {
         c.inlineBytes = parseSize("C10D_INLINE_BYTES", v);
       },
       [](const VerbsConfig& c) { return std::to_string(c.inlineBytes); }},
      {"C10D_INLINE_US",
       "microseconds an op started on the caller's thread may poll for its peers before the "
       "engine thread takes it over",
       [](VerbsConfig& c, const std::string& v) {
         c.inlineUs = parseInt("C10D_INLINE_US", v);
         C10D_CHECK_ARG(c.inlineUs >= 0 && c.inlineUs <= 1000000, "C10D_INLINE_US='", v,
                        "' must be in [0, 1000000]");
       },
       [](const VerbsConfig& c) { return std::to_string(c.inlineUs); }},
      {"C10D_SPIN_US", "microseconds a waiter spins (sched_yield) before sleeping on a futex",
       [](VerbsConfig& c, const std::string& v) { c.spinUs = parseInt("C10D_SPIN_US", v); },
       [](const VerbsConfig& c) { return std::to_string(c.spinUs); }},
      {"C10D_BUSY_US",
       "microseconds a waiter polls with no syscall before the sched_yield phase (-1: auto, "
       "20 when the host's ranks fit its CPUs, else 0)",
       [](VerbsConfig& c, const std::string& v) { c.busyUs = parseInt("C10D_BUSY_US", v); },
       [](const VerbsConfig& c) { return std::to_string(c.busyUs); }},
      {"C10D_SMALL_BYTES", "shm allreduce: up to this size every rank reduces everything (1 sync)",
       [](VerbsConfig& c, const std::string& v) {
         c.smallBytes = parseSize("C10D_SMALL_BYTES", v);
       },
       [](const VerbsConfig& c) { return std::to_string(c.smallBytes); }},
      {"C10D_IB_DEVICE", "ibverbs device name (default: the first device)",
       [](VerbsConfig& c, const std::string& v) { c.ibDevice = v; },
       [](const VerbsConfig& c) { return c.ibDevice; }},
      {"C10D_IB_PORT", "ibverbs port number",
       [](VerbsConfig& c, const std::string& v) { c.ibPort = parseInt("C10D_IB_PORT", v); },
       [](const VerbsConfig& c) { return std::to_string(c.ibPort); }},
      {"C10D_IB_GID_INDEX", "ibverbs GID index (RoCE)",
       [](VerbsConfig& c, const std::string& v) {
         c.ibGidIndex = parseInt("C10D_IB_GID_INDEX", v);
       },
       [](const VerbsConfig& c) { return std::to_string(c.ibGidIndex); }},
      {"C10D_TCP_IFADDR", "tcp: address advertised to peers (default: this host's name)",
       [](VerbsConfig& c, const std::string& v) { c.tcpIfaddr = v; },
       [](const VerbsConfig& c) { return c.tcpIfaddr; }},
      {"C10D_TCP_BUF", "tcp: socket send/receive buffer bytes (0: kernel autotuning)",
       [](VerbsConfig& c, const std::string& v) { c.tcpBufBytes = parseSize("C10D_TCP_BUF", v); },
       [](const VerbsConfig& c) { return std::to_string(c.tcpBufBytes); }},
  };
  return t;
}

}  // namespace

VerbsConfig VerbsConfig::load(const std::map<std::string, std::string>& overrides) {
  VerbsConfig cfg;
  for (const auto& s : table()) {
    auto it = overrides.find(s.name);
    if (it != overrides.end()) {
      s.parse(cfg, it->second);
    } else if (const char* e = std::getenv(s.name)) {
      if (*e) s.parse(cfg, e);
    }
  }
  return cfg;
}

void printConfig(std::ostream& os, const VerbsConfig& cfg) {
  const VerbsConfig def;
  os << "verbs backend settings (options.config key or environment variable):\n";
  for (const auto& s : table()) {
    os << "  " << std::left << std::setw(18) << s.name << " = " << std::setw(10)
       << (s.show(cfg).empty() ? "\"\"" : s.show(cfg)) << " (default "
       << (s.show(def).empty() ? "\"\"" : s.show(def)) << ")  " << s.description << "\n";
  }
  AlgoSelector(cfg).print(os);
}

}  // namespace verbs
}  // namespace c10d
