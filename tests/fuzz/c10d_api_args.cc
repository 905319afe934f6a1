// The C ABI fuzz target's arguments: see c10d_api_args.h.
#include "tests/fuzz/c10d_api_args.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace fuzz {

int32_t raw(c10d_status_t s) {
  int32_t v;
  std::memcpy(&v, &s, sizeof(v));
  return v;
}

c10d_status_t checked(c10d_status_t s, const char* call, bool oomPossible, bool pendingPossible) {
  const int32_t v = raw(s);
  // C10D_FUZZ_TRACE=1 prints every call (to see what an input does).
  static const bool trace = std::getenv("C10D_FUZZ_TRACE") != nullptr;
  if (trace) {
    const bool failed = v != C10D_STATUS_OK && v != C10D_STATUS_PENDING;
    std::fprintf(stderr, "  %s -> %s%s%s\n", call, c10d_status_name(s), failed ? ": " : "",
                 failed ? c10d_last_error() : "");
  }
  if (v == C10D_STATUS_INTERNAL || v < 0 || v > C10D_STATUS_PENDING) {
    std::fprintf(stderr, "%s: status %d (%s): %s\n", call, v, c10d_status_name(s),
                 c10d_last_error());
  }
  FUZZ_CHECK(v >= 0 && v <= C10D_STATUS_PENDING, "a status that is no c10d_status_t");
  FUZZ_CHECK(v != C10D_STATUS_INTERNAL, "INTERNAL: an exception escaped the error mapping");
  FUZZ_CHECK(v != C10D_STATUS_PENDING || pendingPossible, "PENDING from a call that never pends");
  if (v == C10D_STATUS_OUT_OF_MEMORY && !oomPossible) {
    std::fprintf(stderr, "%s: OUT_OF_MEMORY: %s\n", call, c10d_last_error());
    FUZZ_CHECK(false, "OUT_OF_MEMORY the harness did not cause");
  }
  if (v != C10D_STATUS_OK && v != C10D_STATUS_PENDING) {
    FUZZ_CHECK(c10d_last_error()[0] != '\0', "a failure without a message");
  }
  return s;
}

alignas(16) unsigned char gArena[kArenaBytes];
int gRanks[4];
uint64_t gSplits[4];

namespace {

size_t elementSize(int32_t dtype) {
  switch (dtype) {
    case C10D_FLOAT64:
    case C10D_INT64:
      return 8;
    case C10D_FLOAT32:
    case C10D_INT32:
      return 4;
    case C10D_FLOAT16:
    case C10D_BFLOAT16:
      return 2;
    default:
      return 1;
  }
}

constexpr size_t kMaxTensors = 8;
c10d_tensor_t gTensors[4][kMaxTensors];

}  // namespace

c10d_tensor_t tensor(Script& in) {
  const uint8_t how = in.u8();
  int32_t dtype = in.u8() % 9;
  if ((how & 0x0f) == 1) dtype = in.pick({-1, 9, 42, std::numeric_limits<int32_t>::min()});
  c10d_tensor_t t;
  std::memcpy(&t.dtype, &dtype, sizeof(dtype));
  int32_t device = C10D_DEVICE_CPU;
  if ((how & 0x0f) == 2) device = in.pick({1, 2, -1});
  std::memcpy(&t.device_type, &device, sizeof(device));
  t.device_index = (how & 0x0f) == 3 ? in.pick({1, -1, 7}) : 0;
  t.reserved_ = (how & 0x0f) == 4 ? 1 : 0;
  if ((how & 0x0f) == 5) {
    t.data = nullptr;
    t.numel = in.pick(kHugeCounts);
    return t;
  }
  const size_t es = elementSize(dtype);
  const size_t offset = (in.u8() * 16) % kArenaBytes;
  const size_t room = (kArenaBytes - offset) / es;
  t.data = gArena + offset;
  t.numel = room == 0 ? 0 : in.u8() % std::min<size_t>(room, 64);
  if (how & 0x10) t.numel = std::min<size_t>(room, in.u8());
  return t;
}

const c10d_tensor_t* tensors(Script& in, int which, size_t* count) {
  const uint8_t how = in.u8();
  if (how % 8 == 0) {
    *count = in.pick(kHugeCounts);
    return nullptr;
  }
  *count = how % 3;  // 0-2: a 1-rank group wants 1
  if (how % 8 == 1) *count = kMaxTensors;
  for (size_t i = 0; i < *count; ++i) gTensors[which][i] = tensor(in);
  return gTensors[which];
}

const c10d_tensor_t* oneTensor(Script& in, int which) {
  if (in.u8() % 16 == 0) return nullptr;
  gTensors[2 + which][0] = tensor(in);
  return gTensors[2 + which];
}

