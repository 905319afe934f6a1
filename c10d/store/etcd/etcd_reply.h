// What the etcd client and EtcdStore read from etcd's replies, as pure functions of the bytes or of
// the parsed JSON (no I/O), so that tests/fuzz/etcd_reply_fuzzer.cc drives them with arbitrary
// replies. The JSON gateway omits fields at their default (a count of 0, "succeeded": false, an
// empty "kvs"), so absent means default; a field of the wrong type, or missing where the rest of
// the reply requires it, is an Error naming `what`, never another exception.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "c10d/base/abi.h"
#include "c10d/store/etcd/etcd_client.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace etcd {

// A unary call's reply: the HTTP `status` and `body` of POST `endpoint` + `path`. Returns the JSON
// object; throws CommError when the body is not a JSON object, EtcdError when etcd refused the
// request (status != 200 or an "error" field: its gRPC code and message).
Json parseReply(long status, std::string_view body, const std::string& endpoint,
                const std::string& path, const std::string& what);

// The /v3/watch stream: JSON objects, one per line, arriving in pieces of any size.
class WatchStreamReader {
 public:
  // Takes the next piece and hands every complete reply to `onMessage` until that returns false.
  // Returns whether the stream should go on: false once onMessage returned false (done()), or a
  // line did not parse or was an error reply (failure() says which). Exceptions of onMessage
  // propagate.
  bool feed(std::string_view piece, const std::function<bool(const Json&)>& onMessage);
  bool done() const { return done_; }
  const std::string& failure() const { return failure_; }

 private:
  std::string buffer_;
  bool done_ = false;
  std::string failure_;
};

// A key as a range reply (/v3/kv/range, or a transaction's response_range) reports it.
struct KeyValue {
  bool present = false;
  std::string value;
  int64_t modRevision = 0;
};
KeyValue rangeKeyValue(const Json& range, const std::string& what);

// header.revision of a reply (0 when absent).
int64_t headerRevision(const Json& reply, const std::string& what);

// Whether a transaction took its success branch.
bool txnSucceeded(const Json& txn, const std::string& what);

// responses[i].response_range of a transaction's reply (an empty object when etcd omitted it).
// Error when the reply has no responses[i].
Json txnRange(const Json& txn, size_t i, const std::string& what);

// The lease id a range reply of the lease key holds (its value, a decimal integer), or 0 when the
// key is absent.
int64_t leaseIdOf(const Json& range, const std::string& what);

// result.TTL of a /v3/lease/keepalive reply: 0 when the lease has expired.
int64_t keepaliveTtl(const Json& reply, const std::string& what);

// Whether a watch reply ends a wait for a key to be put: it carries an event, or etcd cancelled
// the watch (e.g. its revision was compacted). Either way the caller reads the key again.
bool watchReplyEndsWait(const Json& reply, const std::string& what);

}  // namespace etcd
C10D_NAMESPACE_END
}  // namespace c10d
