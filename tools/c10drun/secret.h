// The job's TCPStore secret (docs/stores.md "Store security"): what c10drun puts in
// C10D_STORE_SECRET.
//
// A launcher whose own environment sets C10D_STORE_SECRET passes it through unchanged (set but
// empty: the job runs without authentication, on purpose). Otherwise a single-node job gets a
// fresh random secret, 32 bytes from the kernel's CSPRNG (getrandom) as 64 hex digits, shared by
// every worker of every restart of this launcher, and so only by this job. A multi-node job gets
// none: each node's launcher would draw a different one, so the user sets the same secret on
// every node (the launcher says so once on stderr). The secret is never printed.
#pragma once

#include <optional>
#include <string>

#include "c10d/base/abi.h"
#include "tools/c10drun/options.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace run {

constexpr const char* kStoreSecretEnv = "C10D_STORE_SECRET";

struct JobSecret {
  std::optional<std::string> generated;  // to add to the workers' environment
  std::string note;                      // a line for stderr ("c10drun: " + note), or empty
};

// Decides as above; throws Error if the kernel's random source fails.
JobSecret decideJobSecret(const Options& options);

// `bytes` random bytes from getrandom(2), as lowercase hex.
std::string randomHex(size_t bytes);

}  // namespace run
C10D_NAMESPACE_END
}  // namespace c10d
