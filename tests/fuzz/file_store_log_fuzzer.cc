// Fuzzes the FileStore log replay (c10d/store/file_store_log.h): a log file as another process, a
// crash or a disk error may have left it, corrupt or truncated anywhere.
//
// Input: the log bytes. The harness replays them (detail::applyRecords) and requires either
// success or c10d::Error naming the file and offset; any other exception, a crash or a sanitizer
// report is a bug. A replay that succeeded is checked by re-encoding the resulting map as set
// records and replaying that into a fresh map (must give the same map), and every truncation of
// the input at a record boundary must replay too. Inputs whose last byte is 'F' are also written
// to a real file and opened with FileStore (the constructor replays the log, then appends to it),
// which covers the file reading and the user counters (only those: file I/O is slow).
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "c10d/base/error.h"
#include "c10d/base/fd.h"
#include "c10d/store/file_store.h"
#include "c10d/store/file_store_log.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

using Map = std::unordered_map<std::string, c10d::Bytes>;

bool replay(const c10d::Bytes& log, Map* map) {
  try {
    c10d::detail::applyRecords(log, *map, "fuzz.log", 0);
    return true;
  } catch (const c10d::Error& e) {
    FUZZ_CHECK(std::string(e.what()).find("fuzz.log") != std::string::npos,
               "a replay error does not name the file");
    return false;
  }
}

std::string tempPath() {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir != nullptr && *dir ? dir : "/tmp") + "/c10d-fuzz-filestore-" +
         std::to_string(getpid());
}

void throughFileStore(const uint8_t* data, size_t size) {
  static const std::string path = tempPath();
  {
    c10d::Fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    FUZZ_CHECK(fd.valid(), "cannot create the fuzz file");
    FUZZ_CHECK(::write(fd.get(), data, size) == static_cast<ssize_t>(size), "short write");
  }
  try {
    c10d::FileStore store(path, -1, std::chrono::milliseconds(0));
    store.set("k", "v");
    FUZZ_CHECK(store.getString("k") == "v", "FileStore lost a set after replay");
  } catch (const c10d::Error&) {
    // A corrupt log is refused with an Error naming the file: fine.
  }
  ::unlink(path.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const c10d::Bytes log(data, data + size);
  Map map;
  if (replay(log, &map)) {
    // Re-encoding what the replay produced gives the same map.
    c10d::Bytes again;
    for (const auto& [key, value] : map) {
      c10d::detail::encodeRecord(c10d::detail::RecordType::kSet, key, value, again);
    }
    Map map2;
    FUZZ_CHECK(replay(again, &map2), "re-encoded log does not replay");
    FUZZ_CHECK(map2 == map, "re-encoded log replays to another map");
    // A prefix ending at a record boundary is a valid log on its own (records are 13-byte
    // headers u8 type | u32 keyLen | u64 valueLen, then the key and the value); checked at up to
    // four boundaries spread over the log (all of them would make a run quadratic).
    std::vector<size_t> ends;
    for (size_t pos = 0; pos < log.size();) {
      uint32_t keyLen;
      uint64_t valueLen;
      std::memcpy(&keyLen, &log[pos + 1], sizeof(keyLen));
      std::memcpy(&valueLen, &log[pos + 5], sizeof(valueLen));
      pos += 13 + keyLen + valueLen;
      ends.push_back(pos);
    }
    for (size_t i = 0; i < 4 && !ends.empty(); ++i) {
      const size_t end = ends[i * (ends.size() - 1) / 3];
      Map partial;
      FUZZ_CHECK(replay(c10d::Bytes(log.begin(), log.begin() + static_cast<std::ptrdiff_t>(end)),
                        &partial),
                 "a prefix at a record boundary does not replay");
    }
  } else if (size > 0) {
    // A corrupt log stays corrupt with its last byte cut off, unless the cut removed the damage.
    Map partial;
    replay(c10d::Bytes(log.begin(), log.end() - 1), &partial);
  }
  if (size > 0 && data[size - 1] == 'F') throughFileStore(data, size);
  return 0;
}
