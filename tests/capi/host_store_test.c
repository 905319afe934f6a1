/* A store implemented by the host program, in C, through c10d_store_callbacks_t: a directory with
 * one file per key (written whole and renamed into place; add, append and compare-and-set under
 * an flock), shared by 4 forked ranks. Groups of every CPU backend rendezvous through it, the way a
 * framework would hand c10d its own store; the callbacks count their calls so the test knows the
 * rendezvous really went through them. Then the error paths: a callback's failure becomes the C
 * status (and, inside the library, the C++ error) of its kind with the host's message; optional
 * callbacks left NULL; missing required ones; timeouts handed to get/wait; destroy called exactly
 * once, and never for a store that failed to be created. (C99, -pedantic -Werror.) */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE /* flock */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "c10d/base/config.h"
#include "c10d/c_api.h"
#include "c_harness.h"

/* ---- the directory store ------------------------------------------------------------------ */

typedef struct {
  char dir[512];
  pthread_mutex_t mu; /* guards the counters below (callbacks come from several threads) */
  int calls_set, calls_get, calls_add, calls_check, calls_wait, calls_delete, calls_destroy;
  int64_t last_timeout_ms;
  /* Error injection: the callback named fail_op returns fail_status with fail_message. */
  const char* fail_op;
  c10d_status_t fail_status;
  const char* fail_message;
} dir_store;

static void count(dir_store* s, int* counter, int64_t timeout_ms) {
  pthread_mutex_lock(&s->mu);
  ++*counter;
  if (timeout_ms >= 0) s->last_timeout_ms = timeout_ms;
  pthread_mutex_unlock(&s->mu);
}

static void say(c10d_sink_t* sink, const char* text) {
  sink->write(sink, text, strlen(text));
}

/* Returns nonzero (and fills `error`) when `op` is set to fail. */
static int injected(dir_store* s, const char* op, c10d_sink_t* error, c10d_status_t* status) {
  if (s->fail_op == NULL || strcmp(s->fail_op, op) != 0) return 0;
  say(error, s->fail_message);
  *status = s->fail_status;
  return 1;
}

/* The file of a key: its bytes in hex (keys contain '/'). */
static void key_path(const dir_store* s, const char* key, char* out, size_t n) {
  size_t len = (size_t)snprintf(out, n, "%s/k", s->dir);
  for (; *key != '\0' && len + 3 < n; ++key) {
    len += (size_t)snprintf(out + len, n - len, "%02x", (unsigned char)*key);
  }
}

static int read_file(const char* path, unsigned char** data, size_t* size) {
  FILE* f = fopen(path, "rb");
  long n;
  if (f == NULL) return -1;
  fseek(f, 0, SEEK_END);
  n = ftell(f);
  fseek(f, 0, SEEK_SET);
  *data = (unsigned char*)malloc(n > 0 ? (size_t)n : 1);
  *size = fread(*data, 1, (size_t)n, f);
  fclose(f);
  return 0;
}

/* Writes the whole value, then renames it into place (readers never see half a value). */
static int write_file(const dir_store* s, const char* path, const void* data, size_t size) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static int counter = 0;
  char tmp[800];
  FILE* f;
  int n;
  pthread_mutex_lock(&mu);
  n = counter++;
  pthread_mutex_unlock(&mu);
  snprintf(tmp, sizeof tmp, "%s/.tmp-%ld-%d", s->dir, (long)getpid(), n);
  f = fopen(tmp, "wb");
  if (f == NULL) return -1;
  if (size > 0 && fwrite(data, 1, size, f) != size) {
    fclose(f);
    return -1;
  }
  if (fclose(f) != 0) return -1;
  return rename(tmp, path);
}

/* An exclusive lock over the whole directory, for read-modify-write callbacks. */
static int lock_dir(const dir_store* s) {
  char path[800];
  int fd;
  snprintf(path, sizeof path, "%s/.lock", s->dir);
  fd = open(path, O_RDWR | O_CREAT, 0600);
  if (fd >= 0) flock(fd, LOCK_EX);
  return fd;
}
static void unlock_dir(int fd) {
  flock(fd, LOCK_UN);
  close(fd);
}

static int exists(const dir_store* s, const char* key) {
  char path[800];
  key_path(s, key, path, sizeof path);
  return access(path, F_OK) == 0;
}

static void sleep_ms(int ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (long)(ms % 1000) * 1000000L;
  nanosleep(&ts, NULL);
}

