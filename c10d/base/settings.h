// Settings tables: how the core and each backend declare their knobs once (key, environment
// variable, help, how to parse and show the value) and read them in one way:
//
//   ProcessGroup::Options::config[key]  >  the environment variable (when set and non-empty)  >
//   the default (whatever the Config struct is initialized with).
//
// A malformed value is an InvalidArgument naming the key (or the environment variable it came
// from) and what was expected, e.g. `max_p2p_threads='0' is not an integer in [1, 4096] (most
// threads waiting on send/recv completions at once)`. A table can reject keys it does not know
// (listing the ones it does). print() writes the table for --print-config: key, value in effect,
// default, variable, help.
//
// Used by c10d/backends/verbs/config.cc, c10d/backends/gloo/config.cc,
// c10d/backends/nccl/config.cc, c10d/core/diagnostics_config.cc and
// c10d/store/tcp/tcp_store_config.cc. Pure data; no threads; load() reads the environment (getenv).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

template <typename Config>
struct Setting {
  std::string key;   // the ProcessGroup::Options::config key
  std::string env;   // the environment variable ("" = none; may equal key)
  std::string help;  // one line for --print-config and error messages
  // Stores `value` into the config; `source` is the key or the environment variable it came
  // from (the parse* helpers below put it in their errors).
  std::function<void(Config&, const std::string& value, const std::string& source)> parse;
  std::function<std::string(const Config&)> show;
};

// The parsing primitives every reader of options and settings shares: these tables, init URLs,
// c10drun's and the perf binaries' flags, the TCPStore's limits. Each reads the whole text or
// returns false; the caller words the error, naming the option and the bad value.
//
// An integer in [min, max]: an optional '-', then digits; no blanks, no '+'. `base` as strtoll's:
// 10, or 0 to read 0x1f as hex and 017 as octal too (nccl-tests' flags do).
bool parseInteger(const std::string& text, long long min, long long max, long long* out,
                  int base = 10);
// A byte count in [0, max]: digits, then optionally K, M or G (or KiB, MiB, GiB; any case; powers
// of 1024).
bool parseByteSize(const std::string& text, unsigned long long max, unsigned long long* out);

// Value parsers for Setting::parse. Each throws InvalidArgument "<source>='<value>' ...".
// An integer in [min, max] (parseInteger).
long long parseIntegerSetting(const std::string& value, const std::string& source, long long min,
                              long long max, const std::string& help = "");
// A byte count (parseByteSize) in [min, max].
size_t parseBytesSetting(const std::string& value, const std::string& source, size_t min = 0,
                         size_t max = SIZE_MAX, const std::string& help = "");
// One of `choices`, compared ignoring case when `ignoreCase`; returns the choice as spelled there.
std::string parseChoiceSetting(const std::string& value, const std::string& source,
                               const std::vector<std::string>& choices, bool ignoreCase = false);

// Reads an integer environment variable; `fallback` when unset or empty; InvalidArgument naming
// the variable when set but not an integer in [min, max].
int envInt(const char* name, int fallback, int min = 0, int max = 1 << 30);

template <typename Config>
class SettingsTable {
 public:
  SettingsTable(std::string owner, std::vector<Setting<Config>> rows)
      : owner_(std::move(owner)), rows_(std::move(rows)) {}

  const std::string& owner() const { return owner_; }
  const std::vector<Setting<Config>>& rows() const { return rows_; }
  const Setting<Config>* find(const std::string& key) const {
    for (const auto& s : rows_) {
      if (s.key == key) return &s;
    }
    return nullptr;
  }

  enum class UnknownKeys { kIgnore, kReject };

  // A Config with every setting applied (see the header comment). With kReject, a key of `config`
  // that is neither in the table nor accepted by `alsoKnown` is an InvalidArgument naming it and
  // listing the known keys.
  Config load(const std::map<std::string, std::string>& config,
              UnknownKeys unknown = UnknownKeys::kIgnore,
              const std::function<bool(const std::string&)>& alsoKnown = nullptr) const {
    if (unknown == UnknownKeys::kReject) {
      for (const auto& kv : config) {
        if (find(kv.first) != nullptr || (alsoKnown && alsoKnown(kv.first))) continue;
        std::string known;
        for (const auto& s : rows_) known += (known.empty() ? "" : ", ") + s.key;
        C10D_THROW(InvalidArgument, owner_, ": unknown config key \"", kv.first,
                   "\" (known: ", known, ")");
      }
    }
    Config c;
    for (const auto& s : rows_) {
      auto it = config.find(s.key);
      if (it != config.end()) {
        s.parse(c, it->second, s.key);
      } else if (!s.env.empty()) {
        const char* v = std::getenv(s.env.c_str());
        if (v != nullptr && *v != '\0') s.parse(c, v, s.env);
      }
    }
    return c;
  }

  // One line per setting: `<prefix><key> = <value>  (default <d>[, env <ENV>]): <help>`.
  void print(std::ostream& os, const Config& current, const std::string& prefix = "") const {
    const Config defaults{};
    for (const auto& s : rows_) {
      os << prefix << s.key << " = " << quoted(s.show(current)) << "  (default "
         << quoted(s.show(defaults));
      if (!s.env.empty() && s.env != s.key) os << ", env " << s.env;
      os << "): " << s.help << "\n";
    }
  }

 private:
  static std::string quoted(const std::string& v) { return v.empty() ? "\"\"" : v; }

  std::string owner_;
  std::vector<Setting<Config>> rows_;
};

C10D_NAMESPACE_END
}  // namespace c10d
