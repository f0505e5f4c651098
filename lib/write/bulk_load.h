// The store's BulkLoader (include/fpstore/bulk_loader.h): documents are buffered and spilled sorted
// by id (ingest/spills.h); Finish matches them against the versions they replace, writes their
// table changes and ingests everything at once. Writers wait throughout Finish; readers go on,
// the ingestion.

#ifndef FPSTORE_LIB_WRITE_BULK_LOAD_H_
#define FPSTORE_LIB_WRITE_BULK_LOAD_H_

#include <rocksdb/db.h>

#include <string>
#include <vector>

#include "format/records.h"
#include "format/time_index.h"
#include "fpstore/bulk_loader.h"
#include "ingest/scratch_dir.h"
#include "ingest/spills.h"
#include "ingest/table_writer.h"
#include "plan/table_entry.h"
#include "read/staging.h"
#include "write/ingestion.h"
#include "write/locks.h"

namespace fpstore::internal {

class BulkLoaderImpl final : public BulkLoader {
 public:
  struct Context {
    rocksdb::DB* db;
    const Documents* documents;
    const TimeIndex* times;
    const Staging* staging;
    Ingestion* ingestion;
    StoreLocks* locks;
    int bits;             // the store's fingerprints' width
    int signature_bytes;  // the store's; a document's signature has these or none
    DocumentTime began;   // the store's clock when the load began: a timeless document's time
    DocumentTime expired_before;  // documents earlier are past the retention (0: none)
  };

  BulkLoaderImpl(const Context& store, BulkLoadOptions options, ScratchDir dir)
      : store_(store), options_(std::move(options)), dir_(std::move(dir)) {}

  using BulkLoader::Add;
  Status Add(const NewDocument& doc) override;
  std::uint64_t added() const override { return next_seq_; }
  Result<BulkLoadStats> Finish() override;

 private:
  // What Finish learns as it matches the documents against the store.
  struct Matched;

  // Reserves the buffer's room for a whole spill, on the first Add.
  void ReserveBuffer();
  Status Spill();
  // Writes the last-added record and table change of each id to files. REQUIRES: writers held off.
  Status Match(Matched& m);
  // Writes `batch` of time keys, unsynced, and empties it.
  Status WriteTimeKeys(rocksdb::WriteBatch& batch);
  // Writes every file to ingest: tables, documents, mark deletions, count, recent.
  Status WriteFiles(Matched& m, TableWriter::Output& out);
  // Calls options_.progress, if set; what it throws becomes an error.
  Status ReportProgress(std::uint64_t done, std::uint64_t total) const;

  const Context store_;
  const BulkLoadOptions options_;
  const ScratchDir dir_;
  // The spill being buffered; Finish reads the last one from memory.
  std::vector<BufferedRecord> buffer_;
  std::string buffer_tails_;  // the buffered records' tails, end to end
  std::size_t buffer_bytes_ = 0;
  std::vector<std::string> spills_;
  std::uint64_t next_seq_ = 0;
  bool any_signed_ = false;       // a document added with a signature
  bool wrote_time_keys_ = false;  // Finish wrote time keys, to sync before the ingestion
  bool finished_ = false;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_WRITE_BULK_LOAD_H_
