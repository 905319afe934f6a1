// Addresses of ibverbs endpoints and their exchange through the Store; ring chunking.
//
// Each rank has, per peer and channel, one RC QP and one receive ring. Its IbAddress says how to
// reach that QP (LID, QP number, PSN, GID) and where the ring and the credit word live (address +
// rkey). exchangeIbAddresses() publishes a rank's addresses under "ib/<rank>" (one value listing
// them all) and reads every peer's: what rank q published for this rank is what this rank
// connects to. Encoding is text (hex fields), checked on decode. Device-free: unit-tested.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/types.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

class Store;

namespace verbs {

struct IbAddress {
  uint16_t lid = 0;
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint8_t gid[16] = {0};
  uint64_t ringAddr = 0;
  uint32_t ringRkey = 0;
  uint64_t ringBytes = 0;
  uint64_t creditAddr = 0;  // where the peer writes how many bytes it consumed from our ring
  uint32_t creditRkey = 0;
  bool operator==(const IbAddress& o) const;
};

std::string encodeIbAddress(const IbAddress& a);
// Throws Error naming the text when it is malformed.
IbAddress decodeIbAddress(const std::string& s);

// mine[q][ch]: this rank's endpoint facing rank q on channel ch (mine[rank] is ignored). Returns
// theirs[q][ch]: rank q's endpoint facing this rank. Collective; waits up to `timeout`.
std::vector<std::vector<IbAddress>> exchangeIbAddresses(
    Store& store, int rank, int size, const std::vector<std::vector<IbAddress>>& mine,
    Milliseconds timeout);

// Cuts a write of `n` bytes at ring position `head` (bytes written so far) into pieces that
// neither wrap around the ring of `cap` bytes nor exceed `maxPiece` bytes.
struct RingPiece {
  size_t offset;     // into the ring
  size_t srcOffset;  // into the source
  size_t len;
};
std::vector<RingPiece> ringPieces(uint64_t head, size_t n, size_t cap, size_t maxPiece);

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
