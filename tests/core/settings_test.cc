// c10d/base/settings.h: the settings table every backend and the core's diagnostics use.
#include "c10d/base/settings.h"

#include <stdlib.h>

#include <cstdint>
#include <utility>

#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include "c10d/base/abi.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace test {
namespace {

struct Knobs {
  int threads = 4;
  size_t buffer = 1024;
  std::string mode = "fast";
};

const SettingsTable<Knobs>& knobs() {
  using Row = Setting<Knobs>;
  static const SettingsTable<Knobs> t(
      "knobs", {
                   Row{"threads", "C10D_TEST_THREADS", "worker threads",
                       [](Knobs& k, const std::string& v, const std::string& src) {
                         k.threads =
                             static_cast<int>(parseIntegerSetting(v, src, 1, 64, "worker threads"));
                       },
                       [](const Knobs& k) { return std::to_string(k.threads); }},
                   Row{"buffer", "C10D_TEST_BUFFER", "buffer bytes",
                       [](Knobs& k, const std::string& v, const std::string& src) {
                         k.buffer = parseBytesSetting(v, src, 16, 1ull << 40);
                       },
                       [](const Knobs& k) { return std::to_string(k.buffer); }},
                   Row{"mode", "", "fast | safe",
                       [](Knobs& k, const std::string& v, const std::string& src) {
                         k.mode = parseChoiceSetting(v, src, {"fast", "safe"}, true);
                       },
                       [](const Knobs& k) { return k.mode; }},
               });
  return t;
}

std::string messageOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  ADD_FAILURE() << "no InvalidArgument";
  return "";
}

TEST(Settings, OptionsWinOverTheEnvironmentWhichWinsOverDefaults) {
  ::unsetenv("C10D_TEST_THREADS");
  EXPECT_EQ(knobs().load({}).threads, 4);
  ::setenv("C10D_TEST_THREADS", "8", 1);
  EXPECT_EQ(knobs().load({}).threads, 8);
  EXPECT_EQ(knobs().load({{"threads", "2"}}).threads, 2);
  ::setenv("C10D_TEST_THREADS", "", 1);  // empty: unset
  EXPECT_EQ(knobs().load({}).threads, 4);
  ::setenv("C10D_TEST_THREADS", "99", 1);  // a bad value from the environment names it
  const std::string m = messageOf([] { knobs().load({}); });
  EXPECT_NE(m.find("C10D_TEST_THREADS='99' is not an integer in [1, 64] (worker threads)"),
            std::string::npos)
      << m;
  ::unsetenv("C10D_TEST_THREADS");
}

TEST(Settings, ValueParsersNameTheSettingAndWhatWasExpected) {
  EXPECT_EQ(knobs().load({{"buffer", "64K"}}).buffer, 64u << 10);
  EXPECT_EQ(knobs().load({{"buffer", "3MiB"}}).buffer, 3u << 20);
  EXPECT_EQ(knobs().load({{"buffer", "2g"}}).buffer, 2ull << 30);
  EXPECT_EQ(knobs().load({{"buffer", "100"}}).buffer, 100u);
  for (const char* bad : {"", "K", "-5", "12Q", "1.5M", "99999999999999999999"}) {
    const std::string m = messageOf([&] { knobs().load({{"buffer", bad}}); });
    EXPECT_NE(m.find(std::string("buffer='") + bad + "' is not a size in bytes"), std::string::npos)
        << m;
  }
  EXPECT_NE(messageOf([] {
              knobs().load({{"buffer", "8"}});
            }).find("is not in [16, "),
            std::string::npos);
  EXPECT_NE(messageOf([] {
              knobs().load({{"buffer", "2000G"}});
            }).find("is not in [16, "),
            std::string::npos);
  for (const char* bad : {"", "x", "0", "65", "3.5", "4 "}) {
    const std::string m = messageOf([&] { knobs().load({{"threads", bad}}); });
    EXPECT_NE(m.find(std::string("threads='") + bad + "' is not an integer in [1, 64]"),
              std::string::npos)
        << m;
  }
  EXPECT_EQ(knobs().load({{"mode", "SAFE"}}).mode, "safe");
  EXPECT_NE(messageOf([] {
              knobs().load({{"mode", "slow"}});
            }).find("mode='slow': expected fast or safe"),
            std::string::npos);
}

