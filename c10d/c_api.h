/* c10d C ABI: process groups, works and stores for C and for frameworks that embed c10d.
 *
 * What it is
 *   A stable, versioned C99 interface over the C++ API (c10d/core/process_group.h,
 * c10d/core/work.h, c10d/store/store.h): every collective of ProcessGroup, async works with
 * wait/test/callbacks, sub-groups, and stores, including a store whose operations are callbacks
 * into the host framework (so the framework keeps its own rendezvous, as torch does with its
 * Store). No C++ type and no C++ exception ever crosses it. Every name is prefixed c10d_ / C10D_.
 *
 * Versions
 *   C10D_ABI_VERSION changes whenever a declaration here changes incompatibly; it is the SONAME of
 *   the library (libc10d.so.<C10D_ABI_VERSION>). Compatible growth (new functions, new trailing
 *   struct fields) keeps it. Every constructor that starts a chain of objects (c10d_pg_init,
 *   c10d_pg_create_from_store, the store constructors) receives the ABI version the caller was
 *   compiled against, inside its options struct (filled by c10d_*_options_init(), static inline
 *   below, so the number is the caller's header's); a mismatch fails with C10D_STATUS_ABI_MISMATCH
 *   naming both versions. Options structs start with `struct_size` (sizeof as the caller compiled
 *   it): fields past a smaller struct_size take their defaults; bytes past this library's own size
 *   must be zero (they are options this library does not know).
 *
 * Errors
 *   Functions return c10d_status_t. A failing call stores its message in a thread-local string,
 *   read with c10d_last_error(): for errors raised by the C++ core it is the exception's text (the
 *   same words a C++ caller sees: rank, op, sequence number, group, sizes); errors found by this
 *   layer name the function and the parameter. The string is valid until the same thread's next
 *   failing c10d call. Statuses mirror the C++ exception kinds (c10d/base/error.h): InvalidArgument
 * -> C10D_STATUS_INVALID_ARGUMENT, TimeoutError -> C10D_STATUS_TIMEOUT, CommError ->
 *   C10D_STATUS_COMM_ERROR, any other c10d::Error -> C10D_STATUS_ERROR. Store failures are these
 *   same kinds (a store that lost its server is COMM_ERROR, a key that never came is TIMEOUT).
 *
 * Handles and memory
 *   c10d_pg_t, c10d_work_t and c10d_store_t are opaque handles, each released by its own function
 *   (c10d_pg_destroy, c10d_work_release, c10d_store_release; NULL is accepted). Handles share
 *   ownership of what they name: a group keeps its store alive, and a work keeps the op's state
 *   alive, so handles may be released in any order. c10d_tensor_t is a non-owning view: the caller
 *   keeps the memory alive, and does not touch it, until the op's work has completed (released
 *   works included: release does not cancel the op). Strings returned by accessors live as long as
 *   the handle they came from. Nothing returned here is freed with free().
 *
 * Threads (each function states its own rule; the general contract is the C++ one)
 *   - Works, stores, version and error queries: any thread, concurrently.
 *   - A group's collectives, coalescing and sub-group creation: one thread at a time per group, and
 *     issued in the same order on every rank (as in every collective library). Waiting on works
 *     from other threads meanwhile is fine.
 *   - Releasing a handle must not race with another call using the same handle.
 *   - Completion callbacks run on the thread that completes the op (a backend thread) or, when
 *     registered after completion, at once on the registering thread. They must not block for
 *     long and must not destroy the group that runs them.
 *   The library starts threads only through the backends and stores (see docs/api.md, "Threads and
 *   asynchrony"); they are joined by c10d_pg_shutdown or c10d_pg_destroy (groups) and by the last
 *   release of a store (a TCP store's server thread).
 *
 * Blocking
 *   Every blocking call is bounded by a timeout (milliseconds, int64_t). C10D_TIMEOUT_DEFAULT (-1)
 *   means "the one you already have": a work's own timeout, the group's default, the store's.
 *   Nothing waits forever.
 */
#ifndef C10D_C_API_H_
#define C10D_C_API_H_

#include <stddef.h>
#include <stdint.h>

/* The C ABI version this header describes (and the library's SONAME suffix). */
#define C10D_ABI_VERSION 1

#if defined(__GNUC__) || defined(__clang__)
#define C10D_CAPI __attribute__((visibility("default")))
#else
#define C10D_CAPI
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- status codes and errors ------------------------------------------------------------- */

typedef enum c10d_status {
  C10D_STATUS_OK = 0,
  C10D_STATUS_INVALID_ARGUMENT = 1, /* c10d::InvalidArgument: a bad input; nothing communicated */
  C10D_STATUS_TIMEOUT = 2,          /* c10d::TimeoutError */
  C10D_STATUS_COMM_ERROR = 3,       /* c10d::CommError: a peer died, a connection was lost */
  C10D_STATUS_ERROR = 4,            /* any other c10d::Error (e.g. a failed syscall, shut down) */
  C10D_STATUS_ABI_MISMATCH = 5,     /* the caller's C10D_ABI_VERSION is not this library's */
  C10D_STATUS_OUT_OF_MEMORY = 6,    /* std::bad_alloc */
  C10D_STATUS_INTERNAL = 7,         /* an unexpected exception (a bug in c10d: please report) */
  C10D_STATUS_PENDING = 8,          /* c10d_work_test only: the op has not completed yet */
  C10D_STATUS_MAX_ENUM_ = 0x7fffffff
} c10d_status_t;

