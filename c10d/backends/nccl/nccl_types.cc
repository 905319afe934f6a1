#include "c10d/backends/nccl/nccl_types.h"

#include <algorithm>
#include <cstring>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

ncclDataType_t toNcclDataType(DataType t) {
  switch (t) {
    case DataType::kFloat32:
      return ncclFloat32;
    case DataType::kFloat64:
      return ncclFloat64;
    case DataType::kFloat16:
      return ncclFloat16;
    case DataType::kBFloat16:
      return ncclBfloat16;
    case DataType::kInt8:
      return ncclInt8;
    case DataType::kUInt8:
    case DataType::kBool:
      return ncclUint8;
    case DataType::kInt32:
      return ncclInt32;
    case DataType::kInt64:
      return ncclInt64;
  }
  C10D_THROW(InvalidArgument, "nccl: invalid dtype ", static_cast<int>(t));
}

bool supportsReduce(ReduceOp::Kind op, DataType dtype) {
  switch (op) {
    case ReduceOp::SUM:
    case ReduceOp::PRODUCT:
    case ReduceOp::MIN:
    case ReduceOp::MAX:
      return true;
    case ReduceOp::AVG:
      return dtype != DataType::kBool;
    case ReduceOp::PREMUL_SUM:
      return isFloatingPoint(dtype);
    case ReduceOp::BAND:
    case ReduceOp::BOR:
    case ReduceOp::BXOR:
      return false;
  }
  return false;
}

ncclRedOp_t toNcclRedOp(ReduceOp::Kind op, DataType dtype) {
  C10D_CHECK_ARG(supportsReduce(op, dtype) && op != ReduceOp::PREMUL_SUM, "nccl: reduce op ",
                 toString(op), " on ", toString(dtype), " has no built-in NCCL op");
  const bool isBool = dtype == DataType::kBool;
  switch (op) {
    case ReduceOp::SUM:
      return isBool ? ncclMax : ncclSum;
    case ReduceOp::PRODUCT:
      return isBool ? ncclMin : ncclProd;
    case ReduceOp::MIN:
      return ncclMin;
    case ReduceOp::MAX:
      return ncclMax;
    case ReduceOp::AVG:
      return ncclAvg;
    default:
      break;
  }
  C10D_THROW(InvalidArgument, "nccl: reduce op ", toString(op), " has no NCCL equivalent");
}

bool scalesOnOneRank(ReduceOp::Kind op, DataType dtype) {
  return op == ReduceOp::PREMUL_SUM || (op == ReduceOp::AVG && isFloatingPoint(dtype));
}

bool oneRankKernelCovers(size_t count, size_t elementBytes) {
  constexpr size_t kPackBytes = 16, kBlockBytes = 16 << 10, kMaxBlocks = 32;
  if (count == 0 || elementBytes == 0 || elementBytes > kPackBytes) return true;
  const size_t pack = kPackBytes / elementBytes;
  const size_t blocks = std::min(
      kMaxBlocks, std::max<size_t>(1, (count * elementBytes + kBlockBytes - 1) / kBlockBytes));
  const size_t perBlock = (count / blocks + pack - 1) / pack * pack;
  return perBlock * blocks >= count;
}

size_t oneRankHead(size_t count, size_t elementBytes) {
  if (oneRankKernelCovers(count, elementBytes)) return count;
  // A tail of at most 16 KiB is one block, which the kernel always covers.
  const size_t maxTail = (16 << 10) / elementBytes;
  for (size_t tail = 1; tail <= maxTail && tail < count; ++tail) {
    if (oneRankKernelCovers(count - tail, elementBytes)) return count - tail;
  }
  C10D_THROW(Error, "nccl: no split of ", count, " elements of ", elementBytes,
             " bytes that NCCL's one-rank kernel covers");
}

PreMulScalar makePreMulScalar(double scale, DataType dtype) {
  PreMulScalar s;
  switch (dtype) {
    case DataType::kFloat32: {
      const float f = static_cast<float>(scale);
      std::memcpy(s.bytes, &f, sizeof(f));
      return s;
    }
    case DataType::kFloat64:
      std::memcpy(s.bytes, &scale, sizeof(scale));
      return s;
    case DataType::kFloat16: {
      const uint16_t h = floatToHalf(static_cast<float>(scale));
      std::memcpy(s.bytes, &h, sizeof(h));
      return s;
    }
    case DataType::kBFloat16: {
      const uint16_t b = floatToBf16(static_cast<float>(scale));
      std::memcpy(s.bytes, &b, sizeof(b));
      return s;
    }
    default:
      break;
  }
  C10D_THROW(InvalidArgument, "nccl: PREMUL_SUM needs a floating-point dtype, got ",
             toString(dtype));
}

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
