#include "c10d/backends/verbs/transport/ibverbs/ib_addr.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/store/store.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace verbs {

bool IbAddress::operator==(const IbAddress& o) const {
  return lid == o.lid && qpn == o.qpn && psn == o.psn && std::memcmp(gid, o.gid, 16) == 0 &&
         ringAddr == o.ringAddr && ringRkey == o.ringRkey && ringBytes == o.ringBytes &&
         creditAddr == o.creditAddr && creditRkey == o.creditRkey;
}

std::string encodeIbAddress(const IbAddress& a) {
  char gid[33];
  for (int i = 0; i < 16; ++i) std::snprintf(gid + 2 * i, 3, "%02x", a.gid[i]);
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "%04" PRIx16 ":%08" PRIx32 ":%08" PRIx32 ":%s:%016" PRIx64 ":%08" PRIx32
                ":%016" PRIx64 ":%016" PRIx64 ":%08" PRIx32,
                a.lid, a.qpn, a.psn, gid, a.ringAddr, a.ringRkey, a.ringBytes, a.creditAddr,
                a.creditRkey);
  return buf;
}

IbAddress decodeIbAddress(const std::string& s) {
  IbAddress a;
  char gid[33] = {0};
  unsigned lid = 0;
  int consumed = 0;
  int n = std::sscanf(s.c_str(),
                      "%4x:%8" SCNx32 ":%8" SCNx32 ":%32[0-9a-f]:%16" SCNx64 ":%8" SCNx32
                      ":%16" SCNx64 ":%16" SCNx64 ":%8" SCNx32 "%n",
                      &lid, &a.qpn, &a.psn, gid, &a.ringAddr, &a.ringRkey, &a.ringBytes,
                      &a.creditAddr, &a.creditRkey, &consumed);
  if (n != 9 || std::strlen(gid) != 32 || static_cast<size_t>(consumed) != s.size())
    C10D_THROW(Error, "verbs/ibverbs: malformed endpoint address '", s, "'");
  a.lid = static_cast<uint16_t>(lid);
  for (int i = 0; i < 16; ++i) {
    unsigned byte = 0;
    std::sscanf(gid + 2 * i, "%2x", &byte);
    a.gid[i] = static_cast<uint8_t>(byte);
  }
  return a;
}

std::vector<std::vector<IbAddress>> exchangeIbAddresses(
    Store& store, int rank, int size, const std::vector<std::vector<IbAddress>>& mine,
    Milliseconds timeout) {
  C10D_CHECK_EQ(mine.size(), static_cast<size_t>(size));
  std::ostringstream ss;
  for (int q = 0; q < size; ++q) {
    ss << q << "=";
    for (size_t ch = 0; ch < mine[q].size(); ++ch)
      ss << (ch ? "," : "") << (q == rank ? std::string("-") : encodeIbAddress(mine[q][ch]));
    ss << ";";
  }
  store.set("ib/" + std::to_string(rank), ss.str());
  std::vector<std::string> keys;
  for (int q = 0; q < size; ++q) keys.push_back("ib/" + std::to_string(q));
  store.wait(keys, timeout);
  std::vector<std::vector<IbAddress>> theirs(size);
  for (int q = 0; q < size; ++q) {
    if (q == rank) continue;
    const std::string all = c10d::toString(store.get(keys[q]));
    // Find the entry rank q published for us: "<rank>=a,b;".
    const std::string tag = std::to_string(rank) + "=";
    size_t pos = 0;
    while (pos < all.size() && all.compare(pos, tag.size(), tag) != 0) {
      pos = all.find(';', pos);
      if (pos == std::string::npos) break;
      ++pos;
    }
    if (pos == std::string::npos || pos >= all.size())
      C10D_THROW(Error, "verbs/ibverbs: rank ", q, " published no endpoint for rank ", rank,
                 " under key ib/", q);
    size_t end = all.find(';', pos);
    std::stringstream fields(all.substr(pos + tag.size(), end - pos - tag.size()));
    std::string f;
    while (std::getline(fields, f, ',')) theirs[q].push_back(decodeIbAddress(f));
    C10D_CHECK_EQ(theirs[q].size(), mine[q].size(), "endpoints from rank ", q);
  }
  return theirs;
}

std::vector<RingPiece> ringPieces(uint64_t head, size_t n, size_t cap, size_t maxPiece) {
  std::vector<RingPiece> out;
  size_t done = 0;
  while (done < n) {
    size_t off = static_cast<size_t>((head + done) % cap);
    size_t len = std::min({n - done, cap - off, maxPiece});
    out.push_back(RingPiece{off, done, len});
    done += len;
  }
  return out;
}

}  // namespace verbs
C10D_NAMESPACE_END
}  // namespace c10d
