// Merges (docs/design.md, "The life of an insert"): staged documents move into the tables in one
// ingestion per batch (table changes and mark deletions), in the background once
// the staging index is full, and on Flush.
//
// Thread safety: thread-safe.

#ifndef FPSTORE_LIB_WRITE_MERGER_H_
#define FPSTORE_LIB_WRITE_MERGER_H_

#include <rocksdb/db.h>

#include <atomic>
#include <cstddef>
#include <span>
#include <string>
#include <thread>

#include "format/records.h"
#include "ingest/scratch_dir.h"
#include "ingest/table_writer.h"
#include "read/staging.h"
#include "write/ingestion.h"
#include "write/locks.h"

namespace fpstore::internal {

class Merger {
 public:
  // `memory_bytes`: the budget of a merge's sorts.
  Merger(rocksdb::DB& db, Staging& staging, Ingestion& ingestion, StoreLocks& locks,
         std::string store_path, std::size_t memory_bytes)
      : db_(db),
        staging_(staging),
        ingestion_(ingestion),
        locks_(locks),
        store_path_(std::move(store_path)),
        memory_bytes_(memory_bytes) {}
  ~Merger() { Stop(); }
  Merger(const Merger&) = delete;
  Merger& operator=(const Merger&) = delete;

  // Merges in the background whenever the staging index is full, until Stop.
  void Start();
  void Stop();

  // Merges what is staged so far, ahead of the background merger; returns once done.
  Status MergeNow() EXCLUDES(locks_.merge);

 private:
  Status Merge() REQUIRES(locks_.merge);
  Status WriteFiles(std::span<const StagedDocument> staged, const ScratchDir& dir,
                    TableWriter::Output& out) REQUIRES(locks_.merge);

  rocksdb::DB& db_;
  Staging& staging_;
  Ingestion& ingestion_;
  StoreLocks& locks_;
  const std::string store_path_;
  const std::size_t memory_bytes_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_WRITE_MERGER_H_
