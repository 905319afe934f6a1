#include "tests/backends/conformance.h"

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "c10d/base/abi.h"
#include "c10d/base/config.h"
#include "c10d/bootstrap/registry.h"
#include "c10d/store/file_store.h"

#if C10D_HAVE_NCCL
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "c10d/backends/nccl/register.h"
#endif

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

std::string BackendParam::label() const {
  return backend + (variant.empty() ? "" : "_" + variant) + "_" +
         (device.isCPU() ? std::string("cpu") : std::string("cuda"));
}

namespace {

BackendParam cpuParam(const std::string& backend, const std::string& variant = "",
                      std::map<std::string, std::string> config = {}) {
  BackendParam p;
  p.backend = backend;
  p.variant = variant;
  p.config = std::move(config);
  p.device = Device::cpu();
  return p;
}

// Whether an RDMA device is present, asked of libibverbs directly (dlopen, as the backend does):
// the ibverbs transport then joins the suite. Here (no RDMA) it is absent and says nothing.
bool rdmaDevicePresent() {
  void* lib = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return false;
  using GetList = void** (*)(int*);
  using FreeList = void (*)(void**);
  auto get = reinterpret_cast<GetList>(dlsym(lib, "ibv_get_device_list"));
  auto release = reinterpret_cast<FreeList>(dlsym(lib, "ibv_free_device_list"));
  int n = 0;
  void** list = get != nullptr ? get(&n) : nullptr;
  if (list != nullptr && release != nullptr) release(list);
  dlclose(lib);
  return list != nullptr && n > 0;
}

}  // namespace

