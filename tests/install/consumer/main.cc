// Links against an installed c10d: uses a store, the registry and a Tensor view.
#include <c10d/c10d.h>
#include <c10d/config.h>
#include <store/hash_store.h>

#include <cstdio>
#include <memory>

int main() {
  auto store = std::make_shared<c10d::HashStore>();
  store->set("key", std::string("value"));
  if (store->getString("key") != "value") return 1;
  float x[4] = {1, 2, 3, 4};
  c10d::Tensor t = c10d::tensorOf(x, 4);
  std::printf("c10d %s: tensor of %zu bytes; backends:", C10D_VERSION, t.nbytes());
  for (const auto& name : c10d::registeredBackends()) std::printf(" %s", name.c_str());
  std::printf("\n");
  return t.nbytes() == 16 ? 0 : 1;
}