/* The message of this thread's last failed c10d call ("" if none). Valid until this thread's next
 * failing c10d call. Thread-safety: any thread (the string is per thread). */
C10D_CAPI const char* c10d_last_error(void);

/* "ok", "invalid_argument", "timeout", "comm_error", "error", "abi_mismatch", "out_of_memory",
 * "internal", "pending"; "unknown" otherwise. Static strings. Thread-safety: any thread. */
C10D_CAPI const char* c10d_status_name(c10d_status_t status);

/* C10D_ABI_VERSION of this library, and its release ("0.1.0", static). Any thread. */
C10D_CAPI uint32_t c10d_abi_version(void);
C10D_CAPI const char* c10d_version(void);

/* ---- value types --------------------------------------------------------------------------- */

/* Same order as c10d::DataType. */
typedef enum c10d_dtype {
  C10D_FLOAT32 = 0,
  C10D_FLOAT64 = 1,
  C10D_FLOAT16 = 2,  /* IEEE half, as uint16_t bits */
  C10D_BFLOAT16 = 3, /* bfloat16, as uint16_t bits */
  C10D_INT8 = 4,
  C10D_UINT8 = 5,
  C10D_INT32 = 6,
  C10D_INT64 = 7,
  C10D_BOOL = 8, /* one byte, 0 or 1 */
  C10D_DTYPE_MAX_ENUM_ = 0x7fffffff
} c10d_dtype_t;

typedef enum c10d_device_type {
  C10D_DEVICE_CPU = 0,
  C10D_DEVICE_CUDA = 1,
  C10D_DEVICE_TYPE_MAX_ENUM_ = 0x7fffffff
} c10d_device_type_t;

/* Same order as c10d::ReduceOp::Kind. AVG divides the sum by the group size (integers: toward
 * zero). PREMUL_SUM multiplies every input by c10d_op_options_t::premul_scale, then sums. BAND,
 * BOR and BXOR are for integer and bool tensors only. A backend that cannot reduce an (op, dtype,
 * device) says so with INVALID_ARGUMENT before communicating (c10d_pg_supports asks first). */
typedef enum c10d_reduce_op {
  C10D_REDUCE_SUM = 0,
  C10D_REDUCE_AVG = 1,
  C10D_REDUCE_PRODUCT = 2,
  C10D_REDUCE_MIN = 3,
  C10D_REDUCE_MAX = 4,
  C10D_REDUCE_BAND = 5,
  C10D_REDUCE_BOR = 6,
  C10D_REDUCE_BXOR = 7,
  C10D_REDUCE_PREMUL_SUM = 8,
  C10D_REDUCE_OP_MAX_ENUM_ = 0x7fffffff
} c10d_reduce_op_t;

/* A non-owning view of `numel` contiguous elements of `dtype` at `data` (see "Handles and memory").
 * `data` may be NULL only when numel is 0. device_index: the CUDA ordinal; 0 for CPU. */
typedef struct c10d_tensor {
  void* data;
  uint64_t numel;
  c10d_dtype_t dtype;
  c10d_device_type_t device_type;
  int32_t device_index;
  int32_t reserved_; /* must be 0 */
} c10d_tensor_t;

/* A CPU tensor view (the common case), e.g. c10d_tensor_cpu(buf, n, C10D_FLOAT32). */
static inline c10d_tensor_t c10d_tensor_cpu(void* data, uint64_t numel, c10d_dtype_t dtype) {
  c10d_tensor_t t;
  t.data = data;
  t.numel = numel;
  t.dtype = dtype;
  t.device_type = C10D_DEVICE_CPU;
  t.device_index = 0;
  t.reserved_ = 0;
  return t;
}

/* "Use the timeout you already have" (see "Blocking"). */
#define C10D_TIMEOUT_DEFAULT (-1)
/* c10d_pg_split: this rank joins no sub-group. */
#define C10D_NO_COLOR (-1)

/* ---- options ------------------------------------------------------------------------------- */

/* A group's options, for c10d_pg_init, c10d_pg_create_from_store and the sub-group constructors.
 * Initialise with c10d_pg_options_init() (records this header's ABI version), then set fields. */
typedef struct c10d_pg_options {
  size_t struct_size;   /* sizeof(c10d_pg_options_t) as the caller compiled it */
  uint32_t abi_version; /* C10D_ABI_VERSION as the caller compiled it */
  uint32_t reserved_;   /* must be 0 */
  /* Default timeout of every op of the group and of its rendezvous. C10D_TIMEOUT_DEFAULT: 30
   * minutes (torch's default). */
  int64_t timeout_ms;
  /* Name used in messages ("<backend>:<group_name>"). NULL: "world" (sub-groups:
   * "<parent>/group<id>" or "<parent>/split<id>/color<c>"). Copied. */
  const char* group_name;
  /* Backend settings by name (each backend documents its table, e.g. verbs' C10D_TRANSPORT =
   * "shm" | "tcp"): num_config pairs config_keys[i] = config_values[i]. Copied. */
  size_t num_config;
  const char* const* config_keys;
  const char* const* config_values;
} c10d_pg_options_t;

