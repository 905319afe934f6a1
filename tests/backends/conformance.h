// Backend conformance suite: shared pieces.
//
// The suite is written once and run against every backend in conformanceBackends(): a
// BackendParam names the registry backend and the device its tensors live on, with the device's
// allocation and host<->device copies (CPU: plain host memory; a CUDA backend such as NCCL plugs
// in its cudaMalloc/cudaMemcpy hooks). Every test forks real ranks on localhost
// (tests/common/multiproc.h) that rendezvous over a FileStore and build the group through the
// registry, so the tests see the backend exactly as users do.
//
// Values and references: every (seed, element) gets its own value, exactly representable in the
// dtype: value = quantum * (lowest + (seed * stride + i) mod span), span a power of two and stride
// odd, so two seeds (ranks, roots, senders) less than `span` apart differ at every element and two
// elements of one seed less than `span` apart differ: a slot delivered to the wrong rank or at the
// wrong offset never passes (bool, with two values, uses hashed bits instead). Data movement uses
// the dtype's full range (movementValue: int8 spans 256 values, f16 4096); summed inputs
// (inputValue) use a range in which every partial sum of up to 8 ranks is exact (int8 [-16, 15],
// f16 halves in [-128, 127.5], f32 quarters), so results are exact whatever the reduction order.
// reference() reduces those in double / int64 / bool logic independently of the library's
// kernels; expectValues() compares exactly (floating AVG: within one ulp, since the division
// rounds).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/core/process_group.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

struct BackendParam {
  std::string backend;  // registry name
  // Distinguishes several params of one backend in test names ("tcp" -> "verbs_tcp_cpu").
  std::string variant;
  // Passed as ProcessGroup::Options::config (and InitOptions::config): backend settings, e.g.
  // {"C10D_TRANSPORT", "tcp"} for verbs.
  std::map<std::string, std::string> config;
  Device device = Device::cpu();
  // Device memory hooks; unset for CPU (host memory is the device memory).
  std::function<void*(size_t bytes)> alloc;
  std::function<void(void*)> free;
  std::function<void(void* dst, const void* src, size_t bytes)> toDevice;
  std::function<void(void* dst, const void* src, size_t bytes)> toHost;
  // Largest world the backend can run here; 0 = any. (nccl: one rank per GPU, all on cuda:0 in
  // these suites, so 1; multi-GPU worlds are in nccl_gpu_test.cc.)
  int maxWorldSize = 0;

  std::string label() const;  // "gloo_cpu", "verbs_tcp_cpu"
};

// gtest prints parameters with this (ADL) instead of their bytes.
inline void PrintTo(const BackendParam& p, std::ostream* os) {
  *os << p.label();
}

// Backends built into this library that the suite runs against: gloo, verbs over its default
// transport (shm on one host) and verbs over tcp, on CPU; each only when registered.
std::vector<BackendParam> conformanceBackends();
// The backends above that can run `worldSize` ranks.
std::vector<BackendParam> conformanceBackends(int worldSize);
// Every (backend, world size) pair the parameterized suites run: each of `worldSizes` that the
// backend's maxWorldSize allows.
std::vector<std::tuple<BackendParam, int>> conformanceCases(const std::vector<int>& worldSizes);
// The number of CUDA devices, probed in a forked child so that this process never initialises
// CUDA (CUDA does not survive fork(): ranks forked afterwards could not use it). 0 when the build
// has no CUDA backend or there is no device.
int cudaDevicesForked();

// gtest printer for parameter names.
std::string paramName(const BackendParam& p, int worldSize);

// A tensor on the param's device with a host mirror. host() is what tests read and write;
// upload()/download() move it (no-ops on CPU, where they are the same memory).
class Buffer {
 public:
  Buffer(const BackendParam& p, size_t numel, DataType dtype);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept;

  Tensor tensor() const;
  uint8_t* host() { return reinterpret_cast<uint8_t*>(host_.data()); }
  size_t numel() const { return numel_; }
  DataType dtype() const { return dtype_; }
  void upload();
  void download();

  double get(size_t i) const;
  void set(size_t i, double v);

 private:
  const BackendParam* p_;
  size_t numel_;
  DataType dtype_;
  std::vector<uint64_t> host_;
  void* dev_ = nullptr;  // null on CPU
};

// Group over a FileStore at `storePath` (shared by `size` ranks) through the registry.
std::shared_ptr<ProcessGroup> makeGroup(const BackendParam& p, const std::string& storePath,
                                        int rank, int size,
                                        Milliseconds timeout = Milliseconds(60000));

// Every dtype, and the ops the group supports on it.
std::vector<DataType> allDataTypes();
std::vector<ReduceOp> opsFor(const ProcessGroup& pg, DataType dtype, const Device& dev);

// Input value of element i on `rank` for a reduction with `op` (`rank` may be any seed >= 0, e.g.
// a broadcast root's 42). Exactly representable in dtype; sums of up to 8 ranks stay exact.
double inputValue(DataType dtype, const ReduceOp& op, int rank, size_t i);
// Value of element i of the data seeded `seed` for data movement (no arithmetic): the dtype's full
// exactly representable range, distinct per (seed, element) as described above.
double movementValue(DataType dtype, int seed, size_t i);
// `v` as an element of dtype holds it: rounded to nearest even for floats (NaN and the sign of
// zero kept), truncated for integers.
double storedValue(DataType dtype, double v);
// The scale used for PREMUL_SUM on dtype.
double premulScale(DataType dtype);
// Reference reduction over ranks [0, size) of element i.
double reference(DataType dtype, const ReduceOp& op, int size, size_t i);

// Fills buf with inputValue(rank, offset + i).
void fillInput(Buffer& buf, const ReduceOp& op, int rank, size_t offset = 0);
// Fills buf with movementValue(seed, offset + i).
void fillPattern(Buffer& buf, int seed, size_t offset = 0);
// Checks buf[i] == want(i) for every i (first mismatch only; NaN matches NaN); `what` names the
// case. `ulps` > 0 accepts that many ulps of the dtype (relative to want(i)).
void expectValues(const Buffer& buf, const std::function<double(size_t)>& want,
                  const std::string& what, int worldSize, double ulps = 0);
// The ulps expectValues() must allow for `op`'s results on dtype: 1 for floating AVG (a rounded
// division after an exact sum), else 0.
double ulpsTolerance(DataType dtype, const ReduceOp& op);

// Runs every collective x dtype x supported op for each count in `counts` (one group, this rank).
struct SweepOptions {
  std::vector<size_t> counts{0, 1, 7};
  std::vector<DataType> dtypes;  // empty: every dtype
  bool reductions = true;
  bool dataMovement = true;
  bool pointToPoint = true;
  // Only these (dtype, op) pairs (empty: all).
  std::vector<std::pair<DataType, ReduceOp::Kind>> only;
};
void runSweep(ProcessGroup& pg, const BackendParam& p, const SweepOptions& opts);

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
