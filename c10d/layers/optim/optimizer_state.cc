// OptimizerState: conversions to and from a FlatOptimizer, compatibility checks, and the checkpoint
// file (format in the header).
#include "c10d/layers/optim/optimizer_state.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/fd.h"
#include "c10d/base/hash.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace optim {

namespace {

constexpr char kMagic[8] = {'C', '1', '0', 'D', 'O', 'P', 'T', 'S'};
constexpr uint32_t kVersion = 1;
// magic + version + fileBytes: what must be there before anything else can be judged.
constexpr size_t kHeaderBytes = sizeof(kMagic) + 4 + 8;
constexpr size_t kChecksumBytes = 8;

// Not FNV's basis (see the header): part of the format.
uint64_t checksum(const void* data, size_t n) {
  return fnv1a(data, n, kFnv1aShortBasis);
}

std::string paramName(size_t p, const std::vector<std::string>& names) {
  std::string s = "parameter " + std::to_string(p);
  if (p < names.size() && !names[p].empty()) s += " ('" + names[p] + "')";
  return s;
}

// Little-endian encoding, whatever the host's byte order.
class Writer {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) u8(static_cast<uint8_t>(v >> (8 * i)));
  }
  void f64(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    u64(bits);
  }
  void floats(const std::vector<float>& v) {
    for (float f : v) {
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof(bits));
      u32(bits);
    }
  }
  void bytes(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }
  std::string& buffer() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(const std::string& data, size_t end, const std::string& path)
      : data_(reinterpret_cast<const uint8_t*>(data.data())), end_(end), path_(path) {}
  uint8_t u8() {
    need(1, "a byte");
    return data_[pos_++];
  }
  uint32_t u32() {
    need(4, "a 32-bit field");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(data_[pos_++]) << (8 * i);
    return v;
  }
  uint64_t u64() {
    need(8, "a 64-bit field");
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(data_[pos_++]) << (8 * i);
    return v;
  }
  double f64() {
    const uint64_t bits = u64();
    double v;
    std::memcpy(&v, &bits, sizeof(v));
    return v;
  }
  std::string str(size_t n) {
    need(n, "a string");
    std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return s;
  }
  std::vector<float> floats(uint64_t n, const char* what) {
    C10D_CHECK_ARG(n <= (end_ - pos_) / 4, "OptimizerState::load('", path_, "'): corrupt: ", what,
                   " claims ", n, " floats at byte ", pos_, ", but only ", end_ - pos_,
                   " bytes remain");
    std::vector<float> v(n);
    for (uint64_t i = 0; i < n; ++i) {
      const uint32_t bits = u32();
      std::memcpy(&v[i], &bits, sizeof(bits));
    }
    return v;
  }
  size_t pos() const { return pos_; }
  size_t remaining() const { return end_ - pos_; }

 private:
  void need(size_t n, const char* what) {
    C10D_CHECK_ARG(n <= end_ - pos_, "OptimizerState::load('", path_, "'): corrupt: ", what,
                   " at byte ", pos_, " runs past the data (", end_, " bytes)");
  }
  const uint8_t* data_;
  size_t end_;
  size_t pos_ = 0;
  std::string path_;
};

// Same value, bit for bit (a NaN hyper-parameter cannot pass validate(); -0.0 vs 0.0 differ).
bool sameDouble(double a, double b) {
  return std::memcmp(&a, &b, sizeof(a)) == 0;
}

void writeAll(int fd, const void* data, size_t size, const std::string& path) {
  const char* bytes = static_cast<const char*>(data);
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, bytes + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      C10D_THROW(Error, "OptimizerState::save: writing '", path,
                 "' failed: ", detail::errnoString(err));
    }
    done += static_cast<size_t>(n);
  }
}

std::string readAll(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    C10D_THROW(InvalidArgument, "OptimizerState::load('", path,
               "'): cannot open: ", detail::errnoString(err));
  }
  std::string data;
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      C10D_THROW(InvalidArgument, "OptimizerState::load('", path,
                 "'): read failed: ", detail::errnoString(err));
    }
    if (n == 0) break;
    data.append(chunk, static_cast<size_t>(n));
  }
  return data;
}

