#include "c10d/backends/verbs/fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

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

#if defined(__x86_64__) && defined(__linux__)
#define C10D_FIBER_OWN_SWITCH 1
#else
#define C10D_FIBER_OWN_SWITCH 0
#include <boost/context/detail/fcontext.hpp>
#endif

#ifdef C10D_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif
#ifdef C10D_FIBER_TSAN
#include <sanitizer/tsan_interface.h>
#endif

#if C10D_FIBER_OWN_SWITCH
// The switch (x86-64 System V): pushes the callee-saved registers, stores the stack pointer in
// *from, loads `to` and pops the other side's registers, and returns there. It leaves MXCSR and
// the x87 control word alone (saving them, as Boost's jump_fcontext does, is the costly part of
// its switch), so a task runs with the floating-point modes of the thread it runs on, as any
// function that thread calls would. It enters and leaves with call/ret, so the CPU's return
// stack stays paired: the fiber switches back at the depth it was entered (loop()), and the
// caller's returns after a switch are predicted (Boost's switch ends with an indirect jmp, which
// leaves every return up the caller's stack mispredicted).
// A new stack starts in c10d_fiber_entry with the Fiber in rbx; its CFI marks the return
// address undefined, so unwinders and debuggers stop there.
extern "C" void c10d_fiber_switch(void** from, void* to);
extern "C" void c10d_fiber_entry();
extern "C" [[noreturn]] __attribute__((visibility("hidden"))) void c10d_fiber_main(void* fiber);
asm(R"(
  .text
  .p2align 4
  .globl c10d_fiber_switch
  .hidden c10d_fiber_switch
  .type c10d_fiber_switch, @function
c10d_fiber_switch:
  .cfi_startproc
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .cfi_endproc
  .size c10d_fiber_switch, .-c10d_fiber_switch

  .p2align 4
  .globl c10d_fiber_entry
  .hidden c10d_fiber_entry
  .type c10d_fiber_entry, @function
c10d_fiber_entry:
  .cfi_startproc
  .cfi_undefined rip
  movq %rbx, %rdi
  call c10d_fiber_main
  ud2
  .cfi_endproc
  .size c10d_fiber_entry, .-c10d_fiber_entry
)");
#endif

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

#if C10D_FIBER_OWN_SWITCH
struct FiberEntry {
  static void run(Fiber* f) { f->loop(); }
};
}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d

extern "C" void c10d_fiber_main(void* fiber) {
  c10d::verbs::FiberEntry::run(static_cast<c10d::verbs::Fiber*>(fiber));
  __builtin_unreachable();
}

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {
#else
namespace ctx = boost::context::detail;

struct FiberEntry {
  static void run(ctx::transfer_t t) {
    auto* f = static_cast<Fiber*>(t.data);
    f->caller_ = t.fctx;
    f->loop();
  }
};
#endif

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
#if C10D_FIBER_OWN_SWITCH
  // The first switch pops six registers (rbx = this) and returns into c10d_fiber_entry with the
  // stack 16-byte aligned, as a call site needs it.
  auto* top = reinterpret_cast<uintptr_t*>(static_cast<char*>(stackBottom_) + stackBytes_);
  uintptr_t* sp = top - 9;
  for (int i = 0; i < 9; ++i) sp[i] = 0;
  sp[4] = reinterpret_cast<uintptr_t>(this);               // rbx
  sp[6] = reinterpret_cast<uintptr_t>(&c10d_fiber_entry);  // return address
  ctx_ = sp;
#else
  ctx_ = ctx::make_fcontext(static_cast<char*>(stackBottom_) + stackBytes_, stackBytes_,
                            &FiberEntry::run);
#endif
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
#if C10D_FIBER_OWN_SWITCH
  c10d_fiber_switch(&caller_, ctx_);
#else
  ctx::transfer_t t = ctx::jump_fcontext(ctx_, this);
  ctx_ = t.fctx;
#endif
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

inline __attribute__((always_inline)) void Fiber::switchOut() {
#ifdef C10D_FIBER_ASAN
  __sanitizer_start_switch_fiber(&asanFakeStack_, callerStackBottom_, callerStackBytes_);
#endif
#ifdef C10D_FIBER_TSAN
  __tsan_switch_to_fiber(tsanCaller_, 0);
#endif
#if C10D_FIBER_OWN_SWITCH
  c10d_fiber_switch(&ctx_, caller_);  // caller_: whoever resumed us (possibly another thread)
#else
  ctx::transfer_t t = ctx::jump_fcontext(caller_, nullptr);
  caller_ = t.fctx;  // whoever resumed us (possibly another thread)
#endif
#ifdef C10D_FIBER_ASAN
  __sanitizer_finish_switch_fiber(asanFakeStack_, &callerStackBottom_, &callerStackBytes_);
#endif
}

void Fiber::suspend() {
  C10D_CHECK(busy_, "verbs: Fiber::suspend outside a task");
  switchOut();
}

void Fiber::loop() {
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
C10D_NAMESPACE_END
}  // namespace c10d
