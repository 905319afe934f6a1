// TCPStore authentication: the shared secret accepted; refused when it differs or one side has
// none (both directions); requests before the handshake, replayed proofs, impostor servers and
// silent clients refused; the secret in no message; the secret from C10D_STORE_SECRET.
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <gtest/gtest.h>

#include "c10d/base/abi.h"
#include "c10d/store/tcp/tcp_store.h"
#include "c10d/store/tcp/tcp_store_auth.h"
#include "c10d/store/tcp/tcp_store_config.h"
#include "tests/store/tcp_store_test_util.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace {

using test::clientOptions;
using test::expectThrows;
using test::RawClient;
using test::ScopedEnv;

// Distinctive, so that a leak into any message would be found.
constexpr const char* kSecret = "S3CRET-c10d-auth-test-4f1d2a";
constexpr const char* kOtherSecret = "0THER-c10d-auth-test-9b7e11";
constexpr const char* kAuthFailed =
    "authentication failed (C10D_STORE_SECRET differs or is unset on one side)";

TCPStoreServerOptions serverOptions(const std::string& secret) {
  TCPStoreServerOptions o;
  o.bindAddress = "127.0.0.1";
  o.secret = secret;
  return o;
}

TCPStoreOptions withSecret(uint16_t port, const std::string& secret) {
  TCPStoreOptions o = clientOptions(port, Milliseconds(5000));
  o.secret = secret;
  return o;
}

void expectNoSecret(const std::string& text) {
  EXPECT_EQ(text.find(kSecret), std::string::npos) << text;
  EXPECT_EQ(text.find(kOtherSecret), std::string::npos) << text;
}

// A refused client: its error, and what the server logged meanwhile.
struct Refusal {
  std::string error;
  std::string log;
};

Refusal refusedClient(TCPStoreServer& server, const std::string& clientSecret) {
  testing::internal::CaptureStderr();
  Refusal r;
  r.error = expectThrows<Error>([&] { TCPStore c(withSecret(server.port(), clientSecret)); });
  std::this_thread::sleep_for(Milliseconds(50));  // the server logs on its own thread
  r.log = testing::internal::GetCapturedStderr();
  return r;
}

TEST(TCPStoreAuthTest, SameSecretIsAcceptedAndServed) {
  TCPStoreServer server(serverOptions(kSecret));
  EXPECT_TRUE(server.authRequired());
  TCPStore a(withSecret(server.port(), kSecret));
  TCPStore b(withSecret(server.port(), kSecret));
  std::thread getter([&] { EXPECT_EQ(b.getString("k"), "v"); });  // parked, then pushed
  a.set("k", "v");
  getter.join();
  EXPECT_EQ(b.add("n", 2), 2);
  EXPECT_EQ(server.numWorkers(), 2);
  // The embedded server and its own client share the options' secret.
  TCPStoreOptions o = withSecret(0, kSecret);
  o.isServer = true;
  TCPStore embedded(o);
  EXPECT_TRUE(embedded.server()->authRequired());
  TCPStore c(withSecret(embedded.port(), kSecret));
  c.set("x", "1");
  EXPECT_EQ(embedded.getString("x"), "1");
}

