// Fuzzes train_mlp's model file reader (example::readModelFile, examples/train_mlp/checkpoint.h):
// the model.bin of a checkpoint directory, corrupt or truncated anywhere, its JSON header
// included.
//
// Input: byte 0 bit 0 repairs the file first (its length field and checksum, fuzz_util.h's
// repairFrame), so that most inputs reach the header and the data; the rest is the file. The
// harness writes it to a scratch file, reads it and removes it. The read must either succeed or
// throw a c10d::Error naming the file; any other exception, a crash, a sanitizer report or an
// allocation past libFuzzer's -rss_limit_mb is a bug. A checkpoint that was read must hold one
// numel per parameter name, and exactly their sum of values.
#include <cstdint>
#include <string>

#include "c10d/base/hash.h"
#include "examples/train_mlp/checkpoint.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return c10d::fuzz::fuzzCheckpointFile(
      data, size, "model", c10d::kFnv1aBasis, [](const std::string& path) {
        const c10d::example::Checkpoint ck = c10d::example::readModelFile(path);
        FUZZ_CHECK(ck.names.size() == ck.numels.size(), "a numel per parameter name");
        size_t total = 0;
        for (size_t n : ck.numels) {
          FUZZ_CHECK(!__builtin_add_overflow(total, n, &total),
                     "numels that overflow were accepted");
        }
        FUZZ_CHECK(total == ck.params.size(), "the values are not the parameters' numels");
      });
}