std::vector<BackendParam> conformanceBackends() {
  std::vector<BackendParam> out;
  auto add = [&out](BackendParam p) {
    if (isBackendRegistered(p.backend)) out.push_back(std::move(p));
  };
  add(cpuParam("gloo"));
  add(cpuParam("verbs"));  // default transport: shm (every rank on this host)
  add(cpuParam("verbs", "tcp", {{"C10D_TRANSPORT", "tcp"}}));
  // Every conformance, semantics and mismatch case over RDMA where a device exists
  // (C10D_TEST_IBVERBS=0 leaves it out, e.g. on a shared fabric).
  const char* ib = std::getenv("C10D_TEST_IBVERBS");
  if ((ib == nullptr || std::string(ib) != "0") && rdmaDevicePresent()) {
    add(cpuParam("verbs", "ib", {{"C10D_TRANSPORT", "ibverbs"}}));
  }
#if C10D_HAVE_NCCL
  // nccl on cuda:0 where a GPU is present (probed without initialising CUDA in this process).
  if (isBackendRegistered("nccl") && cudaDevicesForked() > 0) {
    BackendParam p;
    p.backend = "nccl";
    p.device = Device::cuda(0);
    p.maxWorldSize = 1;
    auto check = [](cudaError_t err, const char* what) {
      if (err != cudaSuccess) {
        throw Error(std::string("conformance: ") + what + " failed: " + cudaGetErrorString(err));
      }
    };
    p.alloc = [check](size_t bytes) {
      void* ptr = nullptr;
      check(cudaSetDevice(0), "cudaSetDevice(0)");
      check(cudaMalloc(&ptr, bytes), "cudaMalloc");
      return ptr;
    };
    p.free = [](void* ptr) { cudaFree(ptr); };
    p.toDevice = [check](void* dst, const void* src, size_t bytes) {
      check(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device");
    };
    p.toHost = [check](void* dst, const void* src, size_t bytes) {
      check(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host");
    };
    out.push_back(p);
  }
#endif
  return out;
}

std::vector<BackendParam> conformanceBackends(int worldSize) {
  std::vector<BackendParam> out;
  for (const BackendParam& p : conformanceBackends()) {
    if (p.maxWorldSize == 0 || worldSize <= p.maxWorldSize) out.push_back(p);
  }
  return out;
}

std::vector<std::tuple<BackendParam, int>> conformanceCases(const std::vector<int>& worldSizes) {
  std::vector<std::tuple<BackendParam, int>> out;
  for (const BackendParam& p : conformanceBackends()) {
    for (int ws : worldSizes) {
      if (p.maxWorldSize == 0 || ws <= p.maxWorldSize) out.emplace_back(p, ws);
    }
  }
  return out;
}

int cudaDevicesForked() {
#if C10D_HAVE_NCCL
  static const int count = [] {
    const pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
      int n = 0;
      if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
      _exit(n > 100 ? 100 : n);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return 0;
    return WEXITSTATUS(status);
  }();
  return count;
#else
  return 0;
#endif
}

std::string paramName(const BackendParam& p, int worldSize) {
  return p.label() + "_ws" + std::to_string(worldSize);
}

Buffer::Buffer(const BackendParam& p, size_t numel, DataType dtype)
    : p_(&p), numel_(numel), dtype_(dtype), host_((numel * elementSize(dtype) + 7) / 8 + 1) {
  if (p.alloc) dev_ = p.alloc(numel * elementSize(dtype) + 8);
}

Buffer::~Buffer() {
  if (dev_ != nullptr && p_->free) p_->free(dev_);
}

Buffer::Buffer(Buffer&& o) noexcept
    : p_(o.p_), numel_(o.numel_), dtype_(o.dtype_), host_(std::move(o.host_)), dev_(o.dev_) {
  o.dev_ = nullptr;
}

Tensor Buffer::tensor() const {
  void* data = dev_ != nullptr ? dev_ : const_cast<uint64_t*>(host_.data());
  return Tensor(numel_ == 0 ? nullptr : data, numel_, dtype_, p_->device);
}

void Buffer::upload() {
  if (dev_ != nullptr) p_->toDevice(dev_, host_.data(), numel_ * elementSize(dtype_));
}

void Buffer::download() {
  if (dev_ != nullptr) p_->toHost(host_.data(), dev_, numel_ * elementSize(dtype_));
}

double Buffer::get(size_t i) const {
  const auto* b = reinterpret_cast<const uint8_t*>(host_.data());
  switch (dtype_) {
    case DataType::kFloat32: {
      float v;
      std::memcpy(&v, b + 4 * i, 4);
      return v;
    }
    case DataType::kFloat64: {
      double v;
      std::memcpy(&v, b + 8 * i, 8);
      return v;
    }
    case DataType::kFloat16:
    case DataType::kBFloat16: {
      uint16_t v;
      std::memcpy(&v, b + 2 * i, 2);
      return dtype_ == DataType::kFloat16 ? halfToFloat(v) : bf16ToFloat(v);
    }
    case DataType::kInt8:
      return static_cast<int8_t>(b[i]);
    case DataType::kUInt8:
      return b[i];
    case DataType::kInt32: {
      int32_t v;
      std::memcpy(&v, b + 4 * i, 4);
      return v;
    }
    case DataType::kInt64: {
      int64_t v;
      std::memcpy(&v, b + 8 * i, 8);
      return static_cast<double>(v);
    }
    case DataType::kBool:
      return b[i] != 0 ? 1.0 : 0.0;
  }
  return 0;
}

void Buffer::set(size_t i, double v) {
  auto* b = host();
  switch (dtype_) {
    case DataType::kFloat32: {
      float f = static_cast<float>(v);
      std::memcpy(b + 4 * i, &f, 4);
      return;
    }
    case DataType::kFloat64:
      std::memcpy(b + 8 * i, &v, 8);
      return;
    case DataType::kFloat16:
    case DataType::kBFloat16: {
      uint16_t h = dtype_ == DataType::kFloat16 ? floatToHalf(static_cast<float>(v))
                                                : floatToBf16(static_cast<float>(v));
      std::memcpy(b + 2 * i, &h, 2);
      return;
    }
    case DataType::kInt8:
      b[i] = static_cast<uint8_t>(static_cast<int8_t>(v));
      return;
    case DataType::kUInt8:
      b[i] = static_cast<uint8_t>(v);
      return;
    case DataType::kInt32: {
      int32_t x = static_cast<int32_t>(v);
      std::memcpy(b + 4 * i, &x, 4);
      return;
    }
    case DataType::kInt64: {
      int64_t x = static_cast<int64_t>(v);
      std::memcpy(b + 8 * i, &x, 8);
      return;
    }
    case DataType::kBool:
      b[i] = v != 0 ? 1 : 0;
      return;
  }
}

std::shared_ptr<ProcessGroup> makeGroup(const BackendParam& p, const std::string& storePath,
                                        int rank, int size, Milliseconds timeout) {
  auto store = std::make_shared<FileStore>(storePath, size, timeout);
  ProcessGroup::Options opts;
  opts.timeout = timeout;
  opts.config = p.config;
  return createProcessGroup(p.backend, store, rank, size, opts);
}

std::vector<DataType> allDataTypes() {
  std::vector<DataType> out;
  for (int i = 0; i < kNumDataTypes; ++i) out.push_back(static_cast<DataType>(i));
  return out;
}

std::vector<ReduceOp> opsFor(const ProcessGroup& pg, DataType dtype, const Device& dev) {
  std::vector<ReduceOp> out;
  for (int k = 0; k < ReduceOp::kNumKinds; ++k) {
    auto kind = static_cast<ReduceOp::Kind>(k);
    if (!pg.supports(kind, dtype, dev)) continue;
    ReduceOp op(kind);
    if (kind == ReduceOp::PREMUL_SUM) op = ReduceOp::premulSum(premulScale(dtype));
    out.push_back(op);
  }
  return out;
}

double storedValue(DataType dtype, double v) {
  switch (dtype) {
    case DataType::kFloat32:
      return static_cast<float>(v);
    case DataType::kFloat64:
      return v;
    case DataType::kFloat16:
      return halfToFloat(floatToHalf(static_cast<float>(v)));
    case DataType::kBFloat16:
      return bf16ToFloat(floatToBf16(static_cast<float>(v)));
    case DataType::kBool:
      return v != 0 ? 1 : 0;
    default:
      return std::trunc(v);
  }
}

double premulScale(DataType dtype) {
  return isFloatingPoint(dtype) ? 0.5 : 2.0;
}

namespace {

// Values are quantum * (lowest + (seed * stride + i) mod span). span is a power of two and stride
// is odd, so two seeds less than `span` apart differ at *every* element, and two elements of one
// seed less than `span` apart differ: a slot moved to another rank's place, or shifted within its
// own, never matches. Ranges (see the table) keep every partial sum of up to 8 ranks exact.
struct Grid {
  double quantum;
  int64_t lowest;
  uint64_t span;
  uint64_t stride;
};

double onGrid(const Grid& g, int seed, size_t i) {
  const uint64_t h = (static_cast<uint64_t>(seed) * g.stride + i) % g.span;
  return g.quantum * static_cast<double>(g.lowest + static_cast<int64_t>(h));
}

// Full range (no arithmetic on the values): data movement, MIN/MAX, bitwise ops.
Grid movementGrid(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:  // [-2^15, 2^15) in steps of 2^-8: 24 significant bits
      return {1.0 / 256, -(int64_t{1} << 23), uint64_t{1} << 24, 2097143};
    case DataType::kFloat64:
      return {1.0 / 1024, -(int64_t{1} << 47), uint64_t{1} << 48, 16777259};
    case DataType::kFloat16:  // [-128, 128) in steps of 1/16: 11 significant bits
      return {1.0 / 16, -2048, 4096, 521};
    case DataType::kBFloat16:  // [-32, 32) in steps of 1/8: 8 significant bits
      return {1.0 / 8, -256, 512, 61};
    case DataType::kInt8:
      return {1, -128, 256, 31};
    case DataType::kUInt8:
      return {1, 0, 256, 31};
    case DataType::kInt32:
      return {1, -(int64_t{1} << 31), uint64_t{1} << 32, 16777259};
    case DataType::kInt64:
      return {1, -(int64_t{1} << 47), uint64_t{1} << 48, 16777259};
    case DataType::kBool:
      break;
  }
  return {1, 0, 2, 1};
}

// Summed values: up to 8 of them (and every partial sum) stay exact in the dtype.
Grid sumGrid(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:  // |v| <= 2^19 in quarters: sums of 8 within 2^24 quarters
      return {0.25, -(int64_t{1} << 21), uint64_t{1} << 22, 524287};
    case DataType::kFloat64:
      return {0.25, -(int64_t{1} << 39), uint64_t{1} << 40, 16777259};
    case DataType::kFloat16:  // [-128, 127.5] in halves: sums of 8 within +-1024 (11 bits)
      return {0.5, -256, 512, 61};
    case DataType::kBFloat16:  // [-16, 15.5] in halves: sums of 8 within +-128 (8 bits)
      return {0.5, -32, 64, 7};
    case DataType::kInt8:  // [-16, 15]: sums of 8 within [-128, 120]
      return {1, -16, 32, 3};
    case DataType::kUInt8:  // [0, 31]: sums of 8 at most 248
      return {1, 0, 32, 3};
    case DataType::kInt32:
      return {1, -(int64_t{1} << 27), uint64_t{1} << 28, 1048583};
    case DataType::kInt64:
      return {1, -(int64_t{1} << 39), uint64_t{1} << 40, 16777259};
    case DataType::kBool:
      break;
  }
  return {1, 0, 2, 1};
}

// A bit per (seed, element) from a hash (splitmix64). `oneIn` > 2 biases it to true
// (1 - 1/oneIn), so that AND over a few ranks is not always false.
bool boolValue(int seed, size_t i, uint64_t oneIn) {
  uint64_t z = (static_cast<uint64_t>(seed) << 40) + i + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return z % oneIn != 0;
}

// PRODUCT: mostly 1, with at most one rank per factor class at each element (5 * seed + i is
// distinct mod 16 for 8 consecutive seeds), so products stay small and exact, and still vary
// with the element.
double productValue(DataType dtype, int seed, size_t i) {
  const uint64_t t = (static_cast<uint64_t>(seed) * 5 + i) % 16;
  const bool fp = isFloatingPoint(dtype);
  const bool isUnsigned = dtype == DataType::kUInt8;
  switch (t) {
    case 0:
      return 2;
    case 1:
      return isUnsigned ? 3 : -1;
    case 6:
      return fp ? 0.5 : (isUnsigned ? 2 : -2);
    case 11:
      return fp ? -1.5 : (isUnsigned ? 3 : -3);
    default:
      return 1;
  }
}

}  // namespace