// The primitives every option reader shares (init URLs, c10drun, the perf flags, the TCPStore).
TEST(Settings, ParseIntegerReadsTheWholeTextOrNothing) {
  long long v = -7;
  EXPECT_TRUE(parseInteger("42", 0, 100, &v));
  EXPECT_EQ(v, 42);
  EXPECT_TRUE(parseInteger("-3", -5, 5, &v));
  EXPECT_EQ(v, -3);
  for (const char* bad :
       {"", "-", "+4", " 4", "4 ", "4x", "0x10", "1.0", "101", "--1", "99999999999999999999"}) {
    v = -7;
    EXPECT_FALSE(parseInteger(bad, -100, 100, &v)) << "'" << bad << "'";
    EXPECT_EQ(v, -7) << "'" << bad << "'";  // untouched on failure
  }
  EXPECT_TRUE(parseInteger("0x10", 0, 100, &v, 0));  // base 0: as nccl-tests' flags
  EXPECT_EQ(v, 16);
  EXPECT_TRUE(parseInteger("010", 0, 100, &v, 0));
  EXPECT_EQ(v, 8);
  EXPECT_TRUE(parseInteger("9223372036854775807", 0, INT64_MAX, &v));
  EXPECT_EQ(v, INT64_MAX);
}

TEST(Settings, ParseByteSizeTakesTheSameSpellingsEverywhere) {
  unsigned long long v = 0;
  const std::pair<const char*, unsigned long long> good[] = {{"0", 0},
                                                             {"17", 17},
                                                             {"4K", 4096},
                                                             {"4k", 4096},
                                                             {"4KiB", 4096},
                                                             {"3m", 3ull << 20},
                                                             {"3MIB", 3ull << 20},
                                                             {"2G", 2ull << 30},
                                                             {"2gib", 2ull << 30}};
  for (const auto& g : good) {
    EXPECT_TRUE(parseByteSize(g.first, UINT64_MAX, &v)) << g.first;
    EXPECT_EQ(v, g.second) << g.first;
  }
  for (const char* bad : {"", "K", "-1", "+1", " 1", "1 ", "4 K", "1.5M", "12KB", "12Q", "1T"}) {
    EXPECT_FALSE(parseByteSize(bad, UINT64_MAX, &v)) << "'" << bad << "'";
  }
  EXPECT_TRUE(parseByteSize("1K", 1024, &v));
  EXPECT_FALSE(parseByteSize("1025", 1024, &v));
  EXPECT_FALSE(parseByteSize("2K", 1024, &v));
}

TEST(Settings, UnknownKeysAreRejectedOnlyWhenAsked) {
  EXPECT_EQ(knobs().load({{"thread", "2"}}).threads, 4);  // ignored by default
  const std::string m = messageOf([] {
    knobs().load({{"thread", "2"}}, SettingsTable<Knobs>::UnknownKeys::kReject);
  });
  EXPECT_NE(m.find("knobs: unknown config key \"thread\" (known: threads, buffer, mode)"),
            std::string::npos)
      << m;
  EXPECT_EQ(knobs()
                .load({{"EXTRA", "1"}}, SettingsTable<Knobs>::UnknownKeys::kReject,
                      [](const std::string& k) { return k == "EXTRA"; })
                .threads,
            4);
}

TEST(Settings, PrintShowsValueDefaultVariableAndHelp) {
  Knobs k;
  k.threads = 7;
  std::ostringstream os;
  knobs().print(os, k, "knobs.");
  EXPECT_EQ(os.str(),
            "knobs.threads = 7  (default 4, env C10D_TEST_THREADS): worker threads\n"
            "knobs.buffer = 1024  (default 1024, env C10D_TEST_BUFFER): buffer bytes\n"
            "knobs.mode = fast  (default fast): fast | safe\n");
  EXPECT_NE(knobs().find("mode"), nullptr);
  EXPECT_EQ(knobs().find("nope"), nullptr);
}

}  // namespace
}  // namespace test
C10D_NAMESPACE_END
}  // namespace c10d
