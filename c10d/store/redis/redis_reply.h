// What RedisStore reads from Redis's replies (hiredis redisReply trees), as pure functions with no
// I/O, so that tests/fuzz/redis_reply_fuzzer.cc drives them with replies hiredis parsed from
// arbitrary bytes. A reply of a type its command cannot answer is an Error naming `what` and the
// server; nothing else is thrown and nothing is read past what hiredis allocated.
#pragma once

#include <hiredis/hiredis.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace redis {

// An error reply to `command` from `endpoint` throws: InvalidArgument for "value is not an
// integer" (an add to a key that holds no number), else Error. Any other reply returns.
void throwIfError(const redisReply& r, const std::string& command, const std::string& what,
                  const std::string& endpoint);

// A string or status reply's bytes; "" for any other type.
std::string replyString(const redisReply& r);

// The reply to GET (or to the compare-and-set script): true and the bytes for a string, false for
// nil (the key is missing); Error for any other type.
bool replyValue(const redisReply& r, std::string* value, const std::string& what,
                const std::string& endpoint);

// An integer reply (INCRBY, EXISTS, DEL); Error for any other type.
int64_t replyInteger(const redisReply& r, const std::string& what, const std::string& endpoint);

// A SCAN reply: [next cursor, [keys...]].
struct ScanPage {
  std::string cursor;
  size_t keys = 0;
};
ScanPage scanPage(const redisReply& r, const std::string& what, const std::string& endpoint);

// The `n` values of an MGET reply: each a string reply, or nullptr where the key is missing.
std::vector<const redisReply*> mgetValues(const redisReply& r, size_t n, const std::string& what,
                                          const std::string& endpoint);

}  // namespace redis
C10D_NAMESPACE_END
}  // namespace c10d