double movementValue(DataType dtype, int seed, size_t i) {
  if (dtype == DataType::kBool) {
    // Bit (i mod 7) of a 7-bit code of the seed (a bijection for seeds < 128), so any 7
    // consecutive elements of two seeds differ somewhere; XOR a hashed bit of the element alone,
    // which every seed shares, so the pattern does not repeat every 7 elements.
    const uint64_t code = (static_cast<uint64_t>(seed) * 37 + 11) % 128;
    return static_cast<double>(((code >> (i % 7)) & 1) ^ (boolValue(0, i, 2) ? 1 : 0));
  }
  return onGrid(movementGrid(dtype), seed, i);
}

double inputValue(DataType dtype, const ReduceOp& op, int rank, size_t i) {
  if (dtype == DataType::kBool) return boolValue(rank, i, 4);
  switch (op.kind) {
    case ReduceOp::PRODUCT:
      return productValue(dtype, rank, i);
    case ReduceOp::MIN:
    case ReduceOp::MAX:
    case ReduceOp::BAND:
    case ReduceOp::BOR:
    case ReduceOp::BXOR:
      return onGrid(movementGrid(dtype), rank, i);
    case ReduceOp::PREMUL_SUM:
      if (!isFloatingPoint(dtype)) {
        // Scaled by 2 before summing: half the range.
        Grid g = sumGrid(dtype);
        g.lowest /= 2;
        g.span /= 2;
        return onGrid(g, rank, i);
      }
      return onGrid(sumGrid(dtype), rank, i);  // scaled by 0.5: exact
    case ReduceOp::SUM:
    case ReduceOp::AVG:
      break;
  }
  return onGrid(sumGrid(dtype), rank, i);
}

