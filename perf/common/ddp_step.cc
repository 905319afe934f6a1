#include "perf/common/ddp_step.h"

#include <getopt.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"
#include "c10d/base/settings.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace perf {

const char* stepModeName(StepMode m) {
  switch (m) {
    case StepMode::kNone:
      return "none";
    case StepMode::kFlat:
      return "flat";
    case StepMode::kDdp:
      return "ddp";
    case StepMode::kDdpView:
      return "ddp-view";
    case StepMode::kDdpOpt:
      return "ddp+opt";
    case StepMode::kZero:
      return "zero";
    case StepMode::kZeroOwner:
      return "zero-owner";
    case StepMode::kZero3:
      return "zero3";
  }
  return "?";
}

bool parseStepMode(const std::string& name, StepMode* mode) {
  if (name == "zero2") {  // the stage's name for zero
    *mode = StepMode::kZero;
    return true;
  }
  for (StepMode m : allStepModes()) {
    if (name == stepModeName(m)) {
      *mode = m;
      return true;
    }
  }
  return false;
}

const std::vector<StepMode>& allStepModes() {
  static const std::vector<StepMode> kModes{
      StepMode::kNone,   StepMode::kFlat, StepMode::kDdp,       StepMode::kDdpView,
      StepMode::kDdpOpt, StepMode::kZero, StepMode::kZeroOwner, StepMode::kZero3};
  return kModes;
}

namespace {

enum LongOnly {
  kBackend = 1000,
  kModelBytes,
  kLayers,
  kParamsPerLayer,
  kComputeUs,
  kComputeRatio,
  kBucketCap,
  kFirstBucket,
  kModes,
  kOptimizer,
};

bool parseLong(const char* text, long* out) {
  long long v = 0;
  if (!parseInteger(text, std::numeric_limits<long>::min(), std::numeric_limits<long>::max(), &v)) {
    return false;
  }
  *out = static_cast<long>(v);
  return true;
}

bool parseDouble(const char* text, double* out) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || errno != 0 || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

// "25" or "0.5" MB (2^20 bytes, torch's bucket_cap_mb) -> bytes, > 0.
bool parseMegabytes(const char* text, size_t* bytes) {
  double mb = 0;
  if (!parseDouble(text, &mb) || mb <= 0 || mb > 1024.0 * 1024) return false;
  *bytes = static_cast<size_t>(mb * 1024 * 1024);
  return *bytes > 0;
}

}  // namespace

std::string ddpStepUsage(const std::string& program) {
  std::ostringstream ss;
  ss << "USAGE: " << program << " \n\t"
     << "[--model-bytes <size, K/M/G suffixes> fp32 model size (default 64M)] \n\t"
     << "[--layers <count> layers, one parameter tensor each (default 24)] \n\t"
     << "[--params-per-layer <count, K/M suffixes> fp32 parameters per layer] \n\t"
     << "[--compute-us-per-layer <us> backward compute per layer (default: calibrated)] \n\t"
     << "[--compute-ratio <r> calibrated backward compute = r x one flat allreduce (default 1)] "
        "\n\t"
     << "[--bucket-cap-mb <MB> Reducer bucket cap (default 25)] \n\t"
     << "[--first-bucket-mb <MB> Reducer first bucket (default 1)] \n\t"
     << "[--modes <none,flat,ddp,ddp-view,ddp+opt,zero(=zero2),zero-owner,zero3> modes to time, "
        "interleaved (default all)] \n\t"
     << "[--optimizer <sgd/adam/adamw> of ddp+opt and the zero modes, and for the state bytes "
        "(default adam)] \n\t"
     << "[-n,--iters <iteration count> timed steps per mode (default 20)] \n\t"
     << "[-w,--warmup_iters <iteration count> untimed steps per mode first (default 3)] \n\t"
     << "[-c,--check <count> checked steps per reducing mode after timing (default 1)] \n\t"
     << "[-T,--timeout <time in seconds> per-op and rendezvous timeout (default 600)] \n\t"
     << "[-J,--output_file,--json <file> write results as JSON to file] \n\t"
     << "[--backend <name> c10d backend (default: the best available)] \n\t"
     << "[-h,--help]\n";
  return ss.str();
}

