// Core value types: timeouts, data types, devices and the non-owning Tensor view.
//
// A Tensor is a view: c10d never allocates, frees or resizes the memory behind it. The caller keeps
// that memory alive (and does not touch it) until the Work returned by the op that uses it has
// completed. Only contiguous, dense memory is supported.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

// Timeouts are milliseconds everywhere.
using Milliseconds = std::chrono::milliseconds;
// Torch's default for collectives and stores.
constexpr Milliseconds kDefaultTimeout{30 * 60 * 1000};
// Store operations default to 5 minutes, as torch's TCPStore does.
constexpr Milliseconds kDefaultStoreTimeout{5 * 60 * 1000};
// "Use the timeout you already have": the per-op timeout of a Work, the store's own timeout, or
// the group's default, depending on where it is passed. Never means "forever".
constexpr Milliseconds kUnsetTimeout{-1};

// now + t, saturated (0 .. 100 years) so that huge timeouts (Milliseconds::max()) cannot overflow
// the clock and negative ones mean "now". The one deadline computation of the stores and engines.
inline std::chrono::steady_clock::time_point deadlineAfter(
    std::chrono::steady_clock::time_point now, Milliseconds t) {
  constexpr Milliseconds kCap = std::chrono::hours(24 * 365 * 100);
  return now + (t < Milliseconds(0) ? Milliseconds(0) : (t > kCap ? kCap : t));
}
// steady_clock::now() + t, saturated as above.
inline std::chrono::steady_clock::time_point deadlineAfter(Milliseconds t) {
  return deadlineAfter(std::chrono::steady_clock::now(), t);
}

enum class DataType : uint8_t {
  kFloat32 = 0,
  kFloat64,
  kFloat16,
  kBFloat16,
  kInt8,
  kUInt8,
  kInt32,
  kInt64,
  kBool,
};
constexpr int kNumDataTypes = 9;

// Bytes per element.
size_t elementSize(DataType t);
// Short name as nccl-tests and torch print it: "float", "double", "half", "bfloat16", "int8",
// "uint8", "int32", "int64", "bool".
const char* toString(DataType t);
// Parses the names above (and "f32", "float32", "fp16", ...); throws InvalidArgument otherwise.
DataType parseDataType(const std::string& name);
bool isFloatingPoint(DataType t);
bool isIntegral(DataType t);  // true for the int types and bool

enum class DeviceType : uint8_t { kCPU = 0, kCUDA = 1 };

struct Device {
  DeviceType type = DeviceType::kCPU;
  int index = 0;  // CUDA ordinal; 0 for CPU

  static Device cpu() { return Device{DeviceType::kCPU, 0}; }
  static Device cuda(int i) { return Device{DeviceType::kCUDA, i}; }
  bool isCPU() const { return type == DeviceType::kCPU; }
  bool isCUDA() const { return type == DeviceType::kCUDA; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};
std::string toString(const Device& d);  // "cpu", "cuda:1"

// A non-owning view of `numel` contiguous elements of `dtype` at `data` on `device`.
struct Tensor {
  void* data = nullptr;
  size_t numel = 0;
  DataType dtype = DataType::kFloat32;
  Device device = Device::cpu();

  Tensor() = default;
  Tensor(void* d, size_t n, DataType t, Device dev = Device::cpu())
      : data(d), numel(n), dtype(t), device(dev) {}

  size_t nbytes() const { return numel * elementSize(dtype); }
  template <typename T>
  T* ptr() const {
    return static_cast<T*>(data);
  }
  // The elements [offset, offset + count) as a view of their own.
  Tensor slice(size_t offset, size_t count) const;
};

// Typed convenience constructors: c10d::tensorOf(vec.data(), vec.size()).
template <typename T>
struct DataTypeOf;
template <>
struct DataTypeOf<float> {
  static constexpr DataType value = DataType::kFloat32;
};
template <>
struct DataTypeOf<double> {
  static constexpr DataType value = DataType::kFloat64;
};
template <>
struct DataTypeOf<int8_t> {
  static constexpr DataType value = DataType::kInt8;
};
template <>
struct DataTypeOf<uint8_t> {
  static constexpr DataType value = DataType::kUInt8;
};
template <>
struct DataTypeOf<int32_t> {
  static constexpr DataType value = DataType::kInt32;
};
template <>
struct DataTypeOf<int64_t> {
  static constexpr DataType value = DataType::kInt64;
};
template <>
struct DataTypeOf<bool> {
  static constexpr DataType value = DataType::kBool;
};

template <typename T>
Tensor tensorOf(T* data, size_t numel, Device dev = Device::cpu()) {
  return Tensor(static_cast<void*>(data), numel, DataTypeOf<T>::value, dev);
}

// IEEE half and bfloat16 <-> float conversions (round to nearest even), used by reductions and
// tests.
float halfToFloat(uint16_t h);
uint16_t floatToHalf(float f);
float bf16ToFloat(uint16_t b);
uint16_t floatToBf16(float f);

C10D_NAMESPACE_END
}  // namespace c10d