// load()'s first checks, in its order: magic, room for the header, version, and the length the
// header announces against the file's `size`. head: the file's first bytes (all it has, up to at
// least kHeaderBytes).
void checkFixedHeader(const std::string& head, size_t size, const std::string& path,
                      const std::string& where) {
  C10D_CHECK_ARG(size >= sizeof(kMagic), where, "truncated: ", size, " bytes, shorter than the ",
                 sizeof(kMagic), "-byte magic");
  C10D_CHECK_ARG(std::memcmp(head.data(), kMagic, sizeof(kMagic)) == 0, where,
                 "bad magic: not a c10d optimizer state file (expected it to start with "
                 "\"C10DOPTS\")");
  C10D_CHECK_ARG(size >= kHeaderBytes + kChecksumBytes, where, "truncated: ", size,
                 " bytes, shorter than the header");
  Reader fixed(head, kHeaderBytes, path);
  fixed.str(sizeof(kMagic));
  const uint32_t version = fixed.u32();
  C10D_CHECK_ARG(version == kVersion, where, "unsupported version ", version,
                 " (this build reads version ", kVersion, ")");
  const uint64_t fileBytes = fixed.u64();
  C10D_CHECK_ARG(size >= fileBytes, where, "truncated: ", size, " of ", fileBytes, " bytes");
  C10D_CHECK_ARG(size == fileBytes, where, size, " bytes where the header says ", fileBytes,
                 " (trailing bytes)");
}

// The fields after magic, version and fileBytes up to the parameter count: options, steps and
// slot names (slots left empty).
OptimizerState parseHeader(Reader& r, const std::string& where) {
  OptimizerState st;
  const uint32_t algorithm = r.u32();
  C10D_CHECK_ARG(algorithm <= static_cast<uint32_t>(Algorithm::kAdamW), where,
                 "corrupt: unknown algorithm ", algorithm);
  st.options.algorithm = static_cast<Algorithm>(algorithm);
  st.options.lr = r.f64();
  st.options.momentum = r.f64();
  st.options.dampening = r.f64();
  st.options.nesterov = r.u8() != 0;
  st.options.weightDecay = r.f64();
  st.options.beta1 = r.f64();
  st.options.beta2 = r.f64();
  st.options.eps = r.f64();
  try {
    st.options.validate();
  } catch (const InvalidArgument& e) {
    C10D_THROW(InvalidArgument, where, "corrupt options: ", e.what());
  }
  st.steps = r.u64();
  const uint32_t numSlots = r.u32();
  const std::vector<std::string> expected = st.options.slotNames();
  C10D_CHECK_ARG(numSlots == expected.size(), where, "corrupt: ", numSlots, " slots for ",
                 st.options.describe(), ", which keeps ", expected.size());
  for (uint32_t k = 0; k < numSlots; ++k) {
    const uint32_t len = r.u32();
    st.slotNames.push_back(r.str(len));
    C10D_CHECK_ARG(st.slotNames.back() == expected[k], where, "corrupt: slot ", k, " is '",
                   st.slotNames.back(), "', expected '", expected[k], "'");
  }
  return st;
}

// OptimizerState::checkCompatible over a state whose slots may stay on disk: numParams
// parameters, slotsOf(p) slots of parameter p, sizeOf(p, k) floats in its slot k.
template <typename SlotsOf, typename SizeOf>
void checkState(const OptimizerState& st, size_t numParams, SlotsOf&& slotsOf, SizeOf&& sizeOf,
                const OptimizerOptions& opts, const std::vector<size_t>& numels,
                const std::string& who, const std::vector<std::string>& names) {
  std::string field;
  C10D_CHECK_ARG(sameOptions(st.options, opts, &field), who, ": the state was saved by ",
                 st.options.describe(), ", this optimizer is ", opts.describe(), " (", field,
                 " differs)");
  C10D_CHECK_ARG(st.slotNames == opts.slotNames(), who, ": the state has ", st.slotNames.size(),
                 " slots per parameter, ", opts.describe(), " keeps ", opts.slotNames().size());
  C10D_CHECK_ARG(!(numParams == 0 && !numels.empty()), who,
                 ": the state holds no parameters, this optimizer has ", numels.size(),
                 " (consolidateState returns an empty state on every rank but dstRank: save or "
                 "pass the one from dstRank)");
  C10D_CHECK_ARG(numParams == numels.size(), who, ": the state has ", numParams,
                 " parameters, this optimizer has ", numels.size());
  for (size_t p = 0; p < numels.size(); ++p) {
    C10D_CHECK_ARG(slotsOf(p) == st.slotNames.size(), who, ": ", paramName(p, names), " has ",
                   slotsOf(p), " state slots in the state, expected ", st.slotNames.size());
    for (size_t k = 0; k < slotsOf(p); ++k) {
      C10D_CHECK_ARG(sizeOf(p, k) == numels[p], who, ": ", paramName(p, names), " has ", numels[p],
                     " elements, its '", st.slotNames[k], "' in the state has ", sizeOf(p, k));
    }
  }
}

}  // namespace

