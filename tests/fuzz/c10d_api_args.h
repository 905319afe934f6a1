// The C ABI fuzz target's arguments (c10d_api_fuzzer.cc): the script the input is read as, the
// check every call's status gets, and the arguments drawn from the script (tensors in a static
// arena, ranks, enum values, timeouts, options structs with odd sizes and versions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>

#include "c10d/base/abi.h"
#include "c10d/c_api.h"
#include "tests/fuzz/fuzz_util.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace fuzz {

// ---- the script ----------------------------------------------------------------------------

class Script {
 public:
  Script(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  bool done() const { return at_ >= n_; }
  uint8_t u8() { return at_ < n_ ? p_[at_++] : 0; }
  uint32_t u32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(u8()) << (8 * i);
    return v;
  }
  uint64_t u64() { return u32() | (static_cast<uint64_t>(u32()) << 32); }
  template <typename T, size_t N>
  T pick(const T (&choices)[N]) {
    return choices[u8() % N];
  }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t at_ = 0;
};

// ---- checks --------------------------------------------------------------------------------

int32_t raw(c10d_status_t s);

// Checks one call's status (see c10d_api_fuzzer.cc's header); returns it.
c10d_status_t checked(c10d_status_t s, const char* call, bool oomPossible = false,
                      bool pendingPossible = false);

// A constructor's status: *out is set exactly when it succeeded (`mayBeNull`: a sub-group call
// may succeed with NULL on a rank outside the new group). `out` by reference: it is read after
// the call, whatever order the caller's arguments were evaluated in.
template <typename H>
bool created(c10d_status_t s, H* const& out, const char* call, bool oomPossible = false,
             bool mayBeNull = false) {
  checked(s, call, oomPossible);
  const bool ok = raw(s) == C10D_STATUS_OK;
  if (ok ? out == nullptr && !mayBeNull : out != nullptr) std::fprintf(stderr, "%s:\n", call);
  if (!ok) {
    FUZZ_CHECK(out == nullptr, "a failed constructor left *out set");
    return false;
  }
  FUZZ_CHECK(out != nullptr || mayBeNull, "a constructor succeeded without a handle");
  return out != nullptr;
}

// ---- memory the calls point into -------------------------------------------------------------

// Tensor data, rank lists, splits: static, so that no op of a group outlives its memory.
constexpr size_t kArenaBytes = 4096;
extern unsigned char gArena[kArenaBytes];
extern int gRanks[4];
extern uint64_t gSplits[4];

constexpr uint64_t kHugeCounts[] = {0,
                                    1,
                                    3,
                                    uint64_t{1} << 31,
                                    uint64_t{1} << 32,
                                    uint64_t{1} << 62,
                                    std::numeric_limits<uint64_t>::max()};

// A tensor view: mostly valid CPU tensors inside the arena; sometimes a bad dtype, device, index or
// reserved field, or NULL data with any count. Data is never claimed past the arena.
c10d_tensor_t tensor(Script& in);
// `count` tensors in a static array (`which`: 0 or 1), or NULL with any count.
const c10d_tensor_t* tensors(Script& in, int which, size_t* count);
// One tensor (`which`: 0 or 1), or NULL.
const c10d_tensor_t* oneTensor(Script& in, int which);
int rankArg(Script& in);

// A value for an enum parameter: valid, or past the last valid one. Not negative: the C enums'
// values are [0, 2^31) (their *_MAX_ENUM_ is 0x7fffffff), and a C++ caller (this harness) holding
// a value outside them is undefined behaviour. Tensor dtypes and devices, which the harness writes
// into the struct's bytes, do take negative values.
int32_t enumArg(Script& in, int32_t valid);

// ---- options structs -------------------------------------------------------------------------

// Room for a caller compiled against a newer header: struct_size up to this, bytes past the
// library's struct zero (or not: that must be refused).
constexpr size_t kStructRoom = 128;

template <typename T>
struct Padded {
  union {
    T value;
    unsigned char bytes[kStructRoom];
  };
  Padded() { std::memset(bytes, 0, sizeof(bytes)); }
};

template <typename T>
void fuzzStructSize(Script& in, Padded<T>& p) {
  switch (in.u8() % 16) {
    case 0:
      p.value.struct_size = in.pick({size_t{0}, size_t{4}, sizeof(size_t)});
      break;
    case 1:
      p.value.struct_size = sizeof(T) - in.u8() % 8;
      break;
    case 2:
      p.value.struct_size = kStructRoom;
      break;
    case 3:
      p.value.struct_size = kStructRoom;
      p.bytes[sizeof(T) + in.u8() % (kStructRoom - sizeof(T))] = 1;
      break;
    default:
      break;
  }
}

// The timeout the library reads from an options struct: the field where struct_size covers it,
// else the default.
template <typename T>
int64_t effectiveTimeout(const Padded<T>& p) {
  const bool covered = p.value.struct_size >= offsetof(T, timeout_ms) + sizeof(int64_t);
  return covered ? p.value.timeout_ms : C10D_TIMEOUT_DEFAULT;
}

// A timeout argument: any value where the call returns at once whatever it is (`returnsAtOnce`),
// else one that keeps a wait on a missing key short.
int64_t timeoutArg(Script& in, bool returnsAtOnce);

struct StoreOptions {
  Padded<c10d_store_options_t> p;
  const c10d_store_options_t* ptr = nullptr;
  bool bounded = true;  // get/wait on a missing key returns within a few ms
};

void storeOptions(Script& in, StoreOptions& o);

struct GroupOptions {
  Padded<c10d_pg_options_t> p;
  const c10d_pg_options_t* ptr = nullptr;
  const char* keys[4];
  const char* values[4];
  int64_t timeoutMs = 0;  // effective, for the harness's own waits
};

void groupOptions(Script& in, GroupOptions& o);

struct OpOptions {
  Padded<c10d_op_options_t> p;
  const c10d_op_options_t* ptr = nullptr;
  int64_t timeoutMs = -1;  // the op's own timeout, -1: the group's
};

const c10d_op_options_t* opOptions(Script& in, OpOptions& o);

}  // namespace fuzz
C10D_NAMESPACE_END
}  // namespace c10d
