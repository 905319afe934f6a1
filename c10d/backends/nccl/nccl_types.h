// How c10d's data types and reduce ops map onto NCCL's. Pure functions; private to the backend
// (includes nccl.h).
//
//   c10d      NCCL            c10d op      NCCL (bool tensors in brackets)
//   f32       ncclFloat32     SUM          ncclSum      [ncclMax: logical or]
//   f64       ncclFloat64     PRODUCT      ncclProd     [ncclMin: logical and]
//   f16       ncclFloat16     MIN          ncclMin
//   bf16      ncclBfloat16    MAX          ncclMax
//   i8        ncclInt8        AVG          ncclAvg      (integers: sum, then divide toward zero;
//   u8        ncclUint8                                  not for bool)
//   i32       ncclInt32       PREMUL_SUM   ncclRedOpCreatePreMulSum (floating types only)
//   i64       ncclInt64       BAND/BOR/BXOR  refused: NCCL has no bitwise reductions
//   bool      ncclUint8 (0/1 bytes)
#pragma once

#include <nccl.h>

#include <cstddef>
#include <cstdint>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"
#include "c10d/core/reduce_op.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace nccl {

ncclDataType_t toNcclDataType(DataType t);

// Whether the backend runs `op` on `dtype` (the table above). Device-independent.
bool supportsReduce(ReduceOp::Kind op, DataType dtype);

// The built-in NCCL op for `op` on `dtype`; PREMUL_SUM and the bitwise ops throw InvalidArgument
// (PREMUL_SUM is made per call with makePreMulScalar + ncclRedOpCreatePreMulSum).
ncclRedOp_t toNcclRedOp(ReduceOp::Kind op, DataType dtype);

// PREMUL_SUM's scale as NCCL wants it: one element of `dtype` (f16/bf16 bits, float or double)
// in host memory, for ncclScalarHostImmediate. Floating types only.
struct PreMulScalar {
  alignas(8) unsigned char bytes[8] = {0};
};
PreMulScalar makePreMulScalar(double scale, DataType dtype);

// On a one-rank communicator NCCL does not reduce: a reduction is a copy, except where the op
// scales (PREMUL_SUM; AVG on floating types, a PREMUL_SUM by 1/ranks inside NCCL), which runs
// NCCL's one-rank kernel. That kernel (seen in NCCL 2.28.9 on an H100; other versions not
// checked) gives each of min(32, ceil(bytes / 16 KiB)) blocks count/blocks elements rounded up
// to whole 16-byte packs, and so leaves out the last elements when count/blocks already is a
// whole number of packs: 1000003 doubles lose their last 3. Whether `op` on `dtype` takes that
// kernel:
bool scalesOnOneRank(ReduceOp::Kind op, DataType dtype);
// Whether that kernel, as described, covers all `count` elements of `elementBytes` each.
bool oneRankKernelCovers(size_t count, size_t elementBytes);
// Where to split `count` elements into two calls that the kernel covers completely: `count`
// where one call does; else the largest head whose tail (count - head, at most 16 KiB, which
// one block covers) is as short as it can be.
size_t oneRankHead(size_t count, size_t elementBytes);

}  // namespace nccl
C10D_NAMESPACE_END
}  // namespace c10d
