// Writes the seed corpora of the fuzz targets: fuzz_make_corpus OUT_DIR writes
// OUT_DIR/<target>/seed-<name> for every target. The seeds in the corpus archives
// (tests/fuzz/corpus/<target>_seed_corpus.zip) came from it. To write them anew: unpack each
// target T's archive, write the seeds over it, pack it again:
//   cmake --build build --target fuzz_make_corpus
//   scripts/fuzz-corpus.py unpack tests/fuzz/corpus/T_seed_corpus.zip c/T
//   build/bin/fuzz_make_corpus c
//   scripts/fuzz-corpus.py pack c/T tests/fuzz/corpus/T_seed_corpus.zip
// Each seed is a small, valid example of what its harness parses (see the harness's header for the
// input format), so that fuzzing starts from deep paths: authenticated sessions, parked requests,
// limits, handshake expiry, intact and damaged logs, matched and unmatched p2p messages, etcd's and
// Redis's replies, checkpoint files written by the real writers, flight recorder dumps of a real
// recorder, and C ABI call scripts; plus a few broken ones of each.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <string>
#include <vector>

#include "c10d/backends/verbs/transport/tcp/tcp_transport.h"
#include "c10d/core/flight_recorder.h"
#include "c10d/layers/optim/optimizer_state.h"
#include "c10d/store/file_store_log.h"
#include "c10d/store/tcp/tcp_store_auth.h"
#include "c10d/store/tcp/tcp_store_protocol.h"
#include "tests/fuzz/fuzz_util.h"
#ifdef C10D_FUZZ_CORPUS_TRAIN_MLP
#include "examples/train_mlp/checkpoint.h"
#endif

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
  constexpr uint32_t kMagic = 0xC10D5EEDu;  // c10d/backends/verbs/p2p_engine.cc
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

Bytes text(const std::string& s) {
  return Bytes(s.begin(), s.end());
}

// --- etcd replies (etcd_reply_fuzzer.cc) ---
void etcdSeeds() {
  const std::string t = "etcd_reply";
  const std::string header =
      R"("header":{"cluster_id":"14841639068965178418","member_id":"10276657743932975437",)"
      R"("revision":"12","raft_term":"2"})";
  const std::string kv =
      R"({"key":"L2pvYi9rL2E=","create_revision":"5","mod_revision":"12","version":"3",)"
      R"("value":"MTc="})";
  write(t, "range-hit", text("U200{" + header + R"(,"kvs":[)" + kv + R"(],"count":"1"})"));
  write(t, "range-miss", text("U200{" + header + "}"));
  write(t, "txn-succeeded",
        text("U200{" + header + R"(,"succeeded":true,"responses":[{"response_put":{"header":)" +
             R"({"revision":"13"}}}]})"));
  write(t, "txn-failed-range",
        text("U200{" + header + R"(,"responses":[{"response_range":{)" + header + R"(,"kvs":[)" +
             kv + R"(],"count":"1"}}]})"));
  write(
      t, "txn-count-only",
      text("U200{" + header + R"(,"succeeded":true,"responses":[{"response_range":{"header":)" +
           R"({"revision":"12"},"count":"1"}},{"response_range":{"header":{"revision":"12"}}}]})"));
  write(t, "lease-grant", text("U200{" + header + R"(,"ID":"7587876543210123","TTL":"30"})"));
  write(t, "lease-key",
        text("U200{" + header + R"(,"kvs":[{"key":"L2pvYi9sZWFzZQ==","mod_revision":"3",)" +
             R"("value":"NzU4Nzg3NjU0MzIxMDEyMw==","lease":"7587876543210123"}],"count":"1"})"));
  write(t, "keepalive",
        text(R"(U200{"result":{)" + header + R"(,"ID":"7587876543210123","TTL":"30"}})"));
  write(t, "keepalive-expired",
        text(R"(U200{"result":{)" + header + R"(,"ID":"7587876543210123"}})"));
  write(t, "deleted", text("U200{" + header + R"(,"deleted":"1"})"));
  write(t, "error-unary",
        text(R"(U404{"error":"etcdserver: requested lease not found","code":5,)"
             R"("message":"etcdserver: requested lease not found"})"));
  write(t, "error-stream",
        text(R"(U200{"error":{"grpc_code":5,"http_code":404,"message":"etcdserver: requested )"
             R"(lease not found","http_status":"Not Found"}})"));
  write(t, "not-json", text("U502<html><body>502 Bad Gateway</body></html>"));
  write(t, "count-without-kvs", text("U200{" + header + R"(,"count":"2"})"));
  write(t, "bad-fields",
        text("U200{" + header +
             R"(,"count":"x1","succeeded":"yes","kvs":[{"value":"!!!","mod_revision":1.5}]})"));
  const std::string created = R"({"result":{)" + header +
                              R"(,"created":true}})"
                              "\n";
  const std::string event = R"({"result":{)" + header + R"(,"events":[{"kv":)" + kv + "}]}}\n";
  write(t, "watch-created-then-put", text("W\x07" + created + event));
  write(t, "watch-whole", text(std::string("W\0", 2) + created + "\n" + event));
  write(t, "watch-canceled",
        text("W\x05" + created + R"({"result":{)" + header +
             R"(,"canceled":true,"compact_revision":"10"}})"
             "\n"));
  write(t, "watch-error",
        text("W\x40" + created +
             R"({"error":{"grpc_code":14,"message":"etcdserver: no leader"}})"
             "\n"));
  write(t, "watch-torn", text("W\x03" + created + R"({"result":{"events":[{"kv":)"));
}

