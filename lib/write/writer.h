// The embedded store's writes (docs/design.md, "The life of an insert"): Insert, InsertBatch,
// Remove and CheckAndInsert stage documents (read/staging.h) under the store's locks (locks.h),
// the merger moves them into the tables (merger.h), Flush merges at once, and bulk loads write the
// tables directly (bulk_load.h). On top of the reads (read/reader.h).
//
// Thread safety: thread-safe.

#ifndef FPSTORE_LIB_WRITE_WRITER_H_
#define FPSTORE_LIB_WRITE_WRITER_H_

#include <rocksdb/write_batch.h>

#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "faults/background_errors.h"
#include "faults/ingest_guard.h"
#include "plan/table_entry.h"
#include "read/reader.h"
#include "util/sweeper.h"
#include "write/ingestion.h"
#include "write/key_locks.h"
#include "write/locks.h"
#include "write/log_sync.h"
#include "write/merger.h"

namespace fpstore::internal {

class Writer : public Reader {
 public:
  using Store::CheckAndInsert;
  Result<InsertStats> InsertBatch(std::span<const NewDocument> docs) override;
  Status Remove(DocumentId id) override;
  Result<CheckResult> CheckAndInsert(const NewDocument& doc, InsertPolicy policy,
                                     const QueryOptions& options) override;
  Result<std::unique_ptr<BulkLoader>> NewBulkLoader(const BulkLoadOptions& options) override;
  Status Flush() override;
  Result<std::uint64_t> Expire(DocumentTime before) override;

  // OK, or why this handle writes nothing more: a hard RocksDB error, or a merge's failure.
  Status WritesStopped() const;

 protected:
  // `held`: the file system a writable store's RocksDB was opened with (faults/ingest_guard.h).
  Writer(OpenedStore opened, std::shared_ptr<const BackgroundErrors> background_errors,
         std::shared_ptr<HeldDeletions> held);

  Status CheckWritable() const;
  // A writable store's background work, from its open until its close: merges, and the sweep
  // that removes the documents past a retention.
  void StartBackground();
  void StopBackground();

 private:
  // A write's locks: staging room, the writers' lock shared, its keys; released room last.
  struct WriteLocks {
    Staging::Room room;
    std::optional<ReaderLock> writers;
    KeyLocks::Held keys;

    void Release() {
      keys = {};
      writers.reset();
      room = {};
    }
  };
  // Locks a write to `ids` (sorted, unique) that stages up to `staged` entries, with `near` keys
  // besides (CheckAndInsert's), waiting for staging room and for any merge moving one of the ids.
  Status LockForWrite(std::span<const DocumentId> ids, std::size_t staged, WriteLocks& locks,
                      std::span<const LockKey> near = {});

  // An id's versions: the stored one, if any, whether it is staged, and the fingerprint of one
  // still in the tables until the next merge takes it out.
  struct IdVersions {
    std::optional<Word> stored;
    DocumentTime stored_time = 0;  // if stored
    bool staged = false;
    std::optional<Word> leaving;
    // The fingerprint its table entries have, if it has any.
    std::optional<Word> in_tables() const { return stored && !staged ? stored : leaving; }
  };
  // The versions of each of `ids` (sorted). REQUIRES: the ids held.
  Result<std::vector<IdVersions>> CurrentVersions(std::span<const DocumentId> ids) const;
  // Writes, unsynced, each of `docs` (one per id of `ids`, sorted) with its staging mark (naming
  // any version still in the tables), after adding the staged versions to the staging index. A
  // document without a time takes `now`. REQUIRES: the locks of a write.
  Result<InsertStats> WriteInserts(std::span<const DocumentId> ids,
                                   std::span<const NewDocument* const> docs, DocumentTime now);
  // Gives each of `matches` still stored as matched `time` if it is later (refresh_matches);
  // sets *kept to how many are still stored as matched. REQUIRES: no locks held.
  Status Refresh(std::span<const Match> matches, DocumentTime time, std::size_t* kept);
  // Adds to `batch` the removal of document `id`, stored as `old` says. REQUIRES: the id held, with
  // room to stage a mark.
  void StageRemoval(rocksdb::WriteBatch& batch, DocumentId id, const IdVersions& old);
  // Expire's one round: removes the documents of up to `limit` of the oldest keys before `before`
  // (and the stale keys among them); sets *removed, and *done when no key before it is left.
  Status ExpireRound(DocumentTime before, std::size_t limit, std::uint64_t* removed, bool* done);
  // Rounds until no key before `before` is left or `stopping` is set; then syncs as a write does.
  Result<std::uint64_t> ExpireBefore(DocumentTime before, const std::atomic<bool>& stopping);
  // The sweeper's work: the documents past the retention, now.
  Status SweepExpired(const std::atomic<bool>& stopping);
  // Writes `batch` unsynced: visible at once, durable after a later sync.
  Status WriteUnsynced(rocksdb::WriteBatch& batch);
  // Waits until all writes so far are as durable as options_.durability promises. Called without
  // locks, so that writers share syncs.
  Status MakeDurable();

  const std::shared_ptr<const BackgroundErrors> background_errors_;
  const IngestGuard ingest_guard_;
  StoreLocks locks_;
  KeyLocks keys_;
  // The staging index's plan, (k + 1, k): whose prefixes are CheckAndInsert's near keys.
  const PermutationPlan near_plan_;
  LogSync log_sync_;
  Ingestion ingestion_;
  Merger merger_;
  Sweeper sweeper_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_WRITE_WRITER_H_