static inline void c10d_pg_options_init(c10d_pg_options_t* o) {
  o->struct_size = sizeof(c10d_pg_options_t);
  o->abi_version = C10D_ABI_VERSION;
  o->reserved_ = 0;
  o->timeout_ms = C10D_TIMEOUT_DEFAULT;
  o->group_name = NULL;
  o->num_config = 0;
  o->config_keys = NULL;
  o->config_values = NULL;
}

/* A store's options, for the store constructors. Initialise with c10d_store_options_init(). */
typedef struct c10d_store_options {
  size_t struct_size;   /* sizeof(c10d_store_options_t) as the caller compiled it */
  uint32_t abi_version; /* C10D_ABI_VERSION as the caller compiled it */
  uint32_t reserved_;   /* must be 0 */
  /* Bound of every blocking store call (get, wait, connecting). C10D_TIMEOUT_DEFAULT: 5 minutes
   * (torch's TCPStore default). */
  int64_t timeout_ms;
} c10d_store_options_t;

static inline void c10d_store_options_init(c10d_store_options_t* o) {
  o->struct_size = sizeof(c10d_store_options_t);
  o->abi_version = C10D_ABI_VERSION;
  o->reserved_ = 0;
  o->timeout_ms = C10D_TIMEOUT_DEFAULT;
}

/* Per-op options (every collective takes a pointer to one; NULL = all defaults). */
typedef struct c10d_op_options {
  size_t struct_size; /* sizeof(c10d_op_options_t) as the caller compiled it */
  /* The op's timeout: how long the backend lets it run before failing it with TIMEOUT.
   * C10D_TIMEOUT_DEFAULT: the group's. */
  int64_t timeout_ms;
  /* The factor of C10D_REDUCE_PREMUL_SUM (ignored by other ops). A PREMUL_SUM with NULL options is
   * an INVALID_ARGUMENT: the factor has no meaningful default. */
  double premul_scale;
  /* c10d_broadcast and c10d_allgather_into_tensor (ignored by other ops): when the op's tensor
   * (each rank's input) is several tensors laid end to end, their element counts, num_parts of
   * them summing to its numel. Compared across ranks with the rest of the op, so ranks that split
   * it differently fail with INVALID_ARGUMENT naming the tensor instead of moving misaligned data.
   * NULL / 0: one tensor. (Added in 0.1.x; a caller compiled without them gets NULL / 0.) */
  const uint64_t* parts;
  size_t num_parts;
} c10d_op_options_t;

static inline void c10d_op_options_init(c10d_op_options_t* o) {
  o->struct_size = sizeof(c10d_op_options_t);
  o->timeout_ms = C10D_TIMEOUT_DEFAULT;
  o->premul_scale = 1.0;
  o->parts = NULL;
  o->num_parts = 0;
}

/* ---- handles ------------------------------------------------------------------------------- */

typedef struct c10d_pg c10d_pg_t;
typedef struct c10d_work c10d_work_t;
typedef struct c10d_store c10d_store_t;

/* ---- sinks: how bytes of unknown size are handed over ---------------------------------------- */

/* Whoever receives bytes makes the sink; whoever produces them calls
 * `sink->write(sink, data, size)`, zero or more times (the pieces are concatenated). write copies
 * before returning, so `data` may be freed or reused at once. It returns C10D_STATUS_OK, or
 * C10D_STATUS_OUT_OF_MEMORY (the producer then fails with that status). The sinks this library
 * passes to callbacks live only for the duration of the callback. */
typedef struct c10d_sink c10d_sink_t;
struct c10d_sink {
  c10d_status_t (*write)(c10d_sink_t* sink, const void* data, size_t size);
  void* context; /* private to whoever made the sink */
};

/* ---- stores -------------------------------------------------------------------------------- */

/* TCPStore (c10d/store/tcp/tcp_store.h). is_server: this process runs the server on a thread (as
 * rank 0 does); port 0 with is_server picks a free port (c10d_store_tcp_port says which). Clients
 * connect with retry and backoff until the timeout. num_workers: the number of clients expected
 * (-1: unknown); with is_server and num_workers > 0 the constructor waits until that many have
 * connected. options: required (ABI check). Thread-safety: any thread. */
C10D_CAPI c10d_status_t c10d_store_tcp_create(const char* host, uint16_t port, int is_server,
                                              int num_workers, const c10d_store_options_t* options,
                                              c10d_store_t** out);
/* The port a TCP store's server listens on (the chosen one for port 0). INVALID_ARGUMENT for other
 * stores. Any thread. */
