// Registers the "gloo" backend with the c10d registry (c10d/registry.h). The core registry calls
// this on first use when the build has Gloo (the list cmake/C10dBackends.cmake generates);
// calling it again re-registers.
#pragma once

namespace c10d {

void registerGlooBackend();

}  // namespace c10d