/* Polls until every key exists, up to timeout_ms: 0 or -1 (timed out, `missing` set). */
static int wait_keys(dir_store* s, const char* const* keys, size_t n, int64_t timeout_ms,
                     const char** missing) {
  const double deadline = now_ms() + (double)timeout_ms;
  int delay = 1;
  size_t i = 0;
  for (;;) {
    while (i < n && exists(s, keys[i])) ++i;
    if (i == n) return 0;
    if (now_ms() >= deadline) {
      *missing = keys[i];
      return -1;
    }
    sleep_ms(delay);
    if (delay < 8) delay *= 2;
  }
}

static c10d_status_t cb_set(void* user, const char* key, const void* value, size_t size,
                            c10d_sink_t* error) {
  dir_store* s = (dir_store*)user;
  char path[800];
  c10d_status_t st;
  count(s, &s->calls_set, -1);
  if (injected(s, "set", error, &st)) return st;
  key_path(s, key, path, sizeof path);
  if (write_file(s, path, value, size) != 0) {
    say(error, strerror(errno));
    return C10D_STATUS_ERROR;
  }
  return C10D_STATUS_OK;
}

static c10d_status_t cb_get(void* user, const char* key, int64_t timeout_ms, c10d_sink_t* value,
                            c10d_sink_t* error) {
  dir_store* s = (dir_store*)user;
  char path[800];
  unsigned char* data = NULL;
  size_t size = 0;
  const char* missing = NULL;
  c10d_status_t st;
  count(s, &s->calls_get, timeout_ms);
  if (injected(s, "get", error, &st)) return st;
  if (wait_keys(s, &key, 1, timeout_ms, &missing) != 0) {
    char msg[300];
    snprintf(msg, sizeof msg, "key '%s' did not appear within %lld ms", key, (long long)timeout_ms);
    say(error, msg);
    return C10D_STATUS_TIMEOUT;
  }
  key_path(s, key, path, sizeof path);
  if (read_file(path, &data, &size) != 0) return C10D_STATUS_ERROR;
  st = value->write(value, data, size);
  free(data);
  return st;
}

static c10d_status_t cb_add(void* user, const char* key, int64_t delta, int64_t* result,
                            c10d_sink_t* error) {
  dir_store* s = (dir_store*)user;
  char path[800], text[32];
  unsigned char* data = NULL;
  size_t size = 0;
  int64_t v = 0;
  int fd;
  c10d_status_t st;
  count(s, &s->calls_add, -1);
  if (injected(s, "add", error, &st)) return st;
  key_path(s, key, path, sizeof path);
  fd = lock_dir(s);
  if (read_file(path, &data, &size) == 0) {
    char buf[32];
    size_t n = size < sizeof buf - 1 ? size : sizeof buf - 1;
    memcpy(buf, data, n);
    buf[n] = '\0';
    v = strtoll(buf, NULL, 10);
    free(data);
  }
  v += delta;
  snprintf(text, sizeof text, "%lld", (long long)v);
  st = write_file(s, path, text, strlen(text)) == 0 ? C10D_STATUS_OK : C10D_STATUS_ERROR;
  unlock_dir(fd);
  *result = v;
  return st;
}

static c10d_status_t cb_check(void* user, const char* const* keys, size_t n, int* all_exist,
                              c10d_sink_t* error) {
  dir_store* s = (dir_store*)user;
  size_t i;
  c10d_status_t st;
  count(s, &s->calls_check, -1);
  if (injected(s, "check", error, &st)) return st;
  *all_exist = 1;
  for (i = 0; i < n; ++i) {
    if (!exists(s, keys[i])) *all_exist = 0;
  }
  return C10D_STATUS_OK;
}

static c10d_status_t cb_wait(void* user, const char* const* keys, size_t n, int64_t timeout_ms,
                             c10d_sink_t* error) {
  dir_store* s = (dir_store*)user;
  const char* missing = NULL;
  c10d_status_t st;
  count(s, &s->calls_wait, timeout_ms);
  if (injected(s, "wait", error, &st)) return st;
  if (wait_keys(s, keys, n, timeout_ms, &missing) != 0) {
    char msg[300];
    snprintf(msg, sizeof msg, "key '%s' did not appear within %lld ms", missing,
             (long long)timeout_ms);
    say(error, msg);
    return C10D_STATUS_TIMEOUT;
  }
  return C10D_STATUS_OK;
}

static c10d_status_t cb_delete(void* user, const char* key, int* deleted, c10d_sink_t* error) {
  dir_store* s = (dir_store*)user;
  char path[800];
  c10d_status_t st;
  count(s, &s->calls_delete, -1);
  if (injected(s, "delete_key", error, &st)) return st;
  key_path(s, key, path, sizeof path);
  *deleted = unlink(path) == 0;
  return C10D_STATUS_OK;
}