C10D_CAPI c10d_status_t c10d_store_tcp_port(c10d_store_t* store, uint16_t* port);
/* FileStore (c10d/store/file_store.h): one file shared by processes on a host or over NFS; removed
 * by the last of num_users users (num_users < 0: never). A forked child must create its own. */
C10D_CAPI c10d_status_t c10d_store_file_create(const char* path, int num_users,
                                               const c10d_store_options_t* options,
                                               c10d_store_t** out);
/* HashStore: in this process only (ranks as threads, tests). */
C10D_CAPI c10d_status_t c10d_store_hash_create(const c10d_store_options_t* options,
                                               c10d_store_t** out);
/* PrefixStore: a view of `base` with every key prefixed by "<prefix>/"; keeps `base` alive (the
 * caller may release its own handle to it). */
C10D_CAPI c10d_status_t c10d_store_prefix_create(const char* prefix, c10d_store_t* base,
                                                 c10d_store_t** out);

/* A store implemented by the host framework. Every callback receives `user` first and returns a
 * status: OK, or the failure's kind (TIMEOUT when a key did not come in time, COMM_ERROR when the
 * framework's store lost its server, INVALID_ARGUMENT, ERROR), with a message written to `error`
 * (optional but strongly advised: it becomes the text of the C++ error, after
 * "host store <op>('<key>'): "). The library turns a failure into the corresponding C++ error, so
 * every backend that rendezvouses through this store reports it as it would its own.
 *
 * Required: set, get, add, check, wait. Optional (NULL: the operation fails with ERROR saying the
 * host store does not provide it): delete_key, num_keys, compare_set, append. multiGet/multiSet are
 * loops of get/set.
 *
 * Callbacks are called from any thread, concurrently (the backends' threads included), and must
 * be thread-safe. They must return (never throw or longjmp out). get and wait block at most
 * `timeout_ms` (always > 0 or 0, never C10D_TIMEOUT_DEFAULT: the library resolves it to the
 * store's timeout) and then return TIMEOUT. Keys are NUL-terminated strings; values are bytes.
 * `destroy` (optional) is called once, from whichever thread drops the last reference to the store
 * (possibly a backend thread, after c10d_store_release, when the last group using it goes); `user`
 * must stay valid until then. The table is copied at creation. */
typedef struct c10d_store_callbacks {
  size_t struct_size; /* sizeof(c10d_store_callbacks_t) as the caller compiled it */
  void* user;
  /* Stores `value` (size bytes) under `key`, waking waiters. */
  c10d_status_t (*set)(void* user, const char* key, const void* value, size_t size,
                       c10d_sink_t* error);
  /* Waits up to timeout_ms for `key`, then writes its value to `value`. */
  c10d_status_t (*get)(void* user, const char* key, int64_t timeout_ms, c10d_sink_t* value,
                       c10d_sink_t* error);
  /* Treats the value as a decimal integer (missing = 0), adds delta, stores and returns the sum in
   * *result; atomic across all users of the store. */
  c10d_status_t (*add)(void* user, const char* key, int64_t delta, int64_t* result,
                       c10d_sink_t* error);
  /* *all_exist = 1 when every key exists, else 0. Never blocks. */
  c10d_status_t (*check)(void* user, const char* const* keys, size_t num_keys, int* all_exist,
                         c10d_sink_t* error);
  /* Waits up to timeout_ms until every key exists. */
  c10d_status_t (*wait)(void* user, const char* const* keys, size_t num_keys, int64_t timeout_ms,
                        c10d_sink_t* error);
  /* Optional. Removes key; *deleted = 1 when it existed. */
  c10d_status_t (*delete_key)(void* user, const char* key, int* deleted, c10d_sink_t* error);
  /* Optional. *count = the number of keys. */
  c10d_status_t (*num_keys)(void* user, int64_t* count, c10d_sink_t* error);
  /* Optional. Atomically: if key is missing and expected_size is 0, or key's value equals
   * expected, stores desired and writes desired to `current`; otherwise writes the value it has
   * (expected if missing) to `current`. */
  c10d_status_t (*compare_set)(void* user, const char* key, const void* expected,
                               size_t expected_size, const void* desired, size_t desired_size,
                               c10d_sink_t* current, c10d_sink_t* error);
  /* Optional. Appends value to key's value (creating it); atomic. */
  c10d_status_t (*append)(void* user, const char* key, const void* value, size_t size,
                          c10d_sink_t* error);
  /* Optional. Called once when the store is gone (see above). */
  void (*destroy)(void* user);
} c10d_store_callbacks_t;

/* Wraps the callback table as a c10d store (a c10d::Store subclass: groups and sub-groups
 * rendezvous through it like any other). options: required (ABI check; timeout_ms is what get and
 * wait receive). On failure `destroy` is not called (the caller still owns `user`). Any thread. */
C10D_CAPI c10d_status_t c10d_store_from_callbacks(const c10d_store_callbacks_t* callbacks,
                                                  const c10d_store_options_t* options,
                                                  c10d_store_t** out);

/* Store operations (c10d/store/store.h semantics), for any store, from any thread. get and wait
 * block at most the store's timeout / timeout_ms and then fail with TIMEOUT naming the key(s). */
