// What a damaged write-ahead log would lose. RocksDB replays the logs up to the first record it
// cannot read and drops the rest without a word (point-in-time recovery): after a crash that is
// a torn last write, never acknowledged, but damage in the middle of a log also drops every
// acknowledged write after it. FindLogDamage reads the logs as RocksDB writes them
// (docs/reliability.md, "A damaged log") and finds damage that intact records follow, which a
// crash does not leave.

#ifndef FPSTORE_LIB_STORE_DAMAGED_LOG_H_
#define FPSTORE_LIB_STORE_DAMAGED_LOG_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fpstore/document.h"
#include "fpstore/status.h"

namespace rocksdb {
class WalFilter;
}  // namespace rocksdb

namespace fpstore::internal {

// One intact log record: a RocksDB write batch.
struct LogRecord {
  std::uint64_t log = 0;       // the number of the log that holds it
  std::uint64_t sequence = 0;  // of its first key
  std::string batch;           // the batch's bytes (rocksdb::WriteBatch's representation)
};

struct LogDamage {
  std::string file;         // the first damaged log, a path
  std::uint64_t begin = 0;  // its bytes [begin, end) cannot be read
  std::uint64_t end = 0;
  std::vector<std::string> logs;  // it and every later log: the files a replay drops from
  // The intact records a replay drops: after the damage in `file`, and all of the later logs.
  std::vector<LogRecord> dropped;
};

// The number of the write-ahead log named `file_name` ("000012.log": 12); none for other files.
std::optional<std::uint64_t> LogNumberOf(std::string_view file_name);

// The first damage in the logs of the store at `dir` that intact records follow; none when the
// logs read to their end or only their last record is cut short. Errors: IOError.
Result<std::optional<LogDamage>> FindLogDamage(const std::string& dir);

// The records a replay of the logs read, each as (log number, sequence number): what
// ReplayedRecords' filter saw during a RocksDB open.
using ReplayedRecords = std::set<std::pair<std::uint64_t, std::uint64_t>>;

// A rocksdb::WalFilter that records into `replayed` every log record the open it is given to
// replays. REQUIRES: `replayed` outlives the open.
std::unique_ptr<rocksdb::WalFilter> NewReplayRecorder(ReplayedRecords& replayed);

// What the records after the damage that the replay did not read wrote to the documents family,
// whose RocksDB id is `documents_family`. Records of a log older than every log the replay read
// are not counted: RocksDB skips such a log as already flushed. If the replay read nothing, the
// records above `latest`, the sequence number the store reached, are counted.
struct DroppedWrites {
  std::size_t records = 0;
  std::vector<DocumentId> written;  // inserted or replaced; each id once, in log order
  std::vector<DocumentId> removed;  // likewise
};
DroppedWrites DroppedAfter(const LogDamage& damage, const ReplayedRecords& replayed,
                           std::uint64_t latest, std::uint32_t documents_family);

// "DIR/000012.log is damaged at bytes 2300 to 2410: they and the 20 intact log records after them
// cannot be replayed, with the acknowledged writes they hold (inserts or replacements of
// documents 20, 21, ... and 12 more; no removals)". The damaged bytes' own writes are unknown.
std::string Describe(const LogDamage& damage, const DroppedWrites& dropped);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_DAMAGED_LOG_H_