bool sameOptions(const OptimizerOptions& a, const OptimizerOptions& b, std::string* field) {
  auto differ = [&](const char* name) {
    if (field != nullptr) *field = name;
    return false;
  };
  if (a.algorithm != b.algorithm) return differ("algorithm");
  if (!sameDouble(a.lr, b.lr)) return differ("lr");
  if (!sameDouble(a.weightDecay, b.weightDecay)) return differ("weightDecay");
  // Only the fields the algorithm reads: an SGD state does not care about betas.
  if (a.algorithm == Algorithm::kSgd) {
    if (!sameDouble(a.momentum, b.momentum)) return differ("momentum");
    if (!sameDouble(a.dampening, b.dampening)) return differ("dampening");
    if (a.nesterov != b.nesterov) return differ("nesterov");
  } else {
    if (!sameDouble(a.beta1, b.beta1)) return differ("beta1");
    if (!sameDouble(a.beta2, b.beta2)) return differ("beta2");
    if (!sameDouble(a.eps, b.eps)) return differ("eps");
  }
  return true;
}

size_t OptimizerState::numel() const {
  size_t n = 0;
  for (const auto& perParam : slots) {
    if (!perParam.empty()) n += perParam[0].size();
  }
  return n;
}

OptimizerState OptimizerState::fromFlat(const FlatOptimizer& opt,
                                        const std::vector<size_t>& numels) {
  size_t total = 0;
  for (size_t n : numels) total += n;
  C10D_CHECK_ARG(total == opt.numel(), "OptimizerState::fromFlat: the ", numels.size(),
                 " parameter numels add up to ", total, " elements, the optimizer has ",
                 opt.numel());
  OptimizerState st;
  st.options = opt.options();
  st.steps = opt.steps();
  for (size_t k = 0; k < opt.numSlots(); ++k) st.slotNames.push_back(opt.slotName(k));
  st.slots.resize(numels.size());
  size_t offset = 0;
  for (size_t p = 0; p < numels.size(); ++p) {
    for (size_t k = 0; k < opt.numSlots(); ++k) {
      const float* src = opt.slot(k) + offset;
      st.slots[p].emplace_back(src, src + numels[p]);
    }
    offset += numels[p];
  }
  return st;
}

void OptimizerState::checkCompatible(const OptimizerOptions& opts,
                                     const std::vector<size_t>& numels, const std::string& who,
                                     const std::vector<std::string>& names) const {
  checkState(
      *this, slots.size(), [&](size_t p) { return slots[p].size(); },
      [&](size_t p, size_t k) { return slots[p][k].size(); }, opts, numels, who, names);
}

void OptimizerState::applyTo(FlatOptimizer& opt, const std::vector<size_t>& numels) const {
  checkCompatible(opt.options(), numels, "OptimizerState::applyTo");
  size_t total = 0;
  for (size_t n : numels) total += n;
  C10D_CHECK_ARG(total == opt.numel(), "OptimizerState::applyTo: the ", numels.size(),
                 " parameter numels add up to ", total, " elements, the optimizer has ",
                 opt.numel());
  size_t offset = 0;
  for (size_t p = 0; p < numels.size(); ++p) {
    for (size_t k = 0; k < slotNames.size(); ++k) {
      std::copy(slots[p][k].begin(), slots[p][k].end(), opt.slot(k) + offset);
    }
    offset += numels[p];
  }
  opt.setSteps(steps);
}

