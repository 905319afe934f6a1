// Stores reached through a URL whose scheme a separate library provides (etcd://, redis://), so
// that libc10d itself depends on none of their client libraries.
//
// A store library registers its scheme from a static initializer (it runs when the library is
// loaded, linked or dlopen'ed). createStoreFromUrl() meets an unregistered scheme by loading
// libc10d_store_<SCHEME>.so.<C10D_SOVERSION>: first from the directory libc10d itself was loaded
// from (build/lib, or the install's lib dir), then through the loader's search path. Thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

// Creates a connected store for `url` ("SCHEME://..."), its calls bounded by `timeout`.
using StoreFactory =
    std::function<std::shared_ptr<Store>(const std::string& url, Milliseconds timeout)>;

// Registers (or replaces) the factory of `scheme` (lower-case letters and digits).
void registerStoreScheme(const std::string& scheme, StoreFactory factory);

// Whether `scheme` has a factory, loading its library if needed. When not, `reason` says why
// (which library was tried and what the loader said).
bool findStoreScheme(const std::string& scheme, std::string* reason = nullptr);

// The store for `url`; InvalidArgument naming the scheme (and the loader's error) when no library
// provides it; whatever the factory throws otherwise.
std::shared_ptr<Store> createStoreFromUrl(const std::string& url, Milliseconds timeout);

C10D_NAMESPACE_END
}  // namespace c10d