TEST(TCPStoreAuthTest, WrongSecretIsRefusedOnBothSides) {
  TCPStoreServer server(serverOptions(kSecret));
  const Refusal r = refusedClient(server, kOtherSecret);
  EXPECT_NE(
      r.error.find("TCPStore at 127.0.0.1:" + std::to_string(server.port()) + ": " + kAuthFailed),
      std::string::npos)
      << r.error;
  EXPECT_NE(r.error.find("did not accept this client's proof"), std::string::npos) << r.error;
  EXPECT_NE(r.log.find("refused connection from 127.0.0.1:"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("authentication failed (wrong proof"), std::string::npos) << r.log;
  expectNoSecret(r.error);
  expectNoSecret(r.log);
  EXPECT_EQ(server.numWorkers(), 0);  // a refused client is never counted
  TCPStore good(withSecret(server.port(), kSecret));
  EXPECT_EQ(good.getNumKeys(), 0);
}

TEST(TCPStoreAuthTest, ClientWithoutTheSecretIsRefused) {
  TCPStoreServer server(serverOptions(kSecret));
  const Refusal r = refusedClient(server, "");
  EXPECT_NE(r.error.find(kAuthFailed), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("the server requires a secret and this client has none"),
            std::string::npos)
      << r.error;
  EXPECT_NE(r.log.find("authentication failed (the client has no secret"), std::string::npos)
      << r.log;
  expectNoSecret(r.error + r.log);
}

TEST(TCPStoreAuthTest, ServerWithoutASecretIsRefusedByAClientWithOne) {
  TCPStoreServer server(serverOptions(""));
  EXPECT_FALSE(server.authRequired());
  const Refusal r = refusedClient(server, kSecret);
  EXPECT_NE(r.error.find(kAuthFailed), std::string::npos) << r.error;
  EXPECT_NE(r.error.find("this client has a secret and the server has none"), std::string::npos)
      << r.error;
  EXPECT_NE(r.log.find("authentication failed (the client has a secret, this server has none"),
            std::string::npos)
      << r.log;
  expectNoSecret(r.error + r.log);
  TCPStore plain(withSecret(server.port(), ""));  // no secret on either side: today's protocol
  plain.set("k", "v");
  EXPECT_EQ(plain.getString("k"), "v");
}

TEST(TCPStoreAuthTest, SecretComesFromTheEnvironment) {
  ScopedEnv env(tcpstore::kSecretEnv, kSecret);
  TCPStoreServer server("127.0.0.1", 0);  // no options: the environment's secret
  EXPECT_TRUE(server.authRequired());
  TCPStore fromEnv(clientOptions(server.port(), Milliseconds(5000)));
  fromEnv.set("k", "v");
  const Refusal r = refusedClient(server, "");  // "" overrides the environment: no secret
  EXPECT_NE(r.error.find(kAuthFailed), std::string::npos) << r.error;
  {
    ScopedEnv empty(tcpstore::kSecretEnv, "");
    TCPStoreServer open("127.0.0.1", 0);
    EXPECT_FALSE(open.authRequired());
  }
}

// A request sent before the handshake is never executed: the connection is refused at once.
TEST(TCPStoreAuthTest, RequestsBeforeTheHandshakeAreRefused) {
  TCPStoreServer server(serverOptions(kSecret));
  testing::internal::CaptureStderr();
  RawClient raw(server.port());
  tcpstore::FrameWriter set(static_cast<uint8_t>(tcpstore::Op::kSet));
  set.str("stolen");
  set.str("value");
  raw.send(set);
  EXPECT_TRUE(raw.closedWithin(Milliseconds(10000)));
  // Hello accepted, then a request instead of the proof: refused too.
  RawClient half(server.port());
  tcpstore::Nonce nonce{};
  auto h = RawClient::hello(true, nonce);
  half.send(h);
  const auto reply = half.receive();
  ASSERT_EQ(reply.size(), 2 + tcpstore::kNonceBytes);
  EXPECT_EQ(reply[1], 1);  // authRequired
  half.send(set);
  EXPECT_TRUE(half.closedWithin(Milliseconds(10000)));
  std::this_thread::sleep_for(Milliseconds(50));
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("refused connection from " + raw.self() +
                     ": set request (op 2) where the handshake expects hello"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("refused connection from " + half.self() +
                     ": set request (op 2) where the handshake expects auth"),
            std::string::npos)
      << log;
  TCPStore good(withSecret(server.port(), kSecret));
  EXPECT_FALSE(good.check({"stolen"}));
  EXPECT_EQ(server.numConnections(), 1);
}

// Proofs are bound to the server's fresh nonce: one recorded on a connection is refused on the
// next, even with the same client nonce.
TEST(TCPStoreAuthTest, ReplayedProofIsRefused) {
  TCPStoreServer server(serverOptions(kSecret));
  tcpstore::Nonce clientNonce;
  clientNonce.fill(7);
  tcpstore::Proof recorded{};
  {
    RawClient first(server.port());
    auto h = RawClient::hello(true, clientNonce);
    first.send(h);
    const auto reply = first.receive();
    ASSERT_EQ(reply.size(), 2 + tcpstore::kNonceBytes);
    tcpstore::Nonce serverNonce;
    std::memcpy(serverNonce.data(), &reply[2], serverNonce.size());
    recorded = tcpstore::makeProof(tcpstore::Role::kClient, kSecret, serverNonce, clientNonce);
    tcpstore::FrameWriter a(static_cast<uint8_t>(tcpstore::Op::kAuth));
    a.raw(recorded.data(), recorded.size());
    first.send(a);
    const auto ok = first.receive();
    ASSERT_EQ(ok.size(), 1 + tcpstore::kProofBytes);  // accepted, with the server's proof
    EXPECT_EQ(ok[0], 0);
    tcpstore::Proof serverProof;
    std::memcpy(serverProof.data(), &ok[1], serverProof.size());
    EXPECT_TRUE(tcpstore::proofsEqual(
        serverProof,
        tcpstore::makeProof(tcpstore::Role::kServer, kSecret, serverNonce, clientNonce)));
  }
  RawClient replay(server.port());
  auto h = RawClient::hello(true, clientNonce);
  replay.send(h);
  const auto reply = replay.receive();
  ASSERT_EQ(reply.size(), 2 + tcpstore::kNonceBytes);
  tcpstore::FrameWriter a(static_cast<uint8_t>(tcpstore::Op::kAuth));
  a.raw(recorded.data(), recorded.size());
  testing::internal::CaptureStderr();
  replay.send(a);
  const auto refused = replay.receive();
  ASSERT_FALSE(refused.empty());
  EXPECT_EQ(refused[0], static_cast<uint8_t>(tcpstore::Status::kAuthFailed));
  EXPECT_TRUE(replay.closedWithin(Milliseconds(10000)));
  std::this_thread::sleep_for(Milliseconds(50));
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("refused connection from " + replay.self() + ": authentication failed"),
            std::string::npos)
      << log;
}

