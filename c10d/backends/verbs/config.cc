#include "c10d/backends/verbs/config.h"

#include <functional>
#include <string>

#include "c10d/backends/verbs/algorithms/algo_select.h"
#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/settings.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

namespace {

using Row = Setting<VerbsConfig>;
using Parse = std::function<void(VerbsConfig&, const std::string&, const std::string&)>;
using Show = std::function<std::string(const VerbsConfig&)>;

// Keys are the environment variables' names.
Row row(const char* name, const char* help, Parse parse, Show show) {
  return Row{name, name, help, std::move(parse), std::move(show)};
}

template <typename Field>
Row integer(const char* name, const char* help, long long min, long long max,
            Field VerbsConfig::*field) {
  return row(
      name, help,
      [=](VerbsConfig& c, const std::string& v, const std::string& src) {
        c.*field = static_cast<Field>(parseIntegerSetting(v, src, min, max));
      },
      [=](const VerbsConfig& c) { return std::to_string(c.*field); });
}

Row bytes(const char* name, const char* help, size_t min, size_t VerbsConfig::*field) {
  return row(
      name, help,
      [=](VerbsConfig& c, const std::string& v, const std::string& src) {
        c.*field = parseBytesSetting(v, src, min);
      },
      [=](const VerbsConfig& c) { return std::to_string(c.*field); });
}

Row text(const char* name, const char* help, std::string VerbsConfig::*field) {
  return row(
      name, help, [=](VerbsConfig& c, const std::string& v, const std::string&) { c.*field = v; },
      [=](const VerbsConfig& c) { return c.*field; });
}

const SettingsTable<VerbsConfig>& table() {
  static const SettingsTable<VerbsConfig> t(
      "verbs",
      {
          row(
              "C10D_TRANSPORT", "auto | shm | tcp | ibverbs: force one transport for every peer",
              [](VerbsConfig& c, const std::string& v, const std::string& src) {
                c.transport = parseChoiceSetting(v, src, {"auto", "shm", "tcp", "ibverbs"});
              },
              [](const VerbsConfig& c) { return c.transport; }),
          row(
              "C10D_ALGO",
              "algorithm rules ahead of the table, [collective:][lo-hi:]algorithm,... with "
              "[lo, hi) bytes, e.g. "
              "allreduce:0-64K:recursive_doubling,64K-inf:ring,broadcast:chain",
              [](VerbsConfig& c, const std::string& v, const std::string&) {
                AlgoSelector::parseOverrides(v);  // validates
                c.algo = v;
              },
              [](const VerbsConfig& c) { return c.algo; }),
          text("C10D_HOST_ID",
               "this rank's host identity: ranks with equal ones talk through shm (default: the "
               "kernel's boot id and the hostname)",
               &VerbsConfig::hostId),
          bytes("C10D_SHM_CHUNK",
                "shm: bytes per rank per pipeline step of the direct collectives (0: auto, 256 KiB "
                "when the host's ranks fit its CPUs, else 512 KiB; a rank left at auto takes the "
                "value of its host's first rank, an explicit one must equal it)",
                0, &VerbsConfig::shmChunkBytes),
          row(
              "C10D_SHM_RING", "shm: bytes of each per-pair stream ring (power of two)",
              [](VerbsConfig& c, const std::string& v, const std::string& src) {
                const size_t x = parseBytesSetting(v, src, 4096);
                C10D_CHECK_ARG((x & (x - 1)) == 0, src, "='", v, "' must be a power of two");
                c.shmRingBytes = x;
              },
              [](const VerbsConfig& c) { return std::to_string(c.shmRingBytes); }),
          bytes("C10D_SHM_CMA",
                "shm: stream sends of at least this many bytes are read by the receiver straight "
                "from the sender's buffer (process_vm_readv: one copy instead of two through the "
                "ring); 0: never. Used only where every rank of the host could read its peers",
                0, &VerbsConfig::shmCmaBytes),
          bytes("C10D_INLINE_BYTES",
                "collectives of at most this many bytes start on the caller's thread when nothing "
                "is queued (0: every op goes through the engine thread)",
                0, &VerbsConfig::inlineBytes),
          integer("C10D_INLINE_US",
                  "microseconds an op started on the caller's thread may poll for its peers "
                  "before the engine thread takes it over; -1: never (a late peer holds the "
                  "caller, as a synchronous engine would)",
                  -1, 1000000, &VerbsConfig::inlineUs),
          integer("C10D_SPIN_US",
                  "microseconds a waiter spins (sched_yield) before sleeping on a futex (-1: "
                  "auto, 20000 when the host's ranks fit its CPUs, else 60)",
                  -1, 10000000, &VerbsConfig::spinUs),
          integer("C10D_BUSY_US",
                  "microseconds a waiter polls with no syscall before the sched_yield phase (-1: "
                  "auto, 20 when the host's ranks fit its CPUs, else 0)",
                  -1, 10000000, &VerbsConfig::busyUs),
          integer("C10D_ENGINE_SLICE_US",
                  "the engine threads' scheduler slice (sched_setattr; Linux >= 6.12 honours it): "
                  "a short one lets an engine thread woken by a peer preempt the application's "
                  "compute on its CPU at once (0: the kernel's default)",
                  0, 100000, &VerbsConfig::engineSliceUs),
          integer(
              "C10D_SHM_SPREAD",
              "shm: a barrier waiter that finds a peer on its own CPU moves itself to a CPU of "
              "its affinity mask no rank of the host uses, its mask then restored (-1: auto, on "
              "when the host's ranks fit its CPUs; 0: off; 1: on)",
              -1, 1, &VerbsConfig::shmSpread),
          bytes("C10D_SMALL_BYTES",
                "shm allreduce: up to this size every rank reduces everything (1 sync)", 0,
                &VerbsConfig::smallBytes),
          row(
              "C10D_HALF_ACCUM",
              "f32 | half: f16/bf16 SUM and AVG of allreduce, reduce and reduce_scatter keep "
              "their partial sums in f32 and round once (every rank the same bits; over the "
              "network the partial sums travel as f32), or round at every step in the half type "
              "(as NCCL's ring and Gloo)",
              [](VerbsConfig& c, const std::string& v, const std::string& src) {
                c.halfAccumF32 = parseChoiceSetting(v, src, {"f32", "half"}) == "f32";
              },
              [](const VerbsConfig& c) { return std::string(c.halfAccumF32 ? "f32" : "half"); }),
          text("C10D_IB_DEVICE", "ibverbs device name (default: the first device)",
               &VerbsConfig::ibDevice),
          integer("C10D_IB_PORT", "ibverbs port number", 1, 255, &VerbsConfig::ibPort),
          integer("C10D_IB_GID_INDEX", "ibverbs GID index (RoCE)", 0, 1023,
                  &VerbsConfig::ibGidIndex),
          text("C10D_TCP_IFADDR", "tcp: address advertised to peers (default: this host's name)",
               &VerbsConfig::tcpIfaddr),
          bytes("C10D_TCP_BUF", "tcp: socket send/receive buffer bytes (0: kernel autotuning)", 0,
                &VerbsConfig::tcpBufBytes),
      });
  return t;
}

}  // namespace

VerbsConfig VerbsConfig::load(const std::map<std::string, std::string>& overrides) {
  return table().load(overrides);
}

void printConfig(std::ostream& os, const VerbsConfig& cfg) {
  os << "verbs backend settings (options.config key or environment variable):\n";
  table().print(os, cfg, "  ");
  AlgoSelector(cfg).print(os);
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
