// Ingestion: the one step by which documents enter the tables, shared by
// merges (merger.h) and bulk loads (bulk_load.h). What they change is
// written as sorted files (ingest/table_writer.h), then ingested with the
// files of other families in one atomic IngestExternalFiles, and the
// tables' member filters are published so that no reader meets a file its
// view of the filters lacks (table_filters.h).
//
// Thread safety: thread-safe.

#ifndef FPSTORE_LIB_STORE_INGESTION_H_
#define FPSTORE_LIB_STORE_INGESTION_H_

#include <rocksdb/db.h>

#include <optional>
#include <span>
#include <vector>

#include "ingest/changes.h"
#include "ingest/table_writer.h"
#include "plan/table_entry.h"
#include "store/locks.h"
#include "store/tables.h"

namespace fpstore::internal {

class Ingestion {
 public:
  Ingestion(rocksdb::DB& db, const Tables& tables, rocksdb::ColumnFamilyHandle* crowded,
            StoreLocks& locks)
      : db_(db), tables_(tables), crowded_(crowded), locks_(locks) {}

  // Where the table writer writes.
  TableWriter::Target target() const {
    return {&db_, &tables_.plan(), tables_.families(), tables_.layouts(), crowded_};
  }

  // For each of `changes`, by its number, whether the tables without ids
  // lose the key of the version it takes out: no document keeps that
  // fingerprint once the changes are in (`leaving` are those versions).
  // Empty if none does.
  // REQUIRES: no other writer can change the tables: the merge lock held.
  Result<std::vector<bool>> OldKeysLeaving(std::vector<IdFingerprint> leaving,
                                           const Changes& changes) const;

  // A merge's ingestion of `files`, whose tables' files have `properties`:
  // writers wait, queries go on. A query's snapshot shows either all of
  // the files or none of them. REQUIRES: the merge lock held.
  Status IngestBesideReaders(const TableWriter::Output& files)
      EXCLUDES(locks_.writers, locks_.readers);
  // An ingestion that readers wait for: a bulk load's, or a merge's whose
  // files' filters could not be read ahead (they are read from the tables
  // after it). REQUIRES: the reader gate held alone.
  Status IngestHoldingReaders(const TableWriter::Output& files);
  // Before the ingestion of `files`, and any lock it takes: flushes the
  // memtables of its families that hold anything, which IngestExternalFiles
  // would otherwise flush while queries, or writers, wait for it.
  void FlushBefore(const TableWriter::Output& files) const;

 private:
  // After an ingestion: the files' filters added, if it succeeded and they
  // were read, else the tables' filters read anew.
  void Publish(const TableWriter::Output& files, const Status& ingested) const;

  rocksdb::DB& db_;
  const Tables& tables_;
  rocksdb::ColumnFamilyHandle* const crowded_;
  StoreLocks& locks_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_INGESTION_H_
