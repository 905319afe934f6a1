/* The C ABI from C (compiled as C99, -pedantic -Werror): every collective of c10d/c_api.h on
 * every rank of a group, on verbs (shm), verbs over tcp and gloo (where built), each result
 * compared with a reference computed here; every dtype and reduce op through the enums; works
 * (wait with timeout, test, callbacks on the completing thread and at once, abort, release
 * before completion); sub-groups; coalescing; and the error paths (bad dtype, rank, root, op,
 * struct sizes, ABI version: status plus a message naming what is wrong).
 *
 * Two ways to run it:
 *   collectives_test            forks 4 ranks; groups come from file://, explicit ranks, and a
 *                               TCP store made through the C ABI (its port exchanged through a
 *                               file store)
 *   c10drun --nproc-per-node N collectives_test
 *                               each process is one rank; the first group comes from env://
 *                               and the others from prefix stores over its store */
#define _POSIX_C_SOURCE 200809L

#include "collectives_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c10d/base/config.h"

/* ---- one backend, start to end ------------------------------------------------------------ */

typedef struct {
  const char* label;     /* for messages */
  const char* backend;   /* registry name */
  const char* transport; /* verbs' C10D_TRANSPORT, or NULL */
} backend_case;

static void run_case(c10d_pg_t* pg, const backend_case* c, int rank, int size) {
  int v;
  const char* s;
  CHECK_OK(c10d_pg_rank(pg, &v));
  CHECK(v == rank, "%s: c10d_pg_rank = %d, expected %d", c->label, v, rank);
  CHECK_OK(c10d_pg_size(pg, &v));
  CHECK(v == size, "%s: c10d_pg_size = %d, expected %d", c->label, v, size);
  CHECK_OK(c10d_pg_backend_name(pg, &s));
  CHECK(strcmp(s, c->backend) == 0, "backend name '%s', expected '%s'", s, c->backend);
  CHECK_OK(c10d_pg_name(pg, &s));
  CHECK(strstr(s, c->backend) != NULL && strstr(s, ":capi-") != NULL, "group name '%s'", s);

  test_broadcast(pg, rank, size);
  test_allreduce_dtypes(pg, rank, size);
  test_reduce_ops(pg, rank, size);
  test_allreduce_coalesced(pg, rank, size);
  test_reduce(pg, rank, size);
  test_out_of_place(pg, rank, size);
  test_allgather(pg, rank, size);
  test_gather_scatter(pg, rank, size);
  test_reduce_scatter(pg, rank, size);
  test_alltoall(pg, rank, size);
  test_barrier(pg);
  if (size >= 2) test_p2p(pg, rank, size);
  test_coalescing(pg, rank, size);
  if (size >= 2) test_subgroups(pg, rank, size, c->backend);
  test_errors(pg, rank, size);
  test_works(pg, rank, size);
  /* Every rank is done with the group before any destroys it (an aborted recv is still posted). */
  CHECK_OK(c10d_monitored_barrier(pg, 30000, 1));
}

static void group_options(const backend_case* c, c10d_pg_options_t* o, const char** keys,
                          const char** values) {
  c10d_pg_options_init(o);
  o->timeout_ms = OP_TIMEOUT_MS;
  o->group_name = c->transport != NULL ? "capi-tcp" : "capi-default";
  if (c->transport != NULL) {
    keys[0] = "C10D_TRANSPORT";
    values[0] = c->transport;
    o->num_config = 1;
    o->config_keys = keys;
    o->config_values = values;
  }
}

static backend_case g_cases[3];
static int g_num_cases = 0;

static void add_cases(void) {
  backend_case verbs = {"verbs", "verbs", NULL};
  backend_case verbs_tcp = {"verbs/tcp", "verbs", "tcp"};
  g_cases[g_num_cases++] = verbs;
  g_cases[g_num_cases++] = verbs_tcp;
#if C10D_HAVE_GLOO
  {
    backend_case gloo = {"gloo", "gloo", NULL};
    g_cases[g_num_cases++] = gloo;
  }
#else
  printf("gloo: not built into this library, skipped\n");
#endif
}

/* A sink over a fixed 16-byte buffer. */
typedef struct {
  unsigned char bytes[16];
  size_t used;
} fixed_buffer;

static c10d_status_t fixed_sink_write(c10d_sink_t* sink, const void* data, size_t size) {
  fixed_buffer* b = (fixed_buffer*)sink->context;
  if (b->used + size > sizeof b->bytes) return C10D_STATUS_OUT_OF_MEMORY;
  memcpy(b->bytes + b->used, data, size);
  b->used += size;
  return C10D_STATUS_OK;
}

/* Forked mode: the first case from a file:// URL carrying rank and size, the second from file://
 * with explicit rank and size, the third through a TCP store made with the C ABI, whose server
 * port rank 0 publishes in a file store. */