void OptimizerState::save(const std::string& path) const {
  C10D_CHECK_ARG(!path.empty(), "OptimizerState::save: empty path");
  options.validate();
  C10D_CHECK_ARG(slotNames == options.slotNames(), "OptimizerState::save('", path,
                 "'): ", slotNames.size(), " slot names for ", options.describe(), ", which keeps ",
                 options.slotNames().size());
  std::vector<size_t> numels;
  for (size_t p = 0; p < slots.size(); ++p) {
    C10D_CHECK_ARG(slots[p].size() == slotNames.size(), "OptimizerState::save('", path,
                   "'): ", "parameter ", p, " has ", slots[p].size(), " slots, expected ",
                   slotNames.size());
    for (size_t k = 1; k < slots[p].size(); ++k) {
      C10D_CHECK_ARG(slots[p][k].size() == slots[p][0].size(), "OptimizerState::save('", path,
                     "'): parameter ", p, "'s slots differ in size ('", slotNames[0], "' ",
                     slots[p][0].size(), ", '", slotNames[k], "' ", slots[p][k].size(), ")");
    }
    numels.push_back(slots[p].empty() ? 0 : slots[p][0].size());
  }
  OptimizerStateWriter w(path, options, steps, numels);
  for (const auto& perParam : slots) w.add(perParam);
  w.finish();
}

struct OptimizerStateWriter::Impl {
  std::string path;
  std::string tmp;
  Fd fd;
  Writer buf;
  uint64_t hash = kFnv1aShortBasis;  // checksum() over everything flushed so far
  std::vector<size_t> numels;
  size_t numSlots = 0;
  size_t next = 0;
  bool done = false;

  void flush() {
    std::string& b = buf.buffer();
    hash = fnv1a(b.data(), b.size(), hash);
    writeAll(fd.get(), b.data(), b.size(), tmp);
    b.clear();
  }
  // A slot straight from its vector where the host is little-endian (no copy of it), else
  // through the buffer.
  void floats(const std::vector<float>& v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    flush();
    const size_t n = v.size() * sizeof(float);
    hash = fnv1a(v.data(), n, hash);
    writeAll(fd.get(), v.data(), n, tmp);
#else
    buf.floats(v);
    flush();
#endif
  }
};

