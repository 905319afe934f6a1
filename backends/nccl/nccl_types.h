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

#include <cstdint>

#include "c10d/reduce_op.h"
#include "c10d/types.h"

namespace c10d {
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

}  // namespace nccl
}  // namespace c10d
