// The consumer's own base/error.h, named as c10d's c10d/base/error.h (see core/options.h).
#pragma once
namespace consumer {
inline int errorMarker() {
  return 11;
}
}  // namespace consumer
