/* Works through the C ABI: callbacks (on the completing thread, at once when complete, after
 * release), wait with a timeout, test, abort. */
#define _POSIX_C_SOURCE 200809L

#include "collectives_test.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "c10d/base/config.h"

/* ---- works: callbacks, wait with timeout, test, abort ------------------------------------- */

typedef struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int calls;
  c10d_status_t status;
  char message[512];
  pthread_t thread;
} callback_state;

static void cb_init(callback_state* s) {
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  s->calls = 0;
  s->status = C10D_STATUS_MAX_ENUM_;
  s->message[0] = '\0';
}

static void on_complete(void* user, c10d_status_t status, const char* message) {
  callback_state* s = (callback_state*)user;
  pthread_mutex_lock(&s->mu);
  ++s->calls;
  s->status = status;
  snprintf(s->message, sizeof s->message, "%s", message);
  s->thread = pthread_self();
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
}

/* Waits (up to 30 s) until the callback has run; returns its call count. */
static int cb_wait(callback_state* s) {
  struct timespec deadline;
  int calls;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 30;
  pthread_mutex_lock(&s->mu);
  while (s->calls == 0) {
    if (pthread_cond_timedwait(&s->cv, &s->mu, &deadline) != 0) break;
  }
  calls = s->calls;
  pthread_mutex_unlock(&s->mu);
  return calls;
}

void test_works(c10d_pg_t* pg, int rank, int size) {
  callback_state a, b, c;
  c10d_work_t *w, *rw;
  int32_t x = rank, y[2] = {0, 0};
  c10d_tensor_t t = i32(&x, 1), ty = i32(y, 2);
  cb_init(&a);
  cb_init(&b);
  cb_init(&c);

  /* A callback on a pending (or just completed) op runs once with OK; one registered after
   * completion runs at once, on this thread. */
  CHECK_OK(c10d_allreduce(pg, &t, C10D_REDUCE_SUM, NULL, &w));
  CHECK_OK(c10d_work_on_complete(w, on_complete, &a));
  CHECK_OK(c10d_work_wait(w, C10D_TIMEOUT_DEFAULT));
  CHECK(cb_wait(&a) == 1, "callback ran %d times", a.calls);
  CHECK(a.status == C10D_STATUS_OK && a.message[0] == '\0', "callback got %s '%s'",
        c10d_status_name(a.status), a.message);
  CHECK_OK(c10d_work_test(w));
  CHECK_OK(c10d_work_synchronize(w)); /* CPU work: nothing to order */
  CHECK_OK(c10d_work_on_complete(w, on_complete, &b));
  CHECK(b.calls == 1 && pthread_equal(b.thread, pthread_self()),
        "a callback on a completed work must run at once on the caller (calls %d)", b.calls);
  CHECK(a.calls == 1, "the first callback ran again (%d calls)", a.calls);
  c10d_work_release(w);
  expect_i64("allreduce with callback", 0, x, (int64_t)size * (size - 1) / 2);
  if (size < 2) return;

  /* Wait with a timeout: rank 1 sends only after a barrier that rank 0 enters after its wait
   * timed out, so the wait must time out, and the op must still complete afterwards. The callback
   * is registered and the handle released before completion: the callback still runs. */
  if (rank == 0) {
    c10d_work_t* rw2;
    const double t0 = now_ms();
    CHECK_OK(c10d_recv(pg, &ty, 1, 42, NULL, &rw));
    CHECK_FAILS(c10d_work_wait(rw, 50), C10D_STATUS_TIMEOUT, "did not complete within 50 ms",
                "still pending", NULL);
    CHECK(now_ms() - t0 >= 45, "wait(50 ms) returned after %.1f ms", now_ms() - t0);
    CHECK(c10d_work_test(rw) == C10D_STATUS_PENDING, "test of a pending recv is not PENDING");
    CHECK_OK(c10d_recv(pg, &t, 1, 44, NULL, &rw2));
    CHECK_OK(c10d_work_on_complete(rw2, on_complete, &c));
    c10d_work_release(rw2);
    CHECK(c.calls == 0, "callback ran before the message was sent");
    CHECK_OK(c10d_barrier(pg, NULL, &w));
    finish(w, "barrier");
    finish(rw, "recv after a timed-out wait");
    expect_i64("recv after a timed-out wait", 0, y[0], 4242);
    expect_i64("recv after a timed-out wait", 1, y[1], 4243);
    CHECK(cb_wait(&c) == 1 && c.status == C10D_STATUS_OK,
          "callback of a released work: %d calls, %s", c.calls, c10d_status_name(c.status));
    expect_i64("recv with callback", 0, x, 99);
  } else {
    CHECK_OK(c10d_barrier(pg, NULL, &w));
    finish(w, "barrier");
    if (rank == 1) {
      int32_t v = 99;
      c10d_tensor_t tv = i32(&v, 1);
      c10d_work_t* sw;
      y[0] = 4242;
      y[1] = 4243;
      CHECK_OK(c10d_send(pg, &ty, 0, 42, NULL, &sw));
      finish(sw, "send after barrier");
      CHECK_OK(c10d_send(pg, &tv, 0, 44, NULL, &sw));
      finish(sw, "send to a released work");
    }
  }

  /* abort: a recv nobody sends to fails at once with ERROR "aborted"; callbacks see it. */
  if (rank == 0) {
    callback_state d;
    static int32_t z; /* still posted in the backend until the group shuts down */
    c10d_tensor_t tz = i32(&z, 1);
    cb_init(&d);
    CHECK_OK(c10d_recv(pg, &tz, size - 1, 43, NULL, &rw));
    CHECK_OK(c10d_work_abort(rw));
    CHECK_FAILS(c10d_work_test(rw), C10D_STATUS_ERROR, "aborted", NULL, NULL);
    CHECK_FAILS(c10d_work_wait(rw, 0), C10D_STATUS_ERROR, "aborted", NULL, NULL);
    CHECK_OK(c10d_work_on_complete(rw, on_complete, &d));
    CHECK(d.calls == 1 && d.status == C10D_STATUS_ERROR && strstr(d.message, "aborted") != NULL,
          "callback of an aborted work: %d calls, %s '%s'", d.calls, c10d_status_name(d.status),
          d.message);
    CHECK_OK(c10d_work_abort(rw)); /* no-op on a completed work */
    c10d_work_release(rw);
  }
}

