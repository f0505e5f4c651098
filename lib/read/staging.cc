#include "read/staging.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

#include "format/records.h"
#include "plan/table_entry.h"
#include "util/big_endian.h"
#include "util/rocks_status.h"
#include "util/test_hooks.h"

namespace fpstore::internal {

namespace {
constexpr std::size_t kMinBuckets = 1024;
}  // namespace

StagingIndex::StagingIndex(int distance, int width, std::size_t room)
    : plan_(*PermutationPlan::Create(distance + 1, distance, width)) {
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
      const Word ahead = Permute(perm, entries_[e + kAhead].fingerprint);
      __builtin_prefetch(&buckets[Slot(perm, ahead, table_buckets_)], 1);
    }
    const Word permuted = Permute(perm, entries_[e].fingerprint);
    std::size_t b = Slot(perm, permuted, table_buckets_);
    while (buckets[b].entry != 0) b = (b + 1) & mask;
    buckets[b] = {static_cast<std::uint32_t>(e + 1), Tag(perm, permuted)};
  }
}

bool StagingIndex::HoldsEntry(DocumentId id, Word fingerprint) const {
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

Staging::Staging(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* family, int distance, int width,
                 std::size_t merge_at, bool writable)
    : db_(db),
      family_(family),
      distance_(distance),
      width_(width),
      merge_at_(merge_at),
      writable_(writable) {}

Status Staging::Load() {
  // A writable store gets the room a merge leaves, so its first inserts do not grow the index: now
  // if something is staged, else at its first write (MakeRoom). A read-only one, room for what is
  // staged.
  Result<std::vector<StagedDocument>> staged = Documents(nullptr);
  if (!staged.ok()) return staged.status();
  const bool defer = writable_ && staged->empty();
  auto index = std::make_shared<StagingIndex>(
      distance_, width_, writable_ && !defer ? std::max(staged->size(), room()) : staged->size());
  room_made_.store(!defer, std::memory_order_release);
  std::vector<StagingIndex::Entry> entries;
  entries.reserve(staged->size());
  for (const StagedDocument& doc : *staged) {
    if (doc.removal) {
      index->AddRemoval(doc.id);
    } else {
      entries.push_back({doc.id, doc.fingerprint});
    }
  }
  index->Add(entries);
  MutexLock lock(mu_);
  current_ = std::move(index);
  return Status::OK();
}

Result<std::vector<StagingMark>> Staging::Marks(const rocksdb::Snapshot* snapshot,
                                                std::span<const DocumentId> ids) const {
  std::vector<StagingMark> marks(ids.size());
  Status s = MultiGet(db_, family_, snapshot, ids, [&](std::size_t i, std::string_view value) {
    if (DecodeStagingMark(value, width_, &marks[i])) return Status::OK();
    return Status::Corruption("document " + std::to_string(ids[i]) +
                              " has a malformed staging mark");
  });
  if (!s.ok()) return s;
  return marks;
}

Result<std::vector<StagedDocument>> Staging::Documents(const rocksdb::Snapshot* snapshot,
                                                       std::span<const DocumentId> ids) const {
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  char first[8], past_last[8];
  rocksdb::Slice upper_bound(past_last, 8);
  if (!ids.empty()) {
    PutBigEndian64(first, ids.front());
    if (ids.back() != std::numeric_limits<DocumentId>::max()) {
      PutBigEndian64(past_last, ids.back() + 1);
      ro.iterate_upper_bound = &upper_bound;
    }
  }
  std::unique_ptr<rocksdb::Iterator> it(db_.NewIterator(ro, family_));
  if (ids.empty()) {
    it->SeekToFirst();
  } else {
    it->Seek(rocksdb::Slice(first, 8));
  }
  std::vector<StagedDocument> staged;
  for (; it->Valid(); it->Next()) {
    StagingMark mark;
    if (it->key().size() != 8 || !DecodeStagingMark(it->value().ToStringView(), width_, &mark)) {
      return Status::Corruption("staging: malformed mark with key " + it->key().ToString(true));
    }
    staged.push_back(
        {GetBigEndian64(it->key().data()), mark.staged.value_or(0), mark.leaving, !mark.staged});
  }
  if (Status s = FromRocks(it->status(), "reading the staging family"); !s.ok()) return s;
  return staged;
}

const rocksdb::Snapshot* Staging::TakeSnapshot() const {
  MutexLock lock(mu_);
  return db_.GetSnapshot();
}

Status Staging::HoldingReadPoints(const std::function<Status()>& ingest) const {
  MutexLock lock(mu_);
  return ingest();
}

Staging::ReadPoint Staging::ReadAt() const {
  ReadPoint at;
  MutexLock lock(mu_);
  rocksdb::DB* const db = &db_;
  at.snapshot_.reset(db_.GetSnapshot(),
                     [db](const rocksdb::Snapshot* s) { db->ReleaseSnapshot(s); });
  at.current_ = current_;
  at.merging_ = merging_;
  return at;
}

Result<std::vector<Staging::Candidate>> Staging::Within(std::span<const Word> queries, int k,
                                                        const ReadPoint& at) const {
  const rocksdb::Snapshot* const snapshot = at.snapshot();
  std::vector<Candidate> candidates;
  for (const StagingIndex* index : {at.merging_.get(), at.current_.get()}) {
    if (index == nullptr || index->size() == 0) continue;
    for (std::size_t i = 0; i < queries.size(); ++i) {
      index->ForEachWithin(queries[i], k, [&](DocumentId id, Word fp, int d) {
        candidates.push_back({i, id, fp, d});
      });
    }
  }
  if (candidates.empty()) return candidates;
  // Only what the family holds at the snapshot counts, once per query.
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.id != b.id ? a.id < b.id : a.query < b.query;
  });
  std::vector<DocumentId> ids;
  for (const Candidate& c : candidates) {
    if (ids.empty() || ids.back() != c.id) ids.push_back(c.id);
  }
  Result<std::vector<StagingMark>> marks = Marks(snapshot, ids);
  if (!marks.ok()) return marks.status();
  std::vector<Candidate> current;
  std::size_t i = 0;
  for (const Candidate& c : candidates) {
    while (ids[i] != c.id) ++i;
    if ((*marks)[i].staged != c.fingerprint) continue;
    if (!current.empty() && current.back().id == c.id && current.back().query == c.query) {
      continue;
    }
    current.push_back(c);
  }
  return current;
}

