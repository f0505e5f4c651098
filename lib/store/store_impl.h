// The RocksDB-backed Store (include/fpstore/store.h): coordinates the components that own its
// state (docs/design.md, "The store's components"); runs the write path under locks.h's locks.

#ifndef FPSTORE_LIB_STORE_STORE_IMPL_H_
#define FPSTORE_LIB_STORE_STORE_IMPL_H_

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "format/recorded_options.h"
#include "fpstore/store.h"
#include "platform/freed_memory.h"
#include "store/documents.h"
#include "store/key_locks.h"
#include "store/ingestion.h"
#include "store/locks.h"
#include "store/log_sync.h"
#include "store/merger.h"
#include "store/query.h"
#include "store/read_pool.h"
#include "store/scans.h"
#include "store/staging.h"
#include "store/tables.h"
#include "store/verify.h"

namespace fpstore::internal {

// An open store's column families, in docs/format.md's order; destroyed by Close.
struct Families {
  rocksdb::ColumnFamilyHandle* meta;
  rocksdb::ColumnFamilyHandle* documents;
  rocksdb::ColumnFamilyHandle* staging;
  std::vector<rocksdb::ColumnFamilyHandle*> tables;
  // All of them, as RocksDB's open listed them.
  std::vector<rocksdb::ColumnFamilyHandle*> all;
};

class StoreImpl final : public Store {
 public:
  // Opens the store at `path`. A writable store writes its LOG through `info_log` when given,
  // through one of its own otherwise.
  static Result<std::unique_ptr<StoreImpl>> Open(const std::string& path,
                                                 const StoreOptions& options,
                                                 std::shared_ptr<rocksdb::Logger> info_log = {});
  ~StoreImpl() override;

  // OK, or why this handle writes nothing more: a hard RocksDB error, or a merge's failure.
  Status WritesStopped() const;

  Status Close() override;
  const PermutationPlan& plan() const override { return plan_; }
  const Fingerprinter& fingerprinter() const override { return fingerprinter_; }
  using Store::CheckAndInsert;
  using Store::Query;
  using Store::QueryBatch;
  Status InsertBatch(std::span<const NewDocument> docs) override;
  Status Remove(DocumentId id) override;
  Result<Document> Get(DocumentId id) const override;
  Result<std::vector<Match>> Query(const Sketch& query, const QueryOptions& options) const override;
  Result<std::vector<std::vector<Match>>> QueryBatch(std::span<const Sketch> queries,
                                                     const QueryOptions& options) const override;
  Result<CheckResult> CheckAndInsert(const NewDocument& doc, InsertPolicy policy,
                                     const QueryOptions& options) override;
  Status FindAll(int k, const std::function<void(const NearPair&)>& sink,
                 const ScanOptions& scan) const override;
  Status Clusters(int k, const std::function<void(std::span<const DocumentId>)>& sink,
                  const ScanOptions& scan) const override;
  Status ForEachDocument(const std::function<void(const Document&)>& sink,
                         const ScanOptions& scan) const override;
  Result<std::unique_ptr<BulkLoader>> NewBulkLoader(const BulkLoadOptions& options) override;
  Status Flush() override;
  Status Compact(const ScanOptions& scan) override;
  Result<StoreStats> Stats() const override;
  Status Verify(const ScanOptions& scan) const override;
  Status Checkpoint(const std::string& dir) const override;

 private:
  StoreImpl(std::string path, StoreOptions options, PermutationPlan plan,
            Fingerprinter fingerprinter, double min_similarity, int group_bits,
            std::unique_ptr<rocksdb::DB> db, Families families,
            std::shared_ptr<TableFilters> filters, std::unique_ptr<rocksdb::Env> env,
            std::shared_ptr<const BackgroundErrors> background_errors,
            std::shared_ptr<HeldDeletions> held_deletions);
  // Loads the components from the families; starts a writable store's background work.
  Status Start();

  Status CheckOpen() const;
  Status CheckWritable() const;
  // What a call's options mean for this store: its defaults filled in, each checked.
  Result<Matching> MatchingFor(std::optional<int> distance,
                               std::optional<double> min_similarity) const;

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
    std::optional<Fingerprint> stored;
    bool staged = false;
    std::optional<Fingerprint> leaving;
    // The fingerprint its table entries have, if it has any.
    std::optional<Fingerprint> in_tables() const { return stored && !staged ? stored : leaving; }
  };
  // The versions of each of `ids` (sorted). REQUIRES: the ids held.
  Result<std::vector<IdVersions>> CurrentVersions(std::span<const DocumentId> ids) const;
  // Writes, unsynced, each of `docs` (one per id of `ids`, sorted) with its staging mark (naming
  // any version still in the tables), after adding the staged versions to the staging index.
  // REQUIRES: the locks of a write.
  Status WriteInserts(std::span<const DocumentId> ids, std::span<const NewDocument* const> docs);
  // Writes `batch` unsynced: visible at once, durable after a later sync.
  Status WriteUnsynced(rocksdb::WriteBatch& batch);
  // Waits until all writes so far are as durable as options_.durability promises. Called without
  // locks, so that writers share syncs.
  Status MakeDurable();

  // First, so destroyed last (platform/freed_memory.h).
  FreedMemoryReturn freed_memory_;

  const std::string path_;
  std::string writer_key_;       // the claim on path_ a writer gives back on Close (open.cc)
  std::string dropped_at_open_;  // what the open dropped from a damaged log (open.cc)
  const StoreOptions options_;
  const PermutationPlan plan_;
  const Fingerprinter fingerprinter_;
  const double min_similarity_;  // recorded at creation
  // A writable store's file system (ingest_guard.h), which RocksDB uses until db_ is closed.
  const std::unique_ptr<rocksdb::Env> env_;
  std::unique_ptr<rocksdb::DB> db_;
  Families families_;
  const std::shared_ptr<const BackgroundErrors> background_errors_;
  const IngestGuard ingest_guard_;

  // Set by Close: scans still running stop early.
  std::atomic<bool> closing_{false};
  bool closed_ = false;

  StoreLocks locks_;
  KeyLocks keys_;
  // The staging index's plan, (k + 1, k): whose prefixes are CheckAndInsert's near keys.
  const PermutationPlan near_plan_;
  LogSync log_sync_;
  ReadPool read_pool_{kReadThreads};
  Documents documents_;
  Tables tables_;
  Staging staging_;
  Scanner scanner_;
  Ingestion ingestion_;
  Merger merger_;
  QueryRunner queries_;
  Verifier verifier_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_STORE_IMPL_H_
