// Registers the verbs backend ("verbs", priority 20: above gloo, so it is the default) with the
// c10d registry. Called by c10d/registry.cc when the registry is first used.
#pragma once

namespace c10d {

void registerVerbsBackend();

}  // namespace c10d
