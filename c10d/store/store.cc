#include "c10d/store/store.h"
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

std::vector<Bytes> Store::multiGet(const std::vector<std::string>& keys) {
  std::vector<Bytes> values;
  values.reserve(keys.size());
  for (const auto& key : keys) values.push_back(get(key));
  return values;
}

void Store::multiSet(const std::vector<std::string>& keys, const std::vector<Bytes>& values) {
  C10D_CHECK_ARG(keys.size() == values.size(), "multiSet: ", keys.size(), " keys but ",
                 values.size(), " values");
  for (size_t i = 0; i < keys.size(); ++i) set(keys[i], values[i]);
}

C10D_NAMESPACE_END
}  // namespace c10d
