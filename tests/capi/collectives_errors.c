/* Error paths of the C ABI: statuses and messages naming the bad parameter; versions. */
#define _POSIX_C_SOURCE 200809L

#include "collectives_test.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "c10d/base/config.h"

/* ---- errors ------------------------------------------------------------------------------- */

static void* last_error_of_new_thread(void* out) {
  snprintf((char*)out, 64, "%s", c10d_last_error());
  return NULL;
}

/* Every failure is a status plus a message naming the parameter (all local: no communication). */
void test_errors(c10d_pg_t* pg, int rank, int size) {
  float x[4] = {0, 0, 0, 0};
  c10d_tensor_t t = f32(x, 4), bad;
  c10d_work_t* w = (c10d_work_t*)&w; /* must be cleared by a failing call */
  c10d_op_options_t o;
  struct {
    c10d_op_options_t o;
    uint64_t newer_field;
  } big;
  char other[64];
  {
    pthread_t th;
    bad = t;
    bad.dtype = (c10d_dtype_t)42;
    CHECK_FAILS(c10d_allreduce(pg, &bad, C10D_REDUCE_SUM, NULL, &w), C10D_STATUS_INVALID_ARGUMENT,
                "c10d_allreduce", "tensor", "dtype 42");
    CHECK(w == NULL, "a failed call left *out set");
    /* The message is per thread: a new thread has none. */
    CHECK(pthread_create(&th, NULL, last_error_of_new_thread, other) == 0, "pthread_create");
    pthread_join(th, NULL);
    CHECK(other[0] == '\0', "a new thread sees last error '%s'", other);
  }
  bad.dtype = (c10d_dtype_t)-1;
  CHECK_FAILS(c10d_broadcast(pg, &bad, 0, NULL, &w), C10D_STATUS_INVALID_ARGUMENT, "dtype -1", NULL,
              NULL);
  bad = t;
  bad.device_type = (c10d_device_type_t)7;
  CHECK_FAILS(c10d_allreduce(pg, &bad, C10D_REDUCE_SUM, NULL, &w), C10D_STATUS_INVALID_ARGUMENT,
              "device_type 7", NULL, NULL);
  bad = t;
  bad.reserved_ = 1;
  CHECK_FAILS(c10d_allreduce(pg, &bad, C10D_REDUCE_SUM, NULL, &w), C10D_STATUS_INVALID_ARGUMENT,
              "reserved_", NULL, NULL);
  bad = t;
  bad.data = NULL;
  CHECK_FAILS(c10d_allreduce(pg, &bad, C10D_REDUCE_SUM, NULL, &w), C10D_STATUS_INVALID_ARGUMENT,
              "null data", NULL, NULL);
  {
    c10d_tensor_t pair[2];
    pair[0] = t;
    pair[1] = t;
    pair[1].dtype = (c10d_dtype_t)9;
    CHECK_FAILS(c10d_allreduce_coalesced(pg, pair, 2, C10D_REDUCE_SUM, NULL, &w),
                C10D_STATUS_INVALID_ARGUMENT, "tensors[1]", "dtype 9", NULL);
  }
  CHECK_FAILS(c10d_allreduce_into(pg, NULL, &t, C10D_REDUCE_SUM, NULL, &w),
              C10D_STATUS_INVALID_ARGUMENT, "c10d_allreduce_into", "output is NULL", NULL);
  bad = t;
  bad.numel = t.numel + 1;
  CHECK_FAILS(c10d_allreduce_into(pg, &bad, &t, C10D_REDUCE_SUM, NULL, &w),
              C10D_STATUS_INVALID_ARGUMENT, "output has", "the input's numel", NULL);
  CHECK_FAILS(c10d_allreduce(pg, &t, (c10d_reduce_op_t)99, NULL, &w), C10D_STATUS_INVALID_ARGUMENT,
              "reduce op 99", NULL, NULL);
  CHECK_FAILS(c10d_allreduce(pg, &t, C10D_REDUCE_PREMUL_SUM, NULL, &w),
              C10D_STATUS_INVALID_ARGUMENT, "premul_scale", NULL, NULL);
  CHECK_FAILS(c10d_allreduce(pg, &t, C10D_REDUCE_BXOR, NULL, &w), C10D_STATUS_INVALID_ARGUMENT,
              "bxor", "float", NULL);
  /* A flat tensor's parts (opts->parts): present when counted, and summing to its numel. */
  c10d_op_options_init(&o);
  o.num_parts = 2;
  CHECK_FAILS(c10d_broadcast(pg, &t, 0, &o, &w), C10D_STATUS_INVALID_ARGUMENT,
              "opts->parts is NULL", "num_parts is 2", NULL);
  {
    uint64_t parts[2];
    parts[0] = 1;
    parts[1] = (uint64_t)t.numel;
    o.parts = parts;
    CHECK_FAILS(c10d_broadcast(pg, &t, 0, &o, &w), C10D_STATUS_INVALID_ARGUMENT, "parts sum to",
                "the tensor has", NULL);
  }
  {
    char root[64];
    sprintf(root, "root rank %d", size);
    CHECK_FAILS(c10d_broadcast(pg, &t, size, NULL, &w), C10D_STATUS_INVALID_ARGUMENT, root,
                "broadcast", NULL);
    sprintf(root, "rank %d is out of range", size + 3);
    CHECK_FAILS(c10d_send(pg, &t, size + 3, 0, NULL, &w), C10D_STATUS_INVALID_ARGUMENT, root, NULL,
                NULL);
    sprintf(root, "rank %d is this rank", rank);
    CHECK_FAILS(c10d_recv(pg, &t, rank, 0, NULL, &w), C10D_STATUS_INVALID_ARGUMENT, root, NULL,
                NULL);
  }
  CHECK_FAILS(c10d_allgather(pg, &t, 1, &t, NULL, &w),
              size == 1 ? C10D_STATUS_OK : C10D_STATUS_INVALID_ARGUMENT,
              size == 1 ? NULL : "1 tensors", NULL, NULL);
  if (size == 1) finish(w, "allgather of one");
  CHECK_FAILS(c10d_allreduce(NULL, &t, C10D_REDUCE_SUM, NULL, &w), C10D_STATUS_INVALID_ARGUMENT,
              "c10d_allreduce: pg is NULL", NULL, NULL);
  CHECK_FAILS(c10d_allreduce(pg, NULL, C10D_REDUCE_SUM, NULL, &w), C10D_STATUS_INVALID_ARGUMENT,
              "tensor is NULL", NULL, NULL);
  CHECK_FAILS(c10d_allreduce(pg, &t, C10D_REDUCE_SUM, NULL, NULL), C10D_STATUS_INVALID_ARGUMENT,
              "out is NULL", NULL, NULL);
  CHECK_FAILS(c10d_work_wait(NULL, 0), C10D_STATUS_INVALID_ARGUMENT, "work is NULL", NULL, NULL);

  /* Options structs: too small, a newer caller's non-zero unknown field, negative timeouts. */
  c10d_op_options_init(&o);
  o.struct_size = 3;
  CHECK_FAILS(c10d_barrier(pg, &o, &w), C10D_STATUS_INVALID_ARGUMENT, "struct_size 3", NULL, NULL);
  /* A size that ends inside a field: refused, never half copied over the default. */
  c10d_op_options_init(&o);
  o.struct_size = sizeof o - 4;
  CHECK_FAILS(c10d_barrier(pg, &o, &w), C10D_STATUS_INVALID_ARGUMENT, "not a multiple of 8", NULL,
              NULL);
  c10d_op_options_init(&o);
  o.timeout_ms = -5;
  CHECK_FAILS(c10d_barrier(pg, &o, &w), C10D_STATUS_INVALID_ARGUMENT, "timeout_ms -5", NULL, NULL);
  memset(&big, 0, sizeof big);
  c10d_op_options_init(&big.o);
  big.o.struct_size = sizeof big;
  big.newer_field = 1;
  CHECK_FAILS(c10d_barrier(pg, &big.o, &w), C10D_STATUS_INVALID_ARGUMENT, "does not know", NULL,
              NULL);
  big.newer_field = 0; /* a newer caller that leaves its new option at zero is fine */
  CHECK_OK(c10d_barrier(pg, &big.o, &w));
  finish(w, "barrier with a larger options struct");
  CHECK_FAILS(c10d_work_wait(NULL, -7), C10D_STATUS_INVALID_ARGUMENT, NULL, NULL, NULL);
  CHECK_FAILS(c10d_pg_rank(pg, NULL), C10D_STATUS_INVALID_ARGUMENT, "rank is NULL", NULL, NULL);
}