// A server that asks for authentication but cannot prove the secret back (here a fake that
// answers any proof with 32 zero bytes) is refused by the client: mutual authentication.
TEST(TCPStoreAuthTest, ImpostorServerIsRefusedByTheClient) {
  net::Fd listener = net::listenOn("127.0.0.1", 0, 4);
  const uint16_t port = net::localPort(listener.get());
  std::atomic<bool> done{false};
  std::thread fake([&] {
    pollfd p{listener.get(), POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 10000), 1);
    net::Fd c(accept(listener.get(), nullptr, nullptr));
    ASSERT_GE(c.get(), 0);
    int flags = fcntl(c.get(), F_GETFL, 0);
    ASSERT_EQ(fcntl(c.get(), F_SETFL, flags & ~O_NONBLOCK), 0);
    auto readFrame = [&] {
      uint8_t head[4];
      if (recv(c.get(), head, 4, MSG_WAITALL) != 4) return false;
      std::vector<uint8_t> body(tcpstore::readFrameLength(head));
      return recv(c.get(), body.data(), body.size(), MSG_WAITALL) ==
             static_cast<ssize_t>(body.size());
    };
    ASSERT_TRUE(readFrame());
    tcpstore::FrameWriter challenge(0);
    challenge.u8(1);
    tcpstore::Nonce n{};
    challenge.raw(n.data(), n.size());
    const auto& c1 = challenge.finish();
    ASSERT_EQ(send(c.get(), c1.data(), c1.size(), MSG_NOSIGNAL), static_cast<ssize_t>(c1.size()));
    ASSERT_TRUE(readFrame());
    tcpstore::FrameWriter bogus(0);
    tcpstore::Proof zero{};
    bogus.raw(zero.data(), zero.size());
    const auto& c2 = bogus.finish();
    ASSERT_EQ(send(c.get(), c2.data(), c2.size(), MSG_NOSIGNAL), static_cast<ssize_t>(c2.size()));
    while (!done.load()) std::this_thread::sleep_for(Milliseconds(5));
  });
  const std::string msg = expectThrows<Error>([&] { TCPStore client(withSecret(port, kSecret)); });
  done = true;
  fake.join();
  EXPECT_NE(msg.find(kAuthFailed), std::string::npos) << msg;
  EXPECT_NE(msg.find("the server's proof is wrong"), std::string::npos) << msg;
  expectNoSecret(msg);
}

