#include "store/tcp/tcp_store_auth.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <cstring>
#include <vector>

#include "base/error.h"

namespace c10d {
namespace tcpstore {
namespace {

// The protocol and role a proof is made for (see the header).
const char* context(Role role) {
  return role == Role::kClient ? "c10d TCPStore v2 auth: client proof"
                               : "c10d TCPStore v2 auth: server proof";
}

std::string opensslError() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "no OpenSSL error queued";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof(buf));
  return buf;
}

}  // namespace

void randomBytes(uint8_t* out, size_t n) {
  if (n == 0) return;
  if (RAND_bytes(out, static_cast<int>(n)) != 1) {
    C10D_THROW(Error, "TCPStore: OpenSSL RAND_bytes failed for ", n, " bytes: ", opensslError());
  }
}

Nonce randomNonce() {
  Nonce n;
  randomBytes(n.data(), n.size());
  return n;
}

Proof makeProof(Role role, const std::string& secret, const Nonce& serverNonce,
                const Nonce& clientNonce) {
  C10D_CHECK(!secret.empty(), "TCPStore: a proof needs a secret");
  const char* ctx = context(role);
  const size_t ctxLen = std::strlen(ctx);
  std::vector<uint8_t> msg(ctxLen + serverNonce.size() + clientNonce.size());
  std::memcpy(msg.data(), ctx, ctxLen);
  std::memcpy(msg.data() + ctxLen, serverNonce.data(), serverNonce.size());
  std::memcpy(msg.data() + ctxLen + serverNonce.size(), clientNonce.data(), clientNonce.size());
  Proof out{};
  unsigned int outLen = 0;
  if (HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()), msg.data(), msg.size(),
           out.data(), &outLen) == nullptr ||
      outLen != out.size()) {
    C10D_THROW(Error, "TCPStore: HMAC-SHA256 failed: ", opensslError());
  }
  return out;
}

bool proofsEqual(const Proof& a, const Proof& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace tcpstore
}  // namespace c10d
