#include "examples/train_mlp/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/fd.h"
#include "c10d/base/hash.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace example {

namespace fs = std::filesystem;

namespace {

constexpr char kMagic[8] = {'C', '1', '0', 'D', 'M', 'L', 'P', 'W'};
constexpr uint32_t kVersion = 1;
constexpr const char* kModelFile = "model.bin";
constexpr const char* kOptimizerFile = "optimizer.bin";
constexpr const char* kStepPrefix = "step-";

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof(T));  // little-endian hosts only
}

// Reads a T at *at of `data`, advancing *at; the caller has checked the length.
template <typename T>
T take(const std::string& data, size_t* at) {
  T v;
  std::memcpy(&v, data.data() + *at, sizeof(T));
  *at += sizeof(T);
  return v;
}

void fsyncPath(const std::string& path, int flags) {
  Fd fd(::open(path.c_str(), flags | O_CLOEXEC));
  C10D_SYSCHECK(fd.get(), "(checkpoint: opening ", path, " to fsync it)");
  C10D_SYSCHECK(::fsync(fd.get()), "(checkpoint: ", path, ")");
}

std::string stepName(uint64_t step) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%s%08llu", kStepPrefix, static_cast<unsigned long long>(step));
  return buf;
}

// The step of a "step-<digits>" name, or 0 for any other name.
uint64_t parseStepName(const std::string& name) {
  const std::string prefix = kStepPrefix;
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return 0;
  uint64_t step = 0;
  for (size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || step > (UINT64_MAX - 9) / 10) return 0;
    step = step * 10 + static_cast<uint64_t>(name[i] - '0');
  }
  return step;
}

// Complete checkpoints in `dir`, ascending by step.
std::vector<uint64_t> listSteps(const std::string& dir) {
  std::vector<uint64_t> steps;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return steps;  // no directory: no checkpoint
  for (const auto& entry : it) {
    const uint64_t step = parseStepName(entry.path().filename().string());
    if (step > 0 && entry.is_directory(ec)) steps.push_back(step);
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

void removeAll(const std::string& path) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (ec) C10D_THROW(Error, "checkpoint: cannot remove ", path, ": ", ec.message());
}

}  // namespace

void writeModelFile(const std::string& path, const CheckpointMeta& meta, const Mlp& model) {
  ModelFileWriter w(path, meta, model);
  w.add(model.params(), model.numel());
  w.finish();
}

ModelFileWriter::ModelFileWriter(const std::string& path, const CheckpointMeta& meta,
                                 const Mlp& model)
    : path_(path), remaining_(model.numel()) {
  nlohmann::json header;
  header["step"] = meta.step;
  header["seed"] = meta.seed;
  header["global_batch"] = meta.globalBatch;
  header["dataset_size"] = meta.datasetSize;
  header["widths"] = meta.widths;
  header["mode"] = meta.mode;
  header["world_size"] = meta.worldSize;
  header["optimizer"] = meta.optimizer;
  nlohmann::json params = nlohmann::json::array();
  for (size_t p = 0; p < model.numParameters(); ++p) {
    params.push_back({{"name", model.name(p)}, {"numel", model.numels()[p]}});
  }
  header["parameters"] = params;
  const std::string text = header.dump();

  const size_t dataBytes = model.numel() * sizeof(float);
  fileBytes_ = sizeof(kMagic) + 4 + 8 + 4 + text.size() + dataBytes + 8;
  std::string out;
  out.append(kMagic, sizeof(kMagic));
  put<uint32_t>(out, kVersion);
  put<uint64_t>(out, fileBytes_);
  put<uint32_t>(out, static_cast<uint32_t>(text.size()));
  out += text;
  fd_ = Fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  C10D_SYSCHECK(fd_.get(), "(checkpoint: creating ", path, ")");
  write(out.data(), out.size());
}

void ModelFileWriter::write(const void* data, size_t n) {
  hash_ = fnv1a(data, n, hash_);
  written_ += n;
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < n) {
    const ssize_t w = ::write(fd_.get(), p + done, n - done);
    if (w < 0 && errno == EINTR) continue;
    C10D_SYSCHECK(w, "(checkpoint: writing ", path_, ")");
    done += static_cast<size_t>(w);
  }
}

void ModelFileWriter::add(const float* values, size_t count) {
  C10D_CHECK_ARG(count <= remaining_, "checkpoint ", path_, ": ", count, " more values, but ",
                 remaining_, " remain of the model's");
  write(values, count * sizeof(float));  // little-endian hosts only
  remaining_ -= count;
}

void ModelFileWriter::finish() {
  C10D_CHECK_ARG(remaining_ == 0, "checkpoint ", path_, ": ", remaining_,
                 " of the model's values never written");
  std::string tail;
  put<uint64_t>(tail, hash_);
  write(tail.data(), tail.size());
  C10D_CHECK_EQ(written_, fileBytes_);
  C10D_SYSCHECK(::fsync(fd_.get()), "(checkpoint: ", path_, ")");
  fd_ = Fd();
}

