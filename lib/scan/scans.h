// Whole-store scans (docs/design.md, "Whole-store scans"): FindAll, Clusters and ForEachDocument,
// each at one snapshot, reading the runs of entries sharing a table's prefix, sorted in memory if
// the store fits the budget, else in key order.
//
// Thread safety: thread-safe. A scan holds no lock after taking its snapshot, so its callbacks may
// write to the store.

#ifndef FPSTORE_LIB_SCAN_SCANS_H_
#define FPSTORE_LIB_SCAN_SCANS_H_

#include <rocksdb/db.h>

#include <atomic>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "format/records.h"
#include "format/time_index.h"
#include "fpstore/store.h"
#include "plan/table_entry.h"
#include "read/staging.h"
#include "read/tables.h"

namespace fpstore::internal {

class Scanner {
 public:
  Scanner(rocksdb::DB& db, const Tables& tables, const Staging& staging, const Documents& documents,
          const TimeIndex& times, const std::atomic<bool>& closing)
      : db_(db),
        tables_(tables),
        plan_(tables.plan()),
        staging_(staging),
        documents_(documents),
        times_(times),
        closing_(closing) {}

  // A snapshot of the tables, staging marks and documents in one state; with `filters`, the member
  // filters covering it. The caller releases it.
  const rocksdb::Snapshot* WholeSnapshot(TableFilters::View* filters = nullptr) const;

  // Sees a run of 2+ entries sharing `table`'s prefix, in order; each table's runs on one thread.
  // In a table without ids, a key-order scan visits only entries within the plan's distance of
  // another, with ids; a scan in memory visits every run, with ids.
  using RunVisitor = std::function<void(std::size_t table, std::span<const TableEntry> run)>;

  // Pairs and clusters within k, confirmed by similarity (store.h); the records are read to
  // confirm them only when some document was written with a signature (Documents::AnySigned).
  // Documents whose time is before `expired_before` (past the retention) are in none: the times
  // family names them.
  Status FindAll(int k, double min_similarity, DocumentTime expired_before,
                 const std::function<void(const NearPair&)>& sink, const ScanOptions& scan) const;
  Status Clusters(int k, double min_similarity, DocumentTime expired_before,
                  const std::function<void(std::span<const DocumentId>)>& sink,
                  const ScanOptions& scan) const;
  Status ForEachDocument(DocumentTime expired_before,
                         const std::function<void(const Document&)>& sink,
                         const ScanOptions& scan) const;

 private:
  // Every table's runs at `snapshot` (showing all tables in one state), on several threads.
  Status ScanRunsAt(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                    const RunVisitor& visit_run) const;
  // ScanRunsAt with the documents read once and each table sorted in memory; false, having visited
  // nothing, if that needs more than scan.memory_bytes.
  Result<bool> ScanRunsInMemory(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                                std::span<const StagedDocument> staged,
                                const RunVisitor& visit_run) const;
  // ScanRunsAt reading each table in key order, merging in the staged documents.
  Status ScanRunsFromTables(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                            std::span<const StagedDocument> staged,
                            const RunVisitor& visit_run) const;
  // Every document at `snapshot`: table 0's members, unpermuted, read on `threads` threads, and
  // `staged`; none once more than `limit`.
  Result<std::optional<std::vector<IdFingerprint>>> ReadAllDocuments(
      const rocksdb::Snapshot* snapshot, std::span<const StagedDocument> staged, std::size_t limit,
      int threads) const;

  rocksdb::DB& db_;
  const Tables& tables_;
  const PermutationPlan& plan_;
  const Staging& staging_;
  const Documents& documents_;
  const TimeIndex& times_;
  const std::atomic<bool>& closing_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_SCAN_SCANS_H_
