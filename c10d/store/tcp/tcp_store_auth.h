// TCPStore authentication: the HMAC-SHA256 challenge-response run by a client and a server that
// share a secret (the exchange itself: tcp_store_protocol.h). Internal to c10d/store/.
//
// Both sides send a fresh 32-byte random nonce; each proves it knows the secret with
//   proof(role) = HMAC-SHA256(secret, context(role) || serverNonce || clientNonce)
// where the context names the protocol and the role ("client" / "server"), so a proof made for
// one role or one protocol is never accepted for another, and the server's fresh nonce makes a
// recorded proof useless on a later connection. Proofs are compared in constant time.
//
// The random bytes come from the kernel (getrandom: no lock a fork could inherit held), the HMAC
// from OpenSSL's libcrypto; nothing here keeps state, starts threads or blocks. The secret never
// appears in an error message.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

#include "c10d/base/abi.h"
#include "c10d/store/tcp/tcp_store_protocol.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace tcpstore {

using Nonce = std::array<uint8_t, kNonceBytes>;
using Proof = std::array<uint8_t, kProofBytes>;

enum class Role { kClient, kServer };

// Fills out[0, n) with cryptographically secure random bytes; throws Error if the generator fails.
void randomBytes(uint8_t* out, size_t n);
Nonce randomNonce();

// The proof `role` sends on a connection with these nonces. `secret` must not be empty.
Proof makeProof(Role role, const std::string& secret, const Nonce& serverNonce,
                const Nonce& clientNonce);

// a == b in time independent of where they differ (CRYPTO_memcmp).
bool proofsEqual(const Proof& a, const Proof& b);

}  // namespace tcpstore
C10D_NAMESPACE_END
}  // namespace c10d
