// The documents written since the last merge (docs/design.md, "Inserts are staged"): their marks in
// the staging family, and the in-memory index of their fingerprints (StagingIndex).
//
// Writers reserve index room before taking the store's locks (Reserve) and add entries before their
// write reaches RocksDB (Add), so a reader whose snapshot holds a write finds them. A merge sets
// the index aside (BeginMerge, under the writers' lock held alone, so that no writer is between
// its Add and its write) while writers go on into a fresh one, and retires it once its documents
// are in the tables (EndMerge). A reader takes its snapshot and the indexes together (ReadAt), so
// that an index retired after the snapshot stays in its view.
//
// Thread safety: thread-safe. The store's writers' lock (write/locks.h) orders writers against a
// merge's BeginMerge: the calls for writers say what they need held.

#ifndef FPSTORE_LIB_READ_STAGING_H_
#define FPSTORE_LIB_READ_STAGING_H_

#include <rocksdb/db.h>

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <unordered_set>
#include <vector>

#include "format/records.h"
#include "fpstore/document.h"
#include "fpstore/permutation.h"
#include "fpstore/simhash.h"
#include "fpstore/status.h"
#include "plan/table_entry.h"
#include "util/holding.h"
#include "util/mutex.h"
#include "util/zeroed_mapping.h"

namespace fpstore::internal {

// The in-memory index of staged documents, those in the staging family but not yet in the tables
// (docs/design.md, "Inserts are staged"). Queries probe it beside the tables.
//
// Entries are only ever added: a document replaced or removed while staged keeps its old entry
// until the index is merged and dropped. Readers check every candidate against the staging family
// at their snapshot, so an old entry costs a lookup, never a wrong answer; and as writers add
// entries before their write reaches RocksDB, a reader whose snapshot holds a write finds them.
//
// Its own plan, (k + 1, k) for the store's distance k, has only k + 1 tables: in memory a probe
// that meets a few more candidates costs little, while each table an insert updates costs a cache
// miss (the store's plan (6, 3) would take 20).
//
// Thread safety: Add and ForEachWithin may run concurrently.
class StagingIndex {
 public:
  struct Entry {
    DocumentId id;
    Word fingerprint;
  };

  // Room is capped: past it the index grows as it fills.
  static constexpr std::size_t kMaxRoom = std::size_t{1} << 21;

  // `distance`: the largest k queries will ask for, of fingerprints of `width` bits. `room`:
  // entries it takes before it first grows (rehashing every entry under the exclusive lock,
  // stalling writers and readers), allocated now.
  StagingIndex(int distance, int width, std::size_t room);
  StagingIndex(const StagingIndex&) = delete;
  StagingIndex& operator=(const StagingIndex&) = delete;

  // Makes room for `room` entries (at most kMaxRoom) if it has less: the memory is made and faulted
  // in before the lock is taken; under it, the entries already in are placed again.
  void Reserve(std::size_t room) EXCLUDES(mu_);

  // Empties the index, keeping its memory for reuse. REQUIRES: no other thread uses it.
  void Clear() EXCLUDES(mu_);

  // Entries and removals added, counting superseded ones.
  std::size_t size() const { return size_.load(std::memory_order_relaxed); }

  // Adds a batch at once: one lock, and the cache misses of its placements overlapped.
  void Add(std::span<const Entry> added) EXCLUDES(mu_);

  // A removal staged for `id`: this index's merge takes a version of it out of the tables, and
  // writers look for that version (HasRemoval) before they write the id again.
  void AddRemoval(DocumentId id) EXCLUDES(mu_);
  // Whether AddRemoval(id) was called. Cheap while none was.
  bool HasRemoval(DocumentId id) const EXCLUDES(mu_);

