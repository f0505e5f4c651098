#include "staging_index.h"

#include <algorithm>
#include <mutex>

namespace fpstore::internal {

namespace {
constexpr std::size_t kInitialBuckets = 1024;
}  // namespace

StagingIndex::StagingIndex(int distance)
    : plan_(*PermutationPlan::Create(distance + 1, distance)),
      buckets_(plan_.table_count(), std::vector<Bucket>(kInitialBuckets, Bucket{0, 0})) {}

void StagingIndex::Add(DocumentId id, Fingerprint fingerprint) {
  std::unique_lock lock(mu_);
  if (2 * (entries_.size() + 1) > buckets_[0].size()) Grow();
  entries_.push_back({id, fingerprint});
  const auto entry = static_cast<std::uint32_t>(entries_.size());
  for (std::size_t t = 0; t < buckets_.size(); ++t) Place(t, entry);
  size_.store(entries_.size(), std::memory_order_relaxed);
}

void StagingIndex::Place(std::size_t t, std::uint32_t entry) {
  const TablePermutation& perm = plan_.table(t);
  std::vector<Bucket>& buckets = buckets_[t];
  const std::size_t mask = buckets.size() - 1;
  const Fingerprint permuted = perm.Apply(entries_[entry - 1].fingerprint);
  std::size_t b = Slot(perm, permuted, buckets.size());
  while (buckets[b].entry != 0) b = (b + 1) & mask;
  buckets[b] = {entry, Tag(perm, permuted)};
}

void StagingIndex::Grow() {
  const std::size_t size = 2 * buckets_[0].size();
  for (std::size_t t = 0; t < buckets_.size(); ++t) {
    buckets_[t].assign(size, Bucket{0, 0});
    for (std::uint32_t e = 1; e <= entries_.size(); ++e) Place(t, e);
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
