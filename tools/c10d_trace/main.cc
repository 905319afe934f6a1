// c10d_trace: names where the ranks of a hung or failed job parted ways, from their flight
// recorder dumps (trace.h). Usage:
//   c10d_trace DIR|FILE...     a directory reads every *.json in it
// Prints, per group, one row per rank and a verdict line. Exit status: 0 analysed (whatever it
// found), 2 bad usage or bad input (the message names the file and the field).
#include <cstdio>
#include <cstring>
#include <iostream>

#include "tools/c10d_trace/trace.h"

int main(int argc, char** argv) {
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      std::cout << "usage: c10d_trace DIR|FILE...\n"
                   "Reads the flight recorder dumps of every rank (C10D_FLIGHT_RECORDER_DIR or "
                   "ProcessGroup::dumpFlightRecord)\nand names the first op where the ranks "
                   "diverge, or the ranks that never arrived where the others wait.\n";
      return 0;
    }
    paths.push_back(argv[i]);
  }
  if (paths.empty()) {
    std::cerr << "c10d_trace: no dump files or directory given (usage: c10d_trace DIR|FILE...)\n";
    return 2;
  }
  try {
    const auto dumps = c10d::trace::loadDumps(paths);
    for (const auto& rep : c10d::trace::analyze(dumps)) {
      std::cout << "group " << rep.group << " (" << rep.size << " ranks, "
                << rep.size - static_cast<int>(rep.missingRanks.size()) << " dumps)\n"
                << rep.table << "verdict: " << rep.verdict << "\n\n";
    }
  } catch (const c10d::trace::TraceError& e) {
    std::cerr << "c10d_trace: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
