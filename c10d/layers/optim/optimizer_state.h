// OptimizerState: the full (unsharded) state of a FlatOptimizer, per parameter — what a checkpoint
// holds. It does not depend on how the state was sharded: ZeRO's consolidateState() builds one on
// a single rank, and loadState() re-shards it for any world size; a one-process or DDP loop moves
// its FlatOptimizer in and out with fromFlat() / applyTo().
//
// File format (save / load): little-endian, version 1
//   magic      8 bytes "C10DOPTS"
//   version    u32 (1)
//   fileBytes  u64, the size of the whole file (a shorter file is "truncated")
//   options    u32 algorithm, f64 lr, momentum, dampening, u8 nesterov, f64 weightDecay, beta1,
//              beta2, eps
//   steps      u64
//   slots      u32 count, then per name: u32 length + bytes
//   params     u64 count, then per parameter: u64 numel, then numel f32 per slot, slot by slot
//   checksum   u64, FNV-1a 64 over every byte before it, from the offset basis 1469598103934665603
//              (not FNV's 14695981039346656037, a digit short since version 1: files keep it)
// save() writes `path.tmp`, fsyncs it and renames it over `path`, so a crash leaves either the old
// file or the new one, never half of one. load() reads the whole file and checks, in this order:
// it opens, magic, version, length (truncated / trailing bytes), checksum, then that every field is
// consistent; each failure is an InvalidArgument naming the path and what is wrong.
//
// Threads: a plain value; no synchronization. Errors: InvalidArgument (bad sizes, options that do
// not match, a bad file), Error for I/O failures while saving (naming the path and errno).
// Memory: slots hold numSlots x (total numel) floats, as one unsharded optimizer would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/fd.h"
#include "c10d/layers/optim/flat_optimizer.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace optim {

struct OptimizerState {
  OptimizerOptions options;
  uint64_t steps = 0;
  std::vector<std::string> slotNames;  // options.slotNames()
  // slots[p][k]: parameter p's state slot k, numel(p) floats. Empty (no parameters) on the ranks
  // that did not receive a consolidated state.
  std::vector<std::vector<std::vector<float>>> slots;

  // A FlatOptimizer over all parameters back to back (numels[p] each, in parameter order) -> state.
  // InvalidArgument if the numels do not add up to opt.numel().
  static OptimizerState fromFlat(const FlatOptimizer& opt, const std::vector<size_t>& numels);
  // State -> that FlatOptimizer (slots and step count). Checks, as InvalidArgument naming what
  // differs: the options (algorithm and every hyper-parameter), the slot names, the parameter count
  // and each parameter's numel (naming its index), and that the numels add up to opt.numel().
  void applyTo(FlatOptimizer& opt, const std::vector<size_t>& numels) const;

  // Checks this state against `options` and `numels` (what applyTo and ZeRO's loadState check);
  // `who` prefixes the message (e.g. "ShardedOptimizer::loadState"); `names`, if not empty, names
  // the parameters in messages.
  void checkCompatible(const OptimizerOptions& options, const std::vector<size_t>& numels,
                       const std::string& who, const std::vector<std::string>& names = {}) const;
  // Elements per slot over all parameters (0 for an algorithm without slots, e.g. plain SGD,
  // whose state is the step count only), and the bytes of state held (slots only).
  size_t numel() const;
  size_t stateBytes() const { return numel() * slotNames.size() * sizeof(float); }
  bool empty() const { return slots.empty(); }

  void save(const std::string& path) const;
  static OptimizerState load(const std::string& path);
};

// OptimizerState::save's file, one parameter at a time, for a state too large to hold at once
// (ZeRO-3's checkpoints: one unit's state at a time). The constructor creates `path.tmp` and
// writes the header (numels: every parameter's, in order; 0 for one whose slots are not kept);
// add() appends the next parameter's slots; finish() checks that every parameter came, writes the
// checksum, fsyncs and renames over `path`. Destroyed unfinished, it removes `path.tmp`.
// Errors: InvalidArgument for sizes that differ from the announced ones, Error for I/O.
class OptimizerStateWriter {
 public:
  OptimizerStateWriter(const std::string& path, const OptimizerOptions& options, uint64_t steps,
                       std::vector<size_t> numels);
  ~OptimizerStateWriter();
  OptimizerStateWriter(const OptimizerStateWriter&) = delete;
  OptimizerStateWriter& operator=(const OptimizerStateWriter&) = delete;
  // One vector per slot (options.slotNames()), each of the parameter's numel floats.
  void add(const std::vector<std::vector<float>>& slots);
  void finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// An OptimizerState::save file read in pieces, for a state too large to hold at once (ZeRO-3's
// resume: each rank reads the ranges of its shard). The constructor checks what load() checks,
// with load()'s messages, reading the header and each parameter's numel only (and, with
// verifyChecksum, the whole file once, 1 MiB at a time, for its checksum); read() copies a range
// of one parameter's slot. Errors: InvalidArgument naming the path. Threads: read() may run
// concurrently (pread).
class OptimizerStateFile {
 public:
  OptimizerStateFile(const std::string& path, bool verifyChecksum);
  // Options, steps and slot names; slots empty.
  const OptimizerState& header() const { return header_; }
  const std::vector<size_t>& numels() const { return numels_; }
  // OptimizerState::checkCompatible's checks and messages.
  void checkCompatible(const OptimizerOptions& options, const std::vector<size_t>& numels,
                       const std::string& who, const std::vector<std::string>& names = {}) const;
  // Elements [pos, pos + count) of parameter `param`'s slot `slot` into dst.
  void read(size_t param, size_t slot, size_t pos, size_t count, float* dst) const;

 private:
  static constexpr size_t kPrefixBytes = 4096;  // holds the options and slot names
  void readAt(size_t offset, void* dst, size_t n) const;

  std::string path_;
  std::string where_;
  Fd fd_;
  OptimizerState header_;
  std::vector<size_t> numels_;
  std::vector<size_t> offsets_;  // per parameter: the file offset of its first slot's data
};

// Whether two option sets describe the same optimizer (algorithm and every hyper-parameter); on
// a difference, *field names the first field that differs (e.g. "lr").
bool sameOptions(const OptimizerOptions& a, const OptimizerOptions& b, std::string* field);

}  // namespace optim
C10D_NAMESPACE_END
}  // namespace c10d