ParseResult parseDdpStepOptions(int argc, char** argv, DdpStepOptions* o) {
  static const struct option kLong[] = {
      {"iters", required_argument, nullptr, 'n'},
      {"warmup_iters", required_argument, nullptr, 'w'},
      {"check", required_argument, nullptr, 'c'},
      {"timeout", required_argument, nullptr, 'T'},
      {"output_file", required_argument, nullptr, 'J'},
      {"json", required_argument, nullptr, 'J'},
      {"backend", required_argument, nullptr, kBackend},
      {"model-bytes", required_argument, nullptr, kModelBytes},
      {"layers", required_argument, nullptr, kLayers},
      {"params-per-layer", required_argument, nullptr, kParamsPerLayer},
      {"compute-us-per-layer", required_argument, nullptr, kComputeUs},
      {"compute-ratio", required_argument, nullptr, kComputeRatio},
      {"bucket-cap-mb", required_argument, nullptr, kBucketCap},
      {"first-bucket-mb", required_argument, nullptr, kFirstBucket},
      {"modes", required_argument, nullptr, kModes},
      {"optimizer", required_argument, nullptr, kOptimizer},
      {"help", no_argument, nullptr, 'h'},
      {nullptr, 0, nullptr, 0},
  };
  auto fail = [](std::string msg) { return ParseResult{ParseResult::kError, std::move(msg)}; };
  bool haveBytes = false, haveLayers = false, havePer = false;
  optind = 0;  // GNU: full re-initialisation, so this may be called more than once
  opterr = 0;
  while (true) {
    const int c = getopt_long(argc, argv, ":n:w:c:T:J:h", kLong, nullptr);
    if (c == -1) break;
    const char* arg = optarg;
    long v = 0;
    auto intIn = [&](const char* flag, long min, long max) {
      return parseLong(arg, &v) && v >= min && v <= max
                 ? std::string()
                 : detail::str("invalid value '", arg, "' for ", flag, " (expected an integer in [",
                               min, ", ", max, "])");
    };
    std::string err;
    switch (c) {
      case 'n':
        if ((err = intIn("iters (-n)", 1, 1L << 20)).empty()) o->iters = static_cast<int>(v);
        break;
      case 'w':
        if ((err = intIn("warmup_iters (-w)", 0, 1L << 20)).empty()) {
          o->warmupIters = static_cast<int>(v);
        }
        break;
      case 'c':
        if ((err = intIn("check (-c)", 0, 1000)).empty()) o->check = static_cast<int>(v);
        break;
      case 'T':
        if ((err = intIn("timeout (-T)", 1, 1L << 24)).empty()) o->timeoutSec = static_cast<int>(v);
        break;
      case 'J':
        o->jsonPath = arg;
        break;
      case kBackend:
        o->backend = arg;
        break;
      case kModelBytes:
        if (!parseSize(arg, &o->modelBytes) || o->modelBytes == 0) {
          err = detail::str("invalid size '", arg, "' for --model-bytes (e.g. 100M)");
        }
        haveBytes = true;
        break;
      case kLayers:
        if ((err = intIn("--layers", 1, 1L << 20)).empty()) o->layers = static_cast<size_t>(v);
        haveLayers = true;
        break;
      case kParamsPerLayer:
        if (!parseSize(arg, &o->paramsPerLayer) || o->paramsPerLayer == 0) {
          err = detail::str("invalid count '", arg, "' for --params-per-layer (e.g. 1M)");
        }
        havePer = true;
        break;
      case kComputeUs: {
        double us = 0;
        if (!parseDouble(arg, &us) || us < 0 || us > 1e8) {
          err = detail::str("invalid value '", arg,
                            "' for --compute-us-per-layer (microseconds, >= 0)");
        }
        o->computeUsPerLayer = us;
        break;
      }
      case kComputeRatio: {
        double r = 0;
        if (!parseDouble(arg, &r) || r < 0 || r > 1e4) {
          err = detail::str("invalid value '", arg, "' for --compute-ratio (>= 0)");
        }
        o->computeRatio = r;
        break;
      }
      case kBucketCap:
      case kFirstBucket:
        if (!parseMegabytes(arg, c == kBucketCap ? &o->bucketCapBytes : &o->firstBucketBytes)) {
          err = detail::str("invalid value '", arg, "' for --",
                            c == kBucketCap ? "bucket-cap-mb" : "first-bucket-mb",
                            " (megabytes of 2^20 bytes, > 0)");
        }
        break;
      case kModes: {
        o->modes.clear();
        std::stringstream ss(arg);
        for (std::string name; std::getline(ss, name, ',');) {
          StepMode m;
          if (!parseStepMode(name, &m)) {
            err = detail::str("invalid mode '", name, "' in --modes '", arg,
                              "' (none, flat, ddp, ddp-view, ddp+opt, zero or zero2, zero-owner, "
                              "zero3)");
            break;
          }
          for (StepMode seen : o->modes) {
            if (seen == m) err = detail::str("mode '", name, "' given twice in --modes");
          }
          o->modes.push_back(m);
        }
        if (err.empty() && o->modes.empty()) err = "--modes is empty";
        break;
      }
      case kOptimizer:
        try {
          o->optimizer = optim::parseAlgorithm(arg);
        } catch (const InvalidArgument& e) {
          err = detail::str("invalid value '", arg, "' for --optimizer: ", e.what());
        }
        break;
      case 'h':
        return ParseResult{ParseResult::kHelp, ""};
      case ':':
        return fail(detail::str("option '", argv[optind - 1], "' needs a value"));
      default:
        return fail(detail::str("invalid option '", argv[optind - 1], "'"));
    }
    if (!err.empty()) return fail(err);
  }
  if (optind < argc) return fail(detail::str("unexpected argument '", argv[optind], "'"));

  // The model's geometry from whichever of the three were given.
  const size_t kFloat = sizeof(float);
  if (o->paramsPerLayer > (size_t{1} << 38)) {  // keeps the products below in 64 bits
    return fail(detail::str("--params-per-layer ", o->paramsPerLayer, " is larger than 2^38"));
  }
  if (haveBytes && haveLayers && havePer) {
    if (o->layers * o->paramsPerLayer * kFloat != o->modelBytes) {
      return fail(detail::str("--model-bytes ", o->modelBytes, " disagrees with --layers ",
                              o->layers, " x --params-per-layer ", o->paramsPerLayer,
                              " x 4 bytes = ", o->layers * o->paramsPerLayer * kFloat,
                              " (give two of the three)"));
    }
  } else if (havePer && haveBytes) {
    o->layers = o->modelBytes / (o->paramsPerLayer * kFloat);
    if (o->layers == 0) {
      return fail(detail::str("--model-bytes ", o->modelBytes,
                              " holds no layer of --params-per-layer ", o->paramsPerLayer,
                              " fp32 parameters (", o->paramsPerLayer * kFloat, " bytes)"));
    }
  } else if (!havePer) {
    // --model-bytes and --layers, given or defaulted, give the layer size.
    o->paramsPerLayer = o->modelBytes / (o->layers * kFloat);
    if (o->paramsPerLayer == 0) {
      return fail(detail::str("--model-bytes ", o->modelBytes, " is too small for ", o->layers,
                              " layers (at least 4 bytes, one fp32 parameter, per layer)"));
    }
  }  // else --params-per-layer with --layers given or defaulted: the size follows.
  if (o->paramsPerLayer > (size_t{1} << 40) / kFloat / o->layers) {
    return fail(detail::str("model of ", o->layers, " layers x ", o->paramsPerLayer,
                            " parameters is larger than 1 TiB"));
  }
  o->modelBytes = o->layers * o->paramsPerLayer * kFloat;
  return ParseResult{};
}

