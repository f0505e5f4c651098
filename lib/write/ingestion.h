// Ingestion, by which merges (merger.h) and bulk loads (bulk_load.h) put documents in the tables:
// their files (ingest/table_writer.h) go in with other families' in one atomic IngestExternalFiles,
// their member filters published first, so that no reader meets a file its view lacks
// (table_filters.h). Readers go on meanwhile.
//
// Thread safety: thread-safe.

#ifndef FPSTORE_LIB_WRITE_INGESTION_H_
#define FPSTORE_LIB_WRITE_INGESTION_H_

#include <rocksdb/db.h>

#include <optional>
#include <span>
#include <vector>

#include "faults/ingest_guard.h"
#include "ingest/changes.h"
#include "ingest/table_writer.h"
#include "plan/table_entry.h"
#include "read/staging.h"
#include "read/tables.h"

namespace fpstore::internal {

class Ingestion {
 public:
  Ingestion(rocksdb::DB& db, const Tables& tables, const Staging& staging, const IngestGuard& guard)
      : db_(db), tables_(tables), staging_(staging), guard_(guard) {}

  // Where the table writer writes.
  TableWriter::Target target() const {
    return {&db_, &tables_.plan(), tables_.families(), tables_.layouts()};
  }

  // For each of `changes`, by number, whether the tables without ids lose the key of the version it
  // takes out (`leaving`), as no document keeps that fingerprint once the changes are in; empty if
  // none does. REQUIRES: the merge lock held, so that no other writer changes the tables.
  Result<std::vector<bool>> OldKeysLeaving(std::vector<IdFingerprint> leaving,
                                           const Changes& changes) const;

  // Ingests `files`, each reader seeing all of them or none. kBesideReaders (a merge's): queries go
  // on, and a snapshot pinned meanwhile gives the files sequence numbers above every reader's.
  // kHoldingNewReaders (a bulk load's): readers that start meanwhile wait (Staging::
  // HoldingReadPoints) and nothing is pinned, so that the files of a load into empty tables take
  // sequence number 0 where no reader holds a snapshot, and are not rewritten later to clear it.
  // REQUIRES: the merge lock, and the writers' lock held alone.
  enum class Readers { kBesideReaders, kHoldingNewReaders };
  Status Ingest(const TableWriter::Output& files, Readers readers);
  // Call before the writers' lock: flushes the non-empty memtables of `files`' families, which
  // IngestExternalFiles would flush while others wait.
  void FlushBefore(const TableWriter::Output& files) const;

 private:
  rocksdb::DB& db_;
  const Tables& tables_;
  const Staging& staging_;
  const IngestGuard& guard_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_WRITE_INGESTION_H_