C10D_CAPI c10d_status_t c10d_store_set(c10d_store_t* store, const char* key, const void* value,
                                       size_t size);
C10D_CAPI c10d_status_t c10d_store_get(c10d_store_t* store, const char* key, c10d_sink_t* value);
C10D_CAPI c10d_status_t c10d_store_add(c10d_store_t* store, const char* key, int64_t delta,
                                       int64_t* result);
C10D_CAPI c10d_status_t c10d_store_check(c10d_store_t* store, const char* const* keys,
                                         size_t num_keys, int* all_exist);
C10D_CAPI c10d_status_t c10d_store_wait(c10d_store_t* store, const char* const* keys,
                                        size_t num_keys, int64_t timeout_ms);
C10D_CAPI c10d_status_t c10d_store_delete_key(c10d_store_t* store, const char* key, int* deleted);
C10D_CAPI c10d_status_t c10d_store_num_keys(c10d_store_t* store, int64_t* count);
/* Changes the store's default timeout (C10D_TIMEOUT_DEFAULT is not accepted here). */
C10D_CAPI c10d_status_t c10d_store_set_timeout(c10d_store_t* store, int64_t timeout_ms);
/* Drops this handle; the store lives on while groups or prefix stores use it. NULL: no-op. Must
 * not race with another call on the same handle. */
C10D_CAPI void c10d_store_release(c10d_store_t* store);

/* ---- process groups ------------------------------------------------------------------------ */

/* Creates this rank's group, as c10d::init does (c10d/bootstrap/init.h):
 *   init_method  "env://" (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE; NULL means this),
 *                "tcp://HOST:PORT?rank=R&world_size=N" or "file:///ABS/PATH?rank=R&world_size=N";
 *                env:// and tcp:// run the TCPStore server in rank 0.
 *   backend      "gloo", "verbs", "nccl", ...; NULL or "" or "auto": the best available here.
 *   rank, world_size  -1: from the URL or the environment.
 *   options      required (ABI check); timeout_ms bounds the rendezvous too.
 * Collective: every rank of the group calls it. Blocks until the rendezvous and the backend's
 * connection set-up are done (bounded by the timeout). Any thread. */
C10D_CAPI c10d_status_t c10d_pg_init(const char* init_method, const char* backend, int rank,
                                     int world_size, const c10d_pg_options_t* options,
                                     c10d_pg_t** out);
/* Creates the group over a store the caller made (for instance one from c10d_store_from_callbacks,
 * the host framework's own rendezvous). The group keeps the store alive. rank in [0, world_size).
 * Collective; blocks as c10d_pg_init. Any thread. */
C10D_CAPI c10d_status_t c10d_pg_create_from_store(c10d_store_t* store, const char* backend,
                                                  int rank, int world_size,
                                                  const c10d_pg_options_t* options,
                                                  c10d_pg_t** out);

/* Accessors. Strings live as long as the handle. Any thread. */
C10D_CAPI c10d_status_t c10d_pg_rank(const c10d_pg_t* pg, int* rank);
C10D_CAPI c10d_status_t c10d_pg_size(const c10d_pg_t* pg, int* size);
/* The registry name: "gloo", "verbs", ... */
C10D_CAPI c10d_status_t c10d_pg_backend_name(const c10d_pg_t* pg, const char** name);
/* "<backend>:<group_name>", as every message about the group names it. */
C10D_CAPI c10d_status_t c10d_pg_name(const c10d_pg_t* pg, const char** name);
/* The store the group rendezvoused through, as a new handle (release it). */
C10D_CAPI c10d_status_t c10d_pg_store(const c10d_pg_t* pg, c10d_store_t** out);
/* *supported = 1 when the backend can reduce `op` on `dtype` tensors on `device_type`. */
C10D_CAPI c10d_status_t c10d_pg_supports(const c10d_pg_t* pg, c10d_reduce_op_t op,
                                         c10d_dtype_t dtype, c10d_device_type_t device_type,
                                         int* supported);

/* Sub-groups (collective over `pg`, every rank calls them in the same order; one thread at a time
 * per group). new_subgroup: every rank passes the same `ranks` (ranks of `pg`, any order, no
 * duplicates); split: ranks passing the same color >= 0 form a group, ordered by (key, rank);
 * C10D_NO_COLOR joins none. Ranks outside the new group get *out = NULL and OK. options: NULL
 * takes the parent's timeout and config (named "<parent>/group<id>"); otherwise they are used as
 * given (with the ABI check). Each sub-group rendezvouses under its own prefix of the parent's
 * store and has its own backend instance. */
C10D_CAPI c10d_status_t c10d_pg_new_subgroup(c10d_pg_t* pg, const int* ranks, size_t num_ranks,
                                             const c10d_pg_options_t* options, c10d_pg_t** out);
C10D_CAPI c10d_status_t c10d_pg_split(c10d_pg_t* pg, int color, int key,
                                      const c10d_pg_options_t* options, c10d_pg_t** out);

