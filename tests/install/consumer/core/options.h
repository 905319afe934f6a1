// The consumer's own core/options.h: the same file name as c10d's c10d/core/options.h. With only
// <prefix>/include on the include path (c10d's headers say "c10d/core/options.h"), neither shadows
// the other, whatever the order of the include directories.
#pragma once
namespace consumer {
inline int optionsMarker() {
  return 7;
}
}  // namespace consumer
