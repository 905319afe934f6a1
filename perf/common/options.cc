#include "perf/common/options.h"

#include <getopt.h>

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/settings.h"
#include "c10d/bootstrap/registry.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

bool parseSize(const std::string& text, size_t* bytes) {
  unsigned long long b = 0;
  if (!parseByteSize(text, std::numeric_limits<size_t>::max(), &b)) return false;
  *bytes = static_cast<size_t>(b);
  return true;
}

const std::vector<std::string>& allOpNames() {
  static const std::vector<std::string> kNames{"sum", "prod", "max", "min", "avg", "mulsum"};
  return kNames;
}

const std::vector<DataType>& allDataTypes() {
  static const std::vector<DataType> kTypes{
      DataType::kInt8,    DataType::kUInt8,   DataType::kInt32,   DataType::kInt64,
      DataType::kFloat16, DataType::kFloat32, DataType::kFloat64, DataType::kBFloat16};
  return kTypes;
}

namespace {

enum LongOnly { kBackend = 1000, kDevice, kPrintConfig };

}  // namespace

std::string usage(const std::string& program) {
  std::ostringstream ss;
  ss << "USAGE: " << program << " \n\t"
     << "[-b,--minbytes <min size in bytes>] \n\t"
     << "[-e,--maxbytes <max size in bytes>] \n\t"
     << "[-i,--stepbytes <increment size>] \n\t"
     << "[-f,--stepfactor <increment factor>] \n\t"
     << "[-n,--iters <iteration count>] \n\t"
     << "[-m,--agg_iters <aggregated iteration count>] \n\t"
     << "[-w,--warmup_iters <warmup iteration count>] \n\t"
     << "[-c,--check <check iteration count>] \n\t"
     << "[-o,--op <sum/prod/min/max/avg/mulsum/all>] \n\t"
     << "[-d,--datatype <int8/uint8/int32/int64/half/float/double/bfloat16/all>] \n\t"
     << "[-r,--root <root>] \n\t"
     << "[-z,--blocking <0/1/2> 1,2=wait after each op (inner iteration, -m)] \n\t"
     << "[-T,--timeout <time in seconds> per-op and rendezvous timeout (default 600)] \n\t"
     << "[-J,--output_file <file> write results as JSON to file] \n\t"
     << "[-a,--average <0/1/2/3> report average iteration time <0=RANK0/1=AVG/2=MIN/3=MAX>] \n\t"
     << "[--backend <name> c10d backend (default: the best available)] \n\t"
     << "[--device <cpu/cuda> where the buffers live (default: cpu)] \n\t"
     << "[--print-config the backend's settings (environment) and algorithm table, then exit] \n\t"
     << "[-h,--help]\n";
  return ss.str();
}