static c10d_status_t cb_num_keys(void* user, int64_t* n, c10d_sink_t* error) {
  dir_store* s = (dir_store*)user;
  DIR* d = opendir(s->dir);
  struct dirent* e;
  (void)error;
  *n = 0;
  if (d == NULL) return C10D_STATUS_ERROR;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == 'k') ++*n;
  }
  closedir(d);
  return C10D_STATUS_OK;
}

static void cb_destroy(void* user) {
  dir_store* s = (dir_store*)user;
  count(s, &s->calls_destroy, -1);
}

static void dir_store_init(dir_store* s, const char* dir) {
  memset(s, 0, sizeof *s);
  snprintf(s->dir, sizeof s->dir, "%s", dir);
  pthread_mutex_init(&s->mu, NULL);
  s->last_timeout_ms = -1;
}

static c10d_store_callbacks_t callbacks_of(dir_store* s) {
  c10d_store_callbacks_t cb;
  memset(&cb, 0, sizeof cb);
  cb.struct_size = sizeof cb;
  cb.user = s;
  cb.set = cb_set;
  cb.get = cb_get;
  cb.add = cb_add;
  cb.check = cb_check;
  cb.wait = cb_wait;
  cb.delete_key = cb_delete;
  cb.num_keys = cb_num_keys;
  cb.destroy = cb_destroy;
  return cb;
}

static c10d_store_t* make_store(dir_store* s, int64_t timeout_ms) {
  c10d_store_callbacks_t cb = callbacks_of(s);
  c10d_store_options_t so;
  c10d_store_t* store = NULL;
  c10d_store_options_init(&so);
  so.timeout_ms = timeout_ms;
  CHECK_OK(c10d_store_from_callbacks(&cb, &so, &store));
  return store;
}

/* ---- a value sink over a malloc'ed buffer ------------------------------------------------- */

typedef struct {
  unsigned char* data;
  size_t size;
} buffer;

static c10d_status_t buffer_write(c10d_sink_t* sink, const void* data, size_t size) {
  buffer* b = (buffer*)sink->context;
  unsigned char* p = (unsigned char*)realloc(b->data, b->size + size + 1);
  if (p == NULL) return C10D_STATUS_OUT_OF_MEMORY;
  memcpy(p + b->size, data, size);
  b->data = p;
  b->size += size;
  return C10D_STATUS_OK;
}

/* ---- the test ----------------------------------------------------------------------------- */

static void run_group(c10d_store_t* host, const char* backend, int rank, int size) {
  c10d_store_t* prefixed = NULL;
  c10d_pg_options_t o;
  c10d_pg_t *pg = NULL, *sub = NULL;
  c10d_work_t* w;
  int64_t x[3];
  int64_t all[4 * 3];
  int members[2];
  c10d_tensor_t t = c10d_tensor_cpu(x, 3, C10D_INT64), out = c10d_tensor_cpu(all, 12, C10D_INT64);
  size_t i;
  c10d_pg_options_init(&o);
  o.timeout_ms = 60000;
  o.group_name = "hoststore";
  /* Each group under its own prefix of the host's store, as a framework would do. */
  CHECK_OK(c10d_store_prefix_create(backend, host, &prefixed));
  CHECK_OK(c10d_pg_create_from_store(prefixed, backend, rank, size, &o, &pg));
  c10d_store_release(prefixed);

  for (i = 0; i < 3; ++i) x[i] = 100 * rank + (int64_t)i;
  CHECK_OK(c10d_allgather_into_tensor(pg, &out, &t, NULL, &w));
  CHECK_OK(c10d_work_wait(w, C10D_TIMEOUT_DEFAULT));
  c10d_work_release(w);
  for (i = 0; i < 12; ++i) {
    CHECK(all[i] == 100 * (int64_t)(i / 3) + (int64_t)(i % 3), "%s allgather: element %lu is %lld",
          backend, (unsigned long)i, (long long)all[i]);
  }
  CHECK_OK(c10d_allreduce(pg, &t, C10D_REDUCE_SUM, NULL, &w));
  CHECK_OK(c10d_work_wait(w, C10D_TIMEOUT_DEFAULT));
  c10d_work_release(w);
  for (i = 0; i < 3; ++i) {
    CHECK(x[i] == 600 + 4 * (int64_t)i, "%s allreduce: element %lu is %lld", backend,
          (unsigned long)i, (long long)x[i]);
  }
  /* A sub-group rendezvouses under a prefix of the same host store. */
  members[0] = 0;
  members[1] = 2;
  CHECK_OK(c10d_pg_new_subgroup(pg, members, 2, NULL, &sub));
  CHECK((sub != NULL) == (rank % 2 == 0), "new_subgroup on rank %d", rank);
  if (sub != NULL) {
    x[0] = rank + 1;
    CHECK_OK(c10d_allreduce(sub, &t, C10D_REDUCE_PRODUCT, NULL, &w));
    CHECK_OK(c10d_work_wait(w, C10D_TIMEOUT_DEFAULT));
    c10d_work_release(w);
    CHECK(x[0] == 3, "%s sub-group product: %lld", backend, (long long)x[0]);
    c10d_pg_destroy(sub);
  }
  CHECK_OK(c10d_monitored_barrier(pg, 30000, 1));
  c10d_pg_destroy(pg);
}

