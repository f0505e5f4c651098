// RocksDB's write-ahead logs, read as RocksDB 7.8 writes them (its private db/log_format.h and
// WriteBatch representation), for what a damaged log would lose (damaged_log.h).
//
// Retire when: damaged_log.h retires, or RocksDB reads damaged logs itself.

#ifndef FPSTORE_LIB_FAULTS_ROCKS_LOG_H_
#define FPSTORE_LIB_FAULTS_ROCKS_LOG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fpstore/document.h"

namespace fpstore::internal {

// One log record: a RocksDB write batch.
struct LogRecord {
  std::uint64_t log = 0;       // the number of the log that holds it
  std::uint64_t sequence = 0;  // of its first key
  std::string batch;           // the batch's bytes (rocksdb::WriteBatch's representation)
  // False for a batch read from damaged bytes, as far as they read: its checksum fails, so its
  // bytes, its sequence number included, may be wrong.
  bool intact = true;
};

// What reading one log found.
struct LogScan {
  // The bytes [begin, end) of its first damage, if any: unreadable bytes that an intact batch
  // follows, or its last record whole but failing its checksum (last_record).
  std::optional<std::pair<std::uint64_t, std::uint64_t>> damaged;
  bool last_record = false;
};

// Reads one log, the bytes of log number `log`. The write batches from its first damage on, and all
// of them once `keep_all`, are added to `dropped`, with what the damaged bytes read as.
LogScan ReadLog(std::string_view data, std::uint64_t log, bool keep_all,
                std::vector<LogRecord>& dropped);

// The sequence number of a write batch's first key, from its bytes; none if they are too short for
// a batch's header.
std::optional<std::uint64_t> BatchSequence(std::string_view batch);

// The changes to the family whose RocksDB id is `family` (8-byte big-endian keys) of a write
// batch's bytes, as far as they read (a batch read from damaged bytes may end in nonsense): puts
// in `written`, deletions in `removed`.
void CollectChanges(std::string_view batch, std::uint32_t family, std::vector<DocumentId>& written,
                    std::vector<DocumentId>& removed);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FAULTS_ROCKS_LOG_H_
