// What a damaged write-ahead log would lose. RocksDB replays the logs up to the first record it
// cannot read and drops the rest without a word (point-in-time recovery): after a crash that is
// a torn last write, never acknowledged, but damage in a log also drops every acknowledged write
// from it on. FindLogDamage reads the logs as RocksDB writes them (docs/reliability.md, "A damaged
// log") and finds damage that intact records follow, and a last record that is whole but fails its
// checksum, neither of which a crash leaves.
//
// RocksDB behaviour covered: kPointInTimeRecovery drops every record from the first it cannot
// read, without an error (RocksDbBehaviour.PointInTimeRecoveryDropsWritesAfterMidLogDamageSilently,
// ...DropsADamagedLastRecordSilently). kAbsoluteConsistency would refuse a crash's torn tail too.
// Retire when: RocksDB can stop at a torn tail and refuse damage before it, naming what it holds.

#ifndef FPSTORE_LIB_FAULTS_DAMAGED_LOG_H_
#define FPSTORE_LIB_FAULTS_DAMAGED_LOG_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "faults/rocks_log.h"
#include "fpstore/document.h"
#include "fpstore/status.h"

namespace rocksdb {
class WalFilter;
}  // namespace rocksdb

namespace fpstore::internal {

struct LogDamage {
  std::string file;         // the first damaged log, a path
  std::uint64_t log = 0;    // its number
  std::uint64_t begin = 0;  // its bytes [begin, end) cannot be read
  std::uint64_t end = 0;
  // They are the log's last record, whole (the log holds every byte its header counts) but failing
  // its checksum: not a write cut short by a crash, which leaves the log ending inside the record,
  // or zeros where the write's later sectors were to be.
  bool last_record = false;
  std::vector<std::string> logs;  // it and every later log: the files a replay drops from
  // The records a replay drops, in log order: what the damaged bytes read as (intact false), the
  // intact records after them in `file`, and all of the later logs'.
  std::vector<LogRecord> dropped;
};

// The number of the write-ahead log named `file_name` ("000012.log": 12); none for other files.
std::optional<std::uint64_t> LogNumberOf(std::string_view file_name);

// The first damage in the logs of the store at `dir`: unreadable bytes that intact records follow,
// or a log's last record whole but failing its checksum. None when the logs read to their end or
// only their last record is cut short, as a crash leaves it: the log ends inside the record, or
// the record's bytes in some 512-byte sector are all zero (a sector the crash kept from being
// written). Errors: IOError.
Result<std::optional<LogDamage>> FindLogDamage(const std::string& dir);

// What a replay of the logs read, as NewReplayRecorder's filter saw it during a RocksDB open.
struct ReplayedRecords {
  // Each record it read, as (log number, sequence number).
  std::set<std::pair<std::uint64_t, std::uint64_t>> records;
  // Each family's (by id) oldest log whose writes to it are not in its tables: a record of an older
  // log is not replayed into the family. Empty if the open replayed no log.
  std::map<std::uint32_t, std::uint64_t> family_logs;
};

// A rocksdb::WalFilter that records into `replayed` what the open it is given to replays.
// REQUIRES: `replayed` outlives the open.
std::unique_ptr<rocksdb::WalFilter> NewReplayRecorder(ReplayedRecords& replayed);

// What the records from the damage on that the replay did not read wrote to the documents family,
// whose RocksDB id is `documents_family`. Records of a log older than the family's oldest log with
// writes not in its tables are not counted: RocksDB does not replay them into it. Without that log
// number (a replay that did not run), records of a log older than every log the replay read are
// not counted, and if it read nothing, those up to `latest`, the sequence number the store reached.
struct DroppedWrites {
  std::size_t records = 0;          // intact records
  std::vector<DocumentId> written;  // inserted or replaced by them; each id once, in log order
  std::vector<DocumentId> removed;  // likewise
  // Whether the damaged bytes' own writes are dropped too: they are in a log the replay reads into
  // the documents family, and it read no record after them.
  bool damaged = false;
  // What the damaged bytes read as, unverified: each id once, in log order.
  std::vector<DocumentId> damaged_written;
  std::vector<DocumentId> damaged_removed;
  bool Empty() const { return records == 0 && !damaged; }
};
DroppedWrites DroppedAfter(const LogDamage& damage, const ReplayedRecords& replayed,
                           std::uint64_t latest, std::uint32_t documents_family);

// "DIR/000012.log is damaged at bytes 2300 to 2410: they and the 20 intact log records after them
// cannot be replayed, with the acknowledged writes they hold (inserts or replacements of
// documents 20, 21, ... and 12 more; no removals); the damaged bytes read, unverified, as inserts
// or replacements of document 19 (no removals)".
std::string Describe(const LogDamage& damage, const DroppedWrites& dropped);

// Keeps in `lost` (a directory, created if need be) what an open that drops `dropped` loses: a
// copy of each of the damaged logs, and a list of every dropped document, one a line after a
// header line: "ID\tCHANGE\tREAD_FROM", CHANGE "write" (inserted or replaced) or "remove",
// READ_FROM "damaged" (the damaged bytes, unverified) or "intact" (an intact record). The list is
// dropped-NNNNNN.tsv, NNNNNN the damaged log's number, or dropped-NNNNNN-K.tsv for the first K
// from 2 on that no file has: one recovery never writes over another's. Both are synced before it
// returns. Returns the list's path. Errors: IOError.
Result<std::string> KeepDropped(const std::string& lost, const LogDamage& damage,
                                const DroppedWrites& dropped);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FAULTS_DAMAGED_LOG_H_