// --- Redis replies (redis_reply_fuzzer.cc): piece size, MGET key count, then the bytes ---
void redisSeeds() {
  const std::string t = "redis_reply";
  auto seed = [&](const std::string& name, uint8_t piece, uint8_t keys, const std::string& resp) {
    Bytes b{piece, keys};
    b.insert(b.end(), resp.begin(), resp.end());
    write(t, name, b);
  };
  seed("set-publish", 0, 0, "+OK\r\n:1\r\n");
  seed("get-incr-exists-del", 3, 0, "$2\r\n17\r\n$-1\r\n:18\r\n:1\r\n:0\r\n");
  seed("not-an-integer", 0, 0, "-ERR value is not an integer or out of range\r\n:1\r\n");
  seed("wrongtype", 5, 0, "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n");
  seed("scan", 4, 2,
       "*2\r\n$3\r\n112\r\n*2\r\n$7\r\njob/k/a\r\n$7\r\njob/k/b\r\n"
       "*2\r\n$1\r\n0\r\n*0\r\n");
  seed("mget", 0, 3, "*3\r\n$1\r\na\r\n$-1\r\n$0\r\n\r\n");
  seed("subscribe", 1, 0,
       "*3\r\n$9\r\nsubscribe\r\n$9\r\njob/ch/ka\r\n:1\r\n"
       "*3\r\n$7\r\nmessage\r\n$9\r\njob/ch/ka\r\n$0\r\n\r\n");
  seed("nested-nil-array", 0, 1, "*2\r\n*-1\r\n*1\r\n*1\r\n:7\r\n");
  seed("protocol-error", 0, 0, "+OK\r\n?what\r\n");
  seed("torn-bulk", 2, 0, "$10\r\nabc");
}