ModelFileReader::ModelFileReader(const std::string& path, bool verifyChecksum) : path_(path) {
  fd_ = Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd_.valid()) {
    const int err = errno;
    C10D_THROW(InvalidArgument, "checkpoint ", path, ": cannot open: ", std::strerror(err));
  }
  struct stat info {};
  C10D_SYSCHECK(::fstat(fd_.get(), &info), "(checkpoint: ", path, ")");
  const auto size = static_cast<size_t>(info.st_size);
  const size_t fixed = sizeof(kMagic) + 4 + 8 + 4;
  if (size < fixed + 8) {
    fail("truncated: " + std::to_string(size) + " bytes, shorter than any model file");
  }
  std::string head(fixed, '\0');
  readAt(0, head.data(), fixed);
  if (std::memcmp(head.data(), kMagic, sizeof(kMagic)) != 0) fail("bad magic");
  size_t at = sizeof(kMagic);
  const auto version = take<uint32_t>(head, &at);
  if (version != kVersion) {
    fail("format version " + std::to_string(version) + ", this build reads version " +
         std::to_string(kVersion));
  }
  const auto fileBytes = take<uint64_t>(head, &at);
  if (size < fileBytes) {
    fail("truncated: " + std::to_string(size) + " bytes of " + std::to_string(fileBytes));
  }
  if (size > fileBytes) {
    fail(std::to_string(size - fileBytes) + " trailing bytes after the " +
         std::to_string(fileBytes) + " the header announces");
  }
  const size_t end = size - 8;
  if (verifyChecksum) {
    uint64_t stored = 0;
    readAt(end, &stored, 8);  // little-endian hosts only
    uint64_t computed = kFnv1aBasis;
    std::vector<char> chunk(size_t{1} << 20);  // the file streamed, never held
    for (size_t pos = 0; pos < end; pos += chunk.size()) {
      const size_t n = std::min(chunk.size(), end - pos);
      readAt(pos, chunk.data(), n);
      computed = fnv1a(chunk.data(), n, computed);
    }
    if (stored != computed) {
      std::ostringstream msg;
      msg << "checksum mismatch (stored 0x" << std::hex << stored << ", computed 0x" << computed
          << ")";
      fail(msg.str());
    }
  }
  const auto headerLen = take<uint32_t>(head, &at);
  if (headerLen > end - at) fail("header length " + std::to_string(headerLen) + " past the end");
  std::string text(headerLen, '\0');
  readAt(at, text.data(), headerLen);
  try {
    const auto header = nlohmann::json::parse(text);
    meta_.step = header.at("step").get<uint64_t>();
    meta_.seed = header.at("seed").get<uint64_t>();
    meta_.globalBatch = header.at("global_batch").get<uint64_t>();
    meta_.datasetSize = header.at("dataset_size").get<uint64_t>();
    meta_.widths = header.at("widths").get<std::vector<size_t>>();
    meta_.mode = header.at("mode").get<std::string>();
    meta_.worldSize = header.at("world_size").get<int>();
    meta_.optimizer = header.at("optimizer").get<std::string>();
    for (const auto& p : header.at("parameters")) {
      names_.push_back(p.at("name").get<std::string>());
      numels_.push_back(p.at("numel").get<size_t>());
    }
  } catch (const nlohmann::json::exception& e) {
    fail(std::string("bad header: ") + e.what());
  }
  at += headerLen;
  dataAt_ = at;
  // Each numel checked against what the file holds before it is added: a corrupt header's sum
  // must not wrap around to the right size.
  const size_t room = (end - at) / sizeof(float);
  for (size_t p = 0; p < numels_.size(); ++p) {
    if (numels_[p] > room - total_) {
      fail("parameter " + std::to_string(p) + " ('" + names_[p].substr(0, 64) + "') claims " +
           std::to_string(numels_[p]) + " floats, more than the file holds");
    }
    offsets_.push_back(total_);
    total_ += numels_[p];
  }
  if (total_ * sizeof(float) != end - at) {
    fail("the header's parameters hold " + std::to_string(total_) + " floats but the file has " +
         std::to_string((end - at) / sizeof(float)) + " after it");
  }
}

void ModelFileReader::fail(const std::string& what) const {
  C10D_THROW(InvalidArgument, "checkpoint ", path_, ": ", what,
             " (the file is corrupt or not a train_mlp model file; remove the checkpoint "
             "directory to start afresh)");
}

void ModelFileReader::readAt(size_t offset, void* dst, size_t n) const {
  const int err = preadFully(fd_.get(), dst, n, offset);
  if (err > 0) fail(std::string("read failed: ") + std::strerror(err));
  if (err < 0)
    fail("truncated while reading " + std::to_string(n) + " bytes at byte " +
         std::to_string(offset));
}

void ModelFileReader::read(size_t param, size_t pos, size_t count, float* dst) const {
  C10D_CHECK_ARG(param < numels_.size() && pos <= numels_[param] && count <= numels_[param] - pos,
                 "checkpoint ", path_, ": elements [", pos, ", ", pos + count, ") of parameter ",
                 param, " are not in the file");
  readAt(dataAt_ + (offsets_[param] + pos) * sizeof(float), dst, count * sizeof(float));
}