/* The C store API over the host store: bytes (NUL included) round-trip; add, check, delete. */
static void test_store_api(c10d_store_t* store, dir_store* s, int rank) {
  const unsigned char value[5] = {'a', 0, 'b', 0xff, 0};
  buffer b = {NULL, 0};
  c10d_sink_t sink;
  char key[32];
  const char* keys[2];
  int64_t n = -1;
  int all = -1, deleted = -1;
  sink.write = buffer_write;
  sink.context = &b;
  sprintf(key, "api/%d", rank);
  CHECK_OK(c10d_store_set(store, key, value, sizeof value));
  CHECK_OK(c10d_store_get(store, key, &sink));
  CHECK(b.size == sizeof value && memcmp(b.data, value, sizeof value) == 0,
        "get returned %lu bytes", (unsigned long)b.size);
  free(b.data);
  CHECK_OK(c10d_store_add(store, "api/counter", 5, &n));
  CHECK(n >= 5 && n <= 20 && n % 5 == 0, "add returned %lld", (long long)n);
  keys[0] = key;
  keys[1] = "api/never";
  CHECK_OK(c10d_store_check(store, keys, 1, &all));
  CHECK(all == 1, "check of an existing key: %d", all);
  CHECK_OK(c10d_store_check(store, keys, 2, &all));
  CHECK(all == 0, "check with a missing key: %d", all);
  CHECK_OK(c10d_store_num_keys(store, &n));
  CHECK(n >= 2, "num_keys: %lld", (long long)n);
  CHECK_OK(c10d_store_delete_key(store, key, &deleted));
  CHECK(deleted == 1, "delete_key of an existing key: %d", deleted);
  CHECK_OK(c10d_store_delete_key(store, key, &deleted));
  CHECK(deleted == 0, "delete_key of a deleted key: %d", deleted);
  /* Timeouts reach the callbacks: the store's for get, the argument for wait. */
  CHECK_OK(c10d_store_set_timeout(store, 120));
  CHECK_FAILS(c10d_store_get(store, "api/never", &sink), C10D_STATUS_TIMEOUT,
              "host store get('api/never')", "did not appear within 120 ms", NULL);
  CHECK(s->last_timeout_ms == 120, "get received timeout %lld", (long long)s->last_timeout_ms);
  CHECK_FAILS(c10d_store_wait(store, keys + 1, 1, 40), C10D_STATUS_TIMEOUT,
              "did not appear within 40 ms", NULL, NULL);
  CHECK(s->last_timeout_ms == 40, "wait received timeout %lld", (long long)s->last_timeout_ms);
  CHECK_OK(c10d_store_set_timeout(store, 60000));
}

