// The table each perf binary fills in, nccl-tests style: one short file per collective
// (perf/<op>_perf.cc) describes its sizes, data, bandwidth factor and how to run it; the shared
// driver (perf/common/driver.cc) does everything else: flags, rendezvous, timing, checking,
// the nccl-tests table and the JSON file.
//
// Conventions (nccl-tests'): `count` below is the element count the row's size gives
// (size / sizeof(type)); counts() turns it into the buffers' element counts. The driver
// allocates the send and receive buffers, points RunArgs at them (for in-place runs the input
// lives inside the receive buffer, at sendInplaceOffset * rank), and checks the receive buffer at
// recvInplaceOffset * rank (in-place) or 0 against `expected`.
#pragma once

#include <cstddef>
#include <memory>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"
#include "c10d/core/process_group.h"
#include "c10d/core/reduce_op.h"
#include "c10d/core/work.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

// Element counts of one row, as nccl-tests' getCollByteCount returns them.
struct CollCounts {
  size_t sendCount = 0;          // elements in the send buffer
  size_t recvCount = 0;          // elements in the receive buffer (and `expected`)
  size_t paramCount = 0;         // the count argument of the op (the table's "count" column)
  size_t sendInplaceOffset = 0;  // in-place: input at recv + sendInplaceOffset * rank
  size_t recvInplaceOffset = 0;  // in-place: output at recv + recvInplaceOffset * rank
};

// Everything one call of the collective needs. Pointers are device pointers for --device cuda.
struct RunArgs {
  ProcessGroup* pg = nullptr;
  void* send = nullptr;  // input (in-place: inside recv)
  void* recv = nullptr;  // output
  size_t count = 0;      // CollCounts::paramCount
  DataType dtype = DataType::kFloat32;
  ReduceOp op;
  int root = 0;
  bool inPlace = false;
  Device device;

  Tensor tensor(void* p, size_t n) const { return Tensor(p, n, dtype, device); }
  // p + n elements.
  void* at(void* p, size_t n) const { return static_cast<char*>(p) + n * elementSize(dtype); }
  // Copies n elements on the buffers' device (for APIs that are in-place only).
  void copy(void* dst, const void* src, size_t n) const;
};

// What initData() fills, in host memory (the driver moves it to the device). `recv` is zeroed
// before the call; `input` is the send buffer, or the in-place input inside `recv`.
struct InitArgs {
  DataType dtype = DataType::kFloat32;
  ReduceOp::Kind op = ReduceOp::SUM;
  int root = 0;
  int seed = 0;  // differs per validation pass
  bool inPlace = false;
  int rank = 0;
  int nranks = 1;
  CollCounts counts;
  void* input = nullptr;     // counts.sendCount elements
  void* recv = nullptr;      // counts.recvCount elements (zeroed)
  void* expected = nullptr;  // counts.recvCount elements: what recv must hold afterwards
};

struct Collective {
  const char* name;   // "AllReduce"
  bool rooted;        // has a root: loops over -r (all roots for -r -1); else root -1
  bool reduces;       // applies -o: needs ProcessGroup::supports(op, dtype, device)
  bool opColumn;      // prints (and loops over) -o's ops; else "none"
  bool checkInPlace;  // nccl-tests does not check in-place alltoall / sendrecv ("N/A")
  CollCounts (*counts)(size_t count, size_t eltSize, int nranks);
  // algbw = bytes moved per rank's view / time (GB = 1e9); busbw = algbw * bus factor.
  void (*bandwidth)(size_t count, size_t typeSize, double sec, int nranks, double* algBw,
                    double* busBw);
  void (*initData)(const InitArgs& args);
  std::shared_ptr<Work> (*run)(const RunArgs& args);
};

// The perf binary's main(): see driver.cc. Returns the process exit code (0, or 1 when any
// element was wrong or anything failed; 2 for bad flags).
int perfMain(int argc, char** argv, const Collective& coll);

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
