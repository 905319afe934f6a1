// Helpers shared by the verbs backend's own tests (verbs_test.cc, verbs_engine_test.cc).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "c10d/backends/verbs/process_group_verbs.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

// A verbs group of `size` over a FileStore at `path`, with `config` as Options::config.
std::shared_ptr<ProcessGroupVerbs> makeVerbs(const std::string& path, int rank, int size,
                                             std::map<std::string, std::string> config,
                                             Milliseconds timeout = Milliseconds(30000));

// The conformance sweep at `size` ranks over one configuration (transport / algorithm overrides).
void sweepWith(int size, std::map<std::string, std::string> config, std::vector<size_t> counts);

// The thread running the caller now. pthread_self() is declared const: within one function the
// compiler may reuse its value across a fiber's suspension; this fresh (noinline) frame reads the
// thread the fiber runs on at the call.
std::thread::id currentThread();

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
