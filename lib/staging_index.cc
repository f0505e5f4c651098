#include "staging_index.h"

#include <algorithm>
#include <mutex>

namespace fpstore::internal {

namespace {
constexpr std::size_t kMinBuckets = 1024;
}  // namespace

StagingIndex::StagingIndex(int distance, std::size_t room)
    : plan_(*PermutationPlan::Create(distance + 1, distance)) {
  room = std::min(room, kMaxRoom);
  entries_.reserve(room);
  buckets_.assign(plan_.table_count(), std::vector<Bucket>(BucketsFor(room), Bucket{0, 0}));
}

std::size_t StagingIndex::BucketsFor(std::size_t entries) {
  return std::max(kMinBuckets, std::bit_ceil(2 * entries));
}

void StagingIndex::Add(std::span<const Entry> added) {
  if (added.empty()) return;
  std::unique_lock lock(mu_);
  // Should an allocation throw, some tables lack the batch's entries,
  // whose write then never happens: nothing a reader could miss.
  const std::size_t first = entries_.size();
  entries_.insert(entries_.end(), added.begin(), added.end());
  const std::size_t size = std::max(buckets_[0].size(), BucketsFor(entries_.size()));
  for (std::size_t t = 0; t < buckets_.size(); ++t) {
    if (size == buckets_[t].size()) {
      Place(t, first, entries_.size());
    } else {
      buckets_[t].assign(size, Bucket{0, 0});
      Place(t, 0, entries_.size());
    }
  }
  size_.store(entries_.size(), std::memory_order_relaxed);
}

void StagingIndex::Place(std::size_t t, std::size_t begin, std::size_t end) {
  const TablePermutation& perm = plan_.table(t);
  std::vector<Bucket>& buckets = buckets_[t];
  const std::size_t mask = buckets.size() - 1;
  // Each placement misses the cache once the table outgrows it: fetching
  // the slots of later entries first lets those misses overlap.
  constexpr std::size_t kAhead = 8;
  for (std::size_t e = begin; e < end; ++e) {
    if (e + kAhead < end) {
      const Fingerprint ahead = perm.Apply(entries_[e + kAhead].fingerprint);
      __builtin_prefetch(&buckets[Slot(perm, ahead, buckets.size())], 1);
    }
    const Fingerprint permuted = perm.Apply(entries_[e].fingerprint);
    std::size_t b = Slot(perm, permuted, buckets.size());
    while (buckets[b].entry != 0) b = (b + 1) & mask;
    buckets[b] = {static_cast<std::uint32_t>(e + 1), Tag(perm, permuted)};
  }
}

std::vector<DocumentId> StagingIndex::SortedIds() const {
  std::shared_lock lock(mu_);
  std::vector<DocumentId> ids;
  ids.reserve(entries_.size());
  for (const Entry& e : entries_) ids.push_back(e.id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace fpstore::internal
