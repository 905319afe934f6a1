// One translation unit with torch's c10d headers and ours: C10D_NO_INLINE_NAMESPACE makes our
// v1 an ordinary namespace, so c10d::HashStore is torch's and c10d::v1::HashStore ours
// (c10d/base/abi.h). Both are used, each with its own library's code.
#define C10D_NO_INLINE_NAMESPACE
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include <string>
#include <type_traits>

#include <c10d/c10d.h>
#include <c10d/store/hash_store.h>

static_assert(!std::is_same_v<c10d::HashStore, c10d::v1::HashStore>,
              "torch's c10d::HashStore and ours are different types");

std::string storesBothWork() {
  c10d::HashStore theirs;    // torch's
  c10d::v1::HashStore ours;  // ours
  const std::vector<uint8_t> a{1, 2, 3}, b{4, 5};
  theirs.set("k", a);
  ours.set("k", b);
  if (theirs.get("k") != a) return "torch's HashStore did not give back what was set";
  if (ours.get("k") != b) return "our HashStore did not give back what was set";
  if (theirs.add("n", 2) != 2 || ours.add("n", 5) != 5) return "add() went to the other store";
  return "";
}
