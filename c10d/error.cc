#include "c10d/error.h"

#include <cstring>

namespace c10d {
namespace detail {

std::string errnoString(int err) {
  char buf[256];
  // GNU strerror_r may return a static string instead of filling buf.
  const char* msg = strerror_r(err, buf, sizeof(buf));
  return str(msg, " (errno ", err, ")");
}

}  // namespace detail
}  // namespace c10d
