#include "read/staging_index.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

namespace fpstore::internal {

namespace {
constexpr std::size_t kMinBuckets = 1024;
}  // namespace

StagingIndex::StagingIndex(int distance, std::size_t room)
    : plan_(*PermutationPlan::Create(distance + 1, distance)) {
  room = std::min(room, kMaxRoom);
  entries_.reserve(room);
  table_buckets_ = BucketsFor(room);
  buckets_ = EmptyBuckets(table_buckets_);
}

ZeroedMapping StagingIndex::EmptyBuckets(std::size_t per_table) const {
  // All-zero bytes are empty buckets.
  static_assert(std::is_trivially_copyable_v<Bucket>);
  return ZeroedMapping(plan_.table_count() * per_table * sizeof(Bucket));
}

std::size_t StagingIndex::BucketsFor(std::size_t entries) {
  return std::max(kMinBuckets, std::bit_ceil(2 * entries));
}

void StagingIndex::Reserve(std::size_t room) {
  room = std::min(room, kMaxRoom);
  const std::size_t size = BucketsFor(room);
  {
    ReaderLock lock(mu_);
    if (size <= table_buckets_) return;
  }
  ZeroedMapping buckets = EmptyBuckets(size);
  WriterLock lock(mu_);
  if (size <= table_buckets_) return;
  entries_.reserve(room);
  std::swap(buckets_, buckets);  // the old mapping goes after the lock
  PlaceAllIn(size);
}

void StagingIndex::PlaceAllIn(std::size_t per_table) {
  table_buckets_ = per_table;
  for (std::size_t t = 0; t < plan_.table_count(); ++t) Place(t, 0, entries_.size());
}

void StagingIndex::Add(std::span<const Entry> added) {
  if (added.empty()) return;
  WriterLock lock(mu_);
  // Should an allocation throw, the index is as it was and the batch's write never happens.
  const std::size_t first = entries_.size();
  entries_.insert(entries_.end(), added.begin(), added.end());
  const std::size_t size = BucketsFor(entries_.size());
  if (size > table_buckets_) {
    try {
      buckets_ = EmptyBuckets(size);
    } catch (...) {
      entries_.resize(first);
      throw;
    }
    PlaceAllIn(size);
  } else {
    for (std::size_t t = 0; t < plan_.table_count(); ++t) Place(t, first, entries_.size());
  }
  size_.store(entries_.size() + removals_.size(), std::memory_order_relaxed);
}

void StagingIndex::Clear() {
  WriterLock lock(mu_);
  entries_.clear();
  removals_.clear();
  std::memset(buckets_.data(), 0, plan_.table_count() * table_buckets_ * sizeof(Bucket));
  removal_count_.store(0, std::memory_order_relaxed);
  size_.store(0, std::memory_order_relaxed);
}

void StagingIndex::AddRemoval(DocumentId id) {
  WriterLock lock(mu_);
  if (!removals_.insert(id).second) return;
  removal_count_.store(removals_.size(), std::memory_order_relaxed);
  size_.store(entries_.size() + removals_.size(), std::memory_order_relaxed);
}

bool StagingIndex::HasRemoval(DocumentId id) const {
  // Writers call this for every new id: most indexes hold no removal.
  if (removal_count_.load(std::memory_order_relaxed) == 0) return false;
  ReaderLock lock(mu_);
  return removals_.contains(id);
}

void StagingIndex::Place(std::size_t t, std::size_t begin, std::size_t end) {
  const TablePermutation& perm = plan_.table(t);
  Bucket* buckets = TableBuckets(t);
  const std::size_t mask = table_buckets_ - 1;
  // Once the table outgrows the cache each placement misses it: prefetching later entries' slots
  // lets the misses overlap.
  constexpr std::size_t kAhead = 8;
  for (std::size_t e = begin; e < end; ++e) {
    if (e + kAhead < end) {
      const Fingerprint ahead = perm.Apply(entries_[e + kAhead].fingerprint);
      __builtin_prefetch(&buckets[Slot(perm, ahead, table_buckets_)], 1);
    }
    const Fingerprint permuted = perm.Apply(entries_[e].fingerprint);
    std::size_t b = Slot(perm, permuted, table_buckets_);
    while (buckets[b].entry != 0) b = (b + 1) & mask;
    buckets[b] = {static_cast<std::uint32_t>(e + 1), Tag(perm, permuted)};
  }
}

bool StagingIndex::HoldsEntry(DocumentId id, Fingerprint fingerprint) const {
  ReaderLock lock(mu_);
  // An exact match shares every table's prefix: the first table has it.
  return ForEachInTable(0, fingerprint, 0,
                        [&](const Entry& e) { return e.id == id && e.fingerprint == fingerprint; });
}

std::vector<DocumentId> StagingIndex::SortedIds() const {
  ReaderLock lock(mu_);
  std::vector<DocumentId> ids(removals_.begin(), removals_.end());
  ids.reserve(entries_.size() + removals_.size());
  for (const Entry& e : entries_) ids.push_back(e.id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace fpstore::internal
