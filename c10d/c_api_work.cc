// C ABI: works (wait, test, synchronize, source rank, completion callbacks, abort, release) and
// the per-thread current CUDA stream they synchronize with.
#include "c10d/bootstrap/registry.h"
#include "c10d/c_api_internal.h"

using c10d::capi::guard;
using c10d::capi::notNull;

namespace {

// The stream hooks of the first registered backend on CUDA streams (c10d/core/backend.h), which the
// backend provides so that this file names none.
c10d::BackendInfo cudaStreamBackend(const char* fn) {
  for (const std::string& name : c10d::registeredBackends()) {
    c10d::BackendInfo info = c10d::backendInfo(name);
    if (info.setCurrentStream && info.currentStream) return info;
  }
  C10D_THROW(c10d::InvalidArgument, fn,
             ": no registered backend runs on CUDA streams (this c10d was built without a CUDA "
             "backend: nccl needs the CUDA toolkit and NCCL at build time)");
}

c10d::Work& workOf(const c10d_work_t* work, const char* fn) {
  notNull(work, fn, "work");
  C10D_CHECK(work->impl != nullptr, fn, ": the work handle holds no work");
  return *work->impl;
}

}  // namespace

extern "C" {

c10d_status_t c10d_work_wait(c10d_work_t* work, int64_t timeout_ms) {
  static const char* fn = "c10d_work_wait";
  return guard([&] {
    c10d::Work& w = workOf(work, fn);
    w.wait(c10d::capi::toTimeout(timeout_ms, c10d::kUnsetTimeout, fn, "timeout_ms"));
  });
}

c10d_status_t c10d_work_test(c10d_work_t* work) {
  static const char* fn = "c10d_work_test";
  c10d_status_t result = C10D_STATUS_OK;
  const c10d_status_t s = guard([&] {
    c10d::Work& w = workOf(work, fn);
    if (!w.isCompleted()) {
      result = C10D_STATUS_PENDING;
      return;
    }
    // Completed: the op's outcome, reported as c10d_work_wait reports it.
    if (std::exception_ptr e = w.exception()) std::rethrow_exception(e);
  });
  return s != C10D_STATUS_OK ? s : result;
}

c10d_status_t c10d_work_synchronize(c10d_work_t* work) {
  static const char* fn = "c10d_work_synchronize";
  return guard([&] { workOf(work, fn).synchronize(); });
}

c10d_status_t c10d_work_source_rank(c10d_work_t* work, int* rank) {
  static const char* fn = "c10d_work_source_rank";
  return guard([&] { *notNull(rank, fn, "rank") = workOf(work, fn).sourceRank(); });
}

c10d_status_t c10d_work_on_complete(c10d_work_t* work, c10d_work_callback_t fn_, void* user) {
  static const char* fn = "c10d_work_on_complete";
  return guard([&] {
    c10d::Work& w = workOf(work, fn);
    C10D_CHECK_ARG(fn_ != nullptr, fn, ": fn is NULL");
    // Work::then runs this exactly once, on the completing thread or here if already complete;
    // the Work stays alive for the call (the completing side holds it), whatever happens to the
    // caller's handle.
    w.then([fn_, user](c10d::Work& done) {
      std::string message;
      const c10d_status_t status = c10d::capi::statusOf(done.exception(), &message);
      fn_(user, status, message.c_str());
    });
  });
}

c10d_status_t c10d_work_abort(c10d_work_t* work) {
  static const char* fn = "c10d_work_abort";
  return guard([&] { workOf(work, fn).abort(); });
}

void c10d_work_release(c10d_work_t* work) {
  delete work;
}

c10d_status_t c10d_cuda_set_current_stream(int device, void* stream) {
  static const char* fn = "c10d_cuda_set_current_stream";
  return guard([&] {
    c10d::BackendInfo backend = cudaStreamBackend(fn);
    C10D_CHECK_ARG(device >= 0, fn, ": device ", device, " is negative");
    backend.setCurrentStream(device, stream);
  });
}

c10d_status_t c10d_cuda_current_stream(int device, void** stream) {
  static const char* fn = "c10d_cuda_current_stream";
  return guard([&] {
    notNull(stream, fn, "stream");
    c10d::BackendInfo backend = cudaStreamBackend(fn);
    C10D_CHECK_ARG(device >= 0, fn, ": device ", device, " is negative");
    *stream = backend.currentStream(device);
  });
}

}  // extern "C"
