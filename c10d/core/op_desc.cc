#include "c10d/core/op_desc.h"

#include <cstdio>
#include <cstring>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

OpDesc::Wire OpDesc::wire() const {
  Wire w;
  std::memset(&w, 0, sizeof(w));  // padding-free, but keep every byte defined for memcmp
  w.collSeq = collSeq;
  w.count = count;
  w.tensors = static_cast<uint32_t>(tensors);
  w.parts = partsHash_;
  w.op = static_cast<uint8_t>(op);
  w.dtype = static_cast<uint8_t>(dtype);
  w.reduceOp = hasReduceOp ? static_cast<uint8_t>(reduceOp) : 0xff;
  w.root = root;
  return w;
}

OpDesc OpDesc::fromWire(const Wire& w) {
  OpDesc d;
  d.collSeq = w.collSeq;
  d.seq = w.collSeq;
  d.count = w.count;
  d.tensors = w.tensors;
  d.partsHash_ = w.parts;
  d.op =
      w.op <= static_cast<uint8_t>(OpType::kUnknown) ? static_cast<OpType>(w.op) : OpType::kUnknown;
  d.dtype = w.dtype < kNumDataTypes ? static_cast<DataType>(w.dtype) : DataType::kUInt8;
  d.hasReduceOp = w.reduceOp < ReduceOp::kNumKinds;
  d.reduceOp = d.hasReduceOp ? static_cast<ReduceOp::Kind>(w.reduceOp) : ReduceOp::SUM;
  d.root = w.root;
  return d;
}

bool operator==(const OpDesc::Wire& a, const OpDesc::Wire& b) {
  return std::memcmp(&a, &b, sizeof(OpDesc::Wire)) == 0;
}

bool onlyPartsDiffer(const OpDesc::Wire& a, const OpDesc::Wire& b) {
  if (a.parts == b.parts) return false;
  OpDesc::Wire c = b;
  c.parts = a.parts;
  return a == c;
}

uint64_t OpDesc::hash(const Wire& w) {
  uint64_t v[4];
  std::memcpy(v, &w, sizeof(v));
  // Each word through its own odd multiplier (a bijection; the four are independent, so they
  // overlap in the pipeline), rotated apart, then one splitmix64 finalizer over the combination.
  // Runs on every shm barrier: a few nanoseconds, not a chain of four full mixes.
  auto rotl = [](uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
  uint64_t h = (v[0] * 0x9e3779b97f4a7c15ULL) ^ rotl(v[1] * 0xc2b2ae3d27d4eb4fULL, 17) ^
               rotl(v[2] * 0x165667b19e3779f9ULL, 31) ^ rotl(v[3] * 0xd6e8feb86659fd93ULL, 47);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  h ^= h >> 31;
  return h;
}

uint64_t OpDesc::hash() const {
  return hash(wire());
}

const std::vector<uint64_t>& OpDesc::sendCounts() const {
  static const std::vector<uint64_t> kNone;
  return lists_ ? lists_->send : kNone;
}

const std::vector<uint64_t>& OpDesc::recvCounts() const {
  static const std::vector<uint64_t> kNone;
  return lists_ ? lists_->recv : kNone;
}

void OpDesc::setSplits(std::vector<uint64_t> send, std::vector<uint64_t> recv) {
  lists_ = std::make_shared<const Lists>(Lists{std::move(send), std::move(recv), {}});
}

const std::vector<uint64_t>& OpDesc::parts() const {
  static const std::vector<uint64_t> kNone;
  return lists_ ? lists_->parts : kNone;
}

void OpDesc::setParts(std::vector<uint64_t> parts) {
  if (parts.empty()) return;  // no tensors: nothing to lay out
  // Each count through an odd multiplier, folded into a running value that is mixed at every step
  // (so order matters): equal lists hash equally, and a swap or a moved boundary changes it (the
  // count and the number of tensors are compared beside it). A few instructions a tensor.
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  for (uint64_t v : parts) {
    h = (h ^ (v * 0xc2b2ae3d27d4eb4fULL)) * 0x165667b19e3779f9ULL;
    h ^= h >> 29;
  }
  partsHash_ = static_cast<uint32_t>(h ^ (h >> 32));
  if (partsHash_ == 0) partsHash_ = 1;  // 0 means "no parts"
  tensors = parts.size();
  lists_ = std::make_shared<const Lists>(Lists{{}, {}, std::move(parts)});
}

namespace {

std::string list(const std::vector<uint64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(v[i]);
  }
  return s + "]";
}

}  // namespace

