// Hints that let a query skip tables (docs/design.md, "Hits that skip
// tables"). A query that has found fingerprint F probes every other table
// where it shares F's prefix only to meet F again, unless another
// fingerprint shares that prefix. F's lone bits say where none does: bit t
// set, no other fingerprint has F's table-t prefix.
//
// The crowded family holds the bits of the fingerprints that are not alone
// everywhere; a bulk load into an empty store writes it, and a rewrite
// (Compact, or the store in the background once enough fingerprints came
// since) replaces it whole. Fingerprints that enter the tables between
// rewrites get no bits: their prefixes go into the recent family, and in
// memory into RecentPrefixes, and no bit is trusted for a prefix that holds
// one of them.
//
// Thread safety: thread-safe.

#ifndef FPSTORE_LIB_STORE_SKIP_HINTS_H_
#define FPSTORE_LIB_STORE_SKIP_HINTS_H_

#include <rocksdb/db.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "format/records.h"
#include "fpstore/permutation.h"
#include "fpstore/status.h"
#include "fpstore/store.h"
#include "ingest/scratch_dir.h"
#include "store/locks.h"
#include "store/recent_prefixes.h"
#include "store/scans.h"

namespace fpstore::internal {

class SkipHints {
 public:
  SkipHints(rocksdb::DB& db, const PermutationPlan& plan, rocksdb::ColumnFamilyHandle* crowded,
            rocksdb::ColumnFamilyHandle* recent, StoreLocks& locks, const Scanner& scanner,
            std::string store_path, const std::atomic<bool>& closing);
  ~SkipHints() { StopRewrites(); }
  SkipHints(const SkipHints&) = delete;
  SkipHints& operator=(const SkipHints&) = delete;

  // Reads the recent family into memory, at open.
  Status Load();

  // ---- Queries ----

  // Whether queries may use the bits: not while the recent prefixes are
  // too many to hold (they then hold every prefix).
  bool usable() const { return !recent_.full(); }
  // The lone bits of each of `fingerprints` at `snapshot`, in one batched
  // read of the crowded family, whose filters answer for most without a
  // read.
  Result<std::vector<LoneBits>> Read(std::span<const Fingerprint> fingerprints,
                                     const rocksdb::Snapshot* snapshot) const;
  // The tables after t that a query of `query`, having found `hit` with
  // bits `bits`, leaves nothing to find in: those where it shares the
  // hit's prefix and the hit is alone, unless the prefix is recent.
  LoneBits Skippable(Fingerprint query, Fingerprint hit, LoneBits bits, std::size_t t) const;

  // ---- What enters the tables ----

  // Adds `fingerprints`, about to enter the tables by an ingestion that is
  // not a load into an empty store, to the recent prefixes, and writes them
  // to `path`, a file of the recent family for that ingestion (appended to
  // `args`). Before the ingestion: a query that sees their entries must see
  // their prefixes. REQUIRES: the merge lock held.
  Status AddRecent(std::vector<Fingerprint> fingerprints, const std::string& path,
                   std::vector<rocksdb::IngestExternalFileArg>& args);

  // ---- Rewrites ----

  // Writes every fingerprint's bits anew from the tables at one snapshot,
  // while merges go on, and forgets the recent fingerprints merged before
  // it. `in_background`: its scans run at the lowest CPU priority.
  Status Rewrite(const ScanOptions& scan, bool in_background) EXCLUDES(locks_.rewrite);
  // Starts the background rewrites of a writable store: once a merge has
  // run since the open, and the recent fingerprints reach the threshold
  // (test_hooks.h) for a store of about documents() documents.
  void StartRewrites(std::function<std::uint64_t()> documents);
  // A merge moved documents into the tables.
  void MergeEnded();
  void StopRewrites();

  // Fingerprints merged, or loaded into a store that was not empty, since
  // the bits were last written.
  std::uint64_t recent_count() const { return recent_.size(); }
  // The recent fingerprints at `snapshot`, ascending, for Verify.
  Result<std::vector<Fingerprint>> RecentAt(const rocksdb::Snapshot* snapshot) const;

 private:
  // Rewrite's work between the seal and its end.
  Status RewriteSealed(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                       bool in_background);
  // Ends a rewrite begun by sealing recent_: if `rewritten`, the recent
  // family keeps only the fingerprints merged since, and recent_ drops the
  // sealed ones.
  Status EndRewrite(bool rewritten) EXCLUDES(locks_.merge);
  bool RewriteDue() const;
  void RewriteWhenDue();

  rocksdb::DB& db_;
  const PermutationPlan& plan_;
  rocksdb::ColumnFamilyHandle* const crowded_;
  rocksdb::ColumnFamilyHandle* const recent_family_;
  StoreLocks& locks_;
  const Scanner& scanner_;
  const std::string store_path_;  // where rewrites write their files
  const std::atomic<bool>& closing_;

  // Add and Seal with locks_.merge held; DropSealed with it and
  // locks_.readers held too; MayHold, full and size at any time.
  RecentPrefixes recent_;
  // While a rewrite runs: the fingerprints merged since it sealed recent_,
  // which stay recent when it ends.
  // Guarded by the merge lock.
  std::optional<std::vector<Fingerprint>> unsealed_;

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
