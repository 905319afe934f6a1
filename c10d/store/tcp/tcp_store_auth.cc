#include "c10d/store/tcp/tcp_store_auth.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
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
  // The kernel's generator, not OpenSSL's RAND: RAND_bytes takes a process-wide lock, and a child
  // forked while another thread (this process's store server) held it waited on it for ever.
  size_t done = 0;
  while (done < n) {
    const ssize_t got = getrandom(out + done, n - done, 0);
    if (got > 0) {
      done += static_cast<size_t>(got);
    } else if (got < 0 && errno != EINTR) {
      C10D_THROW(Error, "TCPStore: getrandom failed for ", n,
                 " bytes: ", detail::errnoString(errno));
    }
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
C10D_NAMESPACE_END
}  // namespace c10d
