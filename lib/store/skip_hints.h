// Hints that let a query skip tables (docs/design.md, "Hits that skip tables"). A query that has
// found fingerprint F probes every other table where it shares F's prefix only to meet F again,
// unless another fingerprint shares that prefix; F's lone bit t says none has its table-t prefix.
//
// The crowded family holds the bits of fingerprints not alone everywhere: a bulk load into an empty
// store writes it, a rewrite (Compact, or in the background) replaces it. Fingerprints entering the
// tables between rewrites get no bits; no bit counts for their prefixes (RecentPrefixes).
//
// Thread safety: thread-safe.

#ifndef FPSTORE_LIB_STORE_SKIP_HINTS_H_
#define FPSTORE_LIB_STORE_SKIP_HINTS_H_

#include <rocksdb/db.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "format/records.h"
#include "fpstore/permutation.h"
#include "fpstore/status.h"
#include "fpstore/store.h"
#include "ingest/scratch_dir.h"
#include "store/ingest_guard.h"
#include "store/locks.h"
#include "store/recent_prefixes.h"
#include "store/scans.h"

namespace fpstore::internal {

class SkipHints {
 public:
  // `recent_epoch`: the recent family's compaction filter's (format/families.h), set here.
  SkipHints(rocksdb::DB& db, const PermutationPlan& plan, rocksdb::ColumnFamilyHandle* crowded,
            rocksdb::ColumnFamilyHandle* recent, rocksdb::ColumnFamilyHandle* meta,
            std::shared_ptr<std::atomic<std::uint64_t>> recent_epoch, StoreLocks& locks,
            const Scanner& scanner, const IngestGuard& guard, std::string store_path,
            const std::atomic<bool>& closing);
  ~SkipHints() { StopRewrites(); }
  SkipHints(const SkipHints&) = delete;
  SkipHints& operator=(const SkipHints&) = delete;

  // Reads the recent family into memory, at open.
  Status Load();

  // The store's recent epoch at `snapshot` (null: the latest state): the recent family's entries
  // of earlier epochs are no longer recent (format/records.h).
  Result<std::uint64_t> RecentEpoch(const rocksdb::Snapshot* snapshot) const;
  // Runs `read` with no rewrite ending meanwhile, so that the store's recent epoch stays as it was
  // (the compaction filter drops entries of older epochs even from under a snapshot).
  void WithNoRewriteEnding(const std::function<void()>& read) const;
  // A recent-family entry's epoch and fingerprint; Corruption if the key or value is malformed.
  static Result<RecentEntry> DecodeRecentEntry(const rocksdb::Slice& key,
                                               const rocksdb::Slice& value);

  // ---- Queries ----

  // Whether queries may use the bits: not once the recent prefixes are full (holding every prefix).
  bool usable() const { return !recent_.full(); }
  // The lone bits of each of `fingerprints` at `snapshot`, in one batched read of the crowded
  // family, whose filters answer for most without a read.
  Result<std::vector<LoneBits>> Read(std::span<const Fingerprint> fingerprints,
                                     const rocksdb::Snapshot* snapshot) const;
  // The tables after t where a query of `query` that found `hit` (lone bits `bits`) has nothing
  // left to find: it shares the hit's prefix there, the hit is alone, and the prefix is not recent.
  LoneBits Skippable(Fingerprint query, Fingerprint hit, LoneBits bits, std::size_t t) const;

  // ---- What enters the tables ----

  // Before an ingestion other than a load into an empty store, adds the `fingerprints` it brings to
  // the recent prefixes (a query that sees their entries must see their prefixes), and writes them
  // to `path`, a recent-family file for it (appended to `args`). REQUIRES: the merge lock held.
  Status AddRecent(std::vector<Fingerprint> fingerprints, const std::string& path,
                   std::vector<rocksdb::IngestExternalFileArg>& args);

  // ---- Rewrites ----

  // Writes every fingerprint's bits anew from the tables at one snapshot, while merges go on, and
  // forgets the recent fingerprints merged before it; `in_background` scans at the lowest priority.
  Status Rewrite(const ScanOptions& scan, bool in_background) EXCLUDES(locks_.rewrite);
  // Starts a writable store's background rewrites, each once a merge has run since the open and the
  // recent fingerprints reach the threshold (test_hooks.h) for about documents() documents.
  void StartRewrites(std::function<std::uint64_t()> documents);
  // A merge moved documents into the tables.
  void MergeEnded();
  void StopRewrites();

  // Fingerprints merged, or loaded into a non-empty store, since the bits were last written.
  std::uint64_t recent_count() const { return recent_.size(); }

 private:
  // Rewrite's work between the seal and its end: writes the bits, and with them `next_epoch` as
  // the store's recent epoch.
  Status RewriteSealed(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                       std::uint64_t next_epoch, bool in_background);
  // Ends a rewrite begun by sealing recent_: if it wrote the bits and the store's recent epoch
  // (`next_epoch` given, that of the fingerprints merged since the seal), compactions may drop
  // the entries of the epochs before, and recent_ drops the sealed ones.
  Status EndRewrite(std::optional<std::uint64_t> next_epoch) EXCLUDES(locks_.merge);
  bool RewriteDue() const;
  void RewriteWhenDue();

  rocksdb::DB& db_;
  const PermutationPlan& plan_;
  rocksdb::ColumnFamilyHandle* const crowded_;
  rocksdb::ColumnFamilyHandle* const recent_family_;
  rocksdb::ColumnFamilyHandle* const meta_;
  // The store's recent epoch, as the recent family's compaction filter reads it.
  const std::shared_ptr<std::atomic<std::uint64_t>> recent_epoch_;
  StoreLocks& locks_;
  const Scanner& scanner_;
  const IngestGuard& guard_;
  const std::string store_path_;  // where rewrites write their files
  const std::atomic<bool>& closing_;

  // Add and Seal under locks_.merge; DropSealed under it and locks_.readers; the rest at any time.
  RecentPrefixes recent_;
  // The epoch AddRecent writes: raised when a rewrite seals recent_. Guarded by the merge lock
  // (set by Load before any merge).
  std::uint64_t entry_epoch_ = 0;

  // The background rewrites' thread, and the recent fingerprints it counts
  // from (those a failed rewrite left: it waits for as many again).
  Mutex mu_;
  CondVar cv_;                           // a merge ended, or stop
  bool merged_ GUARDED_BY(mu_) = false;  // since the open
  bool stopping_ GUARDED_BY(mu_) = false;
  std::function<std::uint64_t()> documents_;
  std::atomic<std::uint64_t> rewrite_after_{0};
  std::thread rewriter_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_SKIP_HINTS_H_
