// Fuzzes the C ABI's argument checking (c10d/c_api.h) the way a C or FFI caller gets it wrong: NULL
// handles and pointers, struct sizes and ABI versions, enum values out of range, bad ranks, roots,
// colors and counts, huge counts behind NULL pointers, sinks that refuse bytes, and a host store
// whose callbacks fail or lie. One process, groups of one rank (a 1-rank job, or a rendezvous for
// more ranks that times out at once), over HashStores, prefix stores and host stores.
//
// Input: a script of up to 64 calls, each one byte selecting the kind of call
// (LLVMFuzzerTestOneInput below) followed by the bytes its arguments are drawn from, in a fixed
// order (bytes past the end read as 0). Every handle a call returns goes to a slot that later
// calls draw from (or draw NULL); everything is released at the end, groups first. Checks on
// every call: the status is a c10d_status_t and never INTERNAL (an exception that escaped the
// library's error mapping); a failure has a message in c10d_last_error() and leaves *out NULL;
// OUT_OF_MEMORY only when the harness's sink or callback reported it. A host store's `destroy`
// runs exactly once, after its last user is gone, every work callback exactly once, and no verbs
// shm workspace is left in /dev/shm.
// Blocking is kept short: stores and groups get timeouts of at most a few hundred ms unless
// nothing can block on them, and works are waited for 0-10 ms, or by their own bounded timeout.
// Tensors point into a static arena that outlives every group, as c10d_work_abort requires.
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "c10d/c_api.h"
#include "tests/fuzz/c10d_api_host_store.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using namespace c10d::fuzz;  // NOLINT: the harness's own helpers (c10d_api_host_store.h)

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

int32_t raw(c10d_status_t s) {
  int32_t v;
  std::memcpy(&v, &s, sizeof(v));
  return v;
}

