// Fuzzes the TCPStore server's protocol engine (c10d/store/tcp/tcp_store_server_core.h) in-process,
// with no sockets: framing, the handshake (with and without a secret), every request, the limits,
// parked requests and their wake-ups, connection close and handshake expiry.
//
// Input: byte 0 configures the server, the rest is a script of records for up to 4 connections.
//   byte 0   bit 0: the server has the secret kFuzzSecret (its nonces are all kServerNonceByte, so
//                   a seed can carry a valid client proof; make_corpus.cc makes them)
//            bit 1: tight limits (kTight below), so that every limit is reachable
//   record   u8 cmd: bits 0-1 connection slot, bits 2-3 kind
//              kind 0  data: u8 n, then n bytes the slot's connection receives (opened on demand)
//              kind 1  the slot's peer closes its side
//              kind 2  the clock passes every handshake deadline
//              kind 3  the slot's connection fails (an I/O error)
// After each record the harness plays the I/O loop: runs woken connections, takes every queued
// reply and checks it is a sequence of well-formed frames, and frees dead connections. The
// engine's bookkeeping (ServerCore::checkInvariants) is checked after every record that ends or
// expires connections, and at the end. Any exception escaping the engine is a crash: in the
// server it would stop the event loop for every client.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "c10d/store/tcp/tcp_store_server_core.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using c10d::tcpstore::ServerCore;

void checkFrames(const std::vector<uint8_t>& out, size_t begin) {
  size_t p = begin;
  while (p < out.size()) {
    FUZZ_CHECK(out.size() - p >= 4, "torn reply frame header");
    const uint32_t len = c10d::tcpstore::readFrameLength(&out[p]);
    FUZZ_CHECK(len >= 1 && len <= c10d::tcpstore::kMaxFrameBytes, "reply frame length");
    FUZZ_CHECK(out.size() - p - 4 >= len, "torn reply frame");
    FUZZ_CHECK(out[p + 4] <= static_cast<uint8_t>(c10d::tcpstore::Status::kAuthFailed),
               "reply status");
    p += 4 + len;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  c10d::tcpstore::ServerConfig config = c10d::fuzz::tcpStoreFuzzConfig(data[0]);
  auto now = ServerCore::Clock::time_point{} + std::chrono::hours(1);
  ServerCore::Hooks hooks;
  hooks.log = [](const std::string&) {};
  hooks.clock = [&now] { return now; };
  hooks.nonce = [] { return c10d::fuzz::fuzzServerNonce(); };
  ServerCore core(config, "fuzz", hooks);

  constexpr int kSlots = 4;
  uint64_t ids[kSlots] = {0, 0, 0, 0};
  std::vector<uint64_t> outIds;
  size_t pos = 1;
  while (pos < size) {
    const uint8_t cmd = data[pos++];
    const int slot = cmd & 3;
    const int kind = (cmd >> 2) & 3;
    ServerCore::Conn* c = ids[slot] != 0 ? core.find(ids[slot]) : nullptr;
    switch (kind) {
      case 0: {
        if (pos >= size) break;
        const size_t want = data[pos++];
        const size_t n = std::min(want, size - pos);
        if (c == nullptr) {
          FUZZ_CHECK(core.acceptingConnections(), "4 connections past the refusal slots");
          c = &core.open("fuzz-peer:" + std::to_string(slot));
          ids[slot] = c->id;
        }
        core.received(*c, data + pos, n);
        pos += n;
        break;
      }
      case 1:
        if (c != nullptr) core.peerClosed(*c);
        break;
      case 2:
        now += config.handshakeTimeout + std::chrono::milliseconds(1);
        core.expireHandshakes();
        break;
      case 3:
        if (c != nullptr) core.fail(*c, "fuzz I/O error");
        break;
    }
    // The I/O loop's part: resume woken connections, send everything, free the dead.
    core.runWoken();
    for (core.takeOutput(&outIds); !outIds.empty(); core.takeOutput(&outIds)) {
      for (uint64_t id : outIds) {
        ServerCore::Conn* o = core.findAny(id);
        if (o == nullptr) continue;
        checkFrames(o->out, o->outBegin);
        o->out.clear();
        o->outBegin = 0;
        if (!o->dead) core.resume(*o);
      }
    }
    core.reapDead();
    // The bookkeeping after every connection end, and at the end (each record would be slow).
    if (kind != 0) {
      const std::string bad = core.checkInvariants();
      FUZZ_CHECK(bad.empty(), bad.c_str());
    }
  }
  const std::string bad = core.checkInvariants();
  FUZZ_CHECK(bad.empty(), bad.c_str());
  return 0;
}
