// Fuzzes the optimizer state checkpoint reader (optim::OptimizerState::load,
// c10d/layers/optim/optimizer_state.h): a file a crash, a full disk, another version or another
// program may have left, corrupt or truncated anywhere.
//
// Input: byte 0 bit 0 repairs the file first (its length field and checksum, fuzz_util.h's
// repairFrame), so that most inputs get past the checksum to the fields behind it; the rest is the
// file. The harness writes it to a scratch file, loads it and removes it. The load must either
// succeed or throw a c10d::Error naming the file; any other exception, a crash, a sanitizer report
// or an allocation past libFuzzer's -rss_limit_mb is a bug. A state that loaded must be consistent
// (slot names of its algorithm, every parameter with every slot, of one size) and pass the checks
// applyTo makes against the numels it holds. The piecewise reader (optim::OptimizerStateFile, the
// ZeRO-3 resume's) must agree: it refuses exactly the files load() refuses, and reads the same bits
// from the ones it accepts.
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "c10d/base/error.h"
#include "c10d/base/hash.h"
#include "c10d/layers/optim/optimizer_state.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The state file's checksum starts from this basis (optimizer_state.h), not FNV's usual one.
  return c10d::fuzz::fuzzCheckpointFile(
      data, size, "optstate", c10d::kFnv1aShortBasis, [](const std::string& path) {
        std::unique_ptr<c10d::optim::OptimizerStateFile> file;
        try {
          file = std::make_unique<c10d::optim::OptimizerStateFile>(path, true);
        } catch (const c10d::InvalidArgument&) {
        }
        c10d::optim::OptimizerState st;
        try {
          st = c10d::optim::OptimizerState::load(path);
        } catch (const c10d::InvalidArgument&) {
          FUZZ_CHECK(file == nullptr, "OptimizerStateFile accepted a file load() refuses");
          throw;
        }
        FUZZ_CHECK(file != nullptr, "OptimizerStateFile refused a file load() accepts");
        FUZZ_CHECK(file->header().steps == st.steps && file->numels().size() == st.slots.size(),
                   "OptimizerStateFile read another header");
        for (size_t p = 0; p < st.slots.size(); ++p) {
          for (size_t k = 0; k < st.slots[p].size(); ++k) {
            std::vector<float> got(st.slots[p][k].size());
            file->read(p, k, 0, got.size(), got.data());
            // (memcmp takes no null pointer, even for no bytes: an empty slot's data() may be one)
            FUZZ_CHECK(
                got.empty() || std::memcmp(got.data(), st.slots[p][k].data(), got.size() * 4) == 0,
                "OptimizerStateFile read other values");
          }
        }
        FUZZ_CHECK(st.slotNames == st.options.slotNames(), "slot names of another algorithm");
        std::vector<size_t> numels;
        for (const auto& perParam : st.slots) {
          FUZZ_CHECK(perParam.size() == st.slotNames.size(), "a parameter without every slot");
          for (const auto& slot : perParam) {
            FUZZ_CHECK(slot.size() == perParam[0].size(), "slots of one parameter differ in size");
          }
          numels.push_back(perParam.empty() ? 0 : perParam[0].size());
        }
        st.options.validate();
        st.checkCompatible(st.options, numels, "fuzz");
      });
}
