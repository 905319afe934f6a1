#include "c10d/store/etcd/etcd_reply.h"

#include <charconv>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace etcd {

namespace {

// The start of a reply for messages.
std::string excerpt(const Json& j) {
  std::string s = j.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 200) s = s.substr(0, 200) + "...";
  return s;
}

// j[field] when it is an object; nullptr when absent or null; Error for another type.
const Json* object(const Json& j, const char* field, const std::string& what) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return nullptr;
  if (!it->is_object()) {
    C10D_THROW(Error, what, ": etcd reply field '", field, "' is not an object: ", excerpt(*it));
  }
  return &*it;
}

}  // namespace

Json parseReply(long status, std::string_view body, const std::string& endpoint,
                const std::string& path, const std::string& what) {
  Json j = Json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    C10D_THROW(CommError, what, ": etcd at ", endpoint, path, " answered HTTP ", status,
               " with a body that is not a JSON object: '", body.substr(0, 200), "'");
  }
  if (status == 200 && !j.contains("error")) return j;
  // Unary calls answer {"error": "...", "message": "...", "code": N}; streaming ones (lease
  // keepalive) {"error": {"grpc_code": N, "message": "...", ...}}.
  const Json& e = j.contains("error") && j["error"].is_object() ? j["error"] : j;
  std::string msg = "(no message)";
  if (e.contains("message") && e["message"].is_string()) {
    msg = e["message"].get<std::string>();
  } else if (e.contains("error") && e["error"].is_string()) {
    msg = e["error"].get<std::string>();
  }
  int64_t code = 0;
  for (const char* field : {"code", "grpc_code"}) {
    if (e.contains(field) && e[field].is_number_integer()) code = e[field].get<int64_t>();
  }
  // gRPC codes are 0-16: anything else is not one.
  throw EtcdError(detail::str(what, ": etcd at ", endpoint, " refused ", path, ": ", msg, " (HTTP ",
                              status, ", code ", code, ")"),
                  code >= 0 && code <= 16 ? static_cast<int>(code) : -1, msg);
}

bool WatchStreamReader::feed(std::string_view piece,
                             const std::function<bool(const Json&)>& onMessage) {
  if (done_ || !failure_.empty()) return false;
  buffer_.append(piece.data(), piece.size());
  size_t begin = 0;
  size_t nl;
  bool more = true;
  while (more && (nl = buffer_.find('\n', begin)) != std::string::npos) {
    const std::string_view line(buffer_.data() + begin, nl - begin);
    begin = nl + 1;
    if (line.empty()) continue;
    Json j = Json::parse(line.begin(), line.end(), nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded()) {
      failure_ = "unparsable watch reply '" + std::string(line.substr(0, 200)) + "'";
      more = false;
    } else if (j.is_object() && j.contains("error")) {
      failure_ = "watch refused: " + excerpt(j["error"]);
      more = false;
    } else if (!onMessage(j)) {
      done_ = true;
      more = false;
    }
  }
  buffer_.erase(0, begin);
  return more;
}

KeyValue rangeKeyValue(const Json& range, const std::string& what) {
  KeyValue kv;
  const int64_t count = jsonInt(range, "count");
  if (count <= 0) return kv;
  auto kvs = range.find("kvs");
  if (kvs == range.end() || !kvs->is_array() || kvs->empty() || !(*kvs)[0].is_object()) {
    C10D_THROW(Error, what, ": etcd's range reply counts ", count,
               " keys but holds none: ", excerpt(range));
  }
  const Json& first = (*kvs)[0];
  kv.present = true;
  kv.value = jsonBytes(first, "value");
  kv.modRevision = jsonInt(first, "mod_revision");
  return kv;
}

int64_t headerRevision(const Json& reply, const std::string& what) {
  const Json* header = object(reply, "header", what);
  return header == nullptr ? 0 : jsonInt(*header, "revision");
}

bool txnSucceeded(const Json& txn, const std::string& what) {
  auto it = txn.find("succeeded");
  if (it == txn.end() || it->is_null()) return false;
  if (!it->is_boolean()) {
    C10D_THROW(Error, what, ": etcd reply field 'succeeded' is not a boolean: ", excerpt(*it));
  }
  return it->get<bool>();
}

Json txnRange(const Json& txn, size_t i, const std::string& what) {
  auto responses = txn.find("responses");
  if (responses == txn.end() || !responses->is_array() || responses->size() <= i ||
      !(*responses)[i].is_object()) {
    C10D_THROW(Error, what, ": etcd's transaction reply has no responses[", i, "]: ", excerpt(txn));
  }
  const Json* range = object((*responses)[i], "response_range", what);
  return range == nullptr ? Json::object() : *range;
}

int64_t leaseIdOf(const Json& range, const std::string& what) {
  const KeyValue kv = rangeKeyValue(range, what);
  if (!kv.present) return 0;
  int64_t id = 0;
  const char* end = kv.value.data() + kv.value.size();
  const auto res = std::from_chars(kv.value.data(), end, id);
  if (kv.value.empty() || res.ec != std::errc() || res.ptr != end || id <= 0) {
    C10D_THROW(Error, what, ": the job's lease key holds '", kv.value.substr(0, 64),
               "', not a lease id");
  }
  return id;
}

int64_t keepaliveTtl(const Json& reply, const std::string& what) {
  const Json* result = object(reply, "result", what);
  return result == nullptr ? 0 : jsonInt(*result, "TTL");
}

bool watchReplyEndsWait(const Json& reply, const std::string& what) {
  const Json* result = object(reply, "result", what);
  if (result == nullptr) return false;
  auto canceled = result->find("canceled");
  if (canceled != result->end() && !canceled->is_null()) {
    if (!canceled->is_boolean()) {
      C10D_THROW(Error, what,
                 ": etcd watch reply field 'canceled' is not a boolean: ", excerpt(*canceled));
    }
    if (canceled->get<bool>()) return true;
  }
  auto events = result->find("events");
  if (events == result->end() || events->is_null()) return false;
  if (!events->is_array()) {
    C10D_THROW(Error, what,
               ": etcd watch reply field 'events' is not an array: ", excerpt(*events));
  }
  return !events->empty();
}

}  // namespace etcd
C10D_NAMESPACE_END
}  // namespace c10d