// ---- the table ----

std::string formatFixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string formatMiB(double bytes) {
  return formatFixed(bytes / (1024.0 * 1024.0), 2) + " MiB";
}

namespace {

// `fmt` of v, or N/A for a negative v unless `signedValue`.
std::string cell(double v, const char* fmt, bool signedValue = false) {
  if (v < 0 && !signedValue) return "       N/A";
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v);
  return buf;
}

bool parseCell(const std::string& word, double* v) {
  if (word == "N/A") {
    *v = -1;
    return true;
  }
  return parseDouble(word.c_str(), v);
}

}  // namespace

std::string stepTableHeader() {
  return "#      mode   step_min   step_med    exposed       comm    overlap      busbw       peak"
         "       live   #wrong\n"
         "#                (ms)       (ms)       (ms)       (ms)        (%)     (GB/s)      (MiB)"
         "      (MiB)         \n";
}

std::string stepTableRow(const StepRow& r) {
  char buf[256];
  const std::string exposed =
      std::isnan(r.exposedMs) ? std::string("       N/A") : cell(r.exposedMs, "%10.3f", true);
  auto mib = [](int64_t bytes) {
    return cell(bytes < 0 ? -1.0 : static_cast<double>(bytes) / (1 << 20), "%10.2f");
  };
  std::snprintf(buf, sizeof(buf), "%10s %10.3f %10.3f %s %s %s %s %s %s %8s\n", r.mode.c_str(),
                r.stepMinMs, r.stepMedMs, exposed.c_str(), cell(r.commMs, "%10.3f").c_str(),
                cell(r.overlapPct, "%10.1f").c_str(), cell(r.busBw, "%10.2f").c_str(),
                mib(r.peakBytes).c_str(), mib(r.liveBytes).c_str(),
                r.wrong < 0 ? "N/A" : std::to_string(r.wrong).c_str());
  return buf;
}

bool parseStepTableRow(const std::string& line, StepRow* row) {
  if (line.empty() || line[0] == '#') return false;
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string s; in >> s;) w.push_back(s);
  if (w.size() != 10) return false;
  StepMode mode;
  if (!parseStepMode(w[0], &mode)) return false;
  StepRow r;
  r.mode = w[0];
  double peak = 0, live = 0, wrong = 0;
  if (!parseDouble(w[1].c_str(), &r.stepMinMs) || !parseDouble(w[2].c_str(), &r.stepMedMs) ||
      !parseCell(w[3], &r.exposedMs) || !parseCell(w[4], &r.commMs) ||
      !parseCell(w[5], &r.overlapPct) || !parseCell(w[6], &r.busBw) || !parseCell(w[7], &peak) ||
      !parseCell(w[8], &live) || !parseCell(w[9], &wrong)) {
    return false;
  }
  if (w[3] == "N/A") r.exposedMs = std::nan("");
  auto bytes = [](double mib) { return mib < 0 ? -1 : std::llround(mib * (1 << 20)); };
  r.peakBytes = bytes(peak);
  r.liveBytes = bytes(live);
  r.wrong = static_cast<int64_t>(wrong);
  *row = r;
  return true;
}

}  // namespace perf
C10D_NAMESPACE_END
}  // namespace c10d