ParseResult parseOptions(int argc, char** argv, PerfOptions* o) {
  static const struct option kLong[] = {
      {"minbytes", required_argument, nullptr, 'b'},
      {"maxbytes", required_argument, nullptr, 'e'},
      {"stepbytes", required_argument, nullptr, 'i'},
      {"stepfactor", required_argument, nullptr, 'f'},
      {"iters", required_argument, nullptr, 'n'},
      {"agg_iters", required_argument, nullptr, 'm'},
      {"warmup_iters", required_argument, nullptr, 'w'},
      {"check", required_argument, nullptr, 'c'},
      {"op", required_argument, nullptr, 'o'},
      {"datatype", required_argument, nullptr, 'd'},
      {"root", required_argument, nullptr, 'r'},
      {"blocking", required_argument, nullptr, 'z'},
      {"timeout", required_argument, nullptr, 'T'},
      {"output_file", required_argument, nullptr, 'J'},
      {"average", required_argument, nullptr, 'a'},
      {"backend", required_argument, nullptr, kBackend},
      {"device", required_argument, nullptr, kDevice},
      {"print-config", no_argument, nullptr, kPrintConfig},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  auto fail = [](std::string msg) { return ParseResult{ParseResult::kError, std::move(msg)}; };
  bool printConfig = false;
  optind = 0;  // GNU: full re-initialisation, so parseOptions may be called more than once
  opterr = 0;
  while (true) {
    int c = getopt_long(argc, argv, ":b:e:i:f:n:m:w:c:o:d:r:z:T:J:a:h", kLong, nullptr);
    if (c == -1) break;
    long long v = 0;
    const char* arg = optarg;
    // Base 0, as nccl-tests' strtol(optarg, NULL, 0): 0x10 and 010 are read as it reads them.
    auto needInt = [&](const char* what, long long min, long long max) {
      if (!parseInteger(arg, min, max, &v, 0)) {
        throw InvalidArgument(detail::str("invalid value '", arg, "' for ", what, " (expected an ",
                                          "integer in [", min, ", ", max, "])"));
      }
    };
    try {
      switch (c) {
        case 'b':
        case 'e':
        case 'i': {
          size_t bytes = 0;
          const char* name = c == 'b' ? "minbytes" : c == 'e' ? "maxbytes" : "stepbytes";
          if (!parseSize(arg, &bytes))
            return fail(detail::str("invalid size specified for '", name, "': '", arg, "'"));
          (c == 'b' ? o->minBytes : c == 'e' ? o->maxBytes : o->stepBytes) = bytes;
          break;
        }
        case 'f':
          needInt("stepfactor (-f)", 1, 1L << 30);
          o->stepFactor = static_cast<size_t>(v);
          break;
        case 'n':
          needInt("iters (-n)", 1, 1L << 30);
          o->iters = static_cast<int>(v);
          break;
        case 'm':
          needInt("agg_iters (-m)", 1, 1L << 20);
          o->aggIters = static_cast<int>(v);
          break;
        case 'w':
          needInt("warmup_iters (-w)", 0, 1L << 30);
          o->warmupIters = static_cast<int>(v);
          break;
        case 'c':
          needInt("check (-c)", 0, 1000);
          o->check = static_cast<int>(v);
          break;
        case 'z':
          needInt("blocking (-z)", 0, 2);
          o->blocking = static_cast<int>(v);
          break;
        case 'r':
          needInt("root (-r)", -1, 1L << 30);
          o->root = static_cast<int>(v);
          break;
        case 'T':
          needInt("timeout (-T)", 1, 1L << 24);
          o->timeoutSec = static_cast<int>(v);
          break;
        case 'a':
          needInt("average (-a)", 0, 3);
          o->average = static_cast<TimeCombine>(v);
          break;
        case 'o': {
          std::string name = arg;
          if (name == "all") {
            o->opNames = allOpNames();
          } else {
            bool known = false;
            for (const auto& n : allOpNames()) known |= n == name;
            if (!known) return fail("invalid op '" + name + "' (sum/prod/min/max/avg/mulsum/all)");
            o->opNames = {name};
          }
          o->ops.clear();
          for (const auto& n : o->opNames) o->ops.push_back(parseReduceOp(n));
          break;
        }
        case 'd': {
          std::string name = arg;
          if (name == "all") {
            o->dtypes = allDataTypes();
          } else {
            DataType t = parseDataType(name);
            if (t == DataType::kBool) return fail("invalid datatype 'bool'");
            o->dtypes = {t};
          }
          break;
        }
        case 'J':
          o->jsonPath = arg;
          break;
        case kBackend:
          o->backend = arg;
          break;
        case kDevice:
          o->device = arg;
          if (o->device != "cpu" && o->device != "cuda") {
            return fail("invalid device '" + o->device + "' (cpu or cuda)");
          }
          break;
        case 'h':
          return ParseResult{ParseResult::kHelp, ""};
        case kPrintConfig:
          printConfig = true;
          break;
        case ':':
          return fail(detail::str("option '", argv[optind - 1], "' needs a value"));
        default:
          return fail(detail::str("invalid option '", argv[optind - 1], "'"));
      }
    } catch (const InvalidArgument& e) {
      return fail(e.what());
    }
  }
  if (optind < argc) return fail(detail::str("unexpected argument '", argv[optind], "'"));
  if (o->minBytes > o->maxBytes) {
    return fail(detail::str("invalid sizes for 'minbytes' and 'maxbytes': ", o->minBytes, " > ",
                            o->maxBytes));
  }
  if (printConfig) return ParseResult{ParseResult::kPrintConfig, ""};
  return ParseResult{};
}

int startPerfMain(int argc, char** argv, PerfOptions* options, std::string* program) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  *program = argv[0];
  const size_t slash = program->rfind('/');
  if (slash != std::string::npos) *program = program->substr(slash + 1);
  ParseResult parsed = parseOptions(argc, argv, options);
  if (parsed.action == ParseResult::kHelp) {
    std::fputs(usage(*program).c_str(), stdout);
    return 0;
  }
  if (parsed.action == ParseResult::kPrintConfig) {
    // The settings a group made now would use: no rendezvous, nothing connects.
    try {
      const std::string name = options->backend.empty() ? defaultBackend() : options->backend;
      const BackendInfo info = backendInfo(name);
      std::printf("# backend %s: %s\n", name.c_str(), info.description.c_str());
      if (info.describeConfig) {
        std::fputs(info.describeConfig().c_str(), stdout);
      } else {
        std::printf("# (no settings)\n");
      }
      return 0;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s: %s\n", program->c_str(), e.what());
      return 2;
    }
  }
  if (parsed.action == ParseResult::kError) {
    std::fprintf(stderr, "%s: %s\n%s", program->c_str(), parsed.message.c_str(),
                 usage(*program).c_str());
    return 2;
  }
  return -1;
}

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
