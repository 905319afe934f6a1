// Registers the verbs backend ("verbs", priority 20: above gloo, so it is the default) with the
// c10d registry. Called by the registry on first use (the list cmake/C10dBackends.cmake generates).
#pragma once

namespace c10d {

void registerVerbsBackend();

}  // namespace c10d
