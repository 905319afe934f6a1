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
#include "tests/fuzz/c10d_api_args.h"
#include "tests/fuzz/c10d_api_host_store.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using namespace c10d::fuzz;  // NOLINT: the harness's own helpers (c10d_api_args.h, *_host_store.h)

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
        checked(c10d_monitored_barrier(g, t, in.u8() & 1), "c10d_monitored_barrier", oomPossible);
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
                  "c10d_pg_new_subgroup", oomPossible, true)) {
        putGroup(freeSlot(in), sub, timeoutMs);
      }
    } else {
      const int color = in.pick({0, 1, C10D_NO_COLOR, -2, std::numeric_limits<int>::max()});
      const int k = rankArg(in);
      // Like new_subgroup, split talks to the group's store: its OUT_OF_MEMORY may come back.
      if (created(c10d_pg_split(g, color, k, opts, nullOut ? nullptr : &sub), sub, "c10d_pg_split",
                  oomPossible, true)) {
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
