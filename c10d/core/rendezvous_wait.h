// Rendezvous waits that say who is missing.
//
// waitForRanks() is the wait every backend's rendezvous goes through (verbs: host identities;
// gloo: a join before its full mesh; nccl: the unique id): it blocks until each rank's key exists
// in the store and, while it waits, prints progress to stderr, e.g.
//   c10d: group verbs:world (rank 0): 2 of 3 ranks joined after 5 s; waiting for rank 2
// the first line after C10D_RENDEZVOUS_PROGRESS_MS (5 s), then at doubling intervals up to one a
// minute, so a healthy start prints nothing and a stuck one a handful of lines. On timeout it
// throws TimeoutError naming the ranks that never arrived (not the store keys):
//   group verbs:world (rank 0): ranks 1-2 of 3 never joined within 30000 ms (...)
//
// Threads: none; blocks the caller at most `timeout` (plus one store round trip per missing key
// at each progress line). Store errors (CommError, Error) pass through unchanged.
#pragma once

#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class Store;

struct RankWait {
  std::string group;            // "verbs:world": names the group in messages
  int rank = 0;                 // the waiting rank, for messages
  std::string what = "joined";  // the verb in messages: "joined", "published the NCCL id"
  Milliseconds timeout = kDefaultTimeout;
  int progressMs = -1;  // first progress line after this; 0 = silent; -1 = from the config/env
};

// Waits until every keys[i] exists; ranks[i] is the rank that sets keys[i] (same length).
void waitForRanks(Store& store, const std::vector<std::string>& keys, const std::vector<int>& ranks,
                  const RankWait& how);

C10D_NAMESPACE_END
}  // namespace c10d