/* ---- versions and group creation errors (no group needed) -------------------------------- */

void test_versions(void) {
  c10d_pg_options_t o;
  c10d_pg_t* pg = (c10d_pg_t*)&pg;
  char want[64], mine[64];
  char url[128]; /* a store of this process only: init makes it before the backend fails */
  CHECK(c10d_abi_version() == C10D_ABI_VERSION, "c10d_abi_version() = %u",
        (unsigned)c10d_abi_version());
  CHECK(strcmp(c10d_version(), C10D_VERSION) == 0, "c10d_version() = '%s'", c10d_version());
  CHECK(strcmp(c10d_status_name(C10D_STATUS_TIMEOUT), "timeout") == 0, "status name");
  CHECK(strcmp(c10d_status_name((c10d_status_t)1234), "unknown") == 0, "status name of 1234");

  snprintf(url, sizeof url, "file:///tmp/c10d-capi-%ld-versions?rank=0&world_size=1",
           (long)getpid());
  c10d_pg_options_init(&o);
  o.abi_version = C10D_ABI_VERSION + 1;
  sprintf(want, "C ABI version %d", C10D_ABI_VERSION + 1);
  sprintf(mine, "implements C ABI version %d", C10D_ABI_VERSION);
  CHECK_FAILS(c10d_pg_init("file:///tmp/never-used?rank=0&world_size=1", "verbs", -1, -1, &o, &pg),
              C10D_STATUS_ABI_MISMATCH, "c10d_pg_init", want, mine);
  CHECK(pg == NULL, "a failed c10d_pg_init left *out set");
  CHECK_FAILS(c10d_pg_init("file:///tmp/x?rank=0&world_size=1", "verbs", -1, -1, NULL, &pg),
              C10D_STATUS_INVALID_ARGUMENT, "options is NULL", NULL, NULL);
  c10d_pg_options_init(&o);
  CHECK_FAILS(c10d_pg_init(url, "no-such-backend", -1, -1, &o, &pg), C10D_STATUS_INVALID_ARGUMENT,
              "no-such-backend", NULL, NULL);
  CHECK_FAILS(c10d_pg_init("file://relative?rank=0&world_size=1", "verbs", -1, -1, &o, &pg),
              C10D_STATUS_INVALID_ARGUMENT, "relative", NULL, NULL);
  CHECK_FAILS(c10d_pg_init("file:///tmp/x?rank=3&world_size=2", "verbs", -1, -1, &o, &pg),
              C10D_STATUS_INVALID_ARGUMENT, "rank=3", NULL, NULL);
  {
    /* Backend settings reach the backend: a bad value is its error, a repeated key ours. */
    const char* keys[2] = {"C10D_TRANSPORT", "C10D_TRANSPORT"};
    const char* values[2] = {"carrier-pigeon", "tcp"};
    c10d_pg_options_init(&o);
    o.num_config = 1;
    o.config_keys = keys;
    o.config_values = values;
    CHECK_FAILS(c10d_pg_init(url, "verbs", -1, -1, &o, &pg), C10D_STATUS_INVALID_ARGUMENT,
                "C10D_TRANSPORT", "carrier-pigeon", NULL);
    o.num_config = 2;
    CHECK_FAILS(c10d_pg_init(url, "verbs", -1, -1, &o, &pg), C10D_STATUS_INVALID_ARGUMENT,
                "config_keys[1] = 'C10D_TRANSPORT' is given twice", NULL, NULL);
  }
  {
    c10d_store_options_t so;
    c10d_store_t* st = NULL;
    c10d_store_options_init(&so);
    so.abi_version = 0;
    CHECK_FAILS(c10d_store_hash_create(&so, &st), C10D_STATUS_ABI_MISMATCH,
                "c10d_store_hash_create", "C ABI version 0", NULL);
  }
}