// Checks one call's status (see the header); returns it.
c10d_status_t checked(c10d_status_t s, const char* call, bool oomPossible = false,
                      bool pendingPossible = false) {
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
alignas(16) unsigned char gArena[kArenaBytes];
int gRanks[4];
uint64_t gSplits[4];

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

constexpr uint64_t kHugeCounts[] = {0,
                                    1,
                                    3,
                                    uint64_t{1} << 31,
                                    uint64_t{1} << 32,
                                    uint64_t{1} << 62,
                                    std::numeric_limits<uint64_t>::max()};

// A tensor view: mostly valid CPU tensors inside the arena; sometimes a bad dtype, device, index or
// reserved field, or NULL data with any count. Data is never claimed past the arena.
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

// `count` tensors in a static array, or NULL with any count.
constexpr size_t kMaxTensors = 8;
c10d_tensor_t gTensors[4][kMaxTensors];

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

// A value for an enum parameter: valid, or past the last valid one. Not negative: the C enums'
// values are [0, 2^31) (their *_MAX_ENUM_ is 0x7fffffff), and a C++ caller (this harness) holding
// a value outside them is undefined behaviour. Tensor dtypes and devices, which the harness writes
// into the struct's bytes, do take negative values.
int32_t enumArg(Script& in, int32_t valid) {
  const uint8_t b = in.u8();
  if (b % 8 != 0) return b % valid;
  return in.pick({valid, valid + 1, 1000, std::numeric_limits<int32_t>::max()});
}

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

int64_t timeoutArg(Script& in, bool mayBlock) {
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
  return mayBlock ? in.pick(any) : in.pick(bounded);
}

struct StoreOptions {
  Padded<c10d_store_options_t> p;
  const c10d_store_options_t* ptr = nullptr;
  bool bounded = true;  // get/wait on a missing key returns within a few ms
};

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

struct GroupOptions {
  Padded<c10d_pg_options_t> p;
  const c10d_pg_options_t* ptr = nullptr;
  const char* keys[4];
  const char* values[4];
  int64_t timeoutMs = 0;  // effective, for the harness's own waits
};

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

struct OpOptions {
  Padded<c10d_op_options_t> p;
  const c10d_op_options_t* ptr = nullptr;
  int64_t timeoutMs = -1;  // the op's own timeout, -1: the group's
};

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

// ---- the run ---------------------------------------------------------------------------------

constexpr size_t kSlots = 4;

struct Work {
  c10d_work_t* handle = nullptr;
  int64_t boundMs = 0;  // how long its op can stay pending at most
};

struct Callback {
  std::atomic<int> calls{0};
};

void onComplete(void* user, c10d_status_t status, const char* message) {
  auto* cb = static_cast<Callback*>(user);
  FUZZ_CHECK(cb->calls.fetch_add(1) == 0, "a work callback ran twice");
  FUZZ_CHECK(message != nullptr, "a work callback without a message string");
  const int32_t v = raw(status);
  FUZZ_CHECK(v >= 0 && v < C10D_STATUS_PENDING && v != C10D_STATUS_INTERNAL,
             "a work callback with a bad status");
  FUZZ_CHECK((v == C10D_STATUS_OK) == (message[0] == '\0'), "a callback's message and status");
}

struct Run {
  c10d_store_t* stores[kSlots] = {};
  bool storeBounded[kSlots] = {};
  c10d_pg_t* groups[kSlots] = {};
  int64_t groupTimeoutMs[kSlots] = {};
  Work works[kSlots * 2];
  std::deque<std::unique_ptr<HostStore>> hosts;
  std::deque<Callback> callbacks;
  // Host stores created with `destroy` in their table: it must run once for each. (A table whose
  // struct_size ends before `destroy` has none.)
  std::vector<HostStore*> createdHosts;
  bool oomPossible = false;  // a host store reports OUT_OF_MEMORY

  ~Run() {
    // Groups first: shutdown completes their pending works (callbacks included).
    for (auto*& g : groups) c10d_pg_destroy(std::exchange(g, nullptr));
    for (auto& w : works) c10d_work_release(std::exchange(w.handle, nullptr));
    for (auto*& s : stores) c10d_store_release(std::exchange(s, nullptr));
    for (HostStore* h : createdHosts) {
      FUZZ_CHECK(h->destroyed.load() == 1, "a host store not destroyed once its users were gone");
    }
    for (const Callback& cb : callbacks) {
      FUZZ_CHECK(cb.calls.load() == 1, "a work callback did not run once the group was destroyed");
    }
  }

  template <typename T, size_t N>
  T* slot(Script& in, T* (&slots)[N]) {
    const uint8_t b = in.u8();
    return b % 8 == 7 ? nullptr : slots[b % N];
  }
  size_t freeSlot(Script& in) { return in.u8() % kSlots; }

  void putStore(size_t i, c10d_store_t* s, bool bounded) {
    c10d_store_release(stores[i]);
    stores[i] = s;
    storeBounded[i] = bounded;
  }
  void putGroup(size_t i, c10d_pg_t* g, int64_t timeoutMs) {
    c10d_pg_destroy(groups[i]);
    groups[i] = g;
    groupTimeoutMs[i] = timeoutMs;
  }
  void putWork(uint8_t i, c10d_work_t* w, int64_t boundMs) {
    Work& slot = works[i % (kSlots * 2)];
    c10d_work_release(slot.handle);
    slot.handle = w;
    slot.boundMs = boundMs;
  }
  int64_t groupTimeout(const c10d_pg_t* g) const {
    for (size_t i = 0; i < kSlots; ++i) {
      if (groups[i] == g && g != nullptr) return groupTimeoutMs[i];
    }
    return 0;
  }
  bool bounded(const c10d_store_t* s) const {
    for (size_t i = 0; i < kSlots; ++i) {
      if (stores[i] == s && s != nullptr) return storeBounded[i];
    }
    return true;
  }

  // ---- stores ----

  void storeCreate(Script& in) {
    StoreOptions o;
    storeOptions(in, o);
    const size_t i = freeSlot(in);
    c10d_store_t* s = nullptr;
    switch (in.u8() % 4) {
      case 0:
      case 1:
        if (created(c10d_store_hash_create(o.ptr, in.u8() % 16 ? &s : nullptr), s,
                    "c10d_store_hash_create")) {
          putStore(i, s, o.bounded);
        }
        break;
      case 2: {
        c10d_store_t* base = slot(in, stores);
        const char* prefix = in.pick({"p", "", "a/b", "x", static_cast<const char*>(nullptr)});
        if (created(c10d_store_prefix_create(prefix, base, &s), s, "c10d_store_prefix_create")) {
          putStore(i, s, false);  // its timeout and its base's may differ
        }
        break;
      }
      case 3:
        hostCreate(in, o, i);
        break;
    }
  }

  void hostCreate(Script& in, const StoreOptions& o, size_t i) {
    hosts.push_back(std::make_unique<HostStore>());
    HostStore* h = hosts.back().get();
    const uint8_t fault = in.u8();
    h->period = fault % 4 == 0 ? 1 + in.u8() % 8 : 0;
    h->status =
        in.pick({int32_t{C10D_STATUS_ERROR}, int32_t{C10D_STATUS_TIMEOUT},
                 int32_t{C10D_STATUS_COMM_ERROR}, int32_t{C10D_STATUS_INVALID_ARGUMENT},
                 int32_t{C10D_STATUS_OUT_OF_MEMORY}, int32_t{C10D_STATUS_INTERNAL},
                 int32_t{C10D_STATUS_PENDING}, int32_t{1234}, std::numeric_limits<int32_t>::max()});
    h->message = (fault & 0x10) != 0;
    oomPossible = oomPossible || (h->period != 0 && h->status == C10D_STATUS_OUT_OF_MEMORY);
    h->lie = (fault & 0x20) != 0;
    Padded<c10d_store_callbacks_t> cb;
    c10d_store_callbacks_t& c = cb.value;
    c.struct_size = sizeof(c10d_store_callbacks_t);
    c.user = h;
    c.set = hostSet;
    c.get = hostGet;
    c.add = hostAdd;
    c.check = hostCheck;
    c.wait = hostWait;
    const uint8_t optional = in.u8();
    if (optional & 1) c.delete_key = hostDelete;
    if (optional & 2) c.num_keys = hostNumKeys;
    if (optional & 4) c.compare_set = hostCompareSet;
    if (optional & 8) c.append = hostAppend;
    c.destroy = hostDestroy;
    if ((optional & 0x30) == 0x10) c.get = nullptr;  // a required callback missing
    if ((optional & 0xc0) == 0x40) c.struct_size = offsetof(c10d_store_callbacks_t, delete_key);
    if ((optional & 0xc0) == 0x80) fuzzStructSize(in, cb);
    c10d_store_t* s = nullptr;
    const bool nullTable = (optional & 0xc0) == 0xc0 && (fault & 0xc0) == 0xc0;
    if (created(c10d_store_from_callbacks(nullTable ? nullptr : &c, o.ptr, &s), s,
                "c10d_store_from_callbacks")) {
      if (c.struct_size >= offsetof(c10d_store_callbacks_t, destroy) + sizeof(c.destroy)) {
        createdHosts.push_back(h);
      }
      putStore(i, s, true);  // its callbacks never block
    } else {
      FUZZ_CHECK(h->destroyed.load() == 0, "destroy ran for a store that failed to be created");
    }
  }

  const char* key(Script& in) {
    static const std::string kLong(300, 'k');
    return in.pick({"a", "b", "k/1", "", "c10d_fuzz_counter", kLong.c_str(),
                    static_cast<const char*>(nullptr)});
  }

  // Whether the harness can afford a get/wait with the store's timeout: the keys are there, or
  // the store gives up within a few ms.
  bool affordable(c10d_store_t* s, const char* const* keys, size_t n) {
    return bounded(s) || s == nullptr || present(s, keys, n);
  }
  bool present(c10d_store_t* s, const char* const* keys, size_t n) {
    int all = 0;
    return s != nullptr && raw(c10d_store_check(s, keys, n, &all)) == C10D_STATUS_OK && all == 1;
  }

  void storeOp(Script& in) {
    c10d_store_t* s = slot(in, stores);
    const char* k = key(in);
    const uint8_t op = in.u8();
    switch (op % 10) {
      case 0: {
        const size_t size = in.u8() % 65;
        const void* value = in.u8() % 8 == 0 ? nullptr : gArena + in.u8();
        checked(c10d_store_set(s, k, value, value == nullptr ? in.pick(kHugeCounts) : size),
                "c10d_store_set", oomPossible);
        break;
      }
      case 1: {
        if (!affordable(s, &k, k == nullptr ? 0 : 1)) break;
        SinkState state;
        state.mode = in.u8() % 4;
        c10d_sink_t sink{sinkWrite, &state};
        const uint8_t how = in.u8() % 8;
        if (how == 0) sink.write = nullptr;
        checked(c10d_store_get(s, k, how == 1 ? nullptr : &sink), "c10d_store_get",
                oomPossible || state.mode == 1);
        break;
      }
      case 2: {
        int64_t result = 0;
        const auto delta = static_cast<int64_t>(in.u64());
        checked(c10d_store_add(s, k, delta, in.u8() % 4 ? &result : nullptr), "c10d_store_add",
                oomPossible);
        break;
      }
      case 3:
      case 4: {
        const char* keys[4];
        size_t n = in.u8() % 5;
        for (size_t i = 0; i < n; ++i) keys[i] = key(in);
        const char* const* ptr = keys;
        if (in.u8() % 8 == 0) {
          ptr = nullptr;
          n = in.pick(kHugeCounts);
        }
        if (op % 10 == 3) {
          int all = -1;
          const c10d_status_t st =
              checked(c10d_store_check(s, ptr, n, in.u8() % 8 ? &all : nullptr), "c10d_store_check",
                      oomPossible);
          if (raw(st) == C10D_STATUS_OK) FUZZ_CHECK(all == 0 || all == 1, "check's answer");
        } else {
          // A long explicit timeout only where the keys are there (or the call fails first).
          const bool quick = ptr == nullptr || s == nullptr || present(s, ptr, n);
          const int64_t t = timeoutArg(in, quick);
          if (t == C10D_TIMEOUT_DEFAULT && !affordable(s, ptr, n)) break;
          checked(c10d_store_wait(s, ptr, n, t), "c10d_store_wait", oomPossible);
        }
        break;
      }
      case 5: {
        int deleted = -1;
        checked(c10d_store_delete_key(s, k, in.u8() % 4 ? &deleted : nullptr),
                "c10d_store_delete_key", oomPossible);
        break;
      }
      case 6: {
        int64_t count = -1;
        const c10d_status_t st = checked(c10d_store_num_keys(s, in.u8() % 8 ? &count : nullptr),
                                         "c10d_store_num_keys", oomPossible);
        if (raw(st) == C10D_STATUS_OK) FUZZ_CHECK(count >= 0 || count == -1, "num_keys < 0");
        break;
      }
      case 7: {
        const int64_t t = in.pick({int64_t{0}, int64_t{2}, int64_t{-1}, int64_t{-7},
                                   std::numeric_limits<int64_t>::max()});
        const c10d_status_t st = checked(c10d_store_set_timeout(s, t), "c10d_store_set_timeout");
        // A prefix store passes its timeout to the store below: a long one makes every store
        // possibly unbounded; a short one bounds only a store the harness knows has nothing below.
        if (raw(st) == C10D_STATUS_OK && t > 2) std::fill_n(storeBounded, kSlots, false);
        break;
      }
      case 8: {
        uint16_t port = 0;
        checked(c10d_store_tcp_port(s, in.u8() % 8 ? &port : nullptr), "c10d_store_tcp_port");
        break;
      }
      case 9: {
        // The status names and the error string of any value.
        const c10d_status_t v = asEnum<c10d_status_t>(enumArg(in, 9));
        FUZZ_CHECK(c10d_status_name(v) != nullptr, "c10d_status_name gave NULL");
        FUZZ_CHECK(c10d_last_error() != nullptr, "c10d_last_error gave NULL");
        FUZZ_CHECK(c10d_abi_version() == C10D_ABI_VERSION && c10d_version() != nullptr, "version");
        break;
      }
    }
  }

  // ---- groups ----

  void groupCreate(Script& in) {
    GroupOptions o;
    groupOptions(in, o);
    c10d_store_t* s = slot(in, stores);
    const char* backend = in.pick({"verbs", "verbs", "gloo", "", static_cast<const char*>(nullptr),
                                   "auto", "nccl", "no-such-backend"});
    int worldSize = 1;
    int rank = 0;
    const uint8_t b = in.u8();
    if (b % 4 == 0) {
      worldSize = in.pick({0, -1, 2, 3, std::numeric_limits<int>::max()});
      rank = rankArg(in);
    } else if (b % 4 == 1) {
      rank = rankArg(in);
    }
    // A rendezvous for ranks that never come waits for the group's timeout: keep it short.
    if (worldSize > 1 && o.timeoutMs > 20) return;
    c10d_pg_t* g = nullptr;
    const size_t i = freeSlot(in);
    if (created(c10d_pg_create_from_store(s, backend, rank, worldSize, o.ptr,
                                          b % 64 == 63 ? nullptr : &g),
                g, "c10d_pg_create_from_store", oomPossible)) {
      int r = -1;
      int size = -1;
      checked(c10d_pg_rank(g, &r), "c10d_pg_rank");
      checked(c10d_pg_size(g, &size), "c10d_pg_size");
      FUZZ_CHECK(r == rank && size == worldSize, "the group's rank and size");
      putGroup(i, g, o.timeoutMs);
    }
  }

  void groupInit(Script& in) {
    // Only URLs that fail before any rendezvous (no network, no file left behind).
    GroupOptions o;
    groupOptions(in, o);
    if (o.timeoutMs > 200) return;
    const char* url =
        in.pick({"bogus://x", "tcp://", "tcp://:1", "file://relative/path",
                 "tcp://127.0.0.1:1?rank=x&world_size=2", "tcp://127.0.0.1:1?rank=3&world_size=2",
                 "file:///nonexistent-c10d-dir/store?rank=0&world_size=0"});
    // Never a rank and size that would make one of these URLs valid.
    const int rank = in.pick({-1, -5, 7});
    const int worldSize = in.pick({-1, 0, -7});
    c10d_pg_t* g = nullptr;
    created(c10d_pg_init(url, "verbs", rank, worldSize, o.ptr, in.u8() % 16 ? &g : nullptr), g,
            "c10d_pg_init");
    c10d_pg_destroy(g);
  }

  void groupQuery(Script& in) {
    c10d_pg_t* g = slot(in, groups);
    const uint8_t op = in.u8();
    const bool nullOut = in.u8() % 8 == 0;
    switch (op % 6) {
      case 0: {
        int v = 0;
        checked(c10d_pg_rank(g, nullOut ? nullptr : &v), "c10d_pg_rank");
        checked(c10d_pg_size(g, nullOut ? nullptr : &v), "c10d_pg_size");
        break;
      }
      case 1:
      case 2: {
        const char* name = nullptr;
        const c10d_status_t st =
            checked(op % 6 == 1 ? c10d_pg_backend_name(g, nullOut ? nullptr : &name)
                                : c10d_pg_name(g, nullOut ? nullptr : &name),
                    "c10d_pg_backend_name / c10d_pg_name");
        if (raw(st) == C10D_STATUS_OK) FUZZ_CHECK(name != nullptr && *name, "an empty name");
        break;
      }
      case 3: {
        c10d_store_t* s = nullptr;
        if (created(c10d_pg_store(g, nullOut ? nullptr : &s), s, "c10d_pg_store")) {
          putStore(freeSlot(in), s, false);
        }
        break;
      }
      case 4: {
        int supported = -1;
        const auto reduceOp = asEnum<c10d_reduce_op_t>(enumArg(in, 9));
        const auto dtype = asEnum<c10d_dtype_t>(enumArg(in, 9));
        const auto device = asEnum<c10d_device_type_t>(enumArg(in, 2));
        const c10d_status_t st =
            checked(c10d_pg_supports(g, reduceOp, dtype, device, nullOut ? nullptr : &supported),
                    "c10d_pg_supports");
        if (raw(st) == C10D_STATUS_OK) FUZZ_CHECK(supported == 0 || supported == 1, "supports");
        break;
      }
      case 5: {
        const int64_t t = in.pick({int64_t{0}, int64_t{5}, int64_t{-1}, int64_t{-2}});
        if (t == C10D_TIMEOUT_DEFAULT && groupTimeout(g) > 200) break;
        checked(c10d_monitored_barrier(g, t, in.u8() & 1), "c10d_monitored_barrier");
        break;
      }
    }
  }

  void subgroup(Script& in) {
    c10d_pg_t* g = slot(in, groups);
    GroupOptions o;
    groupOptions(in, o);
    const c10d_pg_options_t* opts = in.u8() % 2 ? o.ptr : nullptr;
    c10d_pg_t* sub = nullptr;
    const bool nullOut = in.u8() % 16 == 0;
    const int64_t timeoutMs = opts == nullptr ? groupTimeout(g) : o.timeoutMs;
    if (in.u8() % 2) {
      size_t n = in.u8() % 4;
      for (size_t i = 0; i < n; ++i) gRanks[i] = rankArg(in);
      const int* ptr = gRanks;
      if (in.u8() % 8 == 0) {
        ptr = nullptr;
        n = in.pick(kHugeCounts);
      }
      if (created(c10d_pg_new_subgroup(g, ptr, n, opts, nullOut ? nullptr : &sub), sub,
                  "c10d_pg_new_subgroup", false, true)) {
        putGroup(freeSlot(in), sub, timeoutMs);
      }
    } else {
      const int color = in.pick({0, 1, C10D_NO_COLOR, -2, std::numeric_limits<int>::max()});
      const int k = rankArg(in);
      if (created(c10d_pg_split(g, color, k, opts, nullOut ? nullptr : &sub), sub, "c10d_pg_split",
                  false, true)) {
        putGroup(freeSlot(in), sub, timeoutMs);
      }
    }
  }

  void groupEnd(Script& in) {
    const size_t i = in.u8() % kSlots;
    if (in.u8() % 2) {
      checked(c10d_pg_shutdown(groups[i]), "c10d_pg_shutdown");
    } else {
      c10d_pg_destroy(std::exchange(groups[i], nullptr));
    }
  }

  // ---- collectives ----

  void collective(Script& in) {
    c10d_pg_t* g = slot(in, groups);
    OpOptions oo;
    const c10d_op_options_t* opts = opOptions(in, oo);
    const auto op = asEnum<c10d_reduce_op_t>(enumArg(in, 9));
    const int root = rankArg(in);
    c10d_work_t* w = nullptr;
    c10d_work_t** out = in.u8() % 32 == 0 ? nullptr : &w;
    const uint8_t which = in.u8() % 20;
    // Every argument drawn up front, in this order: C++ leaves the order in which a call's
    // arguments are evaluated open, and the replay build must consume the script as libFuzzer's.
    const c10d_tensor_t* t0 = oneTensor(in, 0);
    const c10d_tensor_t* t1 = oneTensor(in, 1);
    size_t n1 = 0;
    size_t n2 = 0;
    const c10d_tensor_t* list0 = tensors(in, 0, &n1);
    const c10d_tensor_t* list1 = tensors(in, 1, &n2);
    const int tag = static_cast<int>(in.u32());
    for (uint64_t& split : gSplits) split = in.pick(kHugeCounts);
    size_t s1 = in.u8() % 3;
    size_t s2 = in.u8() % 3;
    const uint64_t* outSplits = s1 == 2 ? nullptr : gSplits;
    const uint64_t* inSplits = s2 == 2 ? nullptr : gSplits + 2;
    if (s1 == 2) s1 = in.pick(kHugeCounts);
    if (s2 == 2) s2 = in.pick(kHugeCounts);
    const uint8_t workSlot = in.u8();
    const char* name = "";
    c10d_status_t st = C10D_STATUS_OK;
    switch (which) {
#define C10D_FUZZ_OP(NAME, ...) \
  name = #NAME;                 \
  st = NAME(__VA_ARGS__);       \
  break
      case 0:
        C10D_FUZZ_OP(c10d_broadcast, g, t0, root, opts, out);
      case 1:
        C10D_FUZZ_OP(c10d_allreduce, g, t0, op, opts, out);
      case 2:
        C10D_FUZZ_OP(c10d_allreduce_into, g, t0, t1, op, opts, out);
      case 3:
        C10D_FUZZ_OP(c10d_allreduce_coalesced, g, list0, n1, op, opts, out);
      case 4:
        C10D_FUZZ_OP(c10d_reduce, g, t0, root, op, opts, out);
      case 5:
        C10D_FUZZ_OP(c10d_reduce_into, g, t0, t1, root, op, opts, out);
      case 6:
        C10D_FUZZ_OP(c10d_allgather, g, list0, n1, t1, opts, out);
      case 7:
        C10D_FUZZ_OP(c10d_allgather_into_tensor, g, t0, t1, opts, out);
      case 8:
        C10D_FUZZ_OP(c10d_gather, g, list0, n1, t1, root, opts, out);
      case 9:
        C10D_FUZZ_OP(c10d_scatter, g, t0, list1, n2, root, opts, out);
      case 10:
        C10D_FUZZ_OP(c10d_reduce_scatter, g, t0, list1, n2, op, opts, out);
      case 11:
        C10D_FUZZ_OP(c10d_reduce_scatter_tensor, g, t0, t1, op, opts, out);
      case 12:
        C10D_FUZZ_OP(c10d_alltoall, g, list0, n1, list1, n2, opts, out);
      case 13:
        C10D_FUZZ_OP(c10d_alltoall_single, g, t0, t1, outSplits, s1, inSplits, s2, opts, out);
      case 14:
        C10D_FUZZ_OP(c10d_barrier, g, opts, out);
      case 15:
        C10D_FUZZ_OP(c10d_send, g, t0, root, tag, opts, out);
      case 16:
        C10D_FUZZ_OP(c10d_recv, g, t0, root, tag, opts, out);
      case 17:
        C10D_FUZZ_OP(c10d_recv_any_source, g, t0, tag, opts, out);
      case 18:
        C10D_FUZZ_OP(c10d_end_coalescing, g, out);
      case 19:
        checked(c10d_start_coalescing(g), "c10d_start_coalescing", oomPossible);
        return;
#undef C10D_FUZZ_OP
    }
    if (!created(st, w, name, oomPossible)) return;
    const int64_t opTimeout = oo.timeoutMs >= 0 ? oo.timeoutMs : groupTimeout(g);
    putWork(workSlot, w, opTimeout);
  }

  // ---- works ----

  void workOp(Script& in) {
    Work& slotW = works[in.u8() % (kSlots * 2)];
    c10d_work_t* w = in.u8() % 8 == 7 ? nullptr : slotW.handle;
    switch (in.u8() % 8) {
      case 0: {
        int64_t t = in.pick(
            {int64_t{0}, int64_t{1}, int64_t{10}, int64_t{C10D_TIMEOUT_DEFAULT}, int64_t{-4}});
        if (t == C10D_TIMEOUT_DEFAULT && (w == nullptr || slotW.boundMs > 300)) t = 0;
        checked(c10d_work_wait(w, t), "c10d_work_wait");
        break;
      }
      case 1:
        checked(c10d_work_test(w), "c10d_work_test", false, true);
        break;
      case 2:
        checked(c10d_work_synchronize(w), "c10d_work_synchronize");
        break;
      case 3: {
        int source = -2;
        const c10d_status_t st = checked(c10d_work_source_rank(w, in.u8() % 8 ? &source : nullptr),
                                         "c10d_work_source_rank");
        if (raw(st) == C10D_STATUS_OK) FUZZ_CHECK(source >= -1, "a source rank below -1");
        break;
      }
      case 4: {
        if (in.u8() % 4 == 0) {
          checked(c10d_work_on_complete(w, nullptr, nullptr), "c10d_work_on_complete");
          break;
        }
        callbacks.emplace_back();
        const c10d_status_t st = checked(c10d_work_on_complete(w, onComplete, &callbacks.back()),
                                         "c10d_work_on_complete");
        if (raw(st) != C10D_STATUS_OK) callbacks.pop_back();
        break;
      }
      case 5:
        checked(c10d_work_abort(w), "c10d_work_abort");
        break;
      case 6:
        if (w != nullptr) {
          c10d_work_release(w);
          slotW.handle = nullptr;
        }
        break;
      case 7: {
        void* stream = nullptr;
        const int device = in.pick({0, -1, 1});
        checked(c10d_cuda_current_stream(device, in.u8() % 4 ? &stream : nullptr),
                "c10d_cuda_current_stream");
        checked(c10d_cuda_set_current_stream(device, stream), "c10d_cuda_set_current_stream");
        break;
      }
    }
  }
};

// The verbs shm workspaces (/dev/shm/c10d-verbs-<pid>-*) this process has left: every group is
// gone when a run ends, so none may remain.
size_t shmWorkspacesLeft() {
  const std::string mine = "c10d-verbs-" + std::to_string(::getpid()) + "-";
  size_t n = 0;
  if (DIR* d = ::opendir("/dev/shm")) {
    while (const dirent* e = ::readdir(d))
      n += std::strncmp(e->d_name, mine.c_str(), mine.size()) == 0;
    ::closedir(d);
  }
  return n;
}

void runScript(const uint8_t* data, size_t size) {
  Script in(data, size);
  Run run;
  for (int calls = 0; calls < 64 && !in.done(); ++calls) {
    switch (in.u8() % 12) {
      case 0:
      case 1:
        run.storeCreate(in);
        break;
      case 2:
      case 3:
        run.storeOp(in);
        break;
      case 4:
        run.groupCreate(in);
        break;
      case 5:
        run.groupQuery(in);
        break;
      case 6:
      case 7:
      case 8:
        run.collective(in);
        break;
      case 9:
        run.workOp(in);
        break;
      case 10:
        run.subgroup(in);
        break;
      case 11:
        if (in.u8() % 4 == 0) {
          run.groupInit(in);
        } else {
          run.groupEnd(in);
        }
        break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  runScript(data, size);
  FUZZ_CHECK(shmWorkspacesLeft() == 0, "a verbs shm workspace left in /dev/shm");
  return 0;
}
