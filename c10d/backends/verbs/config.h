// VerbsConfig: every setting of the verbs backend, declared once in a table (name, default,
// description), read from ProcessGroup::Options::config first and the environment second, and
// printable (printConfig, used by `--print-config` of the perf binaries).
//
// Pure data; no threads, nothing blocks.
#pragma once

#include <cstddef>
#include <map>
#include <ostream>
#include <string>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

struct VerbsConfig {
  std::string transport = "auto";  // C10D_TRANSPORT: auto | shm | tcp | ibverbs
  std::string hostId;              // C10D_HOST_ID: this rank's host identity (default: boot id)
  std::string algo;                // C10D_ALGO: rules ahead of the table (algorithms/algo_select.h)
  size_t shmChunkBytes = 0;  // C10D_SHM_CHUNK: per-rank staging slot of the shm workspace; 0 = auto
  size_t shmRingBytes = 256 << 10;  // C10D_SHM_RING: per-pair stream ring (power of two)
  size_t shmCmaBytes = 0;           // C10D_SHM_CMA: single-copy sends from this size (0: never)
  size_t inlineBytes = 1 << 20;     // C10D_INLINE_BYTES: ops this small may start inline
  int inlineUs = 100;               // C10D_INLINE_US: inline polling budget before a hand-off
  int spinUs = -1;          // C10D_SPIN_US: sched_yield phase before a futex sleep; -1 = auto
  int busyUs = -1;          // C10D_BUSY_US: pure polling before that; -1 = auto
  int engineSliceUs = 100;  // C10D_ENGINE_SLICE_US: engine threads' scheduler slice; 0 = default
  int shmSpread = -1;       // C10D_SHM_SPREAD: move off a CPU a peer shares; -1 = auto
  size_t smallBytes = 32 << 10;    // C10D_SMALL_BYTES: below this, one-barrier shm allreduce
  bool halfAccumF32 = true;        // C10D_HALF_ACCUM: f32 | half (f16/bf16 partial sums)
  std::string ibDevice;            // C10D_IB_DEVICE: ibverbs device name (first one if empty)
  int ibPort = 1;                  // C10D_IB_PORT
  int ibGidIndex = 0;              // C10D_IB_GID_INDEX (RoCE)
  std::string tcpIfaddr;           // C10D_TCP_IFADDR: address to advertise (else hostname's)
  size_t tcpBufBytes = 256 << 10;  // C10D_TCP_BUF: SO_SNDBUF / SO_RCVBUF (0: autotuning)

  // Reads each setting from `overrides` (keys as the env names, e.g. "C10D_TRANSPORT") or else
  // the environment; throws InvalidArgument naming the setting on a malformed value.
  static VerbsConfig load(const std::map<std::string, std::string>& overrides = {});
};

// Prints the table: name, value in effect, default, description; then the algorithm table.
void printConfig(std::ostream& os, const VerbsConfig& cfg = VerbsConfig::load());

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
