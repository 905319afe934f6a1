// Fuzzes what EtcdStore reads from etcd (c10d/store/etcd/etcd_reply.h, etcd_client.h): the HTTP
// reply of a unary call, the /v3/watch stream, and every field the store then reads from a reply,
// as an etcd server, a proxy in front of it, or a truncated connection may deliver them.
//
// Input: byte 0 picks the path.
//   'W'  a watch stream: byte 1 is the size of the pieces it arrives in (0: one piece), the rest
//        the stream; every message goes through the store's "does this end the wait" check.
//   else a unary reply: bytes 1-3 the HTTP status (three digits; other bytes give odd statuses),
//        the rest the body. A parsed reply is read as every kind of reply the store expects (range,
//        transaction, lease grant and keepalive, delete).
// Every failure must be a c10d::Error with a message (EtcdError with a gRPC code in [-1, 16] when
// etcd refused); any other exception, a crash or a sanitizer report is a bug. The base64 codec is
// checked on the side: decode(encode(x)) == x for the body's bytes.
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include "c10d/store/etcd/etcd_client.h"
#include "c10d/store/etcd/etcd_reply.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using c10d::etcd::Json;

const std::string kWhat = "fuzz";

// Runs `f`; a c10d::Error is an accepted outcome, anything else escapes to libFuzzer.
template <typename F>
void accepting(F&& f) {
  try {
    f();
  } catch (const c10d::etcd::EtcdError& e) {
    FUZZ_CHECK(e.what()[0] != '\0', "an EtcdError without a message");
    FUZZ_CHECK(e.code() >= -1 && e.code() <= 16, "an EtcdError code outside gRPC's");
  } catch (const c10d::Error& e) {
    FUZZ_CHECK(e.what()[0] != '\0', "an Error without a message");
  }
}

// Everything the store reads from a reply it got from a call.
void readAsStore(const Json& r) {
  accepting([&] { c10d::etcd::rangeKeyValue(r, kWhat); });
  accepting([&] { c10d::etcd::headerRevision(r, kWhat); });
  accepting([&] { c10d::etcd::leaseIdOf(r, kWhat); });
  accepting([&] { c10d::etcd::keepaliveTtl(r, kWhat); });
  accepting([&] { c10d::etcd::txnSucceeded(r, kWhat); });
  for (const char* field : {"ID", "count", "deleted"}) {
    accepting([&] { c10d::etcd::jsonInt(r, field); });
  }
  for (size_t i = 0; i < 3; ++i) {
    accepting([&] {
      const Json range = c10d::etcd::txnRange(r, i, kWhat);
      FUZZ_CHECK(range.is_object(), "txnRange gave a non-object");
      c10d::etcd::jsonInt(range, "count");
      const c10d::etcd::KeyValue kv = c10d::etcd::rangeKeyValue(range, kWhat);
      FUZZ_CHECK(kv.present || (kv.value.empty() && kv.modRevision == 0),
                 "an absent key with a value");
    });
  }
}

void unary(const uint8_t* data, size_t size) {
  long status = 0;
  if (size >= 3 && std::isdigit(data[0]) && std::isdigit(data[1]) && std::isdigit(data[2])) {
    status = (data[0] - '0') * 100 + (data[1] - '0') * 10 + (data[2] - '0');
  } else if (size >= 3) {
    status = static_cast<long>(data[0]) * 65536 + data[1] * 256 + data[2] - 1000000;
  }
  const size_t skip = size < 3 ? size : 3;
  const std::string_view body(reinterpret_cast<const char*>(data + skip), size - skip);
  accepting([&] {
    const Json r = c10d::etcd::parseReply(status, body, "http://etcd:2379", "/v3/kv/range", kWhat);
    FUZZ_CHECK(r.is_object(), "parseReply returned a non-object");
    FUZZ_CHECK(status == 200 && !r.contains("error"), "parseReply accepted a refusal");
    readAsStore(r);
  });
  const std::string raw(body);
  FUZZ_CHECK(c10d::etcd::base64Decode(c10d::etcd::base64Encode(raw)) == raw,
             "base64 does not round-trip");
  accepting([&] { c10d::etcd::base64Decode(raw); });
}

void watch(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const size_t piece = data[0] == 0 ? size : data[0];
  const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);
  c10d::etcd::WatchStreamReader reader;
  bool more = true;
  size_t messages = 0;
  accepting([&] {
    for (size_t at = 0; at < stream.size() && more; at += piece) {
      more = reader.feed(stream.substr(at, piece), [&](const Json& msg) {
        ++messages;
        return !c10d::etcd::watchReplyEndsWait(msg, kWhat);
      });
      FUZZ_CHECK(more == (!reader.done() && reader.failure().empty()),
                 "feed's result disagrees with done() / failure()");
    }
    FUZZ_CHECK(!(reader.done() && !reader.failure().empty()), "a watch both done and failed");
    FUZZ_CHECK(!reader.done() || messages > 0, "a watch done without a message");
    if (!more) {
      FUZZ_CHECK(!reader.feed("{}\n", [](const Json&) { return true; }),
                 "a stopped watch took more input");
    }
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  try {
    if (data[0] == 'W') {
      watch(data + 1, size - 1);
    } else {
      unary(data + 1, size - 1);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    FUZZ_CHECK(false, "an exception outside c10d's Error hierarchy");
  }
  return 0;
}
