#include "examples/train_mlp/trace.h"

#include <cinttypes>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <utility>

#include "c10d/base/abi.h"
#include "c10d/base/error.h"

namespace c10d {
C10D_NAMESPACE_BEGIN
namespace example {

namespace {

constexpr int kStepTrack = 0;
constexpr int kComputeTrack = 1;
constexpr int kCommTrack = 2;

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string partPath(const std::string& path, int rank) {
  return path + ".rank" + std::to_string(rank);
}

}  // namespace

TraceWriter::TraceWriter(std::string path, int rank, int worldSize)
    : path_(std::move(path)), rank_(rank), worldSize_(worldSize) {
  meta("process_name", 0, "rank " + std::to_string(rank_));
  meta("thread_name", kStepTrack, "steps");
  meta("thread_name", kComputeTrack, "compute (layers)");
}

void TraceWriter::meta(const char* what, int tid, const std::string& name) {
  if (!events_.empty()) events_ += ",\n";
  events_ += std::string("{\"name\":\"") + what +
             "\",\"ph\":\"M\",\"pid\":" + std::to_string(rank_) +
             ",\"tid\":" + std::to_string(tid) + ",\"args\":{\"name\":" + quoted(name) + "}}";
}

int TraceWriter::commTrack(int64_t beginNs, int64_t endNs) {
  size_t lane = 0;
  while (lane < laneEndNs_.size() && laneEndNs_[lane] > beginNs) ++lane;
  if (lane == laneEndNs_.size()) {
    laneEndNs_.push_back(0);
    meta("thread_name", kCommTrack + static_cast<int>(lane),
         "communication " + std::to_string(lane + 1) + " (launch to completion)");
  }
  laneEndNs_[lane] = endNs;
  return kCommTrack + static_cast<int>(lane);
}

void TraceWriter::event(const std::string& name, const char* cat, int tid, int64_t beginNs,
                        int64_t endNs, const std::string& args) {
  char times[96];
  std::snprintf(times, sizeof(times), "\"ts\":%.3f,\"dur\":%.3f",
                static_cast<double>(beginNs) / 1e3,
                static_cast<double>(endNs > beginNs ? endNs - beginNs : 0) / 1e3);
  events_ += ",\n{\"name\":" + quoted(name) + ",\"cat\":\"" + cat + "\",\"ph\":\"X\"," + times +
             ",\"pid\":" + std::to_string(rank_) + ",\"tid\":" + std::to_string(tid) +
             (args.empty() ? "" : ",\"args\":{" + args + "}") + "}";
}

void TraceWriter::step(uint64_t step, int64_t beginNs, int64_t endNs,
                       const std::vector<Mlp::LayerSpan>& layers,
                       const std::vector<layers::CommEvent>& comm) {
  event("step " + std::to_string(step), "step", kStepTrack, beginNs, endNs);
  for (const Mlp::LayerSpan& l : layers) {
    event(std::string(l.backward ? "backward" : "forward") + " layer " + std::to_string(l.layer),
          "compute", kComputeTrack, l.beginNs, l.endNs);
  }
  for (const layers::CommEvent& c : comm) {
    event(c.name, "comm", commTrack(c.launchNs, c.doneNs), c.launchNs, c.doneNs,
          "\"bytes\":" + std::to_string(c.bytes));
  }
}

void TraceWriter::finish(ProcessGroup* pg) {
  const std::string part = partPath(path_, rank_);
  {
    std::ofstream out(part, std::ios::trunc);
    out << events_;
    C10D_CHECK(out.good(), "--trace: cannot write ", part);
  }
  if (pg) pg->barrier()->wait();
  if (rank_ != 0) return;
  std::ofstream out(path_ + ".tmp", std::ios::trunc);
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  for (int r = 0; r < worldSize_; ++r) {
    std::ifstream in(partPath(path_, r));
    if (!in) continue;  // another host's
    std::stringstream body;
    body << in.rdbuf();
    out << (first ? "" : ",\n") << body.str();
    first = false;
    in.close();
    std::remove(partPath(path_, r).c_str());
  }
  out << "\n]}\n";
  out.close();
  C10D_CHECK(out.good(), "--trace: cannot write ", path_, ".tmp");
  C10D_CHECK(std::rename((path_ + ".tmp").c_str(), path_.c_str()) == 0, "--trace: cannot rename ",
             path_, ".tmp to ", path_);
}

}  // namespace example
C10D_NAMESPACE_END
}  // namespace c10d
