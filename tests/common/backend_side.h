// For tests that play the backend: the backend side (core/backend_work.h) of a Work that a fake
// backend made as a BackendWork, reached from the plain Work a ProcessGroup returned.
#pragma once

#include <memory>

#include "base/error.h"
#include "core/backend_work.h"

namespace c10d {
namespace test {

inline std::shared_ptr<BackendWork> backendSide(const std::shared_ptr<Work>& work) {
  auto b = std::dynamic_pointer_cast<BackendWork>(work);
  C10D_CHECK(b != nullptr, "backendSide: ", work->describe(), " is not a BackendWork");
  return b;
}

}  // namespace test
}  // namespace c10d
