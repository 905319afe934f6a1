// Fiber: a stack of its own on which a task runs, can suspend itself, and is resumed later,
// possibly by another thread. The verbs engine uses one per group to start a small collective on
// the caller's thread and, if the op has to wait for a peer, hand the rest of it to the engine
// thread without restarting it (collective_engine.h).
//
// The context switch on x86-64 Linux is our own (fiber.cc: callee-saved registers and the stack
// pointer, entered and left with call/ret so the CPU's return-address predictor stays paired);
// elsewhere Boost.Context's fcontext. No syscall either way (glibc's swapcontext makes one to save
// the signal mask). Switches are annotated for AddressSanitizer
// (__sanitizer_{start,finish}_switch_fiber) and ThreadSanitizer (__tsan_switch_to_fiber, which
// also orders the two sides of a switch as happens-before).
//
// Ownership and threads: a Fiber starts no threads. start()/resume() run the task on the calling
// thread until it returns or calls suspend(); one thread at a time may be inside a Fiber, and the
// hand-over between threads must be ordered by the caller (a mutex). The task must not keep
// thread_local state across suspend(): it may continue on another thread. The stack is mmap'd
// (committed lazily) with a guard page below it; the destructor requires that no task is
// suspended inside.
//
// Caveat of every fiber that moves between threads: the compiler may keep a thread-local address
// (errno, a thread_local, pthread_self(), which are declared const) in a register across a call
// that suspends, so a frame that spans a suspension must not use thread-locals both before and
// after it. The engine's frames that span one (Comm::run/check and the algorithms above them) use
// none; transports, called fresh after the switch, may.
#pragma once

#include <cstddef>
#include <exception>
#include <functional>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

class Fiber {
 public:
  explicit Fiber(size_t stackBytes = 1 << 20);
  ~Fiber();
  Fiber(const Fiber&) = delete;
  Fiber& operator=(const Fiber&) = delete;

  // Runs `task` on the fiber until it returns (true) or suspends (false). An exception escaping
  // `task` is rethrown here, on the thread that ran its last part.
  bool start(void (*task)(void* arg), void* arg);
  // Continues the suspended task (on this thread); same result as start().
  bool resume();
  // From inside the task only: returns to whoever called start()/resume().
  void suspend();
  // A task was started and has not returned yet (it is running or suspended).
  bool busy() const { return busy_; }

 private:
  friend struct FiberEntry;
  [[noreturn]] void loop();
  bool switchIn();
  void switchOut();

  void* map_ = nullptr;  // guard page + stack
  size_t mapBytes_ = 0;
  void* stackBottom_ = nullptr;
  size_t stackBytes_ = 0;
  void* ctx_ = nullptr;     // the fiber's context while it is not running
  void* caller_ = nullptr;  // the context that switched in last (where suspend() returns)
  void (*task_)(void*) = nullptr;
  void* arg_ = nullptr;
  std::exception_ptr error_;
  bool busy_ = false;
  // Sanitizer bookkeeping (unused in plain builds, hence maybe_unused for clang's
  // -Wunused-private-field).
  [[maybe_unused]] void* asanFakeStack_ = nullptr;
  [[maybe_unused]] const void* callerStackBottom_ = nullptr;
  [[maybe_unused]] size_t callerStackBytes_ = 0;
  [[maybe_unused]] void* tsanFiber_ = nullptr;
  [[maybe_unused]] void* tsanCaller_ = nullptr;
};

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