/* Stops the backend: pending works fail with ERROR ("... shut down"), the backend's threads are
 * joined. Idempotent; later ops fail. Must not be called from a completion callback of the same
 * group. One thread at a time per group (like the collectives). */
C10D_CAPI c10d_status_t c10d_pg_shutdown(c10d_pg_t* pg);
/* Shuts the group down as c10d_pg_shutdown does (so its threads are joined when this returns),
 * then frees the handle. Sub-groups are groups of their own and stay usable. NULL: no-op. Same
 * thread rules as c10d_pg_shutdown; no other call may use the handle afterwards. */
C10D_CAPI void c10d_pg_destroy(c10d_pg_t* pg);

/* ---- fault tolerance (docs/fault-tolerance.md) ---------------------------------------------- *
 * Surviving a dead or stopped rank: abort, revoke, agree, shrink (the C++ ProcessGroup methods of
 * the same names). Backends without them (gloo and nccl for now) return ERROR naming themselves.
 * Ops of a revoked group fail with COMM_ERROR (c10d::RevokedError is a CommError) whose message
 * names the rank that revoked and its reason; c10d_pg_is_revoked tells it from a lost peer. */
/* Local: this rank's pending and later ops fail at once (COMM_ERROR "... aborted on rank R:
 * <reason>"), the backend's threads stop and its connections close, so peers waiting on this rank
 * fail promptly. reason: NULL = none. Idempotent. Thread rules as c10d_pg_shutdown. */
C10D_CAPI c10d_status_t c10d_pg_abort(c10d_pg_t* pg, const char* reason);
/* Non-collective, any rank, any thread: every live rank's pending and later ops on the group fail
 * with COMM_ERROR naming the first revoker and its reason, within about 100 ms plus a store round
 * trip. reason: NULL = none. Idempotent. */
C10D_CAPI c10d_status_t c10d_pg_revoke(c10d_pg_t* pg, const char* reason);
/* *revoked = 1 once the group was revoked or aborted (here or by a peer), else 0. Any thread. */
C10D_CAPI c10d_status_t c10d_pg_is_revoked(const c10d_pg_t* pg, int* revoked);
/* Collective over the live ranks (usable on a revoked group): *agreed_flags = the AND of the flags
 * of the ranks counted alive; the failed ranks (ascending) go to failed[0..failed_capacity) and
 * their number to *num_failed (which may exceed failed_capacity: pass the group size to get all).
 * The same on every rank that returns OK, even if ranks die during the call. A rank declared
 * failed gets COMM_ERROR ("... fenced"). timeout_ms: how long a silent rank (not known dead) is
 * waited for; C10D_TIMEOUT_DEFAULT = C10D_FT_DETECT_MS (10000). failed may be NULL when
 * failed_capacity is 0. */
C10D_CAPI c10d_status_t c10d_pg_agree(c10d_pg_t* pg, uint64_t flags, int64_t timeout_ms,
                                      uint64_t* agreed_flags, int* failed, size_t failed_capacity,
                                      size_t* num_failed);
/* Collective over the live ranks: revokes `pg` (if not already), agrees on the failed ranks and
 * returns in *out a new group of the survivors (ranks renumbered in ascending order, named
 * "<name>/shrink<k>", same backend and options), usable at once; release it with
 * c10d_pg_destroy. `pg` stays revoked. timeout_ms as in c10d_pg_agree. */
C10D_CAPI c10d_status_t c10d_pg_shrink(c10d_pg_t* pg, int64_t timeout_ms, c10d_pg_t** out);

/* ---- collectives --------------------------------------------------------------------------- *
 * Every collective validates its arguments on this rank first (NULL data with numel > 0, a root or
 * peer out of range, sizes, dtype or device mismatches, an output that partly overlaps an input
 * (in place is the same memory, or for the *_tensor ops this rank's block of the larger tensor),
 * an (op, dtype) the backend cannot do, an unknown enum value) and fails with INVALID_ARGUMENT
 * before any communication, naming the
 * parameter (and rank, group, sizes). Otherwise it starts the op and returns its work in *out at
 * once (the op runs asynchronously; a small op may already be complete). Rules for every one:
 * issued in the same order on every rank; one thread at a time per group; `opts` may be NULL.
 * Arrays of tensors are `num` consecutive c10d_tensor_t. After the first asynchronous error (a
 * dead peer) the group is broken: every later op fails with that error's kind, saying so. */

/* In place: every rank ends with root's tensor. */
C10D_CAPI c10d_status_t c10d_broadcast(c10d_pg_t* pg, const c10d_tensor_t* tensor, int root,
                                       const c10d_op_options_t* opts, c10d_work_t** out);
/* In place: every rank ends with the reduction of all ranks' tensor. */
C10D_CAPI c10d_status_t c10d_allreduce(c10d_pg_t* pg, const c10d_tensor_t* tensor,
                                       c10d_reduce_op_t op, const c10d_op_options_t* opts,
                                       c10d_work_t** out);