  // Calls visit(id, fingerprint, distance) once for every entry within k of `query`, under a shared
  // lock: `visit` must not call Add. REQUIRES: k <= the distance given at construction.
  template <typename Visit>
  void ForEachWithin(Word query, int k, Visit&& visit) const EXCLUDES(mu_) {
    ReaderLock lock(mu_);
    for (std::size_t t = 0; t < plan_.table_count(); ++t) {
      ForEachInTable(t, query, k, [&](const Entry& e) {
        const int d = HammingDistance(e.fingerprint, query);
        // Each entry once: in the first table where it shares the prefix.
        if (d <= k && plan_.FirstSharedTable(query, e.fingerprint) == static_cast<int>(t)) {
          visit(e.id, e.fingerprint, d);
        }
        return false;
      });
    }
  }

  // Whether an entry has this id and fingerprint: one table's probe.
  bool HoldsEntry(DocumentId id, Word fingerprint) const EXCLUDES(mu_);

  // Every id with an entry or a removal, ascending, each once.
  std::vector<DocumentId> SortedIds() const EXCLUDES(mu_);

 private:
  // entry: an index into entries_ plus one (0: empty); tag: the 32 permuted bits after the prefix.
  struct Bucket {
    std::uint32_t entry;
    std::uint32_t tag;
  };

  // Where a prefix's probe starts: the top bits of a multiplicative hash of the right-aligned
  // prefix (a left-aligned one's product has all-zero low bits). REQUIRES: `size` a power of two.
  std::size_t Slot(const TablePermutation& perm, Word permuted, std::size_t size) const {
    const Word prefix = permuted >> (plan_.bits() - perm.prefix_bits());
    // A 128-bit prefix folded into 64 bits; a 64-bit one as it is.
    const std::uint64_t folded = prefix.low() ^ (prefix.high() * 0xc2b2ae3d27d4eb4fULL);
    return static_cast<std::size_t>((folded * 0x9e3779b97f4a7c15ULL) >>
                                    (64 - std::countr_zero(size)));
  }
  std::uint32_t Tag(const TablePermutation& perm, Word permuted) const {
    const int p = perm.prefix_bits();
    if (p >= plan_.bits()) return 0;
    return static_cast<std::uint32_t>(HeadOf(permuted << p, plan_.bits()) >> 32);
  }
  // How many buckets keep `entries` at most half full: a power of two.
  static std::size_t BucketsFor(std::size_t entries);
  // Empty buckets, `per_table` for every table, faulted in when made (util/zeroed_mapping.h).
  ZeroedMapping EmptyBuckets(std::size_t per_table) const;
  const Bucket* TableBuckets(std::size_t t) const REQUIRES_SHARED(mu_) {
    return static_cast<const Bucket*>(buckets_.data()) + t * table_buckets_;
  }
  Bucket* TableBuckets(std::size_t t) REQUIRES(mu_) {
    return static_cast<Bucket*>(buckets_.data()) + t * table_buckets_;
  }
  // Calls visit(entry) for the entries table t files under `query`'s prefix with tags within k of
  // its, until visit returns true; returns whether it did.
  template <typename Visit>
  bool ForEachInTable(std::size_t t, Word query, int k, Visit&& visit) const REQUIRES_SHARED(mu_) {
    const TablePermutation& perm = plan_.table(t);
    const Word permuted = Permute(perm, query);
    const std::uint32_t tag = Tag(perm, permuted);
    const Bucket* buckets = TableBuckets(t);
    const std::size_t mask = table_buckets_ - 1;
    for (std::size_t b = Slot(perm, permuted, table_buckets_); buckets[b].entry != 0;
         b = (b + 1) & mask) {
      // A tag's distance is at most its fingerprint's: most entries are turned away unread.
      if (HammingDistance(buckets[b].tag, tag) > k) continue;
      if (visit(entries_[buckets[b].entry - 1])) return true;
    }
    return false;
  }
  // Places entries [begin, end) in table t.
  void Place(std::size_t t, std::size_t begin, std::size_t end) REQUIRES(mu_);
  // With buckets_ new and empty, `per_table` buckets a table: places every entry again.
  void PlaceAllIn(std::size_t per_table) REQUIRES(mu_);

