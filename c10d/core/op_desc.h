// OpDesc: what one collective looked like as issued on this rank, and the means to compare it
// with another rank's.
//
// Computed once by ProcessGroup's public wrappers (process_group_collectives.cc) after argument
// validation, handed to the backend during its do*() call (ProcessGroup::currentOp()) and stored
// on the returned Work (Work::desc()), so backends can check it against their peers' and other
// code (a flight recorder, a desync report) can record it.
//
// What is compared: the fields every rank of a correct program agrees on (see Wire). Per-peer
// quantities (alltoall splits, the peer of a send) are described but not in the fingerprint: they
// legitimately differ between ranks, and the backends compare them pairwise as they move data.
// A multi-tensor op (allreduce_coalesced, a broadcast or allgather_into_tensor given parts) also
// has its tensors' element counts (parts()): the Wire carries a 32-bit hash of them, so two ranks
// that split the same total differently ([3, 5] against [5, 3]) differ; the lists themselves name
// the difference (partsMismatchMessage) where a backend can fetch the peer's.
//
// Cost: a plain value type of fixed size: copying one is a few word stores (the alltoall splits,
// and parts, the only variable-size parts, are shared and immutable; copying them is one
// reference count).
// Wire is 32 bytes and hash() a few multiplies, so a backend can send or compare one per op.
//
// Threads: none; a value, not shared.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/types.h"
#include "c10d/core/reduce_op.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

enum class OpType : uint8_t {
  kBroadcast,
  kAllreduce,
  kAllreduceCoalesced,
  kReduce,
  kAllgather,
  kAllgatherIntoTensor,
  kGather,
  kScatter,
  kReduceScatter,
  kReduceScatterTensor,
  kAlltoall,
  kAlltoallSingle,
  kBarrier,
  kSend,
  kRecv,
  kRecvAnySource,
  kCoalesced,
  kUnknown,
};
const char* toString(OpType op);

struct OpDesc {
  // The group's sequence number of the op on this rank (counts every op: collectives and p2p).
  uint64_t seq = 0;
  // The number of collectives this rank issued in the group before this one (send/recv not
  // counted): ranks of a correct program agree on it even when they exchange different p2p ops.
  uint64_t collSeq = 0;
  OpType op = OpType::kUnknown;
  DataType dtype = DataType::kFloat32;
  // Meaningful when hasReduceOp (allreduce, allreduce_coalesced, reduce, reduce_scatter*).
  ReduceOp::Kind reduceOp = ReduceOp::SUM;
  bool hasReduceOp = false;
  // Root rank of broadcast/reduce/gather/scatter; -1 for rootless ops.
  int32_t root = -1;
  // Elements per rank and op, as every rank must agree on it:
  //   broadcast, allreduce, reduce: the tensor's numel; allreduce_coalesced: the sum over tensors
  //   allgather*, gather: the input's numel (each rank's block); scatter, reduce_scatter*: the
  //   output's numel (each rank's block); alltoall*, barrier: 0 (per-peer sizes below)
  uint64_t count = 0;
  // A multi-tensor op (see parts()): the number of tensors; else 0.
  uint64_t tensors = 0;
  // send/recv: the peer (-1: any source); else -1.
  int32_t peer = -1;
  // alltoall*: elements sent to / received from each rank (empty for every other op).
  const std::vector<uint64_t>& sendCounts() const;
  const std::vector<uint64_t>& recvCounts() const;
  void setSplits(std::vector<uint64_t> send, std::vector<uint64_t> recv);
  // A multi-tensor op: its tensors' element counts, in order (empty for every other op). setParts
  // also sets `tensors` and the hash the Wire carries (partsHash()).
  const std::vector<uint64_t>& parts() const;
  void setParts(std::vector<uint64_t> parts);
  // A hash of parts(), never 0; 0 when there are none.
  uint32_t partsHash() const { return partsHash_; }

  // The fixed-size encoding of the compared fields (host byte order: a group's ranks share one
  // ABI). Two ranks issued matching collectives iff their Wires are equal bytewise.
  struct Wire {
    uint64_t collSeq;
    uint64_t count;
    uint32_t tensors;
    uint32_t parts;  // partsHash()
    uint8_t op;
    uint8_t dtype;
    uint8_t reduceOp;  // 0xff when the op has none
    uint8_t reserved;
    int32_t root;
  };
  static_assert(sizeof(Wire) == 32, "OpDesc::Wire must stay 32 bytes (it rides in headers)");

  Wire wire() const;
  // The compared fields of a peer's Wire (seq, peer and splits unknown: seq is set to collSeq's
  // value only for messages; describe() leaves out what it does not know).
  static OpDesc fromWire(const Wire& w);
  // A 64-bit hash of wire(): equal descriptions hash equally.
  uint64_t hash() const;
  static uint64_t hash(const Wire& w);

  // "float x 100, root 0, sum"; "float x 100 per rank"; "3 tensors, float x 300 in all, max"
  // (with "sizes [100, 150, 50]" after the dtype when parts() is known);
  // "float, sends [1, 2], receives [2, 1]"; "no data" (barrier). Without the op's name.
  std::string describe() const;
  // "allreduce (float x 100, sum)".
  std::string describeWithOp() const;

 private:
  struct Lists {
    std::vector<uint64_t> send, recv;  // alltoall*
    std::vector<uint64_t> parts;       // multi-tensor ops
  };
  std::shared_ptr<const Lists> lists_;  // null unless alltoall* or a multi-tensor op
  uint32_t partsHash_ = 0;
};

bool operator==(const OpDesc::Wire& a, const OpDesc::Wire& b);
inline bool operator!=(const OpDesc::Wire& a, const OpDesc::Wire& b) {
  return !(a == b);
}
// True when `a` and `b` differ only in their parts hash: the same op, count and number of
// tensors, split differently. Then the difference is named from the lists themselves.
bool onlyPartsDiffer(const OpDesc::Wire& a, const OpDesc::Wire& b);

// The message of a CollectiveMismatchError, e.g.
//   "allreduce #17 in group verbs:world: rank 0 has float x 100, sum; rank 1 has float x 200, sum"
//   "allreduce #3 in group verbs:world: rank 0 called allreduce (float x 8, sum); rank 1 called
//    broadcast (float x 8, root 0)"
// `mine` is this rank's full description (its seq names the op); `theirs` may come from a Wire.
std::string mismatchMessage(const std::string& group, int myRank, const OpDesc& mine, int theirRank,
                            const OpDesc& theirs);
// Two ranks with the same op, count and number of tensors but different tensor sizes, both lists
// known, e.g. "allreduce_coalesced #5 in group gloo:world: tensor 0 differs: rank 0 has float x 3,
// rank 1 has float x 5 (sizes: rank 0 [3, 5], rank 1 [5, 3]; 2 tensors, float x 8 in all, sum)".
std::string partsMismatchMessage(const std::string& group, int myRank, const OpDesc& mine,
                                 int theirRank, const std::vector<uint64_t>& theirParts);
// The error a backend throws for it: mismatchMessage() + `suffix` (who saw it, where), skewed()
// when the two are at different collectives.
CollectiveMismatchError mismatchError(const std::string& group, int myRank, const OpDesc& mine,
                                      int theirRank, const OpDesc& theirs,
                                      const std::string& suffix);

C10D_NAMESPACE_END
}  // namespace c10d