void Staging::GiveBack(std::size_t entries) {
  bool waiters = false;
  {
    MutexLock lock(mu_);
    reserved_ -= entries;
    waiters = room_waiters_ > 0;
  }
  // Only writers wait for room: waking the merger on every insert would slow single inserts.
  if (waiters) cv_.NotifyAll();
}

Status Staging::MakeRoom() {
  if (room_made_.load(std::memory_order_acquire)) return Status::OK();
  MutexLock made(room_mu_);
  if (room_made_.load(std::memory_order_relaxed)) return Status::OK();
  std::shared_ptr<StagingIndex> index;
  {
    MutexLock lock(mu_);
    index = current_;
  }
  try {
    BeforeStagingRoom();
    index->Reserve(room());
  } catch (const std::bad_alloc&) {
    // Nothing changed: the next write tries again.
    return Status::IOError("no memory for the staging index's room (" + std::to_string(room()) +
                           " entries)");
  }
  room_made_.store(true, std::memory_order_release);
  return Status::OK();
}

Result<Staging::Room> Staging::Reserve(std::size_t entries) {
  if (entries == 0) return Room();
  if (Status s = MakeRoom(); !s.ok()) return s;
  // Counting staged entries alone, writers admitted just below the room would together overrun it.
  MutexLock lock(mu_);
  ++room_waiters_;
  while (failure_.ok() && !stopping_) {
    const std::size_t staged = current_->size();
    if (staged + reserved_ + entries <= room() || (reserved_ == 0 && staged < merge_at_)) break;
    cv_.Wait(mu_);
  }
  --room_waiters_;
  if (!failure_.ok()) return failure_;
  if (stopping_) return Status::Busy("the store is closing");
  reserved_ += entries;
  return Room(this, entries);
}

bool Staging::Merging(std::span<const DocumentId> ids) const {
  MutexLock lock(mu_);
  for (DocumentId id : ids) {
    if (std::binary_search(merging_ids_.begin(), merging_ids_.end(), id)) return true;
  }
  return false;
}

Status Staging::WaitForMerge() {
  MutexLock lock(mu_);
  while (merging_ != nullptr && failure_.ok() && !stopping_) cv_.Wait(mu_);
  if (failure_.ok() && merging_ != nullptr) return Status::Busy("the store is closing");
  return failure_;
}

bool Staging::MayHaveMark(DocumentId id, std::optional<Word> stored) const {
  return stored ? current().HoldsEntry(id, *stored) : current().HasRemoval(id);
}

void Staging::Add(std::span<const StagingIndex::Entry> entries) {
  current().Add(entries);
  if (current().size() >= merge_at_) cv_.NotifyAll();
}

void Staging::AddRemoval(DocumentId id) { current().AddRemoval(id); }

Status Staging::failure() const {
  MutexLock lock(mu_);
  return failure_;
}

bool Staging::WaitUntilDue() {
  MutexLock lock(mu_);
  // The timeout covers a notification sent between a check and the wait.
  if (!stopping_ && (!failure_.ok() || current_->size() < merge_at_)) {
    cv_.WaitFor(mu_, std::chrono::seconds(1));
  }
  return !stopping_ && failure_.ok() && current_->size() >= merge_at_;
}

std::shared_ptr<StagingIndex> Staging::NextIndex() {
  std::shared_ptr<StagingIndex> index;
  {
    MutexLock lock(mu_);
    if (current_->size() == 0) return nullptr;
    // Readers take indexes only from current_ and merging_: once no view holds the retired one,
    // none will.
    if (retired_ != nullptr && retired_.use_count() == 1) index = std::move(retired_);
  }
  if (index == nullptr) return std::make_shared<StagingIndex>(distance_, width_, room());
  // The last view's release happens before this: its reads before the entries are cleared.
  std::atomic_thread_fence(std::memory_order_acquire);
  index->Clear();
  return index;
}

Result<std::vector<DocumentId>> Staging::BeginMerge(std::shared_ptr<StagingIndex> next) {
  std::vector<DocumentId> ids;
  {
    MutexLock lock(mu_);
    if (!failure_.ok()) return failure_;
    // Nothing was staged when NextIndex ran: what came since waits for the next merge rather than
    // go to an index without room.
    if (next == nullptr) return ids;
    merging_ = std::move(current_);
    current_ = std::move(next);
    merging_ids_ = merging_->SortedIds();
    ids = merging_ids_;
  }
  cv_.NotifyAll();  // room for writers again
  return ids;
}

void Staging::EndMerge(const Status& merged) {
  {
    MutexLock lock(mu_);
    if (merged.ok()) {
      retired_ = std::move(merging_);
      merging_ids_.clear();
    } else if (failure_.ok()) {
      failure_ = merged;
      failed_.store(true, std::memory_order_release);
    }
  }
  cv_.NotifyAll();
}

void Staging::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
}

}  // namespace fpstore::internal
