/* The C ABI's fault-tolerance entries (docs/fault-tolerance.md) on 3 forked ranks over verbs: rank
 * 2 leaves abruptly (_exit with an allreduce in flight, as a crash would); the survivors see
 * COMM_ERROR, revoke, see their next op fail naming the revoker, agree that rank 2 failed, shrink
 * and check an allreduce on the two of them. gloo: every entry fails with ERROR naming gloo. */
#include <string.h>
#include <unistd.h>

#include "tests/capi/c_harness.h"

static c10d_status_t allreduce(c10d_pg_t* pg, float* data, int64_t n) {
  c10d_tensor_t t = c10d_tensor_cpu(data, (uint64_t)n, C10D_FLOAT32);
  c10d_work_t* w = NULL;
  c10d_status_t s = c10d_allreduce(pg, &t, C10D_REDUCE_SUM, NULL, &w);
  if (s != C10D_STATUS_OK) return s;
  s = c10d_work_wait(w, C10D_TIMEOUT_DEFAULT);
  c10d_work_release(w);
  return s;
}

enum { kN = 100003 };
static float g_buf[kN];

static void fill(int rank) {
  int i;
  for (i = 0; i < kN; ++i) g_buf[i] = (float)(rank + 1);
}

static void verbs_rank(int rank, int size, void* arg) {
  char url[512];
  c10d_pg_options_t o;
  c10d_pg_t *pg = NULL, *small = NULL;
  c10d_status_t s;
  uint64_t agreed = 0;
  int failed[4] = {-1, -1, -1, -1};
  size_t num_failed = 0;
  int revoked = 0, r = -1, n = 0, i, it;
  double t0;
  c10d_pg_options_init(&o);
  o.timeout_ms = 60000;
  snprintf(url, sizeof url, "file://%s?rank=%d&world_size=%d", (const char*)arg, rank, size);
  CHECK_OK(c10d_pg_init(url, "verbs", -1, -1, &o, &pg));
  fill(rank);
  CHECK_OK(allreduce(pg, g_buf, kN));
  t0 = now_ms();
  for (it = 0;; ++it) {
    c10d_tensor_t t = c10d_tensor_cpu(g_buf, kN, C10D_FLOAT32);
    c10d_work_t* w = NULL;
    CHECK_OK(c10d_allreduce(pg, &t, C10D_REDUCE_SUM, NULL, &w));
    if (rank == 2) _exit(0); /* gone mid-op, no shutdown */
    s = c10d_work_wait(w, C10D_TIMEOUT_DEFAULT);
    c10d_work_release(w);
    if (s != C10D_STATUS_OK) {
      CHECK(s == C10D_STATUS_COMM_ERROR, "got %s: %s", c10d_status_name(s), c10d_last_error());
      break;
    }
    CHECK(it < 3, "allreduce keeps completing without rank 2");
  }
  CHECK(now_ms() - t0 < 5000.0, "the survivors' op failed %.0f ms after rank 2 left",
        now_ms() - t0);
  CHECK_OK(c10d_pg_is_revoked(pg, &revoked));
  CHECK(revoked == 0 || revoked == 1, "revoked = %d", revoked);
  CHECK_OK(c10d_pg_revoke(pg, "rank 2 is gone"));
  CHECK_OK(c10d_pg_is_revoked(pg, &revoked));
  CHECK(revoked == 1, "not revoked after c10d_pg_revoke");
  CHECK_FAILS(allreduce(pg, g_buf, kN), C10D_STATUS_COMM_ERROR, "was revoked by rank ",
              "rank 2 is gone", "allreduce");
  CHECK_FAILS(c10d_pg_agree(pg, 1, C10D_TIMEOUT_DEFAULT, &agreed, NULL, 1, &num_failed),
              C10D_STATUS_INVALID_ARGUMENT, "c10d_pg_agree", "failed is NULL", NULL);
  CHECK_OK(c10d_pg_agree(pg, rank == 0 ? 0x3 : 0x6, C10D_TIMEOUT_DEFAULT, &agreed, failed, 4,
                         &num_failed));
  CHECK(agreed == 0x2, "agreed flags %llx, want 0x2", (unsigned long long)agreed);
  CHECK(num_failed == 1 && failed[0] == 2, "failed: %zu ranks, first %d", num_failed, failed[0]);
  CHECK_OK(c10d_pg_shrink(pg, C10D_TIMEOUT_DEFAULT, &small));
  CHECK(small != NULL, "no shrunken group");
  CHECK_OK(c10d_pg_rank(small, &r));
  CHECK_OK(c10d_pg_size(small, &n));
  CHECK(n == 2 && r == rank, "shrunken group: rank %d of %d", r, n);
  fill(rank);
  CHECK_OK(allreduce(small, g_buf, kN));
  for (i = 0; i < kN; ++i) CHECK(g_buf[i] == 3.0f, "element %d is %g, want 3", i, g_buf[i]);
  c10d_pg_destroy(small);
  c10d_pg_destroy(pg);
}

static void gloo_rank(int rank, int size, void* arg) {
  char url[512];
  c10d_pg_options_t o;
  c10d_pg_t *pg = NULL, *small = NULL;
  uint64_t agreed = 0;
  size_t num_failed = 0;
  c10d_pg_options_init(&o);
  snprintf(url, sizeof url, "file://%s?rank=%d&world_size=%d", (const char*)arg, rank, size);
  if (c10d_pg_init(url, "gloo", -1, -1, &o, &pg) != C10D_STATUS_OK) {
    printf("gloo not available here (%s): its case skipped\n", c10d_last_error());
    return;
  }
  CHECK_FAILS(c10d_pg_revoke(pg, "x"), C10D_STATUS_ERROR, "revoke: the gloo backend",
              "does not support fault tolerance", NULL);
  CHECK_FAILS(c10d_pg_abort(pg, NULL), C10D_STATUS_ERROR, "abort: the gloo backend", NULL, NULL);
  CHECK_FAILS(c10d_pg_agree(pg, 1, C10D_TIMEOUT_DEFAULT, &agreed, NULL, 0, &num_failed),
              C10D_STATUS_ERROR, "agree: the gloo backend", NULL, NULL);
  CHECK_FAILS(c10d_pg_shrink(pg, C10D_TIMEOUT_DEFAULT, &small), C10D_STATUS_ERROR,
              "shrink: the gloo backend", NULL, NULL);
  CHECK(small == NULL, "shrink failed but set *out");
  c10d_pg_destroy(pg);
}

int main(void) {
  char path[512];
  int failed;
  temp_path(path, sizeof path, "ft-verbs");
  failed = run_ranks(3, 60, verbs_rank, path);
  temp_path(path, sizeof path, "ft-gloo");
  failed += run_ranks(1, 30, gloo_rank, path);
  if (failed == 0) printf("capi fault tolerance: ok\n");
  return failed == 0 ? 0 : 1;
}
