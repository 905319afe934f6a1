// EtcdClient: etcd's v3 API through its JSON gateway (etcd >= 3.4: POST /v3/kv/range, /v3/kv/put,
// /v3/kv/txn, /v3/kv/deleterange, /v3/watch, /v3/lease/grant, /v3/lease/keepalive), over libcurl.
// Keys and values travel base64-encoded; 64-bit integers arrive as JSON strings.
//
// Endpoints: one or more "host:port" of the same etcd cluster. A request that cannot reach an
// endpoint (connection refused, host unreachable: the request never left) is retried on the next
// one, once around the list; any other failure is reported, never retried here, since a request
// that may have been applied (a txn, an add) must not be applied twice.
//
// Threads: none. Thread-safe: every request takes an idle curl handle from a small pool (a handle
// keeps its connection alive between requests) and returns it; a watch uses a handle of its own.
//
// Errors, each naming the endpoint and `what` (the Store operation and key):
//   TimeoutError  the request ran past its timeout;
//   CommError     no endpoint could be reached, or a connection broke mid-request;
//   EtcdError     etcd answered with an error (its gRPC code and message).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/thread_annotations.h"
#include "c10d/base/types.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace etcd {

using Json = nlohmann::json;

// etcd refused a request; `code` is its gRPC status code (5 = NotFound, e.g. an expired lease).
class EtcdError : public Error {
 public:
  EtcdError(const std::string& msg, int code, std::string etcdMessage)
      : Error(msg), code_(code), etcdMessage_(std::move(etcdMessage)) {}
  int code() const { return code_; }
  const std::string& etcdMessage() const { return etcdMessage_; }

 private:
  int code_;
  std::string etcdMessage_;
};

std::string base64Encode(const std::string& raw);
std::string base64Decode(const std::string& encoded);  // throws Error on malformed input

// A JSON integer field that etcd sends as a string ("revision": "12"); absent = 0. Error for any
// other type or a value outside int64.
int64_t jsonInt(const Json& j, const char* field);
// A base64 field decoded (absent = ""). Error for another type or bad base64.
std::string jsonBytes(const Json& j, const char* field);

class EtcdClient {
 public:
  // endpoints: "host:port", at least one.
  explicit EtcdClient(std::vector<std::string> endpoints);
  ~EtcdClient();
  EtcdClient(const EtcdClient&) = delete;
  EtcdClient& operator=(const EtcdClient&) = delete;

  // POSTs `body` to `path` ("/v3/kv/put") and returns the parsed reply. timeout >= 1 ms.
  Json call(const std::string& path, const Json& body, Milliseconds timeout,
            const std::string& what);

  // Streams POST /v3/watch with `createRequest` and hands every reply object ({"result": ...})
  // to onMessage until it returns false (true: stream done) or `timeout` passes (false).
  bool watch(const Json& createRequest, Milliseconds timeout, const std::string& what,
             const std::function<bool(const Json&)>& onMessage);

  // "http://host:port" of the endpoint requests go to first (for messages).
  std::string currentEndpoint() const C10D_EXCLUDES(mu_);
  const std::vector<std::string>& endpoints() const { return endpoints_; }

 private:
  struct Handle;
  std::unique_ptr<Handle> acquire() C10D_EXCLUDES(mu_);
  void release(std::unique_ptr<Handle> h) C10D_EXCLUDES(mu_);

  const std::vector<std::string> endpoints_;
  mutable Mutex mu_;
  size_t current_ C10D_GUARDED_BY(mu_) = 0;
  std::vector<std::unique_ptr<Handle>> idle_ C10D_GUARDED_BY(mu_);
};

}  // namespace etcd
C10D_NAMESPACE_END
}  // namespace c10d