double reference(DataType dtype, const ReduceOp& op, int size, size_t i) {
  if (dtype == DataType::kBool) {
    bool any = false, all = true, x = false;
    for (int r = 0; r < size; ++r) {
      bool v = inputValue(dtype, op, r, i) != 0;
      any = any || v;
      all = all && v;
      x = x != v;
    }
    switch (op.kind) {
      case ReduceOp::PRODUCT:
      case ReduceOp::MIN:
      case ReduceOp::BAND:
        return all;
      case ReduceOp::BXOR:
        return x;
      case ReduceOp::AVG:
        return any && size == 1;  // OR, then integer division by size
      default:
        return any;
    }
  }
  if (isFloatingPoint(dtype)) {
    double acc = op.kind == ReduceOp::PRODUCT ? 1 : 0;
    double mn = 1e300, mx = -1e300;
    for (int r = 0; r < size; ++r) {
      double v = inputValue(dtype, op, r, i);
      if (op.kind == ReduceOp::PREMUL_SUM) v *= op.scale;
      acc = op.kind == ReduceOp::PRODUCT ? acc * v : acc + v;
      mn = std::min(mn, v);
      mx = std::max(mx, v);
    }
    if (op.kind == ReduceOp::MIN) return mn;
    if (op.kind == ReduceOp::MAX) return mx;
    if (op.kind == ReduceOp::AVG) return acc / size;
    return acc;
  }
  int64_t acc = op.kind == ReduceOp::PRODUCT ? 1 : (op.kind == ReduceOp::BAND ? -1 : 0);
  int64_t mn = INT64_MAX, mx = INT64_MIN;
  for (int r = 0; r < size; ++r) {
    auto v = static_cast<int64_t>(inputValue(dtype, op, r, i));
    if (op.kind == ReduceOp::PREMUL_SUM)
      v = static_cast<int64_t>(static_cast<double>(v) * op.scale);
    switch (op.kind) {
      case ReduceOp::PRODUCT:
        acc *= v;
        break;
      case ReduceOp::BAND:
        acc &= v;
        break;
      case ReduceOp::BOR:
        acc |= v;
        break;
      case ReduceOp::BXOR:
        acc ^= v;
        break;
      default:
        acc += v;
    }
    mn = std::min(mn, v);
    mx = std::max(mx, v);
  }
  if (op.kind == ReduceOp::MIN) return static_cast<double>(mn);
  if (op.kind == ReduceOp::MAX) return static_cast<double>(mx);
  if (op.kind == ReduceOp::AVG) return static_cast<double>(acc / size);  // toward zero
  return static_cast<double>(acc);
}