static void* stream_of_new_thread(void* out) {
  void* stream = (void*)1;
  c10d_cuda_current_stream(0, &stream);
  *(void**)out = stream;
  return NULL;
}

void test_cuda_streams(void) {
#if C10D_HAVE_NCCL
  /* A stream is only stored here (no GPU needed): per device and per thread. */
  void* fake = (void*)&fake;
  void* got = NULL;
  void* other = (void*)1;
  pthread_t th;
  CHECK_OK(c10d_cuda_current_stream(3, &got));
  CHECK(got == NULL, "the default current stream is not NULL");
  CHECK_OK(c10d_cuda_set_current_stream(3, fake));
  CHECK_OK(c10d_cuda_current_stream(3, &got));
  CHECK(got == fake, "current stream of device 3 not kept");
  CHECK_OK(c10d_cuda_current_stream(2, &got));
  CHECK(got == NULL, "device 2 got device 3's stream");
  CHECK(pthread_create(&th, NULL, stream_of_new_thread, &other) == 0, "pthread_create");
  pthread_join(th, NULL);
  CHECK(other == NULL, "another thread sees this thread's current stream");
  CHECK_OK(c10d_cuda_set_current_stream(3, NULL));
  CHECK_FAILS(c10d_cuda_set_current_stream(-1, NULL), C10D_STATUS_INVALID_ARGUMENT, "device -1",
              NULL, NULL);
#else
  void* got = NULL;
  CHECK_FAILS(c10d_cuda_current_stream(0, &got), C10D_STATUS_INVALID_ARGUMENT,
              "without a CUDA backend", NULL, NULL);
  (void)stream_of_new_thread;
#endif
}
