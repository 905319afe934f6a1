// Fuzzes what RedisStore reads from Redis (c10d/store/redis/redis_reply.h): bytes a server (or
// whatever answers on its port) sends are parsed by hiredis's reader, as redis::Connection's
// context does, and every reply goes through each conversion the store applies to the reply of one
// of its commands (error replies, GET, INCRBY / EXISTS / DEL, SCAN, MGET).
//
// Input: byte 0 is the size of the pieces the bytes arrive in (0: one piece), byte 1 the key count
// of the MGET the replies are read as (0-7), the rest the bytes. Every failure must be a
// c10d::Error with a message; any other exception, a crash or a sanitizer report is a bug.
// hiredis 0.14 allocates an array reply's announced element count up front, so inputs announcing
// more than kMaxElements are skipped: that limit is hiredis's to enforce (1.x has maxelements).
#include <hiredis/hiredis.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>

#include "c10d/store/redis/redis_connection.h"
#include "c10d/store/redis/redis_reply.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

constexpr uint64_t kMaxElements = 4096;
const std::string kWhat = "fuzz";
const std::string kEndpoint = "redis:6379";

struct ReaderDeleter {
  void operator()(redisReader* r) const { redisReaderFree(r); }
};

// Whether some "*<count>" in the bytes announces more than kMaxElements elements.
bool announcesHugeArray(const uint8_t* data, size_t size) {
  for (size_t i = 0; i < size; ++i) {
    if (data[i] != '*') continue;
    uint64_t n = 0;
    size_t j = i + 1;
    if (j < size && data[j] == '-') ++j;
    for (; j < size && data[j] >= '0' && data[j] <= '9'; ++j) {
      n = n * 10 + (data[j] - '0');
      if (n > kMaxElements) return true;
    }
  }
  return false;
}

template <typename F>
void accepting(F&& f) {
  try {
    f();
  } catch (const c10d::Error& e) {
    FUZZ_CHECK(e.what()[0] != '\0', "an Error without a message");
  }
}

void convert(const redisReply& r, size_t mgetKeys) {
  accepting([&] {
    c10d::redis::throwIfError(r, "SET", kWhat, kEndpoint);
    FUZZ_CHECK(r.type != REDIS_REPLY_ERROR, "an error reply passed throwIfError");
  });
  c10d::redis::replyString(r);
  accepting([&] {
    std::string value;
    if (c10d::redis::replyValue(r, &value, kWhat, kEndpoint)) {
      FUZZ_CHECK(r.type == REDIS_REPLY_STRING && value.size() == r.len, "GET's value");
    }
  });
  accepting([&] { c10d::redis::replyInteger(r, kWhat, kEndpoint); });
  accepting([&] {
    const c10d::redis::ScanPage page = c10d::redis::scanPage(r, kWhat, kEndpoint);
    FUZZ_CHECK(page.keys == r.element[1]->elements, "SCAN's key count");
  });
  for (size_t n : {mgetKeys, r.type == REDIS_REPLY_ARRAY ? r.elements : size_t{0}}) {
    accepting([&] {
      const auto values = c10d::redis::mgetValues(r, n, kWhat, kEndpoint);
      FUZZ_CHECK(values.size() == n, "MGET's value count");
      for (const redisReply* v : values) {
        if (v != nullptr) c10d::redis::replyString(*v);
      }
    });
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2 || announcesHugeArray(data + 2, size - 2)) return 0;
  const size_t piece = data[0] == 0 ? size : data[0];
  const size_t mgetKeys = data[1] % 8;
  std::unique_ptr<redisReader, ReaderDeleter> reader(redisReaderCreate());
  FUZZ_CHECK(reader != nullptr, "redisReaderCreate failed");
  try {
    for (size_t at = 2; at < size; at += piece) {
      const size_t n = std::min(piece, size - at);
      FUZZ_CHECK(
          redisReaderFeed(reader.get(), reinterpret_cast<const char*>(data + at), n) == REDIS_OK,
          "redisReaderFeed failed");
      while (true) {
        void* reply = nullptr;
        if (redisReaderGetReply(reader.get(), &reply) != REDIS_OK) {
          // A protocol error: the connection would be dropped here (Connection::fail).
          FUZZ_CHECK(reader->errstr[0] != '\0', "a reader error without a message");
          return 0;
        }
        if (reply == nullptr) break;
        const c10d::redis::Reply owned(static_cast<redisReply*>(reply));
        convert(*owned, mgetKeys);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    FUZZ_CHECK(false, "an exception outside c10d's Error hierarchy");
  }
  return 0;
}