OptimizerStateWriter::OptimizerStateWriter(const std::string& path, const OptimizerOptions& options,
                                           uint64_t steps, std::vector<size_t> numels)
    : impl_(std::make_unique<Impl>()) {
  C10D_CHECK_ARG(!path.empty(), "OptimizerStateWriter: empty path");
  options.validate();
  Impl& m = *impl_;
  m.path = path;
  m.tmp = path + ".tmp";
  m.numels = std::move(numels);
  const std::vector<std::string> slotNames = options.slotNames();
  m.numSlots = slotNames.size();
  Writer& w = m.buf;
  w.bytes(kMagic, sizeof(kMagic));
  w.u32(kVersion);
  w.u64(0);  // fileBytes, below
  w.u32(static_cast<uint32_t>(options.algorithm));
  w.f64(options.lr);
  w.f64(options.momentum);
  w.f64(options.dampening);
  w.u8(options.nesterov ? 1 : 0);
  w.f64(options.weightDecay);
  w.f64(options.beta1);
  w.f64(options.beta2);
  w.f64(options.eps);
  w.u64(steps);
  w.u32(static_cast<uint32_t>(slotNames.size()));
  for (const std::string& name : slotNames) {
    w.u32(static_cast<uint32_t>(name.size()));
    w.bytes(name.data(), name.size());
  }
  w.u64(m.numels.size());
  uint64_t fileBytes = w.buffer().size() + kChecksumBytes;
  for (size_t n : m.numels) fileBytes += 8 + m.numSlots * n * sizeof(float);
  for (int i = 0; i < 8; ++i) {
    w.buffer()[sizeof(kMagic) + 4 + i] =
        static_cast<char>(static_cast<uint8_t>(fileBytes >> (8 * i)));
  }
  m.fd = Fd(::open(m.tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!m.fd.valid()) {
    const int err = errno;
    C10D_THROW(Error, "OptimizerState::save: cannot create '", m.tmp,
               "': ", detail::errnoString(err));
  }
}

OptimizerStateWriter::~OptimizerStateWriter() {
  if (impl_ && !impl_->done) ::unlink(impl_->tmp.c_str());
}

void OptimizerStateWriter::add(const std::vector<std::vector<float>>& slots) {
  Impl& m = *impl_;
  C10D_CHECK_ARG(!m.done && m.next < m.numels.size(), "OptimizerStateWriter('", m.path,
                 "'): more parameters than the ", m.numels.size(), " announced");
  const size_t numel = m.numels[m.next];
  C10D_CHECK_ARG(slots.size() == m.numSlots || (numel == 0 && slots.empty()),
                 "OptimizerStateWriter('", m.path, "'): parameter ", m.next, " has ", slots.size(),
                 " slots, expected ", m.numSlots);
  for (const auto& slot : slots) {
    C10D_CHECK_ARG(slot.size() == numel, "OptimizerStateWriter('", m.path, "'): parameter ", m.next,
                   " has a slot of ", slot.size(), " floats, announced ", numel);
  }
  m.buf.u64(numel);
  for (const auto& slot : slots) m.floats(slot);
  m.flush();
  ++m.next;
}

void OptimizerStateWriter::finish() {
  Impl& m = *impl_;
  C10D_CHECK_ARG(!m.done && m.next == m.numels.size(), "OptimizerStateWriter('", m.path,
                 "'): ", m.next, " of ", m.numels.size(), " parameters written");
  const uint64_t sum = fnv1a(m.buf.buffer().data(), m.buf.buffer().size(), m.hash);
  m.buf.u64(sum);
  writeAll(m.fd.get(), m.buf.buffer().data(), m.buf.buffer().size(), m.tmp);
  m.buf.buffer().clear();
  if (::fsync(m.fd.get()) != 0) {
    const int err = errno;
    C10D_THROW(Error, "OptimizerState::save: fsync of '", m.tmp,
               "' failed: ", detail::errnoString(err));
  }
  m.fd = Fd();
  if (::rename(m.tmp.c_str(), m.path.c_str()) != 0) {
    const int err = errno;
    C10D_THROW(Error, "OptimizerState::save: renaming '", m.tmp, "' to '", m.path,
               "' failed: ", detail::errnoString(err));
  }
  m.done = true;
  // Persist the rename itself (best effort: some file systems refuse fsync on a directory).
  const size_t slash = m.path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : m.path.substr(0, slash + 1);
  Fd dirFd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dirFd.valid()) (void)::fsync(dirFd.get());
}