// A connection that says nothing, or stops halfway through the handshake, is closed at the
// handshake deadline; clients that finished theirs are never timed out.
TEST(TCPStoreAuthTest, SilentClientsAreDroppedAtTheHandshakeDeadline) {
  TCPStoreServerOptions o = serverOptions(kSecret);
  o.handshakeTimeout = Milliseconds(300);
  TCPStoreServer server(o);
  TCPStore good(withSecret(server.port(), kSecret));
  testing::internal::CaptureStderr();
  const auto start = std::chrono::steady_clock::now();
  RawClient silent(server.port());
  RawClient half(server.port());
  tcpstore::Nonce nonce{};
  auto h = RawClient::hello(true, nonce);
  half.send(h);
  EXPECT_EQ(half.receive().size(), 2 + tcpstore::kNonceBytes);  // then never proves anything
  EXPECT_TRUE(silent.closedWithin(Milliseconds(10000)));
  EXPECT_TRUE(half.closedWithin(Milliseconds(10000)));
  const auto waited =
      std::chrono::duration_cast<Milliseconds>(std::chrono::steady_clock::now() - start);
  EXPECT_GE(waited.count(), 290);
  std::this_thread::sleep_for(Milliseconds(50));
  const std::string log = testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("refused connection from " + silent.self() +
                     ": no handshake within 300 ms (0 bytes received)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("refused connection from " + half.self() + ": no handshake within 300 ms"),
            std::string::npos)
      << log;
  std::this_thread::sleep_for(Milliseconds(400));
  good.set("still", "served");  // long past the deadline: an authenticated client stays
  EXPECT_EQ(good.getString("still"), "served");
  EXPECT_EQ(server.numConnections(), 1);
}

// Refusal lines are rate-limited: a flood of bad clients cannot flood the log.
TEST(TCPStoreAuthTest, RefusalLogIsRateLimited) {
  TCPStoreServer server(serverOptions(kSecret));
  testing::internal::CaptureStderr();
  for (int i = 0; i < 60; ++i) {
    RawClient bad(server.port());
    bad.sendBytes({1, 0, 0, 0, 99});
    EXPECT_TRUE(bad.closedWithin(Milliseconds(10000)));
  }
  std::this_thread::sleep_for(Milliseconds(50));
  const std::string log = testing::internal::GetCapturedStderr();
  size_t lines = 0;
  for (size_t p = log.find("refused connection"); p != std::string::npos;
       p = log.find("refused connection", p + 1)) {
    ++lines;
  }
  EXPECT_GE(lines, 1u) << log;
  EXPECT_LE(lines, 20u) << log;
}

// A client of another protocol version is told so, not left guessing.
TEST(TCPStoreAuthTest, OtherProtocolVersionGetsAClearError) {
  TCPStoreServer server(serverOptions(""));
  RawClient old(server.port());
  tcpstore::Nonce nonce{};
  auto h = RawClient::hello(false, nonce, /*version=*/1);
  testing::internal::CaptureStderr();
  old.send(h);
  const auto reply = old.receive();
  std::this_thread::sleep_for(Milliseconds(50));
  testing::internal::GetCapturedStderr();
  ASSERT_FALSE(reply.empty());
  EXPECT_EQ(reply[0], static_cast<uint8_t>(tcpstore::Status::kError));
  tcpstore::FrameReader r(reply.data() + 1, reply.size() - 1);
  std::string msg;
  ASSERT_TRUE(r.str(&msg));
  EXPECT_NE(msg.find("protocol version 2, not 1"), std::string::npos) << msg;
}

