#include "c10d/base/settings.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

namespace {

std::string lower(std::string s) {
  for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string helpSuffix(const std::string& help) {
  return help.empty() ? "" : " (" + help + ")";
}

}  // namespace

bool parseInteger(const std::string& text, long long min, long long max, long long* out, int base) {
  // strtoll would also skip leading blanks and take '+': an option or a variable has neither.
  const size_t first = !text.empty() && text[0] == '-' ? 1 : 0;
  if (first >= text.size() || !std::isdigit(static_cast<unsigned char>(text[first]))) return false;
  char* end = nullptr;
  errno = 0;
  const long long x = std::strtoll(text.c_str(), &end, base);
  if (errno != 0 || end != text.c_str() + text.size() || x < min || x > max) return false;
  *out = x;
  return true;
}

bool parseByteSize(const std::string& text, unsigned long long max, unsigned long long* out) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  errno = 0;
  const unsigned long long x = std::strtoull(text.c_str(), &end, 10);
  if (errno != 0) return false;
  const std::string suffix = lower(text.substr(static_cast<size_t>(end - text.c_str())));
  int shift = -1;
  if (suffix.empty()) shift = 0;
  if (suffix == "k" || suffix == "kib") shift = 10;
  if (suffix == "m" || suffix == "mib") shift = 20;
  if (suffix == "g" || suffix == "gib") shift = 30;
  if (shift < 0 || x > (max >> shift)) return false;
  *out = x << shift;
  return true;
}

long long parseIntegerSetting(const std::string& value, const std::string& source, long long min,
                              long long max, const std::string& help) {
  long long x = 0;
  if (!parseInteger(value, min, max, &x)) {
    C10D_THROW(InvalidArgument, source, "='", value, "' is not an integer in [", min, ", ", max,
               "]", helpSuffix(help));
  }
  return x;
}

int envInt(const char* name, int fallback, int min, int max) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  return static_cast<int>(
      parseIntegerSetting(v, detail::str("environment variable ", name), min, max));
}

size_t parseBytesSetting(const std::string& value, const std::string& source, size_t min,
                         size_t max, const std::string& help) {
  unsigned long long bytes = 0;
  if (!parseByteSize(value, std::numeric_limits<size_t>::max(), &bytes)) {
    C10D_THROW(InvalidArgument, source, "='", value,
               "' is not a size in bytes (digits, then optionally K, M or G)", helpSuffix(help));
  }
  if (bytes < min || bytes > max) {
    C10D_THROW(InvalidArgument, source, "='", value, "' is not in [", min, ", ", max, "] bytes",
               helpSuffix(help));
  }
  return static_cast<size_t>(bytes);
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

C10D_NAMESPACE_END
}  // namespace c10d