int rankArg(Script& in) {
  return in.pick(
      {0, 0, 0, 1, -1, 2, std::numeric_limits<int>::max(), std::numeric_limits<int>::min()});
}

int32_t enumArg(Script& in, int32_t valid) {
  const uint8_t b = in.u8();
  if (b % 8 != 0) return b % valid;
  return in.pick({valid, valid + 1, 1000, std::numeric_limits<int32_t>::max()});
}

// ---- options structs -------------------------------------------------------------------------

int64_t timeoutArg(Script& in, bool returnsAtOnce) {
  const int64_t bounded[] = {
      C10D_TIMEOUT_DEFAULT, 0, 1, 5, -2, std::numeric_limits<int64_t>::min()};
  const int64_t any[] = {C10D_TIMEOUT_DEFAULT,
                         0,
                         1,
                         5,
                         -2,
                         std::numeric_limits<int64_t>::min(),
                         std::numeric_limits<int64_t>::max(),
                         int64_t{1} << 40};
  return returnsAtOnce ? in.pick(any) : in.pick(bounded);
}

void storeOptions(Script& in, StoreOptions& o) {
  c10d_store_options_init(&o.p.value);
  o.p.value.timeout_ms = in.pick({int64_t{0}, int64_t{1}, int64_t{3}, int64_t{C10D_TIMEOUT_DEFAULT},
                                  int64_t{-5}, std::numeric_limits<int64_t>::max()});
  const uint8_t b = in.u8();
  if (b % 16 == 0) o.p.value.abi_version = in.pick({0u, 2u, 0xffffffffu});
  if (b % 16 == 1) o.p.value.reserved_ = 1;
  fuzzStructSize(in, o.p);
  const int64_t t = effectiveTimeout(o.p);
  o.bounded = t >= 0 && t <= 3;
  o.ptr = b % 32 == 31 ? nullptr : &o.p.value;
}

const char* const kConfigKeys[] = {"C10D_TRANSPORT", "C10D_TRANSPORT", "C10D_NO_SUCH_SETTING", "",
                                   nullptr};
const char* const kConfigValues[] = {"shm", "tcp", "bogus", "", nullptr};

void groupOptions(Script& in, GroupOptions& o) {
  c10d_pg_options_init(&o.p.value);
  o.p.value.timeout_ms = in.pick({int64_t{200}, int64_t{20}, int64_t{1}, int64_t{0},
                                  int64_t{C10D_TIMEOUT_DEFAULT}, int64_t{-3}});
  const uint8_t b = in.u8();
  if (b % 16 == 0) o.p.value.abi_version = in.pick({0u, 2u});
  if (b % 16 == 1) o.p.value.reserved_ = 7;
  if (b % 8 == 2) o.p.value.group_name = in.pick({"", "g", "a/b", "world"});
  const uint8_t c = in.u8();
  o.p.value.num_config = c % 4 == 0 ? c % 5 : 0;
  if (c % 16 == 4) o.p.value.num_config = in.pick(kHugeCounts);  // with NULL arrays
  if (o.p.value.num_config > 0 && o.p.value.num_config <= 4) {
    for (size_t i = 0; i < o.p.value.num_config; ++i) {
      o.keys[i] = in.pick(kConfigKeys);
      o.values[i] = in.pick(kConfigValues);
    }
    o.p.value.config_keys = o.keys;
    o.p.value.config_values = o.values;
  }
  fuzzStructSize(in, o.p);
  o.ptr = b % 32 == 31 ? nullptr : &o.p.value;
  const int64_t t = effectiveTimeout(o.p);
  o.timeoutMs = t == C10D_TIMEOUT_DEFAULT ? int64_t{1} << 40 : t;
}

const c10d_op_options_t* opOptions(Script& in, OpOptions& o) {
  c10d_op_options_init(&o.p.value);
  const uint8_t b = in.u8();
  if (b % 4 == 0) return nullptr;
  o.p.value.timeout_ms = in.pick({int64_t{C10D_TIMEOUT_DEFAULT}, int64_t{0}, int64_t{50},
                                  int64_t{-9}, std::numeric_limits<int64_t>::max()});
  o.p.value.premul_scale = in.pick({1.0, 0.5, -0.0, 1e300, -1e300, std::nan(""), HUGE_VAL});
  fuzzStructSize(in, o.p);
  o.timeoutMs = effectiveTimeout(o.p);
  o.ptr = &o.p.value;
  return o.ptr;
}

}  // namespace fuzz
C10D_NAMESPACE_END
}  // namespace c10d
