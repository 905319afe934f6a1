#include "backends/verbs/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <boost/context/detail/fcontext.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "c10d/error.h"

#if defined(__SANITIZE_ADDRESS__)
#define C10D_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define C10D_FIBER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define C10D_FIBER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define C10D_FIBER_TSAN 1
#endif
#endif

#ifdef C10D_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef C10D_FIBER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

namespace c10d {
namespace verbs {

namespace ctx = boost::context::detail;

struct FiberEntry {
  static void run(ctx::transfer_t t) { static_cast<Fiber*>(t.data)->loop(t.fctx); }
};

Fiber::Fiber(size_t stackBytes) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  stackBytes_ = (stackBytes + page - 1) / page * page;
  mapBytes_ = stackBytes_ + page;
  map_ = mmap(nullptr, mapBytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK,
              -1, 0);
  if (map_ == MAP_FAILED) {
    const int err = errno;
    map_ = nullptr;
    C10D_THROW(Error, "verbs: mmap of a ", mapBytes_,
               "-byte fiber stack failed: ", detail::errnoString(err));
  }
  // The stack grows down: a PROT_NONE page below it turns an overflow into SIGSEGV.
  mprotect(map_, page, PROT_NONE);
  stackBottom_ = static_cast<char*>(map_) + page;
  ctx_ = ctx::make_fcontext(static_cast<char*>(stackBottom_) + stackBytes_, stackBytes_,
                            &FiberEntry::run);
#ifdef C10D_FIBER_TSAN
  tsanFiber_ = __tsan_create_fiber(0);
#endif
}

Fiber::~Fiber() {
  if (busy_) {
    std::fprintf(stderr, "c10d: verbs fiber destroyed with a task suspended inside; aborting\n");
    std::abort();
  }
#ifdef C10D_FIBER_TSAN
  __tsan_destroy_fiber(tsanFiber_);
#endif
#ifdef C10D_FIBER_ASAN
  // Frames left on the stack (the idle loop) keep their redzones poisoned; clear them so the
  // addresses can be reused.
  __asan_unpoison_memory_region(stackBottom_, stackBytes_);
#endif
  if (map_ != nullptr) munmap(map_, mapBytes_);
}

bool Fiber::start(void (*task)(void* arg), void* arg) {
  C10D_CHECK(!busy_, "verbs: fiber started while a task is still inside");
  task_ = task;
  arg_ = arg;
  busy_ = true;
  return switchIn();
}

bool Fiber::resume() {
  C10D_CHECK(busy_, "verbs: fiber resumed with no task inside");
  return switchIn();
}

bool Fiber::switchIn() {
#ifdef C10D_FIBER_ASAN
  void* fake = nullptr;
  __sanitizer_start_switch_fiber(&fake, stackBottom_, stackBytes_);
#endif
#ifdef C10D_FIBER_TSAN
  tsanCaller_ = __tsan_get_current_fiber();
  __tsan_switch_to_fiber(tsanFiber_, 0);
#endif
  ctx::transfer_t t = ctx::jump_fcontext(ctx_, this);
  ctx_ = t.fctx;
#ifdef C10D_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  if (busy_) return false;
  if (error_) {
    std::exception_ptr e = std::move(error_);
    error_ = nullptr;
    std::rethrow_exception(e);
  }
  return true;
}

void Fiber::switchOut() {
#ifdef C10D_FIBER_ASAN
  __sanitizer_start_switch_fiber(&asanFakeStack_, callerStackBottom_, callerStackBytes_);
#endif
#ifdef C10D_FIBER_TSAN
  __tsan_switch_to_fiber(tsanCaller_, 0);
#endif
  ctx::transfer_t t = ctx::jump_fcontext(caller_, nullptr);
  caller_ = t.fctx;  // whoever resumed us (possibly another thread)
#ifdef C10D_FIBER_ASAN
  __sanitizer_finish_switch_fiber(asanFakeStack_, &callerStackBottom_, &callerStackBytes_);
#endif
}

void Fiber::suspend() {
  C10D_CHECK(busy_, "verbs: Fiber::suspend outside a task");
  switchOut();
}

void Fiber::loop(void* callerCtx) {
  caller_ = callerCtx;
#ifdef C10D_FIBER_ASAN
  __sanitizer_finish_switch_fiber(nullptr, &callerStackBottom_, &callerStackBytes_);
#endif
  for (;;) {
    try {
      task_(arg_);
    } catch (...) {
      error_ = std::current_exception();
    }
    task_ = nullptr;
    busy_ = false;
    switchOut();  // returns when the next task starts
  }
}

}  // namespace verbs
}  // namespace c10d
