// Fuzzes c10d_trace's reader and analysis (tools/c10d_trace/trace.h): flight recorder dumps that a
// rank killed mid-write, another version, or a hand edit may have left, read and analysed together
// as the tool does with a directory of them.
//
// Input: one or more dumps separated by a form feed (0x0C, which no JSON text contains outside a
// string); each is parsed as dump<i>.json, and those that parse are analysed together. Parsing and
// analysis must either succeed or throw a TraceError naming what is wrong (a parse error names its
// file); any other exception, a crash or a sanitizer report is a bug. Every report has a verdict.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "tests/fuzz/fuzz_util.h"
#include "tools/c10d_trace/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::vector<c10d::trace::Dump> dumps;
  try {
    size_t begin = 0;
    for (int i = 0; begin <= input.size(); ++i) {
      size_t end = input.find('\f', begin);
      if (end == std::string::npos) end = input.size();
      const std::string path = "dump" + std::to_string(i) + ".json";
      try {
        dumps.push_back(c10d::trace::parseDump(input.substr(begin, end - begin), path));
      } catch (const c10d::trace::TraceError& e) {
        FUZZ_CHECK(std::string(e.what()).find(path) != std::string::npos,
                   "a parse error does not name the file");
      }
      begin = end + 1;
    }
    if (dumps.empty()) return 0;
    try {
      for (const c10d::trace::Report& rep : c10d::trace::analyze(dumps)) {
        FUZZ_CHECK(!rep.verdict.empty(), "a report without a verdict");
        FUZZ_CHECK(rep.size >= 1, "a report of an empty group");
      }
    } catch (const c10d::trace::TraceError& e) {
      FUZZ_CHECK(e.what()[0] != '\0', "a TraceError without a message");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception: %s\n", e.what());
    FUZZ_CHECK(false, "an exception other than TraceError");
  }
  return 0;
}