  const PermutationPlan plan_;
  mutable SharedMutex mu_;
  std::vector<Entry> entries_ GUARDED_BY(mu_);
  // table_buckets_ per table, side by side: linear probing over prefix hashes, at most half full.
  ZeroedMapping buckets_ GUARDED_BY(mu_);
  std::size_t table_buckets_ GUARDED_BY(mu_);
  std::unordered_set<DocumentId> removals_ GUARDED_BY(mu_);
  std::atomic<std::size_t> removal_count_{0};
  std::atomic<std::size_t> size_{0};
};

class Staging {
 public:
  // `merge_at`: staged entries that make a merge due. A writable store keeps room for twice as
  // many, so that inserts go on while a merge runs.
  Staging(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* family, int distance, int width,
          std::size_t merge_at, bool writable);
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  rocksdb::ColumnFamilyHandle* family() const { return family_; }

  // Rebuilds the index from the family's marks, at open.
  Status Load() EXCLUDES(mu_);

  // ---- The family ----

  // The marks of `ids` (sorted) at `snapshot` (null: the latest state), in
  // one batched read; an id without one gets an empty mark.
  Result<std::vector<StagingMark>> Marks(const rocksdb::Snapshot* snapshot,
                                         std::span<const DocumentId> ids) const;
  // Every staged document at `snapshot`, by id; with `ids` (sorted, not
  // empty), only those from ids.front() to ids.back().
  Result<std::vector<StagedDocument>> Documents(const rocksdb::Snapshot* snapshot,
                                                std::span<const DocumentId> ids = {}) const;

  // ---- Queries ----

  // A snapshot of the store, with the indexes that hold every document staged at it.
  class ReadPoint {
   public:
    const rocksdb::Snapshot* snapshot() const { return snapshot_.get(); }

   private:
    friend class Staging;
    std::shared_ptr<const rocksdb::Snapshot> snapshot_;
    std::shared_ptr<const StagingIndex> current_, merging_;
  };
  // Takes a snapshot and the indexes at once: a merge's ingestion comes before it retires its
  // index, so the indexes taken with a snapshot hold what the snapshot shows staged.
  ReadPoint ReadAt() const EXCLUDES(mu_);
  // A snapshot alone, for a scan (which reads the marks, not the indexes); the caller releases it.
  const rocksdb::Snapshot* TakeSnapshot() const EXCLUDES(mu_);
  // Runs `ingest` while no snapshot is taken through ReadAt or TakeSnapshot (they wait): a bulk
  // load's ingestion, which then needs no snapshot of its own to keep a reader from seeing its
  // files half installed. Where no reader holds one either, RocksDB gives the files sequence number
  // 0, and need not rewrite them later to clear it (a pinned snapshot made it rewrite a whole
  // load's tables once the snapshot went). REQUIRES: `ingest` takes no snapshot through this.
  Status HoldingReadPoints(const std::function<Status()>& ingest) const EXCLUDES(mu_);

  struct Candidate {
    std::size_t query;  // index into the queries
    DocumentId id;
    Word fingerprint;
    int distance;
  };
  // The staged documents within k of each of `queries` at `at`, once per query (the marks weed out
  // superseded entries).
  Result<std::vector<Candidate>> Within(std::span<const Word> queries, int k,
                                        const ReadPoint& at) const;

  // ---- Writers ----

  // Index room for a writer's entries, held from before its locks until its entries are in, so that
  // writers together never make the index grow (rehashing under its lock).
  using Room = Holding<Staging, std::size_t>;
  // Waits until the index has room for `entries` more, then holds it; a batch too large goes alone
  // once fewer than merge_at are staged, and may grow the index. Fails if a merge failed. Makes the
  // room first if it is not made yet (MakeRoom).
  Result<Room> Reserve(std::size_t entries) EXCLUDES(mu_, room_mu_);
  // A store opened with nothing staged makes the index's room (util/zeroed_mapping.h) at its first
  // write, which calls this before any lock of the store: a store opened only to load or read never
  // pays for it. Once made, a load and a test; IOError, and nothing changed, if memory runs out.
  Status MakeRoom() EXCLUDES(mu_, room_mu_);

  // The calls below to Add, for writers, REQUIRE the writers' lock held, shared, from before their
  // mark's write until it is done (or alone, for a bulk load).

