// The RocksDB-backed Store (see include/fpstore/store.h, docs/format.md).

#ifndef FPSTORE_LIB_STORE_IMPL_H_
#define FPSTORE_LIB_STORE_IMPL_H_

#include <rocksdb/db.h>

#include <array>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <vector>

#include "fpstore/store.h"
#include "group_commit.h"
#include "key_codec.h"

namespace fpstore::internal {

// Column family names and metadata keys, fixed by the on-disk format.
inline constexpr char kDocumentsFamily[] = "documents";
inline constexpr char kFormatVersionKey[] = "fpstore.format_version";
inline constexpr char kPlanKey[] = "fpstore.plan";
inline constexpr char kFingerprintKey[] = "fpstore.fingerprint";
inline constexpr char kDocumentCountKey[] = "fpstore.document_count";
std::string TableFamilyName(std::size_t table);

class StoreImpl final : public Store {
 public:
  // Opens `path`, which must hold a store or be creatable as one.
  static Result<std::unique_ptr<Store>> Open(const std::string& path, const StoreOptions& options);

  ~StoreImpl() override;

  Status Close() override;
  const PermutationPlan& plan() const override { return plan_; }
  const Fingerprinter& fingerprinter() const override { return fingerprinter_; }

  Status Insert(DocumentId id, Fingerprint fingerprint, std::string_view metadata) override;
  Status InsertBatch(std::span<const NewDocument> docs) override;
  Status Remove(DocumentId id) override;
  Result<Document> Get(DocumentId id) const override;
  Result<std::vector<Match>> Query(Fingerprint fingerprint, int k) const override;
  Result<std::vector<std::vector<Match>>> QueryBatch(std::span<const Fingerprint> fingerprints,
                                                     int k) const override;
  // QueryBatch for a caller that holds ingest_mu_.
  Result<std::vector<std::vector<Match>>> QueryBatchLocked(
      std::span<const Fingerprint> fingerprints, int k) const;
  Result<CheckResult> CheckAndInsert(DocumentId id, Fingerprint fingerprint,
                                     std::string_view metadata, InsertPolicy policy) override;
  Status FindAll(int k, const std::function<void(const NearPair&)>& sink,
                 const ScanOptions& scan) const override;
  Status Clusters(int k, const std::function<void(std::span<const DocumentId>)>& sink,
                  const ScanOptions& scan) const override;
  Status ForEachDocument(const std::function<void(const Document&)>& sink,
                         const ScanOptions& scan) const override;
  Result<std::unique_ptr<BulkLoader>> NewBulkLoader(const BulkLoadOptions& options) override;
  Status Compact(const ScanOptions& scan) override;
  Result<StoreStats> Stats() const override;
  Status Verify(const ScanOptions& scan) const override;
  Status Checkpoint(const std::string& dir) const override;

 private:
  friend class BulkLoaderImpl;

  // A candidate found in one table, before its metadata is fetched.
  struct Hit {
    DocumentId id;
    Fingerprint fingerprint;
    int distance;
  };

  StoreImpl(std::string path, StoreOptions options, int format_version, PermutationPlan plan,
            Fingerprinter fingerprinter, std::unique_ptr<rocksdb::DB> db,
            std::vector<rocksdb::ColumnFamilyHandle*> handles);

  Status CheckOpen() const;
  Status CheckWritable() const;
  Status CheckDistance(int k) const;

  // A document to write and the fingerprint its id has now, if any.
  struct PendingInsert {
    const NewDocument* doc;
    std::optional<Fingerprint> old;
  };

  // Adds to `batch` what it takes to make each document current: its record,
  // and in every table the new key and the deletion of the old one. Returns
  // how many documents are new.
  int StageInserts(rocksdb::WriteBatch& batch, std::span<const PendingInsert> inserts) const;

  // The fingerprint document `id` has now, or nullopt; reads the latest state.
  Result<std::optional<Fingerprint>> CurrentFingerprint(DocumentId id) const;
  // The same for many ids at once. REQUIRES: `ids` sorted.
  Result<std::vector<std::optional<Fingerprint>>> CurrentFingerprints(
      std::span<const DocumentId> ids) const;

  // Writes `batch` to the log and memtables without waiting for the disk.
  // Other writers may see it at once; it is in the log before anything they
  // write after seeing it, so a later sync covers it too.
  Status WriteUnsynced(rocksdb::WriteBatch& batch);
  // Waits until everything written so far is as durable as
  // options_.durability promises. Called without locks held, so that
  // concurrent writers share fsyncs.
  Status MakeDurable();

  // Finds the hits of `query` in table `t`, whose iterator `it` is at
  // snapshot; each document is found in exactly one table.
  Status ScanTable(rocksdb::Iterator& it, std::size_t t, Fingerprint query, int k,
                   std::vector<Hit>& hits) const;

  // Fetches metadata for `hits` at `snapshot` and orders them nearest first.
  Result<std::vector<Match>> ToMatches(std::vector<Hit> hits,
                                       const rocksdb::Snapshot* snapshot) const;

  // Every table entry in key order per table, spread over threads.
  // `visit_run` sees each run of entries sharing the table's prefix.
  Status ScanRuns(const ScanOptions& scan,
                  const std::function<void(std::size_t table, std::span<const TableEntry> run)>&
                      visit_run) const;

  std::mutex& StripeFor(DocumentId id) const;

  rocksdb::ColumnFamilyHandle* documents_family() const { return handles_[1]; }
  rocksdb::ColumnFamilyHandle* table(std::size_t t) const { return handles_[2 + t]; }
  rocksdb::ColumnFamilyHandle* meta() const { return handles_[0]; }

  const std::string path_;
  const StoreOptions options_;
  const int format_version_;  // as recorded in the store
  const PermutationPlan plan_;
  const Fingerprinter fingerprinter_;
  std::unique_ptr<rocksdb::DB> db_;
  // [0] default (metadata), [1] documents, [2 + t] table t.
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  GroupCommit group_commit_;

  // Writers to one id take its stripe so that read-old-then-write is atomic.
  mutable std::array<std::mutex, 64> stripes_;
  // Shared by every read and write, exclusive while a bulk load ingests:
  // RocksDB installs ingested files family by family, and no reader may
  // see some tables with them and some without.
  mutable std::shared_mutex ingest_mu_;
  // Serialises CheckAndInsert's look-then-write.
  std::mutex check_mu_;
  bool closed_ = false;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_IMPL_H_
