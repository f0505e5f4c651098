// Whole-store scans (docs/design.md, "Whole-store scans"): FindAll,
// Clusters and ForEachDocument, and the runs of table entries that share a
// table's prefix that FindAll, Clusters and the rewrites of the lone bits
// read. Each scan reads every table at one snapshot: from every document
// read once and each table sorted in memory when the store fits the scan's
// budget, else from the tables in key order.
//
// Thread safety: thread-safe. A scan holds no lock after taking its
// snapshot, so its callbacks may write to the store.

#ifndef FPSTORE_LIB_STORE_SCANS_H_
#define FPSTORE_LIB_STORE_SCANS_H_

#include <rocksdb/db.h>

#include <atomic>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "fpstore/store.h"
#include "plan/table_entry.h"
#include "store/documents.h"
#include "store/locks.h"
#include "store/staging.h"
#include "store/tables.h"

namespace fpstore::internal {

class Scanner {
 public:
  Scanner(rocksdb::DB& db, const Tables& tables, const Staging& staging, const Documents& documents,
          StoreLocks& locks, const std::atomic<bool>& closing)
      : db_(db),
        tables_(tables),
        plan_(tables.plan()),
        staging_(staging),
        documents_(documents),
        locks_(locks),
        closing_(closing) {}

  // A snapshot of every table, the staging marks and the documents in one
  // state, taken outside a bulk load's ingestion. Reads at it stay put
  // while merges and loads go on. With `filters`, also the member filters
  // of that moment, which cover every member at the snapshot. The caller
  // releases it.
  const rocksdb::Snapshot* WholeSnapshot(TableFilters::View* filters = nullptr) const
      EXCLUDES(locks_.readers);

  // Sees a run of two or more entries that share table `table`'s prefix,
  // sorted as the table holds them; called from several threads at once,
  // each table's runs from one.
  using RunVisitor = std::function<void(std::size_t table, std::span<const TableEntry> run)>;
  // Which runs a scan from the tables visits in a table without ids: those
  // within the plan's distance of another, cut down to them, with their
  // ids (FindAll, Clusters); or every run, with id 0 for what the table
  // holds. A scan in memory visits every run, with ids.
  enum class Runs { kLinkedWithIds, kEvery };
  // Which versions a scan sees: the documents' current ones; or also those
  // still in the tables whose removal is staged, as the lone bits count
  // them.
  enum class Versions { kCurrent, kAlsoLeaving };

  // Every table's runs at `snapshot`, which shows every table in one state,
  // tables spread over threads.
  Status ScanRunsAt(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                    const RunVisitor& visit_run, Runs runs,
                    Versions versions = Versions::kCurrent) const;

  Status FindAll(int k, const std::function<void(const NearPair&)>& sink,
                 const ScanOptions& scan) const;
  Status Clusters(int k, const std::function<void(std::span<const DocumentId>)>& sink,
                  const ScanOptions& scan) const;
  Status ForEachDocument(const std::function<void(const Document&)>& sink,
                         const ScanOptions& scan) const;

 private:
  // ScanRunsAt from every document read once and each table sorted in
  // memory; false, having called nothing, when that needs more than
  // scan.memory_bytes.
  Result<bool> ScanRunsInMemory(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                                std::span<const StagedDocument> staged,
                                const RunVisitor& visit_run) const;
  // ScanRunsAt reading each table in key order, the staged documents
  // merged in.
  Status ScanRunsFromTables(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                            std::span<const StagedDocument> staged, const RunVisitor& visit_run,
                            Runs runs) const;
  // Every document at `snapshot`: table 0's members, unpermuted, read on
  // `threads` threads, and `staged`; none once more than `limit`.
  Result<std::optional<std::vector<IdFingerprint>>> ReadAllDocuments(
      const rocksdb::Snapshot* snapshot, std::span<const StagedDocument> staged, std::size_t limit,
      int threads) const;
  // The runs of every table at a whole snapshot.
  Status ScanRuns(const ScanOptions& scan, const RunVisitor& visit_run) const;

  rocksdb::DB& db_;
  const Tables& tables_;
  const PermutationPlan& plan_;
  const Staging& staging_;
  const Documents& documents_;
  StoreLocks& locks_;
  const std::atomic<bool>& closing_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_SCANS_H_
