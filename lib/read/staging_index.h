// The in-memory index of staged documents, those in the staging family but not yet in the tables
// (docs/design.md, "Inserts are staged"). Queries probe it beside the tables.

#ifndef FPSTORE_LIB_READ_STAGING_INDEX_H_
#define FPSTORE_LIB_READ_STAGING_INDEX_H_

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_set>
#include <vector>

#include "fpstore/document.h"
#include "fpstore/permutation.h"
#include "fpstore/simhash.h"
#include "util/mutex.h"
#include "util/zeroed_mapping.h"

namespace fpstore::internal {

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
    Fingerprint fingerprint;
  };

  // Room is capped: past it the index grows as it fills.
  static constexpr std::size_t kMaxRoom = std::size_t{1} << 21;

  // `distance`: the largest k queries will ask for. `room`: entries it takes before it first grows
  // (rehashing every entry under the exclusive lock, stalling writers and readers), allocated now.
  StagingIndex(int distance, std::size_t room);
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
  void ForEachWithin(Fingerprint query, int k, Visit&& visit) const EXCLUDES(mu_) {
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
  bool HoldsEntry(DocumentId id, Fingerprint fingerprint) const EXCLUDES(mu_);

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
  static std::size_t Slot(const TablePermutation& perm, Fingerprint permuted, std::size_t size) {
    const std::uint64_t prefix = permuted >> (64 - perm.prefix_bits());
    return static_cast<std::size_t>((prefix * 0x9e3779b97f4a7c15ULL) >>
                                    (64 - std::countr_zero(size)));
  }
  static std::uint32_t Tag(const TablePermutation& perm, Fingerprint permuted) {
    const int p = perm.prefix_bits();
    return p >= 64 ? 0 : static_cast<std::uint32_t>((permuted << p) >> 32);
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
  bool ForEachInTable(std::size_t t, Fingerprint query, int k, Visit&& visit) const
      REQUIRES_SHARED(mu_) {
    const TablePermutation& perm = plan_.table(t);
    const Fingerprint permuted = perm.Apply(query);
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

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_READ_STAGING_INDEX_H_
