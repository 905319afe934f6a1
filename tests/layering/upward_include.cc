// Compiled as a file of the core room (tests/layering/CMakeLists.txt): a backend's header is a
// floor above the core, so this must not compile.
#include "c10d/backends/verbs/comm.h"

int c10dLayeringProbeUpward() {
  return 0;
}
