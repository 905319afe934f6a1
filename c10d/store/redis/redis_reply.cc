#include "c10d/store/redis/redis_reply.h"

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace redis {

namespace {

const char* typeName(int type) {
  switch (type) {
    case REDIS_REPLY_STRING:
      return "string";
    case REDIS_REPLY_ARRAY:
      return "array";
    case REDIS_REPLY_INTEGER:
      return "integer";
    case REDIS_REPLY_NIL:
      return "nil";
    case REDIS_REPLY_STATUS:
      return "status";
    case REDIS_REPLY_ERROR:
      return "error";
    default:
      return "unknown";
  }
}

[[noreturn]] void unexpected(const redisReply& r, const char* expected, const std::string& what,
                             const std::string& endpoint) {
  C10D_THROW(Error, what, ": Redis at ", endpoint, " answered with a ", typeName(r.type),
             " reply (type ", r.type, ") where ", expected, " was expected");
}

}  // namespace

void throwIfError(const redisReply& r, const std::string& command, const std::string& what,
                  const std::string& endpoint) {
  if (r.type != REDIS_REPLY_ERROR) return;
  const std::string msg = replyString(r);
  if (msg.find("not an integer") != std::string::npos) {
    C10D_THROW(InvalidArgument, what, ": Redis at ", endpoint, " refused ", command, ": ", msg);
  }
  C10D_THROW(Error, what, ": Redis at ", endpoint, " refused ", command, ": ", msg);
}

std::string replyString(const redisReply& r) {
  const bool text =
      r.type == REDIS_REPLY_STRING || r.type == REDIS_REPLY_STATUS || r.type == REDIS_REPLY_ERROR;
  return text && r.str != nullptr ? std::string(r.str, r.len) : std::string();
}

bool replyValue(const redisReply& r, std::string* value, const std::string& what,
                const std::string& endpoint) {
  if (r.type == REDIS_REPLY_NIL) return false;
  if (r.type != REDIS_REPLY_STRING) unexpected(r, "a string or nil", what, endpoint);
  *value = replyString(r);
  return true;
}

int64_t replyInteger(const redisReply& r, const std::string& what, const std::string& endpoint) {
  if (r.type != REDIS_REPLY_INTEGER) unexpected(r, "an integer", what, endpoint);
  return static_cast<int64_t>(r.integer);
}

ScanPage scanPage(const redisReply& r, const std::string& what, const std::string& endpoint) {
  if (r.type != REDIS_REPLY_ARRAY || r.elements != 2 || r.element == nullptr ||
      r.element[0] == nullptr || r.element[1] == nullptr ||
      r.element[0]->type != REDIS_REPLY_STRING || r.element[1]->type != REDIS_REPLY_ARRAY) {
    C10D_THROW(Error, what, ": Redis at ", endpoint, " answered SCAN with a ", typeName(r.type),
               " reply (type ", r.type, ", ", r.type == REDIS_REPLY_ARRAY ? r.elements : 0,
               " elements), not [cursor, [keys]]");
  }
  ScanPage page;
  page.cursor = replyString(*r.element[0]);
  page.keys = r.element[1]->elements;
  return page;
}

std::vector<const redisReply*> mgetValues(const redisReply& r, size_t n, const std::string& what,
                                          const std::string& endpoint) {
  if (r.type != REDIS_REPLY_ARRAY || r.elements != n || (n > 0 && r.element == nullptr)) {
    C10D_THROW(Error, what, ": Redis at ", endpoint, " answered MGET of ", n, " keys with a ",
               typeName(r.type), " reply of ", r.type == REDIS_REPLY_ARRAY ? r.elements : 0,
               " elements");
  }
  std::vector<const redisReply*> out(n);
  for (size_t i = 0; i < n; ++i) {
    const redisReply* e = r.element[i];
    if (e == nullptr || e->type == REDIS_REPLY_NIL) continue;
    if (e->type != REDIS_REPLY_STRING)
      unexpected(*e, "a string or nil in MGET's reply", what, endpoint);
    out[i] = e;
  }
  return out;
}

}  // namespace redis
C10D_NAMESPACE_END
}  // namespace c10d