void fillInput(Buffer& buf, const ReduceOp& op, int rank, size_t offset) {
  for (size_t i = 0; i < buf.numel(); ++i)
    buf.set(i, inputValue(buf.dtype(), op, rank, offset + i));
  buf.upload();
}

void fillPattern(Buffer& buf, int seed, size_t offset) {
  for (size_t i = 0; i < buf.numel(); ++i) buf.set(i, movementValue(buf.dtype(), seed, offset + i));
  buf.upload();
}

double ulpsTolerance(DataType dtype, const ReduceOp& op) {
  return op.kind == ReduceOp::AVG && isFloatingPoint(dtype) ? 1 : 0;
}

namespace {

// 2^(1 - precision): an upper bound of one ulp relative to the magnitude.
double relativeUlp(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return std::ldexp(1.0, -23);
    case DataType::kFloat64:
      return std::ldexp(1.0, -52);
    case DataType::kFloat16:
      return std::ldexp(1.0, -10);
    case DataType::kBFloat16:
      return std::ldexp(1.0, -7);
    default:
      return 0;
  }
}

}  // namespace

void expectValues(const Buffer& buf, const std::function<double(size_t)>& want,
                  const std::string& what, int worldSize, double ulps) {
  const_cast<Buffer&>(buf).download();
  for (size_t i = 0; i < buf.numel(); ++i) {
    const double w = want(i);
    const double g = buf.get(i);
    const bool same = std::isnan(w) ? std::isnan(g) : g == w;
    if (!same &&
        !(ulps > 0 && std::fabs(g - w) <= ulps * relativeUlp(buf.dtype()) * std::fabs(w))) {
      ADD_FAILURE() << what << " (world size " << worldSize << "): element " << i << " of "
                    << buf.numel() << " (" << toString(buf.dtype()) << ") is " << g << ", expected "
                    << w;
      return;
    }
  }
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
