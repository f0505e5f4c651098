// The in-memory index of staged documents: those inserted since the last
// merge, which are in the staging family but not yet in the tables
// (docs/design.md, "Inserts"). Queries probe it beside the tables.

#ifndef FPSTORE_LIB_STAGING_INDEX_H_
#define FPSTORE_LIB_STAGING_INDEX_H_

#include <atomic>
#include <cstdint>
#include <shared_mutex>
#include <vector>

#include "fpstore/document.h"
#include "fpstore/permutation.h"

namespace fpstore::internal {

// Entries are only ever added: a document replaced or removed while staged
// keeps its old entry until the index is merged and dropped. Readers check
// every candidate against the staging family at their snapshot, so an old
// entry costs a lookup, never a wrong answer; and because writers add the
// entry before their write reaches RocksDB, a reader whose snapshot holds
// the write always finds the entry.
//
// Thread safety: Add and ForEachCandidate may run concurrently.
class StagingIndex {
 public:
  explicit StagingIndex(const PermutationPlan& plan);
  StagingIndex(const StagingIndex&) = delete;
  StagingIndex& operator=(const StagingIndex&) = delete;

  // Entries added, counting superseded ones.
  std::size_t size() const { return size_.load(std::memory_order_relaxed); }

  void Add(DocumentId id, Fingerprint fingerprint);

  // Calls visit(id, fingerprint) for every entry that shares table t's
  // prefix with `query`, under a shared lock: `visit` must not call Add.
  template <typename Visit>
  void ForEachCandidate(std::size_t t, Fingerprint query, Visit&& visit) const {
    const TablePermutation& perm = plan_.table(t);
    const Fingerprint prefix = perm.Apply(query) & perm.prefix_mask();
    std::shared_lock lock(mu_);
    const std::vector<std::uint32_t>& buckets = buckets_[t];
    const std::size_t mask = buckets.size() - 1;
    for (std::size_t b = Slot(prefix, mask); buckets[b] != 0; b = (b + 1) & mask) {
      const Entry& e = entries_[buckets[b] - 1];
      if ((perm.Apply(e.fingerprint) & perm.prefix_mask()) == prefix) visit(e.id, e.fingerprint);
    }
  }

  // Every id with an entry, ascending, each once.
  std::vector<DocumentId> SortedIds() const;

  // Bytes of memory held.
  std::size_t MemoryBytes() const;

 private:
  struct Entry {
    DocumentId id;
    Fingerprint fingerprint;
  };

  static std::size_t Slot(Fingerprint prefix, std::size_t mask) {
    return static_cast<std::size_t>((prefix * 0x9e3779b97f4a7c15ULL) >> 32) & mask;
  }
  void Place(std::size_t t, std::uint32_t entry);
  // Doubles every table's buckets. REQUIRES: mu_ held exclusively.
  void Grow();

  const PermutationPlan& plan_;
  mutable std::shared_mutex mu_;
  std::vector<Entry> entries_;
  // Per table: open addressing with linear probing over prefix hashes;
  // 0 is empty, otherwise an index into entries_ plus one. At most half full.
  std::vector<std::vector<std::uint32_t>> buckets_;
  std::atomic<std::size_t> size_{0};
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STAGING_INDEX_H_