/* Failures of the host's callbacks, seen through the C API and through group creation. */
static void test_failures(const char* base, int rank) {
  dir_store s;
  char dir[300];
  c10d_store_t* store;
  c10d_pg_options_t o;
  c10d_pg_t* pg = NULL;
  buffer b = {NULL, 0};
  c10d_sink_t sink;
  int64_t n;
  sink.write = buffer_write;
  sink.context = &b;
  snprintf(dir, sizeof dir, "%s-failures-%d", base, rank);
  CHECK(mkdir(dir, 0700) == 0, "mkdir %s: %s", dir, strerror(errno));
  dir_store_init(&s, dir);
  store = make_store(&s, 5000);

  s.fail_op = "get";
  s.fail_status = C10D_STATUS_COMM_ERROR;
  s.fail_message = "lost the framework's store server";
  CHECK_FAILS(c10d_store_get(store, "k", &sink), C10D_STATUS_COMM_ERROR, "host store get('k')",
              "lost the framework's store server", NULL);
  s.fail_status = C10D_STATUS_INVALID_ARGUMENT;
  s.fail_message = "bad key";
  CHECK_FAILS(c10d_store_get(store, "k", &sink), C10D_STATUS_INVALID_ARGUMENT, "bad key", NULL,
              NULL);
  s.fail_status = (c10d_status_t)77;
  s.fail_message = "";
  CHECK_FAILS(c10d_store_get(store, "k", &sink), C10D_STATUS_ERROR, "status 77", "no message",
              NULL);

  /* A group whose rendezvous fails in the host's store reports the host's error. */
  s.fail_op = "add";
  s.fail_status = C10D_STATUS_COMM_ERROR;
  s.fail_message = "disk on fire";
  c10d_pg_options_init(&o);
  o.timeout_ms = 5000;
  CHECK_FAILS(c10d_pg_create_from_store(store, "verbs", 0, 1, &o, &pg), C10D_STATUS_COMM_ERROR,
              "host store add(", "disk on fire", NULL);
  CHECK(pg == NULL, "a failed group creation left *out set");
  s.fail_op = NULL;
  c10d_store_release(store);
  CHECK(s.calls_destroy == 1, "destroy called %d times after the last release", s.calls_destroy);

  /* Optional callbacks left NULL: the operation fails, naming it. */
  {
    c10d_store_callbacks_t cb = callbacks_of(&s);
    c10d_store_options_t so;
    c10d_store_options_init(&so);
    cb.num_keys = NULL;
    cb.destroy = NULL;
    CHECK_OK(c10d_store_from_callbacks(&cb, &so, &store));
    CHECK_FAILS(c10d_store_num_keys(store, &n), C10D_STATUS_ERROR, "num_keys", "not provided",
                NULL);
    c10d_store_release(store);
    /* A required one missing: refused at creation, and destroy is not called. */
    cb = callbacks_of(&s);
    cb.wait = NULL;
    store = (c10d_store_t*)&store;
    CHECK_FAILS(c10d_store_from_callbacks(&cb, &so, &store), C10D_STATUS_INVALID_ARGUMENT,
                "callbacks->wait is NULL", NULL, NULL);
    CHECK(store == NULL, "a failed creation left *out set");
    cb = callbacks_of(&s);
    cb.struct_size = 8;
    CHECK_FAILS(c10d_store_from_callbacks(&cb, &so, &store), C10D_STATUS_INVALID_ARGUMENT,
                "callbacks->struct_size 8", NULL, NULL);
    CHECK(s.calls_destroy == 1, "destroy called for a store that was never made (%d calls)",
          s.calls_destroy);
  }
  free(b.data);
}

static void rank_main(int rank, int size, void* arg) {
  const char* base = (const char*)arg;
  dir_store s;
  c10d_store_t* store;
  int done = 0;
  dir_store_init(&s, base);
  store = make_store(&s, 60000);
  run_group(store, "verbs", rank, size);
  ++done;
#if C10D_HAVE_GLOO
  run_group(store, "gloo", rank, size);
  ++done;
#endif
  /* Every group rendezvoused through the callbacks. */
  CHECK(s.calls_set > 0 && s.calls_add > 0 && s.calls_get + s.calls_wait > 0,
        "rendezvous of %d groups made set %d, add %d, get %d, wait %d calls", done, s.calls_set,
        s.calls_add, s.calls_get, s.calls_wait);
  test_store_api(store, &s, rank);
  /* The groups are gone; the handle is the last reference: destroy runs once, on release. */
  CHECK(s.calls_destroy == 0, "destroy called while the store is in use");
  c10d_store_release(store);
  CHECK(s.calls_destroy == 1, "destroy called %d times", s.calls_destroy);
  test_failures(base, rank);
}

static void remove_tree(const char* dir) {
  DIR* d = opendir(dir);
  struct dirent* e;
  char path[800];
  if (d == NULL) return;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

int main(void) {
  char base[256], dir[300];
  int failed, r;
  const double t0 = now_ms();
  temp_path(base, sizeof base, "hoststore");
  if (mkdir(base, 0700) != 0) {
    perror("mkdir");
    return 1;
  }
  failed = run_ranks(4, 90, rank_main, base);
  remove_tree(base);
  for (r = 0; r < 4; ++r) {
    snprintf(dir, sizeof dir, "%s-failures-%d", base, r);
    remove_tree(dir);
  }
  if (failed != 0) {
    fprintf(stderr, "C ABI host store: %d of 4 ranks failed\n", failed);
    return 1;
  }
  printf("C ABI host store: OK (%.0f ms)\n", now_ms() - t0);
  return 0;
}