Checkpoint readModelFile(const std::string& path) {
  const ModelFileReader file(path, true);
  Checkpoint ck;
  ck.meta = file.meta();
  ck.names = file.names();
  ck.numels = file.numels();
  ck.params.resize(file.numel());
  for (size_t p = 0; p < ck.numels.size(); ++p) {
    file.read(p, 0, ck.numels[p], ck.params.data() + file.offset(p));
  }
  return ck;
}

void CheckpointDir::create() const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) C10D_THROW(Error, "--checkpoint-dir ", dir_, ": cannot create it: ", ec.message());
  if (!fs::is_directory(dir_, ec)) {
    C10D_THROW(InvalidArgument, "--checkpoint-dir ", dir_, " exists and is not a directory");
  }
}

std::string CheckpointDir::stepDir(uint64_t step) const {
  return (fs::path(dir_) / stepName(step)).string();
}

uint64_t CheckpointDir::latestStep() const {
  const auto steps = listSteps(dir_);
  return steps.empty() ? 0 : steps.back();
}

void CheckpointDir::write(const CheckpointMeta& meta, const Mlp& model,
                          const optim::OptimizerState& state, size_t keep) const {
  const std::string tmpDir = begin(meta.step);
  writeModelFile(modelFileIn(tmpDir), meta, model);
  state.save(optimizerFileIn(tmpDir));
  commit(meta.step, keep);
}

std::string CheckpointDir::begin(uint64_t step) const {
  C10D_CHECK_ARG(step > 0, "checkpoint: step must be >= 1");
  create();
  // Temporaries of writers that died (this run's earlier attempts included).
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 5 && name[0] == '.' && name.compare(name.size() - 4, 4, ".tmp") == 0 &&
        parseStepName(name.substr(1, name.size() - 5)) > 0) {
      removeAll(entry.path().string());
    }
  }
  const std::string tmpDir = tmpStepDir(step);
  if (::mkdir(tmpDir.c_str(), 0755) != 0) {
    C10D_THROW(Error, "checkpoint: mkdir ", tmpDir, ": ", detail::errnoString(errno));
  }
  return tmpDir;
}

void CheckpointDir::commit(uint64_t step, size_t keep) const {
  const std::string finalDir = stepDir(step);
  const std::string tmpDir = tmpStepDir(step);
  fsyncPath(tmpDir, O_RDONLY | O_DIRECTORY);
  // A complete checkpoint of this step already there (a run resumed from an older one and
  // redoing this step): replace it. Not atomic, but the older checkpoints stay.
  std::error_code ec;
  if (fs::exists(finalDir, ec)) removeAll(finalDir);
  if (::rename(tmpDir.c_str(), finalDir.c_str()) != 0) {
    C10D_THROW(Error, "checkpoint: rename ", tmpDir, " -> ", finalDir, ": ",
               detail::errnoString(errno));
  }
  fsyncPath(dir_, O_RDONLY | O_DIRECTORY);
  auto steps = listSteps(dir_);
  for (size_t i = 0; i + keep < steps.size(); ++i) removeAll(stepDir(steps[i]));
}

std::string CheckpointDir::tmpStepDir(uint64_t step) const {
  return (fs::path(dir_) / ("." + stepName(step) + ".tmp")).string();
}

std::string modelFileIn(const std::string& stepDir) {
  return (fs::path(stepDir) / kModelFile).string();
}

std::string optimizerFileIn(const std::string& stepDir) {
  return (fs::path(stepDir) / kOptimizerFile).string();
}

Checkpoint CheckpointDir::open(uint64_t step, bool verifyChecksums) const {
  Checkpoint ck;
  ck.dir = stepDir(step);
  const std::string modelPath = modelFileIn(ck.dir);
  ck.modelFile = std::make_shared<ModelFileReader>(modelPath, verifyChecksums);
  ck.meta = ck.modelFile->meta();
  ck.names = ck.modelFile->names();
  ck.numels = ck.modelFile->numels();
  if (ck.meta.step != step) {
    C10D_THROW(InvalidArgument, "checkpoint ", modelPath, ": says step ", ck.meta.step,
               " but lies in ", ck.dir);
  }
  ck.optimizerFile =
      std::make_shared<optim::OptimizerStateFile>(optimizerFileIn(ck.dir), verifyChecksums);
  ck.optimizer = ck.optimizerFile->header();
  return ck;
}

Checkpoint CheckpointDir::read(uint64_t step) const {
  const std::string dir = stepDir(step);
  const std::string modelPath = modelFileIn(dir);
  Checkpoint ck = readModelFile(modelPath);
  ck.dir = dir;
  if (ck.meta.step != step) {
    C10D_THROW(InvalidArgument, "checkpoint ", modelPath, ": says step ", ck.meta.step,
               " but lies in ", dir);
  }
  ck.optimizer = optim::OptimizerState::load(optimizerFileIn(dir));
  return ck;
}

}  // namespace example
C10D_NAMESPACE_END
}  // namespace c10d
