// How fpstore opens RocksDB around two behaviours of RocksDB 7.8 with write-ahead logs, each pinned
// against plain RocksDB in tests/rocksdb_behaviour_test.cc (docs/reliability.md, "Readers beside a
// writer").

#ifndef FPSTORE_LIB_FAULTS_ROCKS_OPEN_H_
#define FPSTORE_LIB_FAULTS_ROCKS_OPEN_H_

#include <rocksdb/db.h>

#include <string>
#include <vector>

namespace fpstore::internal {

// RocksDB's read-only open of `path`, beside a writer that may flush, compact and merge meanwhile.
// The open reads the manifest, then opens the files it lists and replays the logs it finds. What
// the writer deletes in between makes it fail naming a file, or worse, succeed without the writes
// of a log the writer deleted once every family had flushed them, some of those flushes after
// the manifest was read: the handle would see some families without writes that others show. So
// an open that fails naming a vanished file, and one during which a log that was there before it
// began was deleted, are tried again with the store as it is then, for up to about two seconds.
//
// RocksDB behaviour covered: a read-only open reads the MANIFEST, then lists and replays the logs,
// with no lock against a writer
// (RocksDbBehaviour.ReadOnlyOpenMissesWritesOfALogDeletedWhileItOpens). Retire when: RocksDB's
// read-only open sees one consistent state beside a writer.
rocksdb::Status OpenForReadOnly(const rocksdb::DBOptions& options,
                                const std::vector<rocksdb::ColumnFamilyDescriptor>& families,
                                const std::string& path,
                                std::vector<rocksdb::ColumnFamilyHandle*>* handles,
                                rocksdb::DB** db);

// RocksDB (as of 7.8) moves a family's oldest needed log on only when the family's memtable is
// switched, so each writable open that writes nothing would leave its new, empty log behind for
// good. Removes the empty logs older than the one the just-opened `db` writes to: they hold
// nothing to replay, and only the current log is ever appended to. Best effort; a reader that
// listed one retries its open (OpenForReadOnly).
//
// RocksDB behaviour covered: RocksDbBehaviour.EachWritableOpenWithoutWritesLeavesAnEmptyLog.
// Retire when: RocksDB removes the logs no family needs at open.
void RemoveEmptyOldLogs(rocksdb::DB& db, const std::string& path);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FAULTS_ROCKS_OPEN_H_
