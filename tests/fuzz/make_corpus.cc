// Writes the seed corpora of the fuzz targets: fuzz_make_corpus OUT_DIR writes
// OUT_DIR/<target>/seed-<name> for every target. The checked-in tests/fuzz/corpus/ came from it:
//   cmake --build build --target fuzz_make_corpus && build/bin/fuzz_make_corpus tests/fuzz/corpus
// Each seed is a small, valid example of what its harness parses (see the harness's header for the
// input format), so that fuzzing starts from deep paths: authenticated sessions, parked requests,
// limits, handshake expiry, intact and damaged logs, matched and unmatched p2p messages.
#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "backends/verbs/transport/tcp/tcp_transport.h"
#include "store/file_store_log.h"
#include "store/tcp/tcp_store_auth.h"
#include "store/tcp/tcp_store_protocol.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using namespace c10d;
using tcpstore::FrameWriter;
using tcpstore::Op;
using Bytes = std::vector<uint8_t>;

std::string outDir;

void write(const std::string& target, const std::string& name, const Bytes& data) {
  const std::string dir = outDir + "/" + target;
  ::mkdir(dir.c_str(), 0755);
  std::ofstream(dir + "/seed-" + name, std::ios::binary)
      .write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
}

// --- TCPStore server script (tcp_store_server_fuzzer.cc) ---
class Script {
 public:
  explicit Script(uint8_t flags) { bytes_.push_back(flags); }
  // Bytes for `slot`, in data records of at most 255 bytes.
  Script& data(int slot, const Bytes& b) {
    for (size_t p = 0; p < b.size(); p += 255) {
      const size_t n = std::min<size_t>(255, b.size() - p);
      bytes_.push_back(static_cast<uint8_t>(slot));
      bytes_.push_back(static_cast<uint8_t>(n));
      bytes_.insert(bytes_.end(), b.begin() + static_cast<std::ptrdiff_t>(p),
                    b.begin() + static_cast<std::ptrdiff_t>(p + n));
    }
    return *this;
  }
  Script& frame(int slot, FrameWriter& w) { return data(slot, w.finish()); }
  Script& close(int slot) { return cmd(slot, 1); }
  Script& expire() { return cmd(0, 2); }
  Script& fail(int slot) { return cmd(slot, 3); }
  const Bytes& bytes() const { return bytes_; }

 private:
  Script& cmd(int slot, int kind) {
    bytes_.push_back(static_cast<uint8_t>(slot | (kind << 2)));
    return *this;
  }
  Bytes bytes_;
};

tcpstore::Nonce clientNonce(int slot) {
  tcpstore::Nonce n;
  n.fill(static_cast<uint8_t>(0x10 + slot));
  return n;
}

FrameWriter hello(int slot, bool hasSecret) {
  FrameWriter w(static_cast<uint8_t>(Op::kHello));
  w.u32(tcpstore::kMagic);
  w.u32(tcpstore::kVersion);
  w.u8(1);
  w.u8(hasSecret ? 1 : 0);
  w.raw(clientNonce(slot).data(), tcpstore::kNonceBytes);
  return w;
}

FrameWriter auth(int slot, const std::string& secret) {
  const tcpstore::Proof p = tcpstore::makeProof(tcpstore::Role::kClient, secret,
                                                fuzz::fuzzServerNonce(), clientNonce(slot));
  FrameWriter w(static_cast<uint8_t>(Op::kAuth));
  w.raw(p.data(), p.size());
  return w;
}

FrameWriter op(Op o) {
  return FrameWriter(static_cast<uint8_t>(o));
}
FrameWriter keyOp(Op o, const std::string& key) {
  FrameWriter w = op(o);
  w.str(key);
  return w;
}
FrameWriter set(const std::string& key, const std::string& value) {
  FrameWriter w = keyOp(Op::kSet, key);
  w.str(value);
  return w;
}
FrameWriter keysOp(Op o, const std::vector<std::string>& keys) {
  FrameWriter w = op(o);
  w.u32(static_cast<uint32_t>(keys.size()));
  for (const auto& k : keys) w.str(k);
  return w;
}