// The proof is HMAC-SHA256(secret, context || server nonce || client nonce), computed here
// independently with OpenSSL's one-shot HMAC.
TEST(TCPStoreAuthTest, ProofIsHmacSha256OfContextAndNonces) {
  tcpstore::Nonce serverNonce, clientNonce;
  for (size_t i = 0; i < serverNonce.size(); ++i) {
    serverNonce[i] = static_cast<uint8_t>(i);
    clientNonce[i] = static_cast<uint8_t>(255 - i);
  }
  for (auto [role, context] : {std::pair<tcpstore::Role, std::string>{
                                   tcpstore::Role::kClient, "c10d TCPStore v2 auth: client proof"},
                               {tcpstore::Role::kServer, "c10d TCPStore v2 auth: server proof"}}) {
    std::vector<uint8_t> msg(context.begin(), context.end());
    msg.insert(msg.end(), serverNonce.begin(), serverNonce.end());
    msg.insert(msg.end(), clientNonce.begin(), clientNonce.end());
    tcpstore::Proof want{};
    unsigned int len = 0;
    ASSERT_NE(HMAC(EVP_sha256(), kSecret, static_cast<int>(std::strlen(kSecret)), msg.data(),
                   msg.size(), want.data(), &len),
              nullptr);
    ASSERT_EQ(len, want.size());
    EXPECT_TRUE(
        tcpstore::proofsEqual(tcpstore::makeProof(role, kSecret, serverNonce, clientNonce), want))
        << context;
  }
}

TEST(TCPStoreAuthTest, ProofsDependOnEveryInput) {
  tcpstore::Nonce a, b;
  a.fill(1);
  b.fill(2);
  using tcpstore::Role;
  const auto p = tcpstore::makeProof(Role::kClient, kSecret, a, b);
  EXPECT_TRUE(tcpstore::proofsEqual(p, tcpstore::makeProof(Role::kClient, kSecret, a, b)));
  EXPECT_FALSE(tcpstore::proofsEqual(p, tcpstore::makeProof(Role::kServer, kSecret, a, b)));
  EXPECT_FALSE(tcpstore::proofsEqual(p, tcpstore::makeProof(Role::kClient, kOtherSecret, a, b)));
  EXPECT_FALSE(tcpstore::proofsEqual(p, tcpstore::makeProof(Role::kClient, kSecret, b, a)));
  // Nonces are random.
  EXPECT_NE(tcpstore::randomNonce(), tcpstore::randomNonce());
}

// A process whose store server is making nonces for its clients may fork (a launcher, a data
// loader), and the child may connect to a store: its nonce must not wait on a lock that the
// server's thread held at the fork (OpenSSL's RAND did: store_perf's children hung for good).
TEST(TCPStoreAuthTest, NoncesInAForkedChildWhileAnotherThreadMakesThem) {
  std::atomic<bool> stop{false};
  std::thread busy([&] {
    while (!stop.load()) tcpstore::randomNonce();
  });
  int hung = 0;
  for (int i = 0; i < 200 && hung == 0; ++i) {
    const pid_t pid = fork();
    if (pid == 0) {
      alarm(5);  // a child that hangs is killed, and counted below
      tcpstore::randomNonce();
      _exit(0);
    }
    ASSERT_GT(pid, 0);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++hung;
  }
  stop = true;
  busy.join();
  EXPECT_EQ(hung, 0) << "a forked child's randomNonce() hung (killed by its alarm)";
}

}  // namespace
C10D_NAMESPACE_END
}  // namespace c10d
