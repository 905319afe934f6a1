#include "c10d/backends/gloo/store_adapter.h"

#include <cstdint>
#include <cstring>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/hash.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

namespace {

// Every value the adapter writes is framed: a magic, the payload's length and its FNV-1a hash
// (little-endian), then the payload. Gloo deserializes what it reads back without bounds checks
// (Gloo 2023's tcp::Rank reads lengths out of the bytes), so a store that returns a short, empty
// or altered value (a host store that lies, a key another program wrote) would crash it; a get
// checks the frame first and throws instead.
constexpr char kMagic[8] = {'c', '1', '0', 'd', 'g', 'l', 'o', '1'};
constexpr size_t kHeader = sizeof(kMagic) + 2 * sizeof(uint64_t);

void putU64(uint8_t* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t getU64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

GlooStoreAdapter::GlooStoreAdapter(std::shared_ptr<c10d::Store> store, Milliseconds timeout)
    : store_(std::move(store)), timeout_(timeout) {}

void GlooStoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  Bytes framed(kHeader + data.size());
  std::memcpy(framed.data(), kMagic, sizeof(kMagic));
  putU64(framed.data() + sizeof(kMagic), data.size());
  putU64(framed.data() + sizeof(kMagic) + 8, fnv1a(data.data(), data.size()));
  if (!data.empty()) std::memcpy(framed.data() + kHeader, data.data(), data.size());
  store_->set(key, framed);
}

std::vector<char> GlooStoreAdapter::get(const std::string& key) {
  waitFor({key});
  return unframe(key, store_->get(key));
}

std::vector<char> GlooStoreAdapter::unframe(const std::string& key, const Bytes& value) {
  const auto bad = [&](const char* what) {
    return CommError(detail::str("gloo: the store returned a malformed rendezvous value for key '",
                                 key, "' (", value.size(), " bytes: ", what,
                                 "); the store lost or altered what a rank wrote, or another "
                                 "program wrote the key"));
  };
  if (value.size() < kHeader || std::memcmp(value.data(), kMagic, sizeof(kMagic)) != 0) {
    throw bad("not a value this library wrote");
  }
  const uint64_t length = getU64(value.data() + sizeof(kMagic));
  if (length != value.size() - kHeader) throw bad("its length field disagrees with its size");
  std::vector<char> data(value.begin() + kHeader, value.end());
  if (getU64(value.data() + sizeof(kMagic) + 8) != fnv1a(data.data(), data.size())) {
    throw bad("its checksum does not match");
  }
  return data;
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys) {
  waitFor(keys);
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& /*timeout*/) {
  // Gloo may pass its own 30 s default here; the group's timeout is the one the user chose.
  waitFor(keys);
}

void GlooStoreAdapter::waitFor(const std::vector<std::string>& keys) {
  try {
    store_->wait(keys, timeout_);
  } catch (const TimeoutError&) {
    std::string missing = keys.empty() ? std::string() : keys.front();
    try {
      for (const auto& key : keys) {
        if (!store_->check({key})) {
          missing = key;
          break;
        }
      }
    } catch (const std::exception&) {
      // The store failed as well: keep the first key, and rethrow the timeout.
    }
    std::lock_guard<std::mutex> lock(mu_);
    timedOutKey_ = missing;
    throw;
  }
}

std::string GlooStoreAdapter::timedOutKey() const {
  std::lock_guard<std::mutex> lock(mu_);
  return timedOutKey_;
}

C10D_NAMESPACE_END
}  // namespace c10d
