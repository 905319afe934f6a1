/* The example of README.md's "C ABI" section, compiled and run by the tests (capi.readme_example,
 * 2 ranks under c10drun): keep the two identical. */
#include <c10d/c_api.h>
#include <stdio.h>

int main(void) {
  c10d_pg_options_t opts;
  c10d_pg_t* pg = NULL;
  c10d_work_t* work = NULL;
  float grad[4] = {1, 2, 3, 4};
  c10d_tensor_t t = c10d_tensor_cpu(grad, 4, C10D_FLOAT32);
  c10d_status_t s;

  c10d_pg_options_init(&opts); /* records the C10D_ABI_VERSION this program was built with */
  opts.timeout_ms = 60000;     /* every op of the group, and the rendezvous */
  /* env:// (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE: c10drun sets them); NULL = best backend */
  s = c10d_pg_init(NULL, "gloo", -1, -1, &opts, &pg);
  if (s != C10D_STATUS_OK) {
    fprintf(stderr, "c10d_pg_init: %s: %s\n", c10d_status_name(s), c10d_last_error());
    return 1;
  }
  s = c10d_allreduce(pg, &t, C10D_REDUCE_AVG, NULL, &work); /* starts the op, returns at once */
  if (s == C10D_STATUS_OK) {
    s = c10d_work_wait(work, C10D_TIMEOUT_DEFAULT); /* bounded by the op's timeout */
    c10d_work_release(work);
  }
  if (s == C10D_STATUS_OK) s = c10d_barrier(pg, NULL, &work); /* rank 0 hosts the store: */
  if (s == C10D_STATUS_OK) {                                  /* nobody leaves early     */
    s = c10d_work_wait(work, C10D_TIMEOUT_DEFAULT);
    c10d_work_release(work);
  }
  if (s != C10D_STATUS_OK) {
    /* e.g. comm_error: "allreduce #0 in group gloo:world: ... rank 1 ..." (the C++ message) */
    fprintf(stderr, "allreduce: %s: %s\n", c10d_status_name(s), c10d_last_error());
  } else {
    printf("grad[3] = %g\n", grad[3]); /* 4 on every rank: the average of equal inputs */
  }
  c10d_pg_destroy(pg); /* shuts the group down: its threads are joined here */
  return s == C10D_STATUS_OK && grad[3] == 4 ? 0 : 1;
}
