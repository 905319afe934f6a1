/* Helpers shared by the C tests of the C ABI (C99 + POSIX): checks that name the rank and the
 * failed call, and a fork-based runner of N ranks with a deadline (no test can hang the suite).
 *
 * A rank function returns normally on success; any failed check prints
 * "[rank R] file:line: ..." (with c10d_last_error() for a failed call) and exits the process
 * with status 1. */
#ifndef C10D_TESTS_CAPI_C_HARNESS_H_
#define C10D_TESTS_CAPI_C_HARNESS_H_

#include <stdio.h>
#include <stdlib.h>

#include "c10d/c_api.h"

/* This process's rank in messages (-1 in the parent). */
extern int g_rank;

void harness_fail(const char* file, int line, const char* fmt, ...);

/* Fails unless cond holds; the message is printf-style. */
#define CHECK(cond, ...)                                              \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "[rank %d] check failed: %s: ", g_rank, #cond); \
      harness_fail(__FILE__, __LINE__, __VA_ARGS__);                  \
    }                                                                 \
  } while (0)

/* Fails unless the c10d call returns C10D_STATUS_OK; prints the status and the last error. */
#define CHECK_OK(call)                                                                          \
  do {                                                                                          \
    c10d_status_t check_s_ = (call);                                                            \
    if (check_s_ != C10D_STATUS_OK) {                                                           \
      fprintf(stderr, "[rank %d] %s returned %s: ", g_rank, #call, c10d_status_name(check_s_)); \
      harness_fail(__FILE__, __LINE__, "%s", c10d_last_error());                                \
    }                                                                                           \
  } while (0)

/* Fails unless `call` returns `status` and c10d_last_error() contains each of the (up to three,
 * NULL for none) substrings. */
#define CHECK_FAILS(call, status, s1, s2, s3) \
  check_fails_((call), (status), #call, (s1), (s2), (s3), __FILE__, __LINE__)
void check_fails_(c10d_status_t got, c10d_status_t want, const char* call, const char* s1,
                  const char* s2, const char* s3, const char* file, int line);

typedef void (*rank_fn)(int rank, int size, void* arg);

/* Forks `size` children running fn(rank, size, arg) (each exits 0 when fn returns), waits for
 * all up to timeout_s, SIGKILLs the rest; prints one line per rank that failed, hung or died.
 * Returns the number of ranks that did not succeed. Call it before creating any c10d object (no
 * threads may exist at fork). */
int run_ranks(int size, int timeout_s, rank_fn fn, void* arg);

/* A fresh path "/tmp/c10d-capi-<pid>-XXXXXX/<n>-<tag>" inside a directory this process made with
 * mkdtemp and removes at exit (nothing created at the path itself). */
void temp_path(char* out, size_t n, const char* tag);

/* Milliseconds on a monotonic clock. */
double now_ms(void);

#endif /* C10D_TESTS_CAPI_C_HARNESS_H_ */
