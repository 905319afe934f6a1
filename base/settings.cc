#include "base/settings.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>

namespace c10d {

namespace {

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string helpSuffix(const std::string& help) {
  return help.empty() ? "" : " (" + help + ")";
}

}  // namespace

long long parseIntegerSetting(const std::string& value, const std::string& source, long long min,
                              long long max, const std::string& help) {
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(value.c_str(), &end, 10);
  if (value.empty() || end == value.c_str() || *end != '\0' || errno != 0 || x < min || x > max) {
    C10D_THROW(InvalidArgument, source, "='", value, "' is not an integer in [", min, ", ", max,
               "]", helpSuffix(help));
  }
  return x;
}

int envInt(const char* name, int fallback, int min, int max) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  const std::string source = detail::str("environment variable ", name);
  // strtoll would also take leading blanks and '+': a variable should not have them.
  if (*v != '-' && (*v < '0' || *v > '9')) {
    C10D_THROW(InvalidArgument, source, "='", v, "' is not an integer in [", min, ", ", max, "]");
  }
  return static_cast<int>(parseIntegerSetting(v, source, min, max));
}

size_t parseBytesSetting(const std::string& value, const std::string& source, size_t min,
                         size_t max, const std::string& help) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long x = std::strtoull(value.c_str(), &end, 10);
  const std::string suffix = lower(end != nullptr ? end : "");
  int shift = -1;
  if (suffix.empty()) shift = 0;
  if (suffix == "k" || suffix == "kib") shift = 10;
  if (suffix == "m" || suffix == "mib") shift = 20;
  if (suffix == "g" || suffix == "gib") shift = 30;
  const bool digits = !value.empty() && std::isdigit(static_cast<unsigned char>(value[0]));
  if (!digits || errno != 0 || shift < 0 ||
      x > (std::numeric_limits<unsigned long long>::max() >> shift) ||
      (x << shift) > std::numeric_limits<size_t>::max()) {
    C10D_THROW(InvalidArgument, source, "='", value,
               "' is not a size in bytes (digits, then optionally K, M or G)", helpSuffix(help));
  }
  const size_t bytes = static_cast<size_t>(x << shift);
  if (bytes < min || bytes > max) {
    C10D_THROW(InvalidArgument, source, "='", value, "' is not in [", min, ", ", max, "] bytes",
               helpSuffix(help));
  }
  return bytes;
}

std::string parseChoiceSetting(const std::string& value, const std::string& source,
                               const std::vector<std::string>& choices, bool ignoreCase) {
  std::string listed;
  for (size_t i = 0; i < choices.size(); ++i) {
    const std::string& c = choices[i];
    if (value == c || (ignoreCase && lower(value) == lower(c))) return c;
    listed += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + c;
  }
  C10D_THROW(InvalidArgument, source, "='", value, "': expected ", listed);
}

}  // namespace c10d