std::string OpDesc::describe() const {
  // "3 tensors, float x 300 in all", then the sizes, or their hash when only that is known (a
  // peer's Wire).
  auto coalesced = [this] {
    std::string c = detail::str(tensors, " tensors, ", toString(dtype), " x ", count, " in all");
    if (!parts().empty()) {
      c += ", sizes " + list(parts());
    } else if (partsHash_ != 0) {
      char hex[16];
      std::snprintf(hex, sizeof(hex), "%08x", partsHash_);
      c += detail::str(", sizes hashing to ", hex);
    }
    return c;
  };
  std::string s;
  switch (op) {
    case OpType::kBarrier:
      return "no data";
    case OpType::kAlltoall:
    case OpType::kAlltoallSingle:
      s = toString(dtype);
      if (!sendCounts().empty()) s += ", sends " + list(sendCounts());
      if (!recvCounts().empty()) s += ", receives " + list(recvCounts());
      return s;
    case OpType::kAllreduceCoalesced:
      s = coalesced();
      break;
    case OpType::kAllgather:
    case OpType::kAllgatherIntoTensor:
    case OpType::kGather:
    case OpType::kScatter:
    case OpType::kReduceScatter:
    case OpType::kReduceScatterTensor:
      s = tensors > 0 ? coalesced() + " per rank"
                      : detail::str(toString(dtype), " x ", count, " per rank");
      break;
    default:
      s = tensors > 0 ? coalesced() : detail::str(toString(dtype), " x ", count);
      break;
  }
  if (root >= 0) s += detail::str(", root ", root);
  if (peer >= 0) s += detail::str(", peer ", peer);
  if (hasReduceOp) s += detail::str(", ", toString(reduceOp));
  return s;
}

std::string OpDesc::describeWithOp() const {
  return detail::str(toString(op), " (", describe(), ")");
}

std::string mismatchMessage(const std::string& group, int myRank, const OpDesc& mine, int theirRank,
                            const OpDesc& theirs) {
  const bool meFirst = myRank < theirRank;
  const OpDesc& a = meFirst ? mine : theirs;
  const OpDesc& b = meFirst ? theirs : mine;
  const int ra = meFirst ? myRank : theirRank;
  const int rb = meFirst ? theirRank : myRank;
  std::string head = detail::str(toString(mine.op), " #", mine.seq, " in group ", group, ": ");
  if (a.collSeq != b.collSeq) {
    return head + detail::str("ranks are at different collectives: rank ", ra, " is at its ",
                              "collective #", a.collSeq, " (", a.describeWithOp(), "); rank ", rb,
                              " at its collective #", b.collSeq, " (", b.describeWithOp(),
                              "): a rank skipped or added a collective");
  }
  if (a.op != b.op) {
    return head + detail::str("rank ", ra, " called ", a.describeWithOp(), "; rank ", rb,
                              " called ", b.describeWithOp());
  }
  return head +
         detail::str("rank ", ra, " has ", a.describe(), "; rank ", rb, " has ", b.describe());
}

std::string partsMismatchMessage(const std::string& group, int myRank, const OpDesc& mine,
                                 int theirRank, const std::vector<uint64_t>& theirParts) {
  const bool meFirst = myRank < theirRank;
  const std::vector<uint64_t>& a = meFirst ? mine.parts() : theirParts;
  const std::vector<uint64_t>& b = meFirst ? theirParts : mine.parts();
  const int ra = meFirst ? myRank : theirRank;
  const int rb = meFirst ? theirRank : myRank;
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  const char* dt = toString(mine.dtype);
  auto at = [&](const std::vector<uint64_t>& v) {
    return i < v.size() ? detail::str(dt, " x ", v[i]) : std::string("no such tensor");
  };
  OpDesc shape;  // the op without this rank's sizes: both are listed
  shape.op = mine.op;
  shape.dtype = mine.dtype;
  shape.count = mine.count;
  shape.tensors = mine.tensors;
  shape.root = mine.root;
  shape.reduceOp = mine.reduceOp;
  shape.hasReduceOp = mine.hasReduceOp;
  return detail::str(toString(mine.op), " #", mine.seq, " in group ", group, ": tensor ", i,
                     " differs: rank ", ra, " has ", at(a), ", rank ", rb, " has ", at(b),
                     " (sizes: rank ", ra, " ", list(a), ", rank ", rb, " ", list(b), "; ",
                     shape.describe(), ")");
}

CollectiveMismatchError mismatchError(const std::string& group, int myRank, const OpDesc& mine,
                                      int theirRank, const OpDesc& theirs,
                                      const std::string& suffix) {
  return CollectiveMismatchError(mismatchMessage(group, myRank, mine, theirRank, theirs) + suffix,
                                 mine.collSeq != theirs.collSeq);
}

C10D_NAMESPACE_END
}  // namespace c10d
