// BackendWork: a Work with its backend side public (finish(), markStarted(), the *Unshared calls,
// setSourceRank(); c10d/core/work.h keeps them protected). Whoever runs an op makes its Work as a
// BackendWork (or a subclass of Work of its own) and completes it: the backends, the core's
// composite Works, the layers' chained Works, a backend registered from outside the library. A
// caller gets the op's Work as a plain Work from the ProcessGroup and can only wait on it, as with
// torch's Work, whose finish() is protected.
#pragma once

#include "c10d/base/abi.h"
#include "c10d/core/work.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class BackendWork : public Work {
 public:
  using Work::finish;
  using Work::finishUnshared;
  using Work::markStarted;
  using Work::markStartedUnshared;
  using Work::publishStartUnshared;
  using Work::setSourceRank;
  using Work::Work;
};

C10D_NAMESPACE_END
}  // namespace c10d
