#include "tools/c10drun/secret.h"

#include <sys/random.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace run {

std::string randomHex(size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  size_t done = 0;
  while (done < bytes) {
    ssize_t n = getrandom(buf.data() + done, bytes - done, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      throw Error(std::string("getrandom failed while making the job's C10D_STORE_SECRET: ") +
                  detail::errnoString(errno));
    }
    done += static_cast<size_t>(n);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes);
  for (unsigned char b : buf) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

JobSecret decideJobSecret(const Options& options) {
  JobSecret s;
  if (std::getenv(kStoreSecretEnv) != nullptr) return s;  // the user's choice, passed through
  if (options.nnodes == 1) {
    s.generated = randomHex(32);
    return s;
  }
  const std::string exposed =
      options.elastic() ? "the rendezvous store at " + options.rdzvEndpoint +
                              " and each round's rank 0 TCPStore accept anyone who can reach them"
                        : "rank 0's TCPStore accepts anyone who can reach " + options.masterAddr +
                              ":" + std::to_string(options.masterPort);
  s.note =
      "note: C10D_STORE_SECRET is not set; in a multi-node job every node must set the "
      "same one (e.g. from `openssl rand -hex 32`), else " +
      exposed;
  return s;
}

}  // namespace run
C10D_NAMESPACE_END
}  // namespace c10d