  // Whether a merge is moving any of `ids` (sorted) into the tables: their writers must wait for it
  // (WaitForMerge), as it copies their staged versions.
  bool Merging(std::span<const DocumentId> ids) const EXCLUDES(mu_);
  // Waits until no merge runs; the failure of one that did, if any.
  Status WaitForMerge() EXCLUDES(mu_);
  // Whether `id` may have a mark: `stored` is staged, or, with none stored, its removal is. Cheap
  // when it has none. Also for a bulk load, which holds the merge lock instead of the gate.
  bool MayHaveMark(DocumentId id, std::optional<Word> stored) const;
  // Adds entries or a removal, before the write of their marks reaches RocksDB.
  void Add(std::span<const StagingIndex::Entry> entries);
  void AddRemoval(DocumentId id);

  // A merge's failure: writes and loads stop until the store reopens; what is staged stays found.
  Status failure() const EXCLUDES(mu_);
  // Whether a merge failed, without the lock.
  bool failed() const { return failed_.load(std::memory_order_acquire); }

  // ---- The merger ----

  // Waits until a merge is due, a second at most; true if it is.
  bool WaitUntilDue() EXCLUDES(mu_);
  // The index for writers while a merge runs: the last one merged, emptied, if no reader's view
  // holds it any more (a new one's pages must fault in), else a new one. Made before any lock is
  // taken; null if nothing is staged.
  std::shared_ptr<StagingIndex> NextIndex() EXCLUDES(mu_);
  // Sets the staged index aside for a merge, `next` taking new entries; returns its ids ascending
  // (none if `next` is null), or an earlier merge's failure. REQUIRES: the writers' lock held
  // alone.
  Result<std::vector<DocumentId>> BeginMerge(std::shared_ptr<StagingIndex> next) EXCLUDES(mu_);
  // Retires the merge's index if `merged` is OK, else keeps it (its documents stay staged and
  // found) and records the failure. REQUIRES: the merge's files ingested, if `merged` is OK.
  void EndMerge(const Status& merged) EXCLUDES(mu_);
  // Wakes and refuses waiters: the store is closing.
  void Stop() EXCLUDES(mu_);

 private:
  friend Room;
  void GiveBack(std::size_t entries) EXCLUDES(mu_);
  std::size_t room() const { return 2 * merge_at_; }
  // The current index changes with both the writers' lock (held alone) and mu_ held, so either
  // lets a thread read it; the analysis knows only mu_. REQUIRES: the writers' lock held.
  StagingIndex& current() const NO_THREAD_SAFETY_ANALYSIS { return *current_; }

  rocksdb::DB& db_;
  rocksdb::ColumnFamilyHandle* const family_;
  const int distance_;
  const int width_;  // of the store's fingerprints
  const std::size_t merge_at_;
  const bool writable_;
  // Whether the current index has its room; false from Load until MakeRoom makes it.
  std::atomic<bool> room_made_{true};
  Mutex room_mu_ ACQUIRED_BEFORE(mu_);  // one MakeRoom at a time

  mutable Mutex mu_;
  CondVar cv_;  // room, a merge's end, and a merge that is due
  std::shared_ptr<StagingIndex> current_ GUARDED_BY(mu_);
  // A running merge's index and its ids (kept after a failed merge, whose documents stay staged).
  std::shared_ptr<StagingIndex> merging_ GUARDED_BY(mu_);
  std::vector<DocumentId> merging_ids_ GUARDED_BY(mu_);
  // The last one merged, for NextIndex to reuse.
  std::shared_ptr<StagingIndex> retired_ GUARDED_BY(mu_);
  std::size_t reserved_ GUARDED_BY(mu_) = 0;      // entries writers hold room for
  std::size_t room_waiters_ GUARDED_BY(mu_) = 0;  // writers waiting for room
  Status failure_ GUARDED_BY(mu_);
  std::atomic<bool> failed_{false};  // failure_ is set
  bool stopping_ GUARDED_BY(mu_) = false;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_READ_STAGING_H_
