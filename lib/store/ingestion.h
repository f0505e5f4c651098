// Ingestion, by which merges (merger.h) and bulk loads (bulk_load.h) put documents in the tables:
// their files (ingest/table_writer.h) go in with other families' in one atomic IngestExternalFiles,
// and member filters are published so no reader meets a file its view lacks (table_filters.h).
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
#include "store/ingest_guard.h"
#include "store/locks.h"
#include "store/tables.h"

namespace fpstore::internal {

class Ingestion {
 public:
  Ingestion(rocksdb::DB& db, const Tables& tables, rocksdb::ColumnFamilyHandle* crowded,
            const IngestGuard& guard, StoreLocks& locks)
      : db_(db), tables_(tables), crowded_(crowded), guard_(guard), locks_(locks) {}

  // Where the table writer writes.
  TableWriter::Target target() const {
    return {&db_, &tables_.plan(), tables_.families(), tables_.layouts(), crowded_};
  }

  // For each of `changes`, by number, whether the tables without ids lose the key of the version it
  // takes out (`leaving`), as no document keeps that fingerprint once the changes are in; empty if
  // none does. REQUIRES: the merge lock held, so that no other writer changes the tables.
  Result<std::vector<bool>> OldKeysLeaving(std::vector<IdFingerprint> leaving,
                                           const Changes& changes) const;

  // A merge's ingestion of `files` (with `files.properties`): writers wait, queries go on, each
  // seeing all of the files or none. REQUIRES: the merge lock held.
  Status IngestBesideReaders(const TableWriter::Output& files)
      EXCLUDES(locks_.writers, locks_.readers);
  // An ingestion readers wait for: a bulk load's, or a merge's without `files.properties`.
  // REQUIRES: the reader gate held exclusively.
  Status IngestHoldingReaders(const TableWriter::Output& files);
  // Call before the ingestion's locks: flushes the non-empty memtables of `files`' families, which
  // IngestExternalFiles would flush while others wait.
  void FlushBefore(const TableWriter::Output& files) const;

 private:
  // After an ingestion: the files' filters if it succeeded with them, else the tables' reread.
  void Publish(const TableWriter::Output& files, const Status& ingested) const;

  rocksdb::DB& db_;
  const Tables& tables_;
  rocksdb::ColumnFamilyHandle* const crowded_;
  const IngestGuard& guard_;
  StoreLocks& locks_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_INGESTION_H_
