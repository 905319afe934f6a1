/* Shared by the files of capi_collectives_test (see collectives_test.c): helpers and the
 * per-area checks, each run on every rank of a group. */
#ifndef C10D_TESTS_CAPI_COLLECTIVES_TEST_H_
#define C10D_TESTS_CAPI_COLLECTIVES_TEST_H_

#include <stddef.h>
#include <stdint.h>

#include "c10d/c_api.h"
#include "c_harness.h"

#define MAX_RANKS 16
#define OP_TIMEOUT_MS 60000

/* Waits for an op (its own timeout: OP_TIMEOUT_MS, from the group options) and releases it. */
void finish(c10d_work_t* w, const char* what);
void expect_i64(const char* what, size_t i, int64_t got, int64_t want);
void expect_f64(const char* what, size_t i, double got, double want);

/* Element i of a buffer of dtype t, written from / read as a number (f16/bf16: small integers). */
void put(void* p, c10d_dtype_t t, size_t i, int64_t v);
double get(const void* p, c10d_dtype_t t, size_t i);

c10d_tensor_t f32(float* p, uint64_t n);
c10d_tensor_t i32(int32_t* p, uint64_t n);
c10d_tensor_t i64(int64_t* p, uint64_t n);

/* collectives_ops.c */
void test_broadcast(c10d_pg_t* pg, int rank, int size);
void test_allreduce_dtypes(c10d_pg_t* pg, int rank, int size);
void test_reduce_ops(c10d_pg_t* pg, int rank, int size);
void test_allreduce_coalesced(c10d_pg_t* pg, int rank, int size);
void test_reduce(c10d_pg_t* pg, int rank, int size);
void test_out_of_place(c10d_pg_t* pg, int rank, int size);
void test_allgather(c10d_pg_t* pg, int rank, int size);
void test_gather_scatter(c10d_pg_t* pg, int rank, int size);
void test_reduce_scatter(c10d_pg_t* pg, int rank, int size);
void test_alltoall(c10d_pg_t* pg, int rank, int size);
void test_barrier(c10d_pg_t* pg);
void test_p2p(c10d_pg_t* pg, int rank, int size);
void test_coalescing(c10d_pg_t* pg, int rank, int size);
void test_subgroups(c10d_pg_t* pg, int rank, int size, const char* backend);

/* collectives_works.c */
void test_works(c10d_pg_t* pg, int rank, int size);
void test_cuda_streams(void);

/* collectives_errors.c */
void test_errors(c10d_pg_t* pg, int rank, int size);
void test_versions(void);

#endif /* C10D_TESTS_CAPI_COLLECTIVES_TEST_H_ */