// Every request once, on connection `slot` (already past its handshake).
void everyOp(Script& s, int slot) {
  FrameWriter w1 = set("k", "v");
  s.frame(slot, w1);
  FrameWriter w2 = keyOp(Op::kGet, "k");
  s.frame(slot, w2);
  FrameWriter w3 = keyOp(Op::kAdd, "n");
  w3.i64(5);
  s.frame(slot, w3);
  FrameWriter w4 = keyOp(Op::kCompareSet, "k");
  w4.str("v");
  w4.str("w");
  s.frame(slot, w4);
  FrameWriter w5 = keysOp(Op::kCheck, {"k", "n"});
  s.frame(slot, w5);
  FrameWriter w6 = keyOp(Op::kAppend, "k");
  w6.str("tail");
  s.frame(slot, w6);
  FrameWriter w7 = keysOp(Op::kMultiGet, {"k", "n"});
  s.frame(slot, w7);
  FrameWriter w8 = op(Op::kMultiSet);
  w8.u32(2);
  w8.str("a");
  w8.str("1");
  w8.str("b");
  w8.str("2");
  s.frame(slot, w8);
  FrameWriter w9 = keysOp(Op::kWait, {"a", "b"});
  s.frame(slot, w9);
  FrameWriter w10 = keyOp(Op::kDelete, "a");
  s.frame(slot, w10);
  FrameWriter w11 = op(Op::kNumKeys);
  s.frame(slot, w11);
}

void tcpStoreSeeds() {
  const std::string t = "tcp_store_server";
  {
    Script s(0);
    FrameWriter h = hello(0, false);
    s.frame(0, h);
    everyOp(s, 0);
    write(t, "no-secret-every-op", s.bytes());
  }
  {
    Script s(1);
    FrameWriter h = hello(0, true);
    FrameWriter a = auth(0, fuzz::kFuzzSecret);
    s.frame(0, h).frame(0, a);
    everyOp(s, 0);
    write(t, "secret-every-op", s.bytes());
  }
  {
    // A get parked on slot 1, answered by a set on slot 0; a wait left parked when slot 2 closes.
    Script s(0);
    for (int slot = 0; slot < 3; ++slot) {
      FrameWriter h = hello(slot, false);
      s.frame(slot, h);
    }
    FrameWriter g = keyOp(Op::kGet, "later");
    FrameWriter w = keysOp(Op::kWait, {"later", "never"});
    FrameWriter st = set("later", "x");
    FrameWriter after = op(Op::kNumKeys);
    s.frame(1, g).frame(1, after).frame(2, w).frame(0, st).close(2);
    write(t, "parked-requests", s.bytes());
  }
  {
    // Refusals: a wrong proof, a client without the secret, one that never finishes its hello.
    Script s(1);
    FrameWriter h0 = hello(0, true);
    FrameWriter a0 = auth(0, "another-secret");
    FrameWriter h1 = hello(1, false);
    Bytes partial = hello(2, true).finish();
    partial.resize(10);
    s.frame(0, h0).frame(0, a0).frame(1, h1).data(2, partial).expire();
    write(t, "secret-refusals", s.bytes());
  }
  {
    // Tight limits: a value too large, too many keys, too many bytes, too many connections.
    Script s(2);
    for (int slot = 0; slot < 4; ++slot) {
      FrameWriter h = hello(slot, false);
      s.frame(slot, h);
    }
    FrameWriter big = set("big", std::string(100, 'x'));
    s.frame(0, big);
    for (int i = 0; i < 10; ++i) {
      FrameWriter w = set("key" + std::to_string(i), std::string(40, 'y'));
      s.frame(i % 2, w);
    }
    FrameWriter ap = keyOp(Op::kAppend, "key0");
    ap.str(std::string(30, 'z'));
    s.frame(1, ap);
    write(t, "tight-limits", s.bytes());
  }
  {
    // Malformed frames after a handshake, and a request before one.
    Script s(0);
    FrameWriter h = hello(0, false);
    s.frame(0, h);
    s.data(0, Bytes{9, 0, 0, 0, 2, 100, 0, 0, 0, 0, 0, 0, 0});
    FrameWriter early = set("k", "v");
    s.frame(1, early);
    write(t, "malformed", s.bytes());
  }
}