OptimizerState OptimizerState::load(const std::string& path) {
  const std::string data = readAll(path);
  const std::string where = "OptimizerState::load('" + path + "'): ";
  checkFixedHeader(data, data.size(), path, where);
  const size_t body = data.size() - kChecksumBytes;
  Reader tail(data, data.size(), path);
  tail.str(body);
  const uint64_t stored = tail.u64();
  const uint64_t actual = checksum(data.data(), body);
  C10D_CHECK_ARG(stored == actual, where, "bad checksum (stored ", stored, ", computed ", actual,
                 "): the file is corrupt");

  Reader r(data, body, path);
  r.str(kHeaderBytes);
  OptimizerState st = parseHeader(r, where);
  const uint64_t numParams = r.u64();
  // Each parameter takes at least its 8-byte numel: bounds the allocation below.
  C10D_CHECK_ARG(numParams <= r.remaining() / 8, where, "corrupt: ", numParams, " parameters in ",
                 r.remaining(), " bytes");
  st.slots.resize(numParams);
  for (uint64_t p = 0; p < numParams; ++p) {
    const uint64_t numel = r.u64();
    for (size_t k = 0; k < st.slotNames.size(); ++k) {
      st.slots[p].push_back(r.floats(numel, "a parameter's slot"));
    }
  }
  C10D_CHECK_ARG(r.remaining() == 0, where, "corrupt: ", r.remaining(),
                 " unread bytes before the checksum");
  return st;
}

}  // namespace optim
C10D_NAMESPACE_END
}  // namespace c10d

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace optim {

OptimizerStateFile::OptimizerStateFile(const std::string& path, bool verifyChecksum)
    : path_(path), where_("OptimizerState::load('" + path + "'): ") {
  fd_ = Fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd_.valid()) {
    const int err = errno;
    C10D_THROW(InvalidArgument, where_, "cannot open: ", detail::errnoString(err));
  }
  struct stat info {};
  C10D_SYSCHECK(::fstat(fd_.get(), &info), "(", path, ")");
  const auto size = static_cast<size_t>(info.st_size);
  // The same checks, in the same order, as load().
  std::string head(std::min<size_t>(size, kPrefixBytes), '\0');
  readAt(0, head.data(), head.size());
  checkFixedHeader(head, size, path, where_);
  const size_t body = size - kChecksumBytes;
  if (verifyChecksum) {
    uint64_t stored = 0;
    unsigned char tail[kChecksumBytes];
    readAt(body, tail, sizeof(tail));
    for (size_t i = 0; i < sizeof(tail); ++i) stored |= static_cast<uint64_t>(tail[i]) << (8 * i);
    uint64_t actual = kFnv1aShortBasis;
    std::vector<char> chunk(size_t{1} << 20);
    for (size_t at = 0; at < body; at += chunk.size()) {
      const size_t n = std::min(chunk.size(), body - at);
      readAt(at, chunk.data(), n);
      actual = fnv1a(chunk.data(), n, actual);
    }
    C10D_CHECK_ARG(stored == actual, where_, "bad checksum (stored ", stored, ", computed ", actual,
                   "): the file is corrupt");
  }
  Reader r(head, std::min(head.size(), body), path);
  r.str(kHeaderBytes);
  header_ = parseHeader(r, where_);
  const uint64_t numParams = r.u64();
  C10D_CHECK_ARG(numParams <= (body - r.pos()) / 8, where_, "corrupt: ", numParams,
                 " parameters in ", body - r.pos(), " bytes");
  // Each parameter: its numel, then its slots. Only the numels are read here.
  const size_t k = header_.slotNames.size();
  size_t at = r.pos();
  for (uint64_t p = 0; p < numParams; ++p) {
    C10D_CHECK_ARG(8 <= body - at, where_, "corrupt: a 64-bit field at byte ", at,
                   " runs past the data (", body, " bytes)");
    unsigned char bytes[8];
    readAt(at, bytes, sizeof(bytes));
    uint64_t numel = 0;
    for (size_t i = 0; i < sizeof(bytes); ++i) numel |= static_cast<uint64_t>(bytes[i]) << (8 * i);
    at += 8;
    C10D_CHECK_ARG(k == 0 || numel <= (body - at) / 4 / k, where_,
                   "corrupt: a parameter's slot claims ", numel, " floats at byte ", at,
                   ", but only ", body - at, " bytes remain");
    numels_.push_back(numel);
    offsets_.push_back(at);
    at += k * numel * sizeof(float);
  }
  C10D_CHECK_ARG(at == body, where_, "corrupt: ", body - at, " unread bytes before the checksum");
}

void OptimizerStateFile::checkCompatible(const OptimizerOptions& options,
                                         const std::vector<size_t>& numels, const std::string& who,
                                         const std::vector<std::string>& names) const {
  const size_t k = header_.slotNames.size();
  checkState(
      header_, numels_.size(), [k](size_t) { return k; },
      [this](size_t p, size_t) { return numels_[p]; }, options, numels, who, names);
}

void OptimizerStateFile::read(size_t param, size_t slot, size_t pos, size_t count,
                              float* dst) const {
  C10D_CHECK_ARG(param < numels_.size() && slot < header_.slotNames.size() &&
                     pos <= numels_[param] && count <= numels_[param] - pos,
                 where_, "elements [", pos, ", ", pos + count, ") of parameter ", param, "'s slot ",
                 slot, " are not in the file");
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "the file is little-endian");
  readAt(offsets_[param] + (slot * numels_[param] + pos) * sizeof(float), dst,
         count * sizeof(float));
}

void OptimizerStateFile::readAt(size_t offset, void* dst, size_t n) const {
  const int err = preadFully(fd_.get(), dst, n, offset);
  C10D_CHECK_ARG(err <= 0, where_, "read failed: ", detail::errnoString(err));
  C10D_CHECK_ARG(err == 0, where_, "truncated while reading ", n, " bytes at byte ", offset);
}

}  // namespace optim
C10D_NAMESPACE_END
}  // namespace c10d
