// An impostor: a library defining some of libc10d's C++ symbols, with other behaviour, as libtorch
// defines its own c10d:: classes and functions. capi_interpose_test loads it RTLD_GLOBAL before
// libc10d; if libc10d's references to itself could be interposed, its collectives would compute
// garbage (elementSize, reduceInto), its messages would say "impostor" (toString) and its works
// would call the impostor's virtual functions (the vtable and typeinfo of c10d::Work), which abort.
//
// The declarations mirror c10d/base/types.h, c10d/core/reduce_op.h and c10d/core/work.h only as far
// as the mangled names need; nothing else about them matters.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

enum class DataType : uint8_t { kFloat32 = 0 };

struct ReduceOp {
  enum Kind : uint8_t { SUM = 0 };
};

// c10d::elementSize(c10d::DataType): every element is one byte here.
size_t elementSize(DataType) {
  return 1;
}

// c10d::toString(c10d::DataType)
const char* toString(DataType) {
  return "impostor";
}

// c10d::reduceInto(void*, void const*, unsigned long, c10d::DataType, c10d::ReduceOp::Kind):
// reduces nothing.
void reduceInto(void*, const void*, size_t, DataType, ReduceOp::Kind) {}

// A different c10d::Work, whose key function gives this library its own "vtable for c10d::Work"
// and "typeinfo for c10d::Work".
class Work {
 public:
  virtual ~Work();
  virtual void impostor1();
  virtual void impostor2();
  virtual void impostor3();
};

[[noreturn]] static void trapped(const char* what) {
  std::fprintf(stderr, "impostor: libc10d called the impostor's %s\n", what);
  std::abort();
}

Work::~Work() {
  trapped("c10d::Work::~Work");
}
void Work::impostor1() {
  trapped("c10d::Work virtual #1");
}
void Work::impostor2() {
  trapped("c10d::Work virtual #2");
}
void Work::impostor3() {
  trapped("c10d::Work virtual #3");
}

C10D_NAMESPACE_END
}  // namespace c10d
