// Checkpoints of a training run: the model's parameters, the full optimizer state and the step
// they follow, in one directory per checkpoint, written atomically and read back with checks.
//
// Layout of --checkpoint-dir D
//   D/step-00000010/model.bin      parameters + what the run was (format below)
//   D/step-00000010/optimizer.bin  optim::OptimizerState::save (full, unsharded state)
//   A checkpoint is written into D/.step-00000010.tmp, every file fsynced, then the directory is
//   renamed to D/step-00000010 and D fsynced: a checkpoint directory either exists complete or
//   not at all, whatever moment the writer dies at. The newest complete one is the one resumed
//   from; older ones beyond `keep` are removed after each write, and temporaries left by a crash
//   at the next write.
//
// model.bin, little-endian, version 1
//   magic      8 bytes "C10DMLPW"
//   version    u32 (1)
//   fileBytes  u64, the size of the whole file (shorter: "truncated")
//   headerLen  u32, then a JSON header of that many bytes: step, seed, global_batch, dataset_size,
//              widths, mode and world_size of the writer, optimizer (its describe()), and
//              parameters: [{name, numel}, ...]
//   data       f32 values of every parameter, back to back in parameter order
//   checksum   u64, FNV-1a 64 over every byte before it
// Nothing in it depends on the world size or the mode, so a checkpoint written by N ranks (ddp or
// zero) resumes on M ranks in any mode.
//
// Errors: InvalidArgument naming the file and what is wrong (missing, truncated, bad magic or
// version, checksum mismatch, a header that does not parse or does not match the data);
// Error naming the path and errno for I/O failures while writing.
// Threads: none; one process (rank 0) writes, any number may read a complete checkpoint.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/fd.h"
#include "c10d/base/hash.h"
#include "c10d/layers/optim/optimizer_state.h"
#include "examples/train_mlp/model.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace example {

// What the checkpoint says about the run that wrote it.
struct CheckpointMeta {
  uint64_t step = 0;  // the last step taken before it was written
  uint64_t seed = 0;
  uint64_t globalBatch = 0;
  uint64_t datasetSize = 0;
  std::vector<size_t> widths;
  std::string mode;       // informational
  int worldSize = 0;      // informational
  std::string optimizer;  // informational: OptimizerOptions::describe()
};

class ModelFileReader;

// A checkpoint read whole (CheckpointDir::read: params and optimizer hold every value) or opened
// (CheckpointDir::open: params empty, optimizer its header alone, the values read in pieces from
// modelFile and optimizerFile).
struct Checkpoint {
  std::string dir;  // D/step-00000010
  CheckpointMeta meta;
  std::vector<std::string> names;  // parameter names
  std::vector<size_t> numels;
  std::vector<float> params;  // back to back
  optim::OptimizerState optimizer;
  std::shared_ptr<const ModelFileReader> modelFile;
  std::shared_ptr<const optim::OptimizerStateFile> optimizerFile;
};

class CheckpointDir {
 public:
  explicit CheckpointDir(std::string dir) : dir_(std::move(dir)) {}
  const std::string& path() const { return dir_; }

  // Creates the directory (and its parents) if missing. Error naming the path on failure.
  void create() const;
  // The newest complete checkpoint's step; 0 when there is none (or no directory).
  uint64_t latestStep() const;
  std::string stepDir(uint64_t step) const;  // D/step-00000010

  // Writes model + optimizer state as the checkpoint of meta.step (see the header comment), then
  // keeps the newest `keep` checkpoints.
  void write(const CheckpointMeta& meta, const Mlp& model, const optim::OptimizerState& state,
             size_t keep) const;
  // write() in pieces, for a checkpoint written as it is gathered (ZeRO-3, one layer at a time):
  // begin() removes dead writers' temporaries and creates the temporary directory of `step`
  // (returned); the caller writes modelFileIn() and optimizerFileIn() of it (ModelFileWriter,
  // optim::OptimizerStateWriter); commit() makes it the checkpoint of `step` and keeps `keep`.
  std::string begin(uint64_t step) const;
  void commit(uint64_t step, size_t keep) const;
  // Reads and checks the checkpoint of `step`.
  Checkpoint read(uint64_t step) const;
  // Opens the checkpoint of `step` for reading in pieces (ZeRO-3's resume: each rank reads its
  // shards, never the whole model): the headers are read and checked, and with verifyChecksums
  // both files are streamed once for their checksums (one rank suffices: the files are shared).
  Checkpoint open(uint64_t step, bool verifyChecksums) const;

 private:
  std::string tmpStepDir(uint64_t step) const;  // D/.step-00000010.tmp

  std::string dir_;
};

std::string modelFileIn(const std::string& stepDir);      // <stepDir>/model.bin
std::string optimizerFileIn(const std::string& stepDir);  // <stepDir>/optimizer.bin

// model.bin written as its values arrive: the header from meta and the model's names and numels,
// then add() the values in parameter order (every one, in any number of pieces), then finish()
// (checksum, fsync). Error naming the path on I/O failures; InvalidArgument for more or fewer
// values than the model has.
class ModelFileWriter {
 public:
  ModelFileWriter(const std::string& path, const CheckpointMeta& meta, const Mlp& model);
  void add(const float* values, size_t count);
  void finish();

 private:
  void write(const void* data, size_t n);

  std::string path_;
  Fd fd_;
  uint64_t hash_ = kFnv1aBasis;
  size_t remaining_ = 0;  // values still to come
  uint64_t written_ = 0;
  uint64_t fileBytes_ = 0;
};

// model.bin read in pieces: the constructor reads and checks the header (and with verifyChecksum
// streams the file once, 1 MiB at a time, for its checksum), read() copies a range of one
// parameter's values. The same checks and messages as readModelFile (InvalidArgument naming the
// path). Threads: read() may run concurrently (pread).
class ModelFileReader {
 public:
  ModelFileReader(const std::string& path, bool verifyChecksum);
  const CheckpointMeta& meta() const { return meta_; }
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<size_t>& numels() const { return numels_; }
  size_t numel() const { return total_; }
  size_t offset(size_t param) const { return offsets_.at(param); }  // in the back-to-back values
  // Elements [pos, pos + count) of parameter `param` into dst.
  void read(size_t param, size_t pos, size_t count, float* dst) const;

 private:
  [[noreturn]] void fail(const std::string& what) const;
  void readAt(size_t offset, void* dst, size_t n) const;

  std::string path_;
  Fd fd_;
  CheckpointMeta meta_;
  std::vector<std::string> names_;
  std::vector<size_t> numels_;
  std::vector<size_t> offsets_;
  size_t total_ = 0;
  size_t dataAt_ = 0;  // the file offset of the first value
};

// The model file on its own (exposed for tests and tools).
void writeModelFile(const std::string& path, const CheckpointMeta& meta, const Mlp& model);
Checkpoint readModelFile(const std::string& path);

}  // namespace example
C10D_NAMESPACE_END
}  // namespace c10d