/* Out of place (ncclAllReduce(send, recv)): every rank's `output` receives the reduction of all
 * ranks' `input`, which is left as it was. Same dtype, device and numel; the same memory is in
 * place, a partial overlap is C10D_STATUS_INVALID_ARGUMENT. Ranks may mix this and
 * c10d_allreduce in one op. */
C10D_CAPI c10d_status_t c10d_allreduce_into(c10d_pg_t* pg, const c10d_tensor_t* output,
                                            const c10d_tensor_t* input, c10d_reduce_op_t op,
                                            const c10d_op_options_t* opts, c10d_work_t** out);
/* allreduce of each tensor (one dtype and device), as one op. */
C10D_CAPI c10d_status_t c10d_allreduce_coalesced(c10d_pg_t* pg, const c10d_tensor_t* tensors,
                                                 size_t num_tensors, c10d_reduce_op_t op,
                                                 const c10d_op_options_t* opts, c10d_work_t** out);
/* In place on root; other ranks' tensor is left as it was. */
C10D_CAPI c10d_status_t c10d_reduce(c10d_pg_t* pg, const c10d_tensor_t* tensor, int root,
                                    c10d_reduce_op_t op, const c10d_op_options_t* opts,
                                    c10d_work_t** out);
/* Out of place: root's `output` receives the reduction of all ranks' `input`; every input is
 * left as it was. `output` is read on the root only (NULL elsewhere is fine). */
C10D_CAPI c10d_status_t c10d_reduce_into(c10d_pg_t* pg, const c10d_tensor_t* output,
                                         const c10d_tensor_t* input, int root, c10d_reduce_op_t op,
                                         const c10d_op_options_t* opts, c10d_work_t** out);
/* outputs[i] (num_outputs == group size, each input->numel) receives rank i's input. */
C10D_CAPI c10d_status_t c10d_allgather(c10d_pg_t* pg, const c10d_tensor_t* outputs,
                                       size_t num_outputs, const c10d_tensor_t* input,
                                       const c10d_op_options_t* opts, c10d_work_t** out);
/* output (size * input->numel) receives the inputs concatenated in rank order. */
C10D_CAPI c10d_status_t c10d_allgather_into_tensor(c10d_pg_t* pg, const c10d_tensor_t* output,
                                                   const c10d_tensor_t* input,
                                                   const c10d_op_options_t* opts,
                                                   c10d_work_t** out);
/* On root, outputs[i] receives rank i's input; other ranks pass num_outputs = 0. */
C10D_CAPI c10d_status_t c10d_gather(c10d_pg_t* pg, const c10d_tensor_t* outputs, size_t num_outputs,
                                    const c10d_tensor_t* input, int root,
                                    const c10d_op_options_t* opts, c10d_work_t** out);
/* Rank i's output receives root's inputs[i]; other ranks pass num_inputs = 0. */
C10D_CAPI c10d_status_t c10d_scatter(c10d_pg_t* pg, const c10d_tensor_t* output,
                                     const c10d_tensor_t* inputs, size_t num_inputs, int root,
                                     const c10d_op_options_t* opts, c10d_work_t** out);
/* output = the reduction over ranks of their inputs[rank] (num_inputs == size, each
 * output->numel). */
C10D_CAPI c10d_status_t c10d_reduce_scatter(c10d_pg_t* pg, const c10d_tensor_t* output,
                                            const c10d_tensor_t* inputs, size_t num_inputs,
                                            c10d_reduce_op_t op, const c10d_op_options_t* opts,
                                            c10d_work_t** out);
/* input (size * output->numel): output = the reduction of every rank's rank-th chunk. */
C10D_CAPI c10d_status_t c10d_reduce_scatter_tensor(c10d_pg_t* pg, const c10d_tensor_t* output,
                                                   const c10d_tensor_t* input, c10d_reduce_op_t op,
                                                   const c10d_op_options_t* opts,
                                                   c10d_work_t** out);
/* outputs[i] receives rank i's inputs[rank]; sizes may differ per peer (num_outputs == num_inputs
 * == size). A size that disagrees with the peer's fails the work with INVALID_ARGUMENT on both
 * ranks of the pair. */
C10D_CAPI c10d_status_t c10d_alltoall(c10d_pg_t* pg, const c10d_tensor_t* outputs,
                                      size_t num_outputs, const c10d_tensor_t* inputs,
                                      size_t num_inputs, const c10d_op_options_t* opts,
                                      c10d_work_t** out);
/* One flat tensor each way, cut by splits (element counts per peer; num_*_splits == size). Zero
 * splits (NULL, 0) mean equal chunks (numel divisible by size). */
C10D_CAPI c10d_status_t c10d_alltoall_single(c10d_pg_t* pg, const c10d_tensor_t* output,
                                             const c10d_tensor_t* input,
                                             const uint64_t* output_splits,
                                             size_t num_output_splits, const uint64_t* input_splits,
                                             size_t num_input_splits, const c10d_op_options_t* opts,
                                             c10d_work_t** out);
C10D_CAPI c10d_status_t c10d_barrier(c10d_pg_t* pg, const c10d_op_options_t* opts,
                                     c10d_work_t** out);