static c10d_pg_t* make_group_forked(int i, int rank, int size, const char* base) {
  const backend_case* c = &g_cases[i];
  c10d_pg_options_t o;
  const char *keys[1], *values[1];
  char url[512];
  c10d_pg_t* pg = NULL;
  group_options(c, &o, keys, values);
  if (i == 0) {
    snprintf(url, sizeof url, "file://%s-%d?rank=%d&world_size=%d", base, i, rank, size);
    CHECK_OK(c10d_pg_init(url, c->backend, -1, -1, &o, &pg));
  } else if (i == 1) {
    snprintf(url, sizeof url, "file://%s-%d", base, i);
    CHECK_OK(c10d_pg_init(url, c->backend, rank, size, &o, &pg));
  } else {
    c10d_store_options_t so;
    c10d_store_t *fs = NULL, *tcp = NULL;
    uint16_t port = 0;
    unsigned char bytes[16];
    size_t n = 0;
    char path[512];
    c10d_store_options_init(&so);
    so.timeout_ms = 30000;
    snprintf(path, sizeof path, "%s-%d", base, i);
    CHECK_OK(c10d_store_file_create(path, size, &so, &fs));
    if (rank == 0) {
      CHECK_OK(c10d_store_tcp_create("127.0.0.1", 0, 1, -1, &so, &tcp));
      CHECK_OK(c10d_store_tcp_port(tcp, &port));
      CHECK(port != 0, "the TCP store picked port 0");
      CHECK_OK(c10d_store_set(fs, "port", &port, sizeof port));
    } else {
      fixed_buffer buf;
      c10d_sink_t sink;
      buf.used = 0;
      sink.write = fixed_sink_write;
      sink.context = &buf;
      CHECK_OK(c10d_store_get(fs, "port", &sink));
      n = buf.used;
      memcpy(bytes, buf.bytes, sizeof bytes);
      CHECK(n == sizeof port, "port value has %lu bytes", (unsigned long)n);
      memcpy(&port, bytes, sizeof port);
      CHECK_OK(c10d_store_tcp_create("127.0.0.1", port, 0, -1, &so, &tcp));
    }
    CHECK_OK(c10d_pg_create_from_store(tcp, c->backend, rank, size, &o, &pg));
    /* The group keeps the TCP store alive; the file store is not needed any more. */
    c10d_store_release(tcp);
    c10d_store_release(fs);
  }
  return pg;
}

static void forked_rank(int rank, int size, void* arg) {
  int i;
  test_versions();
  test_cuda_streams();
  for (i = 0; i < g_num_cases; ++i) {
    c10d_pg_t* pg = make_group_forked(i, rank, size, (const char*)arg);
    run_case(pg, &g_cases[i], rank, size);
    c10d_pg_destroy(pg);
  }
}

/* Launched by c10drun: env:// for the first group; the others over prefixes of its store. */
static int launched_rank(void) {
  c10d_store_t* store = NULL;
  c10d_pg_t* pg = NULL;
  int rank = -1, size = -1, i;
  char key[32];
  test_versions();
  for (i = 0; i < g_num_cases; ++i) {
    c10d_pg_options_t o;
    const char *keys[1], *values[1];
    group_options(&g_cases[i], &o, keys, values);
    if (i == 0) {
      CHECK_OK(c10d_pg_init(NULL, g_cases[i].backend, -1, -1, &o, &pg));
      CHECK_OK(c10d_pg_rank(pg, &rank));
      CHECK_OK(c10d_pg_size(pg, &size));
      g_rank = rank;
      CHECK(size <= MAX_RANKS, "at most %d ranks", MAX_RANKS);
      CHECK_OK(c10d_pg_store(pg, &store));
    } else {
      c10d_store_t* prefixed = NULL;
      CHECK_OK(c10d_store_prefix_create(g_cases[i].label, store, &prefixed));
      CHECK_OK(c10d_pg_create_from_store(prefixed, g_cases[i].backend, rank, size, &o, &pg));
      c10d_store_release(prefixed);
    }
    run_case(pg, &g_cases[i], rank, size);
    c10d_pg_destroy(pg);
  }
  /* Rank 0 hosts the TCP store: it leaves only when every rank is done with it. */
  sprintf(key, "done/%d", rank);
  CHECK_OK(c10d_store_set(store, key, "1", 1));
  if (rank == 0) {
    for (i = 1; i < size; ++i) {
      const char* keys[1];
      sprintf(key, "done/%d", i);
      keys[0] = key;
      CHECK_OK(c10d_store_wait(store, keys, 1, 60000));
    }
  }
  c10d_store_release(store);
  printf("[rank %d] C ABI collectives: OK on %d backend(s)\n", rank, g_num_cases);
  return 0;
}

int main(void) {
  char base[256];
  int failed;
  const double t0 = now_ms();
  add_cases();
  if (getenv("RANK") != NULL && getenv("MASTER_ADDR") != NULL) return launched_rank();
  temp_path(base, sizeof base, "collectives");
  failed = run_ranks(4, 120, forked_rank, base);
  if (failed != 0) {
    fprintf(stderr, "C ABI collectives: %d of 4 ranks failed\n", failed);
    return 1;
  }
  printf("C ABI collectives: OK on %d backend(s), 4 ranks, %.0f ms\n", g_num_cases, now_ms() - t0);
  return 0;
}
