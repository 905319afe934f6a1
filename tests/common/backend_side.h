// For tests that play the backend: the backend side (c10d/core/backend_work.h) of a Work that a
// fake backend made as a BackendWork, reached from the plain Work a ProcessGroup returned.
#pragma once

#include <memory>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/core/backend_work.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {

inline std::shared_ptr<BackendWork> backendSide(const std::shared_ptr<Work>& work) {
  auto b = std::dynamic_pointer_cast<BackendWork>(work);
  C10D_CHECK(b != nullptr, "backendSide: ", work->describe(), " is not a BackendWork");
  return b;
}

}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