/* Point to point, matched by (peer, tag). recv_any_source takes the first sender with this tag;
 * c10d_work_source_rank says which rank it was. */
C10D_CAPI c10d_status_t c10d_send(c10d_pg_t* pg, const c10d_tensor_t* tensor, int dst, int tag,
                                  const c10d_op_options_t* opts, c10d_work_t** out);
C10D_CAPI c10d_status_t c10d_recv(c10d_pg_t* pg, const c10d_tensor_t* tensor, int src, int tag,
                                  const c10d_op_options_t* opts, c10d_work_t** out);
C10D_CAPI c10d_status_t c10d_recv_any_source(c10d_pg_t* pg, const c10d_tensor_t* tensor, int tag,
                                             const c10d_op_options_t* opts, c10d_work_t** out);
/* A store-based barrier that names the ranks that did not arrive: rank 0 waits for each other
 * rank up to timeout_ms and fails with TIMEOUT listing the missing ranks (the first one only
 * unless wait_all_ranks); the others fail with rank 0's verdict. Blocking; collective. */
C10D_CAPI c10d_status_t c10d_monitored_barrier(c10d_pg_t* pg, int64_t timeout_ms,
                                               int wait_all_ranks);

/* Between these two calls ops are collected (each still returns its own work, which the caller
 * releases); end returns one work that completes when all of them have (a backend may fuse them).
 * Collective order rules apply to the ops inside. */
C10D_CAPI c10d_status_t c10d_start_coalescing(c10d_pg_t* pg);
C10D_CAPI c10d_status_t c10d_end_coalescing(c10d_pg_t* pg, c10d_work_t** out);

/* ---- CUDA streams (the nccl backend) ------------------------------------------------------- *
 * The nccl backend runs each op on a stream of its own, ordered after the calling thread's
 * "current stream" of the tensor's device; c10d_work_synchronize makes that current stream wait
 * for the op (c10d/backends/nccl/cuda_stream.h). A framework sets the current stream to its own
 * (torch: the current torch stream) around the calls. Streams are cudaStream_t passed as void*;
 * NULL is CUDA's legacy default stream. In a library built without a CUDA backend these fail with
 * INVALID_ARGUMENT. Thread-safety: any thread; the setting is per thread. */
C10D_CAPI c10d_status_t c10d_cuda_set_current_stream(int device, void* stream);
C10D_CAPI c10d_status_t c10d_cuda_current_stream(int device, void** stream);

/* ---- works --------------------------------------------------------------------------------- *
 * Thread-safety: every function may be called from any thread, concurrently on the same work,
 * except c10d_work_release, which must not race with another call on the same handle. */

/* Blocks until the op completes or timeout_ms passes (C10D_TIMEOUT_DEFAULT: the op's own timeout;
 * 0: do not block). Returns OK, the op's error (its kind; c10d_last_error() has its message:
 * COMM_ERROR naming the peer, TIMEOUT when the backend timed the op out, ...), or TIMEOUT when
 * timeout_ms passed first; the op is then still pending (c10d_work_test says PENDING) and may
 * still complete or fail. */
C10D_CAPI c10d_status_t c10d_work_wait(c10d_work_t* work, int64_t timeout_ms);
/* Never blocks. PENDING while the op runs; once complete, OK or the op's error, as c10d_work_wait
 * returns it (message in c10d_last_error()). */
C10D_CAPI c10d_status_t c10d_work_test(c10d_work_t* work);
/* Device work (nccl): makes the calling thread's current stream of the op's device wait for the op,
 * without blocking the host; returns the op's error only if it has already failed. CPU work: a
 * no-op. */
C10D_CAPI c10d_status_t c10d_work_synchronize(c10d_work_t* work);
/* recv_any_source: the rank the message came from, once complete; -1 before and for other ops. */
C10D_CAPI c10d_status_t c10d_work_source_rank(c10d_work_t* work, int* rank);

/* status: OK or the op's error; message: "" on success, else the error's text (valid during the
 * call only). */
typedef void (*c10d_work_callback_t)(void* user, c10d_status_t status, const char* message);
/* Runs fn(user, status, message) exactly once when the op completes: on the thread that completes
 * it (a backend thread), or at once on the calling thread if the op has already completed. Several
 * callbacks run in registration order. fn must not block for long, must not destroy the group and
 * must return normally. Releasing the work handle does not cancel registered callbacks. */
C10D_CAPI c10d_status_t c10d_work_on_complete(c10d_work_t* work, c10d_work_callback_t fn,
                                              void* user);
/* Gives up on the op: completes it at once with ERROR ("... aborted") if it is still pending, and
 * lets the backend cancel what it can (gloo: point-to-point ops). A backend that cannot cancel may
 * still move data into the op's tensors until the group is shut down: keep them alive until then.
 * No-op on a completed work. */
C10D_CAPI c10d_status_t c10d_work_abort(c10d_work_t* work);
/* Drops the handle (does not cancel the op; see "Handles and memory"). NULL: no-op. */
C10D_CAPI void c10d_work_release(c10d_work_t* work);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* C10D_C_API_H_ */