// --- FileStore log (file_store_log_fuzzer.cc) ---
void fileStoreSeeds() {
  const std::string t = "file_store_log";
  Bytes log;
  detail::encodeRecord(detail::RecordType::kSet, "a", Bytes{'1'}, log);
  detail::encodeRecord(detail::RecordType::kAppend, "a", Bytes{'2', '3'}, log);
  detail::encodeRecord(detail::RecordType::kSet, std::string("\0c10d.filestore.joined_users", 28),
                       Bytes{'1'}, log);
  detail::encodeRecord(detail::RecordType::kDelete, "a", Bytes{}, log);
  detail::encodeRecord(detail::RecordType::kSet, "b", Bytes(40, 0), log);
  write(t, "valid", log);
  Bytes torn = log;
  torn.resize(log.size() - 7);
  write(t, "truncated", torn);
  Bytes badType = log;
  badType[0] = 9;
  write(t, "bad-type", badType);
  Bytes hugeLen = log;
  for (int i = 5; i < 13; ++i) hugeLen[i] = 0xff;  // the first record's value length
  write(t, "huge-length", hugeLen);
  Bytes deleteFirst = log;
  deleteFirst[0] = 2;  // a delete first
  write(t, "starts-with-delete", deleteFirst);
  Bytes file;  // ends in 'F': the harness also opens it with FileStore
  detail::encodeRecord(detail::RecordType::kSet, "f", Bytes{'v', 'F'}, file);
  write(t, "through-filestore", file);
}

// --- verbs p2p stream (verbs_p2p_fuzzer.cc) ---
void p2pHeader(Bytes& out, uint32_t magic, int32_t tag, uint64_t len) {
  const size_t at = out.size();
  out.resize(at + 16);
  std::memcpy(&out[at], &magic, 4);
  std::memcpy(&out[at + 4], &tag, 4);
  std::memcpy(&out[at + 8], &len, 8);
}

void p2pSeeds() {
  const std::string t = "verbs_p2p";
  constexpr uint32_t kMagic = 0xC10D5EEDu;  // backends/verbs/p2p_engine.cc
  // Two recvs posted (tag 7 of 8 bytes from rank 0; tag 9 of 4 bytes from any source).
  Bytes s = {static_cast<uint8_t>(2 | (3 << 2)), 0, 7, 8, 0, 1, 9, 4, 0};
  p2pHeader(s, kMagic, 7, 8);
  s.insert(s.end(), 8, 0xAB);
  p2pHeader(s, kMagic, 5, 3);  // unexpected
  s.insert(s.end(), 3, 0xCD);
  p2pHeader(s, kMagic, 9, 6);  // size mismatch: drained
  s.insert(s.end(), 6, 0xEF);
  write(t, "matched-unexpected-mismatch", s);
  Bytes bad = {1, 0, 1, 16, 0};
  p2pHeader(bad, kMagic, 1, uint64_t{1} << 40);  // past maxUnexpectedBytes: corrupt stream
  write(t, "huge-length", bad);
  Bytes magic = {0};
  p2pHeader(magic, 0x12345678u, 1, 4);
  write(t, "bad-magic", magic);
}

// --- verbs tcp hello (verbs_tcp_hello_fuzzer.cc) ---
void helloSeeds() {
  const std::string t = "verbs_tcp_hello";
  Bytes s = {3};
  for (auto h :
       {verbs::TcpHello{verbs::kTcpHelloMagic, 0, 0}, verbs::TcpHello{verbs::kTcpHelloMagic, 2, 1},
        verbs::TcpHello{verbs::kTcpHelloMagic, 3, 0}, verbs::TcpHello{verbs::kTcpHelloMagic, -1, 0},
        verbs::TcpHello{verbs::kTcpHelloMagic, 1, 2}, verbs::TcpHello{0, 0, 0}}) {
    const size_t at = s.size();
    s.resize(at + sizeof(h));
    std::memcpy(&s[at], &h, sizeof(h));
  }
  s.resize(s.size() + 5, 0x70);  // a short one
  write(t, "mixed", s);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  outDir = argv[1];
  ::mkdir(outDir.c_str(), 0755);
  tcpStoreSeeds();
  fileStoreSeeds();
  p2pSeeds();
  helloSeeds();
  return 0;
}
