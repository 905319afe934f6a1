#include "c10d/base/launch_env.h"

#include <cstdlib>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/settings.h"

namespace c10d {
C10D_NAMESPACE_BEGIN

namespace {

// A list this long is a typo (node[1-100000000]), not a cluster.
constexpr size_t kMaxSlurmHosts = 1 << 20;

[[noreturn]] void badList(const std::string& list, const std::string& problem) {
  C10D_THROW(InvalidArgument, "Slurm node list '", list, "': ", problem);
}

bool allDigits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// The numbers of one bracket ("01-03,07"), as strings with their padding.
std::vector<std::string> expandBracket(const std::string& list, const std::string& body) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= body.size()) {
    size_t comma = body.find(',', pos);
    if (comma == std::string::npos) comma = body.size();
    const std::string item = body.substr(pos, comma - pos);
    pos = comma + 1;
    const size_t dash = item.find('-');
    const std::string lo = item.substr(0, dash);
    const std::string hi = dash == std::string::npos ? lo : item.substr(dash + 1);
    if (!allDigits(lo) || !allDigits(hi) || lo.size() > 18 || hi.size() > 18) {
      badList(list, "'[" + body + "]' holds '" + item + "', not a number or a lo-hi range");
    }
    const long long a = std::stoll(lo);
    const long long b = std::stoll(hi);
    if (b < a) badList(list, "range '" + item + "' ends before it starts");
    if (static_cast<unsigned long long>(b - a) >= kMaxSlurmHosts) {
      badList(list, "range '" + item + "' is too long");
    }
    for (long long v = a; v <= b; ++v) {
      std::string s = std::to_string(v);
      if (s.size() < lo.size()) s.insert(0, lo.size() - s.size(), '0');
      out.push_back(s);
    }
  }
  return out;
}

// One host pattern without top-level commas ("rack[1-2]-n[01-04]").
void expandPattern(const std::string& list, const std::string& pattern,
                   std::vector<std::string>* hosts) {
  std::vector<std::string> partial = {""};
  size_t pos = 0;
  while (pos < pattern.size()) {
    const size_t open = pattern.find('[', pos);
    const std::string text = pattern.substr(pos, open == std::string::npos ? open : open - pos);
    if (text.find(']') != std::string::npos) badList(list, "']' without '['");
    for (auto& p : partial) p += text;
    if (open == std::string::npos) break;
    const size_t close = pattern.find(']', open);
    if (close == std::string::npos) badList(list, "'[' without ']'");
    const std::vector<std::string> numbers =
        expandBracket(list, pattern.substr(open + 1, close - open - 1));
    std::vector<std::string> next;
    if (partial.size() * numbers.size() > kMaxSlurmHosts) badList(list, "too many hosts");
    for (const auto& p : partial) {
      for (const auto& n : numbers) next.push_back(p + n);
    }
    partial.swap(next);
    pos = close + 1;
  }
  for (auto& p : partial) hosts->push_back(std::move(p));
  if (hosts->size() > kMaxSlurmHosts) badList(list, "too many hosts");
}

const char* getenvOrNull(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

}  // namespace

std::vector<std::string> expandSlurmNodelist(const std::string& list) {
  std::vector<std::string> hosts;
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= list.size(); ++i) {
    const char c = i < list.size() ? list[i] : ',';
    if (c == '[') {
      if (++depth > 1) badList(list, "nested '['");
    } else if (c == ']') {
      if (--depth < 0) badList(list, "']' without '['");
    } else if (c == ',' && depth == 0) {
      const std::string pattern = list.substr(start, i - start);
      if (pattern.empty()) badList(list, "empty host name");
      expandPattern(list, pattern, &hosts);
      start = i + 1;
    } else if (c == ' ' || c == '\t' || c == '\n') {
      badList(list, "whitespace in the list");
    }
  }
  if (depth != 0) badList(list, "'[' without ']'");
  return hosts;
}

LaunchEnv detectLaunchEnv() {
  struct Source {
    const char* launcher;
    const char* rank;
    const char* size;
    const char* local;
    const char* localSize;
  };
  static const Source kSources[] = {
      {"env", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"},
      {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
       "OMPI_COMM_WORLD_LOCAL_SIZE"},
      {"srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", nullptr},
  };
  LaunchEnv env;
  for (const auto& s : kSources) {
    if (getenvOrNull(s.rank) == nullptr || getenvOrNull(s.size) == nullptr) continue;
    env.launcher = s.launcher;
    env.rankVar = s.rank;
    env.sizeVar = s.size;
    env.worldSize = envInt(s.size, 1, 1);
    env.rank = envInt(s.rank, 0, 0);  // rank < worldSize: the caller checks, naming its context
    env.localRank = envInt(s.local, 0, 0);
    if (s.localSize != nullptr) {
      env.localWorldSize = envInt(s.localSize, -1, 1);
    } else if (envInt("SLURM_NNODES", -1, 1) == 1) {
      env.localWorldSize = env.worldSize;
    }
    break;
  }
  if (const char* addr = getenvOrNull("MASTER_ADDR")) {
    env.masterAddr = addr;
    env.masterSource = "MASTER_ADDR";
  } else if (env.launcher == "srun") {
    for (const char* var : {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"}) {
      const char* list = getenvOrNull(var);
      if (list == nullptr) continue;
      env.masterAddr = expandSlurmNodelist(list).at(0);
      env.masterSource = std::string("the first host of ") + var;
      break;
    }
  } else if (env.launcher == "mpirun" && env.localWorldSize == env.worldSize) {
    env.masterAddr = "127.0.0.1";
    env.masterSource = "mpirun on one host";
  }
  env.masterPort = envInt("MASTER_PORT", -1, 1, 65535);
  if (env.masterPort < 0 && (env.launcher == "mpirun" || env.launcher == "srun")) {
    env.masterPort = kDefaultMasterPort;
  }
  return env;
}

C10D_NAMESPACE_END
}  // namespace c10d
