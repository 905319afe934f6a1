/* Every collective of the C ABI, each checked against a reference computed here. */
#define _POSIX_C_SOURCE 200809L

#include "collectives_test.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ---- helpers ------------------------------------------------------------------------ */

/* Waits for an op (its own timeout: OP_TIMEOUT_MS, from the group options) and releases it. */
void finish(c10d_work_t* w, const char* what) {
  c10d_status_t s = c10d_work_wait(w, C10D_TIMEOUT_DEFAULT);
  if (s != C10D_STATUS_OK) {
    fprintf(stderr, "[rank %d] %s: wait returned %s: ", g_rank, what, c10d_status_name(s));
    harness_fail(__FILE__, __LINE__, "%s", c10d_last_error());
  }
  c10d_work_release(w);
}

void expect_i64(const char* what, size_t i, int64_t got, int64_t want) {
  CHECK(got == want, "%s: element %lu is %lld, expected %lld", what, (unsigned long)i,
        (long long)got, (long long)want);
}

void expect_f64(const char* what, size_t i, double got, double want) {
  CHECK(got == want, "%s: element %lu is %.17g, expected %.17g", what, (unsigned long)i, got, want);
}

/* IEEE half bits of a small non-negative integer (< 2048, exact), and back. */
static uint16_t half_from_int(int v) {
  int e = 0;
  if (v == 0) return 0;
  while ((v >> (e + 1)) != 0) ++e;
  return (uint16_t)(((e + 15) << 10) | ((v << (10 - e)) & 0x3ff));
}
static double half_to_double(uint16_t h) {
  const int e = (h >> 10) & 0x1f;
  const int m = h & 0x3ff;
  if (e == 0) return (double)m / 1024.0 / 16384.0;
  return (1.0 + (double)m / 1024.0) * (double)(1L << e) / 32768.0;
}
/* bfloat16 bits: the top half of a float (exact for small integers). */
static uint16_t bf16_from_int(int v) {
  float f = (float)v;
  uint32_t bits;
  memcpy(&bits, &f, sizeof bits);
  return (uint16_t)(bits >> 16);
}
static double bf16_to_double(uint16_t b) {
  uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* Element i of a buffer of dtype t, written from / read as a number. */
void put(void* p, c10d_dtype_t t, size_t i, int64_t v) {
  switch (t) {
    case C10D_FLOAT32:
      ((float*)p)[i] = (float)v;
      break;
    case C10D_FLOAT64:
      ((double*)p)[i] = (double)v;
      break;
    case C10D_FLOAT16:
      ((uint16_t*)p)[i] = half_from_int((int)v);
      break;
    case C10D_BFLOAT16:
      ((uint16_t*)p)[i] = bf16_from_int((int)v);
      break;
    case C10D_INT8:
      ((int8_t*)p)[i] = (int8_t)v;
      break;
    case C10D_UINT8:
      ((uint8_t*)p)[i] = (uint8_t)v;
      break;
    case C10D_INT32:
      ((int32_t*)p)[i] = (int32_t)v;
      break;
    case C10D_INT64:
      ((int64_t*)p)[i] = v;
      break;
    case C10D_BOOL:
      ((uint8_t*)p)[i] = (uint8_t)(v != 0);
      break;
    default:
      CHECK(0, "put: dtype %d", (int)t);
  }
}
double get(const void* p, c10d_dtype_t t, size_t i) {
  switch (t) {
    case C10D_FLOAT32:
      return ((const float*)p)[i];
    case C10D_FLOAT64:
      return ((const double*)p)[i];
    case C10D_FLOAT16:
      return half_to_double(((const uint16_t*)p)[i]);
    case C10D_BFLOAT16:
      return bf16_to_double(((const uint16_t*)p)[i]);
    case C10D_INT8:
      return ((const int8_t*)p)[i];
    case C10D_UINT8:
      return ((const uint8_t*)p)[i];
    case C10D_INT32:
      return ((const int32_t*)p)[i];
    case C10D_INT64:
      return (double)((const int64_t*)p)[i];
    case C10D_BOOL:
      return ((const uint8_t*)p)[i];
    default:
      CHECK(0, "get: dtype %d", (int)t);
  }
  return 0;
}

c10d_tensor_t f32(float* p, uint64_t n) {
  return c10d_tensor_cpu(p, n, C10D_FLOAT32);
}
c10d_tensor_t i32(int32_t* p, uint64_t n) {
  return c10d_tensor_cpu(p, n, C10D_INT32);
}
c10d_tensor_t i64(int64_t* p, uint64_t n) {
  return c10d_tensor_cpu(p, n, C10D_INT64);
}

/* ---- collectives -------------------------------------------------------------------------- */

void test_broadcast(c10d_pg_t* pg, int rank, int size) {
  int64_t buf[5];
  size_t i;
  c10d_tensor_t t = i64(buf, 5);
  c10d_work_t* w;
  const int root = size - 1;
  for (i = 0; i < 5; ++i) buf[i] = rank == root ? (int64_t)(7 * i + 3) : -1;
  CHECK_OK(c10d_broadcast(pg, &t, root, NULL, &w));
  finish(w, "broadcast");
  for (i = 0; i < 5; ++i) expect_i64("broadcast", i, buf[i], (int64_t)(7 * i + 3));
}

/* allreduce SUM on every dtype (bool: SUM is "or"), so every c10d_dtype_t maps to its type. */
void test_allreduce_dtypes(c10d_pg_t* pg, int rank, int size) {
  int d;
  for (d = C10D_FLOAT32; d <= C10D_BOOL; ++d) {
    const c10d_dtype_t t = (c10d_dtype_t)d;
    unsigned char buf[3 * 8];
    c10d_tensor_t x = c10d_tensor_cpu(buf, 3, t);
    c10d_work_t* w;
    char what[64];
    size_t i;
    int r;
    for (i = 0; i < 3; ++i)
      put(buf, t, i, t == C10D_BOOL ? (rank + (int)i) % 2 : rank + (int)i + 1);
    CHECK_OK(c10d_allreduce(pg, &x, C10D_REDUCE_SUM, NULL, &w));
    sprintf(what, "allreduce sum dtype %d", d);
    finish(w, what);
    for (i = 0; i < 3; ++i) {
      int64_t want = 0;
      for (r = 0; r < size; ++r) want += t == C10D_BOOL ? (r + (int)i) % 2 : r + (int)i + 1;
      if (t == C10D_BOOL) want = want != 0;
      expect_f64(what, i, get(buf, t, i), (double)want);
    }
  }
}

/* Every reduce op on int32 (PREMUL_SUM on float64), with the backend's supports() agreeing. */
void test_reduce_ops(c10d_pg_t* pg, int rank, int size) {
  int op;
  int supported = -1;
  for (op = C10D_REDUCE_SUM; op <= C10D_REDUCE_BXOR; ++op) {
    int32_t buf[4];
    c10d_tensor_t t = i32(buf, 4);
    c10d_work_t* w;
    char what[64];
    size_t i;
    int r;
    CHECK_OK(c10d_pg_supports(pg, (c10d_reduce_op_t)op, C10D_INT32, C10D_DEVICE_CPU, &supported));
    CHECK(supported == 1, "supports(op %d, int32) = %d", op, supported);
    for (i = 0; i < 4; ++i) buf[i] = (rank + 1) * ((int)i + 2) + rank;
    CHECK_OK(c10d_allreduce(pg, &t, (c10d_reduce_op_t)op, NULL, &w));
    sprintf(what, "allreduce int32 %s",
            op == 0   ? "sum"
            : op == 1 ? "avg"
            : op == 2 ? "product"
            : op == 3 ? "min"
            : op == 4 ? "max"
            : op == 5 ? "band"
            : op == 6 ? "bor"
                      : "bxor");
    finish(w, what);
    for (i = 0; i < 4; ++i) {
      int64_t acc = 0;
      for (r = 0; r < size; ++r) {
        const int64_t v = (r + 1) * ((int)i + 2) + r;
        if (r == 0) {
          acc = v;
          continue;
        }
        switch (op) {
          case C10D_REDUCE_SUM:
          case C10D_REDUCE_AVG:
            acc += v;
            break;
          case C10D_REDUCE_PRODUCT:
            acc *= v;
            break;
          case C10D_REDUCE_MIN:
            acc = v < acc ? v : acc;
            break;
          case C10D_REDUCE_MAX:
            acc = v > acc ? v : acc;
            break;
          case C10D_REDUCE_BAND:
            acc &= v;
            break;
          case C10D_REDUCE_BOR:
            acc |= v;
            break;
          case C10D_REDUCE_BXOR:
            acc ^= v;
            break;
          default:
            break;
        }
      }
      if (op == C10D_REDUCE_AVG) acc /= size;
      expect_i64(what, i, buf[i], acc);
    }
  }
  {
    double buf[3];
    c10d_tensor_t t = c10d_tensor_cpu(buf, 3, C10D_FLOAT64);
    c10d_op_options_t o;
    c10d_work_t* w;
    size_t i;
    c10d_op_options_init(&o);
    o.premul_scale = 0.25;
    for (i = 0; i < 3; ++i) buf[i] = 8.0 * (rank + 1) + (double)i;
    CHECK_OK(c10d_allreduce(pg, &t, C10D_REDUCE_PREMUL_SUM, &o, &w));
    finish(w, "allreduce premul_sum");
    for (i = 0; i < 3; ++i) {
      double want = 0;
      int r;
      for (r = 0; r < size; ++r) want += 0.25 * (8.0 * (r + 1) + (double)i);
      expect_f64("allreduce premul_sum(0.25)", i, buf[i], want);
    }
  }
  CHECK_OK(c10d_pg_supports(pg, C10D_REDUCE_BAND, C10D_FLOAT32, C10D_DEVICE_CPU, &supported));
  CHECK(supported == 0, "supports(band, float32) = %d", supported);
}

void test_allreduce_coalesced(c10d_pg_t* pg, int rank, int size) {
  float a[3], b[5];
  c10d_tensor_t ts[2];
  c10d_work_t* w;
  size_t i;
  for (i = 0; i < 3; ++i) a[i] = (float)(rank * 10 + (int)i);
  for (i = 0; i < 5; ++i) b[i] = (float)(rank * 100 + (int)i);
  ts[0] = f32(a, 3);
  ts[1] = f32(b, 5);
  CHECK_OK(c10d_allreduce_coalesced(pg, ts, 2, C10D_REDUCE_SUM, NULL, &w));
  finish(w, "allreduce_coalesced");
  for (i = 0; i < 3; ++i)
    expect_f64("coalesced[0]", i, a[i], 10.0 * size * (size - 1) / 2 + (double)(size * (int)i));
  for (i = 0; i < 5; ++i)
    expect_f64("coalesced[1]", i, b[i], 100.0 * size * (size - 1) / 2 + (double)(size * (int)i));
}

void test_reduce(c10d_pg_t* pg, int rank, int size) {
  int64_t buf[4];
  c10d_tensor_t t = i64(buf, 4);
  c10d_work_t* w;
  const int root = size > 2 ? 2 : 0;
  size_t i;
  for (i = 0; i < 4; ++i) buf[i] = 1000 * rank + (int64_t)i;
  CHECK_OK(c10d_reduce(pg, &t, root, C10D_REDUCE_SUM, NULL, &w));
  finish(w, "reduce");
  for (i = 0; i < 4; ++i) {
    const int64_t want = rank == root
                             ? 1000 * (int64_t)size * (size - 1) / 2 + (int64_t)(size * (int)i)
                             : 1000 * rank + (int64_t)i;
    expect_i64(rank == root ? "reduce (root)" : "reduce (non-root, untouched)", i, buf[i], want);
  }
}

void test_out_of_place(c10d_pg_t* pg, int rank, int size) {
  double in[5], out[5];
  c10d_tensor_t ti, to;
  c10d_work_t* w;
  const int root = size - 1;
  size_t i;
  for (i = 0; i < 5; ++i) {
    in[i] = 10.0 * rank + (double)i;
    out[i] = -1.0;
  }
  ti = c10d_tensor_cpu(in, 5, C10D_FLOAT64);
  to = c10d_tensor_cpu(out, 5, C10D_FLOAT64);
  CHECK_OK(c10d_allreduce_into(pg, &to, &ti, C10D_REDUCE_SUM, NULL, &w));
  finish(w, "allreduce_into");
  for (i = 0; i < 5; ++i) {
    expect_f64("allreduce_into output", i, out[i],
               10.0 * size * (size - 1) / 2 + (double)(size * (int)i));
    expect_f64("allreduce_into input (untouched)", i, in[i], 10.0 * rank + (double)i);
    out[i] = -1.0;
  }
  /* The output is the root's only: NULL elsewhere. */
  CHECK_OK(c10d_reduce_into(pg, rank == root ? &to : NULL, &ti, root, C10D_REDUCE_MAX, NULL, &w));
  finish(w, "reduce_into");
  for (i = 0; i < 5; ++i) {
    expect_f64("reduce_into output", i, out[i],
               rank == root ? 10.0 * (size - 1) + (double)i : -1.0);
    expect_f64("reduce_into input (untouched)", i, in[i], 10.0 * rank + (double)i);
  }
}

void test_allgather(c10d_pg_t* pg, int rank, int size) {
  int32_t in[3], outs[MAX_RANKS][3], flat[MAX_RANKS * 3];
  c10d_tensor_t outputs[MAX_RANKS];
  c10d_tensor_t input = i32(in, 3), output = i32(flat, (uint64_t)size * 3);
  c10d_work_t* w;
  int r;
  size_t i;
  memset(outputs, 0, sizeof outputs);
  for (i = 0; i < 3; ++i) in[i] = 100 * rank + (int32_t)i;
  for (r = 0; r < size; ++r) outputs[r] = i32(outs[r], 3);
  CHECK_OK(c10d_allgather(pg, outputs, (size_t)size, &input, NULL, &w));
  finish(w, "allgather");
  for (r = 0; r < size; ++r) {
    for (i = 0; i < 3; ++i)
      expect_i64("allgather", (size_t)r * 3 + i, outs[r][i], 100 * r + (int)i);
  }
  CHECK_OK(c10d_allgather_into_tensor(pg, &output, &input, NULL, &w));
  finish(w, "allgather_into_tensor");
  for (i = 0; i < (size_t)size * 3; ++i) {
    expect_i64("allgather_into_tensor", i, flat[i], 100 * (int)(i / 3) + (int)(i % 3));
  }
}

void test_gather_scatter(c10d_pg_t* pg, int rank, int size) {
  int32_t in[2], outs[MAX_RANKS][2], got[2];
  c10d_tensor_t tensors[MAX_RANKS];
  c10d_tensor_t input = i32(in, 2), output = i32(got, 2);
  c10d_work_t* w;
  const int groot = size > 1 ? 1 : 0;
  const int sroot = size - 1;
  int r;
  size_t i;
  for (i = 0; i < 2; ++i) in[i] = 10 * rank + (int32_t)i;
  for (r = 0; r < size; ++r) tensors[r] = i32(outs[r], 2);
  CHECK_OK(c10d_gather(pg, tensors, rank == groot ? (size_t)size : 0, &input, groot, NULL, &w));
  finish(w, "gather");
  if (rank == groot) {
    for (r = 0; r < size; ++r) {
      for (i = 0; i < 2; ++i)
        expect_i64("gather (root)", (size_t)r * 2 + i, outs[r][i], 10 * r + (int)i);
    }
  }
  for (r = 0; r < size; ++r) {
    for (i = 0; i < 2; ++i) outs[r][i] = 500 + 10 * r + (int32_t)i;
  }
  got[0] = got[1] = -1;
  CHECK_OK(c10d_scatter(pg, &output, tensors, rank == sroot ? (size_t)size : 0, sroot, NULL, &w));
  finish(w, "scatter");
  for (i = 0; i < 2; ++i) expect_i64("scatter", i, got[i], 500 + 10 * rank + (int)i);
}

void test_reduce_scatter(c10d_pg_t* pg, int rank, int size) {
  float ins[MAX_RANKS][2], out[2];
  int32_t flat[MAX_RANKS * 2], iout[2];
  c10d_tensor_t inputs[MAX_RANKS];
  c10d_tensor_t output = f32(out, 2), finput = i32(flat, (uint64_t)size * 2),
                foutput = i32(iout, 2);
  c10d_work_t* w;
  int r;
  size_t i;
  /* MAX: rank r contributes 10 * (r + 1) + chunk + i to chunk `chunk`. */
  for (r = 0; r < size; ++r) {
    for (i = 0; i < 2; ++i) ins[r][i] = (float)(10 * (rank + 1) + r + (int)i);
    inputs[r] = f32(ins[r], 2);
  }
  CHECK_OK(c10d_reduce_scatter(pg, &output, inputs, (size_t)size, C10D_REDUCE_MAX, NULL, &w));
  finish(w, "reduce_scatter");
  for (i = 0; i < 2; ++i)
    expect_f64("reduce_scatter max", i, out[i], 10.0 * size + rank + (double)i);
  for (i = 0; i < (size_t)size * 2; ++i) flat[i] = 1000 * rank + (int32_t)i;
  CHECK_OK(c10d_reduce_scatter_tensor(pg, &foutput, &finput, C10D_REDUCE_SUM, NULL, &w));
  finish(w, "reduce_scatter_tensor");
  for (i = 0; i < 2; ++i) {
    const int64_t want =
        1000 * (int64_t)size * (size - 1) / 2 + (int64_t)size * (2 * rank + (int)i);
    expect_i64("reduce_scatter_tensor sum", i, iout[i], want);
  }
}

/* Uneven blocks: rank s sends rank d count(s, d) elements 1000 s + 100 d + i. */
static int count_of(int s, int d) {
  return s + d + 1;
}

void test_alltoall(c10d_pg_t* pg, int rank, int size) {
  int32_t in[MAX_RANKS][2 * MAX_RANKS], out[MAX_RANKS][2 * MAX_RANKS];
  int32_t fin[4 * MAX_RANKS * MAX_RANKS], fout[4 * MAX_RANKS * MAX_RANKS];
  uint64_t in_splits[MAX_RANKS], out_splits[MAX_RANKS];
  c10d_tensor_t inputs[MAX_RANKS], outputs[MAX_RANKS];
  c10d_tensor_t finput, foutput;
  c10d_work_t* w;
  size_t in_total = 0, out_total = 0, off, i;
  int p;
  memset(inputs, 0, sizeof inputs);
  memset(outputs, 0, sizeof outputs);
  for (p = 0; p < size; ++p) {
    for (i = 0; i < (size_t)count_of(rank, p); ++i) in[p][i] = 1000 * rank + 100 * p + (int32_t)i;
    inputs[p] = i32(in[p], (uint64_t)count_of(rank, p));
    outputs[p] = i32(out[p], (uint64_t)count_of(p, rank));
    in_splits[p] = (uint64_t)count_of(rank, p);
    out_splits[p] = (uint64_t)count_of(p, rank);
    in_total += in_splits[p];
    out_total += out_splits[p];
  }
  CHECK_OK(c10d_alltoall(pg, outputs, (size_t)size, inputs, (size_t)size, NULL, &w));
  finish(w, "alltoall");
  for (p = 0; p < size; ++p) {
    for (i = 0; i < (size_t)count_of(p, rank); ++i) {
      expect_i64("alltoall (uneven)", (size_t)p * 100 + i, out[p][i],
                 1000 * p + 100 * rank + (int)i);
    }
  }
  /* alltoall_single with the same uneven splits. */
  for (p = 0, off = 0; p < size; ++p) {
    for (i = 0; i < in_splits[p]; ++i) fin[off++] = 1000 * rank + 100 * p + (int32_t)i;
  }
  finput = i32(fin, in_total);
  foutput = i32(fout, out_total);
  CHECK_OK(c10d_alltoall_single(pg, &foutput, &finput, out_splits, (size_t)size, in_splits,
                                (size_t)size, NULL, &w));
  finish(w, "alltoall_single (splits)");
  for (p = 0, off = 0; p < size; ++p) {
    for (i = 0; i < out_splits[p]; ++i, ++off) {
      expect_i64("alltoall_single (splits)", off, fout[off], 1000 * p + 100 * rank + (int)i);
    }
  }
  /* Equal chunks (no splits): 3 elements per peer. */
  for (i = 0; i < (size_t)size * 3; ++i)
    fin[i] = 1000 * rank + 100 * (int32_t)(i / 3) + (int32_t)(i % 3);
  finput = i32(fin, (uint64_t)size * 3);
  foutput = i32(fout, (uint64_t)size * 3);
  CHECK_OK(c10d_alltoall_single(pg, &foutput, &finput, NULL, 0, NULL, 0, NULL, &w));
  finish(w, "alltoall_single (equal)");
  for (i = 0; i < (size_t)size * 3; ++i) {
    expect_i64("alltoall_single (equal)", i, fout[i],
               1000 * (int)(i / 3) + 100 * rank + (int)(i % 3));
  }
}

void test_barrier(c10d_pg_t* pg) {
  c10d_op_options_t o;
  c10d_work_t* w;
  c10d_op_options_init(&o);
  o.timeout_ms = 30000;
  CHECK_OK(c10d_barrier(pg, &o, &w));
  finish(w, "barrier");
  CHECK_OK(c10d_monitored_barrier(pg, 30000, 1));
}

void test_p2p(c10d_pg_t* pg, int rank, int size) {
  float sbuf[4], rbuf[4];
  c10d_tensor_t st = f32(sbuf, 4), rt = f32(rbuf, 4);
  c10d_work_t *sw, *rw;
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  size_t i;
  int src = -2;
  for (i = 0; i < 4; ++i) sbuf[i] = (float)(10 * rank + (int)i);
  CHECK_OK(c10d_recv(pg, &rt, prev, 5, NULL, &rw));
  CHECK_OK(c10d_send(pg, &st, next, 5, NULL, &sw));
  finish(sw, "send (ring)");
  CHECK_OK(c10d_work_source_rank(rw, &src));
  finish(rw, "recv (ring)");
  for (i = 0; i < 4; ++i) expect_f64("recv (ring)", i, rbuf[i], 10.0 * prev + (double)i);

  /* recv_any_source: rank 0 takes one message from every other rank, in whatever order. */
  if (rank == 0) {
    int32_t bufs[MAX_RANKS][3];
    c10d_work_t* works[MAX_RANKS];
    int seen[MAX_RANKS] = {0};
    int k;
    for (k = 1; k < size; ++k) {
      c10d_tensor_t t = i32(bufs[k], 3);
      CHECK_OK(c10d_recv_any_source(pg, &t, 9, NULL, &works[k]));
    }
    for (k = 1; k < size; ++k) {
      CHECK_OK(c10d_work_wait(works[k], C10D_TIMEOUT_DEFAULT));
      CHECK_OK(c10d_work_source_rank(works[k], &src));
      CHECK(src >= 1 && src < size && !seen[src], "recv_any_source #%d: source rank %d", k, src);
      seen[src] = 1;
      for (i = 0; i < 3; ++i) expect_i64("recv_any_source", i, bufs[k][i], 77 * src + (int)i);
      c10d_work_release(works[k]);
    }
  } else {
    int32_t buf[3];
    c10d_tensor_t t = i32(buf, 3);
    for (i = 0; i < 3; ++i) buf[i] = 77 * rank + (int32_t)i;
    CHECK_OK(c10d_send(pg, &t, 0, 9, NULL, &sw));
    finish(sw, "send to recv_any_source");
  }
}

void test_coalescing(c10d_pg_t* pg, int rank, int size) {
  int32_t a[2], b[2];
  c10d_tensor_t ta = i32(a, 2), tb = i32(b, 2);
  c10d_work_t *w1, *w2, *w;
  size_t i;
  for (i = 0; i < 2; ++i) {
    a[i] = rank + (int32_t)i;
    b[i] = 10 * rank + (int32_t)i;
  }
  CHECK_OK(c10d_start_coalescing(pg));
  CHECK_OK(c10d_allreduce(pg, &ta, C10D_REDUCE_SUM, NULL, &w1));
  CHECK_OK(c10d_allreduce(pg, &tb, C10D_REDUCE_MAX, NULL, &w2));
  CHECK_OK(c10d_end_coalescing(pg, &w));
  finish(w, "end_coalescing");
  c10d_work_release(w1);
  c10d_work_release(w2);
  for (i = 0; i < 2; ++i) {
    expect_i64("coalesced sum", i, a[i], (int64_t)size * (size - 1) / 2 + (int64_t)size * (int)i);
    expect_i64("coalesced max", i, b[i], 10 * (size - 1) + (int)i);
  }
}

void test_subgroups(c10d_pg_t* pg, int rank, int size, const char* backend) {
  int odd[MAX_RANKS];
  int n = 0, r, v;
  c10d_pg_t* sub = NULL;
  c10d_work_t* w;
  const char* s;
  int32_t x;
  c10d_tensor_t t = i32(&x, 1);
  /* new_subgroup of the odd ranks, listed in descending order (the group sorts them). */
  for (r = size - 1; r >= 0; --r) {
    if (r % 2 == 1) odd[n++] = r;
  }
  CHECK_OK(c10d_pg_new_subgroup(pg, odd, (size_t)n, NULL, &sub));
  if (rank % 2 == 0) {
    CHECK(sub == NULL, "new_subgroup: rank %d is not a member but got a group", rank);
  } else {
    CHECK(sub != NULL, "new_subgroup: member rank %d got no group", rank);
    CHECK_OK(c10d_pg_rank(sub, &v));
    CHECK(v == rank / 2, "new_subgroup: rank %d has sub-rank %d, expected %d", rank, v, rank / 2);
    CHECK_OK(c10d_pg_size(sub, &v));
    CHECK(v == n, "new_subgroup: size %d, expected %d", v, n);
    CHECK_OK(c10d_pg_backend_name(sub, &s));
    CHECK(strcmp(s, backend) == 0, "new_subgroup: backend '%s', expected '%s'", s, backend);
    CHECK_OK(c10d_pg_name(sub, &s));
    CHECK(strstr(s, "/group") != NULL, "new_subgroup: name '%s' lacks '/group'", s);
    x = rank;
    CHECK_OK(c10d_allreduce(sub, &t, C10D_REDUCE_SUM, NULL, &w));
    finish(w, "allreduce in new_subgroup");
    expect_i64("allreduce in new_subgroup", 0, x, (int64_t)(size / 2) * (size / 2));
    c10d_pg_destroy(sub);
  }
  /* split by parity, ordered by descending rank (key = -rank); the last rank of 3+ joins none. */
  {
    const int none = size >= 3 && rank == size - 1;
    int want_rank = 0, want_size = 0, want_sum = 0;
    for (r = 0; r < size; ++r) {
      if ((size >= 3 && r == size - 1) || r % 2 != rank % 2) continue;
      ++want_size;
      want_sum += r;
      if (r > rank) ++want_rank;
    }
    CHECK_OK(c10d_pg_split(pg, none ? C10D_NO_COLOR : rank % 2, -rank, NULL, &sub));
    if (none) {
      CHECK(sub == NULL, "split: rank %d passed C10D_NO_COLOR but got a group", rank);
      return;
    }
    CHECK(sub != NULL, "split: rank %d got no group", rank);
    CHECK_OK(c10d_pg_rank(sub, &v));
    CHECK(v == want_rank, "split: rank %d has sub-rank %d, expected %d", rank, v, want_rank);
    CHECK_OK(c10d_pg_size(sub, &v));
    CHECK(v == want_size, "split: size %d, expected %d", v, want_size);
    CHECK_OK(c10d_pg_name(sub, &s));
    CHECK(strstr(s, "/split") != NULL, "split: name '%s' lacks '/split'", s);
    x = rank;
    CHECK_OK(c10d_allreduce(sub, &t, C10D_REDUCE_SUM, NULL, &w));
    finish(w, "allreduce in split group");
    expect_i64("allreduce in split group", 0, x, want_sum);
    c10d_pg_destroy(sub);
  }
}