// --- optimizer state files (optimizer_state_fuzzer.cc): byte 0 = 1 repairs the frame ---
void optimizerStateSeeds() {
  const std::string t = "optimizer_state";
  auto saved = [](const optim::OptimizerState& st) {
    const std::string path = "/tmp/c10d-fuzz-make-corpus-" + std::to_string(::getpid());
    st.save(path);
    std::ifstream in(path, std::ios::binary);
    Bytes b((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ::unlink(path.c_str());
    return b;
  };
  auto seed = [&](const std::string& name, uint8_t flags, Bytes file) {
    file.insert(file.begin(), flags);
    write(t, name, file);
  };
  optim::OptimizerState adam;
  adam.options.algorithm = optim::Algorithm::kAdamW;
  adam.options.lr = 1e-3;
  adam.steps = 7;
  adam.slotNames = adam.options.slotNames();
  adam.slots = {{{0.5f, -1.f, 2.f}, {0.25f, 1.f, 4.f}}, {{3.f}, {9.f}}};
  const Bytes adamFile = saved(adam);
  optim::OptimizerState sgd;
  sgd.options.momentum = 0.9;
  sgd.options.nesterov = true;
  sgd.steps = 2;
  sgd.slotNames = sgd.options.slotNames();
  sgd.slots.resize(2);
  for (auto& p : sgd.slots) p.assign(sgd.slotNames.size(), std::vector<float>{1.f, 2.f});
  seed("adamw", 0, adamFile);
  seed("sgd-momentum", 0, saved(sgd));
  seed("adamw-repaired", 1, adamFile);
  Bytes truncated(adamFile.begin(), adamFile.end() - 13);
  seed("truncated", 0, truncated);
  seed("truncated-repaired", 1, truncated);
  Bytes version = adamFile;
  version[8] = 2;
  seed("version-2", 1, version);
  Bytes flipped = adamFile;
  flipped[flipped.size() / 2] ^= 0x40;
  seed("bit-flip", 0, flipped);
  Bytes slotName = adamFile;
  slotName[93] = 0xff;  // the first slot name's length (after header, options, steps, slot count)
  seed("slot-name-length", 1, slotName);
}

// --- train_mlp model files (train_mlp_checkpoint_fuzzer.cc): byte 0 = 1 repairs the frame ---
void trainMlpSeeds() {
#ifdef C10D_FUZZ_CORPUS_TRAIN_MLP
  const std::string t = "train_mlp_checkpoint";
  example::MlpShape shape;
  shape.inputDim = 3;
  shape.hidden = 2;
  shape.layers = 2;
  shape.classes = 2;
  example::Mlp model(shape);
  model.initialize(1);
  example::CheckpointMeta meta;
  meta.step = 10;
  meta.seed = 1;
  meta.globalBatch = 8;
  meta.datasetSize = 64;
  meta.widths = shape.widths();
  meta.mode = "ddp";
  meta.worldSize = 2;
  meta.optimizer = "sgd(lr=0.1)";
  const std::string path = "/tmp/c10d-fuzz-make-corpus-" + std::to_string(::getpid());
  example::writeModelFile(path, meta, model);
  std::ifstream in(path, std::ios::binary);
  const Bytes file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ::unlink(path.c_str());
  auto seed = [&](const std::string& name, uint8_t flags, Bytes f) {
    f.insert(f.begin(), flags);
    write(t, name, f);
  };
  seed("model", 0, file);
  seed("model-repaired", 1, file);
  Bytes truncated(file.begin(), file.end() - 9);
  seed("truncated-repaired", 1, truncated);
  Bytes header = file;
  header[24] = '[';  // the JSON header no longer an object
  seed("header-not-object", 1, header);
#endif
}

// --- flight recorder dumps (c10d_trace_dump_fuzzer.cc): dumps separated by form feeds ---
void traceSeeds() {
  const std::string t = "c10d_trace_dump";
  auto desc = [](uint64_t seq, OpType op, uint64_t count, DataType dtype = DataType::kFloat32) {
    OpDesc d;
    d.seq = seq;
    d.collSeq = seq;
    d.op = op;
    d.dtype = dtype;
    d.count = count;
    d.hasReduceOp = op == OpType::kAllreduce;
    return d;
  };
  // A job of 3 ranks where rank 2 never reached the second allreduce, and one where the ranks
  // called different allreduces.
  std::string hang;
  std::string diverge;
  for (int rank = 0; rank < 3; ++rank) {
    FlightRecorder fr(8, "world", "verbs", rank, 3);
    const auto a = fr.record(desc(0, OpType::kAllreduce, 1024), 1000);
    fr.onEnd(a, 2000, nullptr, 1500);
    if (rank < 2) {
      const auto b = fr.record(desc(1, OpType::kAllreduce, 1024), 3000);
      fr.onStart(b, 3100);
    }
    hang += (rank ? "\f" : "") + fr.toJson("timeout");
    FlightRecorder dv(8, "world", "gloo", rank, 3);
    const auto c = dv.record(desc(0, OpType::kBroadcast, 4), 1000);
    dv.onEnd(c, 1200, nullptr);
    dv.record(desc(1, OpType::kAllreduce, rank == 1 ? 16 : 8), 1300);
    diverge += (rank ? "\f" : "") + dv.toJson("on demand");
  }
  write(t, "hang-3-ranks", text(hang));
  write(t, "divergence", text(diverge));
  FlightRecorder p2p(4, "world/group1", "verbs", 1, 2);
  OpDesc send = desc(0, OpType::kSend, 8);
  send.peer = 0;
  p2p.onEnd(p2p.record(send, 10), 20, std::make_exception_ptr(Error("peer 0 closed")), 15);
  OpDesc a2a = desc(1, OpType::kAlltoallSingle, 0, DataType::kInt64);
  a2a.setSplits({1, 2}, {2, 1});
  p2p.record(a2a, 30);
  p2p.record(desc(2, OpType::kBarrier, 0), 40);  // the ring wraps past its 4 slots below
  p2p.record(desc(3, OpType::kAllreduce, 2, DataType::kBFloat16), 50);
  p2p.record(desc(4, OpType::kAllreduce, 2, DataType::kBFloat16), 60);
  write(t, "p2p-alltoall-failed", text(p2p.toJson("failure")));
  const std::string one = FlightRecorder(2, "g", "gloo", 0, 2).toJson("timeout");
  write(t, "truncated", text(one.substr(0, one.size() / 2)));
  std::string version = one;
  version.replace(version.find("\"version\":1"), 11, "\"version\":2");
  write(t, "version-2", text(version));
  write(t, "duplicate-rank", text(one + "\f" + one));
}

// --- C ABI call scripts (c10d_api_fuzzer.cc); each byte as the harness reads it ---
void capiSeeds() {
  const std::string t = "c10d_api";
  // A hash store in slot 0 (1 ms timeout): call 0, timeout #1, options byte, size byte, slot, kind,
  // out.
  const Bytes hashStore = {0, 1, 5, 4, 0, 0, 1};
  // A host store in slot 1 with every callback: call 0, options as above, slot, kind, fault byte
  // (none), status, optional callbacks.
  const Bytes hostStore = {0, 1, 5, 4, 1, 3, 0x11, 0, 0x0f};
  // One that fails every 3rd call with TIMEOUT and a message: fault byte, period, status, ...
  const Bytes faultyHostStore = {0, 1, 5, 4, 1, 3, 0x10, 2, 1, 0x0f};
  // A one-rank group on store slot S in group slot 0: call 4, timeout #0 (200 ms), options,
  // config, size, store slot, backend #B, rank/size byte, group slot.
  auto group = [](uint8_t store, uint8_t backend) {
    return Bytes{4, 0, 5, 1, 4, store, backend, 2, 0};
  };
  // A collective `which` on group 0 into work slot 0, its first tensor given by `t0`: call 6,
  // group, NULL opts, op SUM, root 0, out, which, t0, t1 NULL, two empty lists, tag, splits,
  // split counts, work slot.
  auto collectiveWith = [](uint8_t which, const Bytes& t0) {
    Bytes b = {6, 0, 0, 9, 0, 1, which};
    b.insert(b.end(), t0.begin(), t0.end());
    const Bytes rest = {0, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    b.insert(b.end(), rest.begin(), rest.end());
    return b;
  };
  // ... of `dtype` x 16 at arena offset 0: present, how, dtype, offset, numel.
  auto collective = [&](uint8_t which, uint8_t dtype) {
    return collectiveWith(which, {1, 0, dtype, 0, 16});
  };
  // c10d_work_wait(work 0, 10 ms), c10d_work_test, a callback.
  const Bytes wait = {9, 0, 0, 0, 2};
  const Bytes test = {9, 0, 0, 1};
  const Bytes callback = {9, 0, 0, 4, 1};
  auto cat = [](std::initializer_list<Bytes> parts) {
    Bytes out;
    for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
    return out;
  };
  write(t, "verbs-allreduce", cat({hashStore, group(0, 0), collective(1, 0), wait, callback}));
  write(t, "gloo-broadcast", cat({hashStore, group(0, 2), collective(0, 7), test, wait}));
  write(t, "host-store-group",
        cat({hostStore, group(1, 0), collective(14, 0), callback, wait,
             Bytes{5, 0, 5, 1, 1, 0}}));  // c10d_monitored_barrier(5 ms)
  write(t, "host-store-faults",
        cat({faultyHostStore, group(1, 0), Bytes{2, 1, 0, 0, 8, 1, 0}, Bytes{2, 1, 0, 1, 0, 2},
             Bytes{2, 1, 4, 2, 5, 0, 0, 0, 0, 0, 0, 0, 1}, Bytes{2, 1, 0, 3, 2, 0, 1, 1, 1}}));
  // Store calls on the hash store: set, get, add, check, wait, delete, num_keys, set_timeout,
  // tcp_port, status names.
  write(t, "store-calls",
        cat({hashStore, Bytes{2, 0, 0, 0, 8, 1, 0}, Bytes{2, 0, 0, 1, 0, 2},
             Bytes{2, 0, 4, 2, 5, 0, 0, 0, 0, 0, 0, 0, 1}, Bytes{2, 0, 0, 3, 2, 0, 1, 1, 1},
             Bytes{2, 0, 0, 4, 1, 0, 1, 1}, Bytes{2, 0, 0, 5, 1}, Bytes{2, 0, 0, 6, 1},
             Bytes{2, 0, 0, 7, 1}, Bytes{2, 0, 0, 8, 1}, Bytes{2, 0, 0, 9, 3}}));
  // Collectives with bad arguments: a NULL group, NULL data with a huge count, a bad dtype.
  Bytes nullGroup = collective(1, 0);
  nullGroup[1] = 7;
  write(t, "bad-arguments",
        cat({hashStore, group(0, 0), nullGroup, collectiveWith(1, {1, 5, 0, 6}),
             collectiveWith(2, {1, 1, 0, 1, 0, 8})}));
  // A sub-group of rank 0 and a split of the group, a shutdown, and an allreduce after it.
  write(t, "subgroups-shutdown",
        cat({hashStore, group(0, 0), Bytes{10, 0, 0, 5, 1, 4, 0, 1, 1, 1, 0, 1, 1},
             Bytes{10, 0, 0, 5, 1, 4, 0, 1, 0, 0, 0, 2}, Bytes{11, 1, 0, 1}, collective(1, 0),
             wait}));
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
  etcdSeeds();
  redisSeeds();
  optimizerStateSeeds();
  trainMlpSeeds();
  traceSeeds();
  capiSeeds();
  return 0;
}
