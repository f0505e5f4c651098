// Staged documents: the staging index's life, and merging it into the
// tables (docs/design.md, "Inserts").

#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <mutex>
#include <span>

#include "store/bulk_loader.h"
#include "store/merge_hooks.h"
#include "store/store_impl.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

namespace {

std::mutex hooks_mu;
std::function<Status()> during_merge;   // guarded by hooks_mu
std::function<void()> after_ingestion;  // guarded by hooks_mu

Status DuringMerge() {
  std::function<Status()> hook;
  {
    std::lock_guard lock(hooks_mu);
    hook = during_merge;
  }
  return hook ? hook() : Status::OK();
}

void AfterIngestion() {
  std::function<void()> hook;
  {
    std::lock_guard lock(hooks_mu);
    hook = after_ingestion;
  }
  if (hook) hook();
}

}  // namespace

void SetDuringMergeForTesting(std::function<Status()> hook) {
  std::lock_guard lock(hooks_mu);
  during_merge = std::move(hook);
}

void SetAfterIngestionForTesting(std::function<void()> hook) {
  std::lock_guard lock(hooks_mu);
  after_ingestion = std::move(hook);
}

Status StoreImpl::LoadStagingIndex() {
  // A store opened to write gets the room a merge leaves, so that its
  // first inserts do not grow the index (rehashing under its lock, about
  // ten times before the first merge at the defaults); one opened only to
  // be queried, room for what is staged.
  Result<std::vector<StagedDocument>> staged = StagedDocuments(nullptr);
  if (!staged.ok()) return staged.status();
  const std::size_t room =
      options_.read_only ? staged->size() : std::max(staged->size(), StagingRoomEntries());
  staging_ = std::make_shared<StagingIndex>(plan_.distance(), room);
  std::vector<StagingIndex::Entry> entries;
  entries.reserve(staged->size());
  for (const StagedDocument& doc : *staged) {
    if (doc.removal) {
      staging_->AddRemoval(doc.id);
    } else {
      entries.push_back({doc.id, doc.fingerprint});
    }
  }
  staging_->Add(entries);
  return Status::OK();
}

Status StoreImpl::LoadRecentPrefixes() {
  if (recent_family() == nullptr) return Status::OK();
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), recent_family()));
  std::vector<Fingerprint> recent;
  auto add = [&]() -> Status {
    try {
      recent_.Add(recent);
    } catch (const std::exception& e) {
      return Status::IOError(std::string("loading the recent prefixes: ") + e.what());
    }
    recent.clear();
    return Status::OK();
  };
  // Read no further than it takes to fill the filter, if it fills.
  for (it->SeekToFirst(); it->Valid() && !recent_.full(); it->Next()) {
    if (it->key().size() != 8) {
      return Status::Corruption("recent: malformed key " + it->key().ToString(true));
    }
    recent.push_back(GetBigEndian64(it->key().data()));
    if (recent.size() == 65536) {
      if (Status s = add(); !s.ok()) return s;
    }
  }
  if (Status s = FromRocks(it->status(), "reading the recent family"); !s.ok()) return s;
  return add();
}

Result<std::vector<StagedDocument>> StoreImpl::StagedDocuments(
    const rocksdb::Snapshot* snapshot, std::span<const DocumentId> ids) const {
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
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, staging_family()));
  std::vector<StagedDocument> staged;
  if (ids.empty()) {
    it->SeekToFirst();
  } else {
    it->Seek(rocksdb::Slice(first, 8));
  }
  for (; it->Valid(); it->Next()) {
    StagingMark mark;
    if (it->key().size() != 8 ||
        !DecodeMark(GetBigEndian64(it->key().data()), it->value().ToStringView(), &mark).ok()) {
      return Status::Corruption("staging: malformed mark with key " + it->key().ToString(true));
    }
    staged.push_back(
        {GetBigEndian64(it->key().data()), mark.staged.value_or(0), mark.leaving, !mark.staged});
  }
  if (Status s = FromRocks(it->status(), "reading the staging family"); !s.ok()) return s;
  return staged;
}

Result<StoreImpl::StagingRoom> StoreImpl::ReserveStagingRoom(std::size_t entries) {
  if (entries == 0) return StagingRoom();
  // Counting only what was staged, writers admitted just below the room
  // went past it, and the index grew and rehashed under its lock: queries
  // waited up to a second, once a merge.
  const std::size_t room = StagingRoomEntries();
  std::unique_lock lock(staging_mu_);
  ++staging_room_waiters_;
  staging_cv_.wait(lock, [&] {
    if (!merge_error_.ok() || stopping_) return true;
    const std::size_t staged = staging_->size();
    return staged + staging_reserved_ + entries <= room ||
           (staging_reserved_ == 0 && staged < options_.staged_documents);
  });
  --staging_room_waiters_;
  if (!merge_error_.ok()) return merge_error_;
  staging_reserved_ += entries;
  return StagingRoom(this, entries);
}

StoreImpl::StagingRoom& StoreImpl::StagingRoom::operator=(StagingRoom&& other) noexcept {
  if (this != &other) {
    Release();
    store_ = std::exchange(other.store_, nullptr);
    entries_ = other.entries_;
  }
  return *this;
}

void StoreImpl::StagingRoom::Release() {
  if (store_ == nullptr) return;
  bool waiters = false;
  {
    std::lock_guard lock(store_->staging_mu_);
    store_->staging_reserved_ -= entries_;
    waiters = store_->staging_room_waiters_ > 0;
  }
  // Only writers wait for room: waking the merger and the refresher on
  // every insert halved the rate of single inserts.
  if (waiters) store_->staging_cv_.notify_all();
  store_ = nullptr;
}

Status StoreImpl::MergeStaged() {
  // The next index, with room for all that may be staged before writers
  // wait, ready before the locks: faulting in a new one's pages (64 MiB at
  // the defaults) would hold up queries. Only this function, under
  // merge_mu_, replaces staging_.
  std::shared_ptr<StagingIndex> next;
  if (staging_->size() > 0) {
    next = spare_staging_ ? std::move(spare_staging_)
                          : std::make_shared<StagingIndex>(plan_.distance(), StagingRoomEntries());
  }
  {
    std::unique_lock exclusive(ingest_mu_);
    std::lock_guard lock(staging_mu_);
    if (!merge_error_.ok()) return merge_error_;
    // Nothing was staged when `next` was (not) made: what came since waits
    // for the next merge rather than go to an index without room.
    if (!next) return Status::OK();
    merging_ = std::move(staging_);
    staging_ = std::move(next);
    merging_ids_ = merging_->SortedIds();
  }
  staging_cv_.notify_all();  // room for writers again
  Status s = DuringMerge();

  // Writers to these ids wait until the merge ends (LockForWrite), so the
  // staged versions read here stay current until they are in the tables.
  // One pass over the marks, joined with the sorted ids, beats a lookup per
  // id (in perf, MultiGet took a fifth of a merge). The pass spans only the
  // ids merged: earlier merges leave their marks' deletions behind until a
  // compaction drops them, and the family's compactions queue behind the
  // tables'. Where ids grow, those deletions lie below the range; reading
  // from the first mark skipped them all, a tenth of the CPU of 60 s of
  // inserts.
  std::vector<StagedDocument> docs;
  Result<std::vector<StagedDocument>> staged =
      s.ok() ? StagedDocuments(nullptr, merging_ids_) : Result<std::vector<StagedDocument>>(s);
  s = staged.status();
  if (staged.ok()) {
    auto id = merging_ids_.begin();
    for (const StagedDocument& doc : *staged) {
      id = std::lower_bound(id, merging_ids_.end(), doc.id);
      if (id == merging_ids_.end()) break;
      if (*id == doc.id) docs.push_back(doc);
    }
  }
  std::vector<rocksdb::IngestExternalFileArg> args;
  std::optional<TableFilters::Ingested> ingested;
  std::unique_ptr<BulkLoaderImpl> loader;
  if (s.ok() && !docs.empty()) {
    BulkLoadOptions options;
    options.memory_bytes = options_.write_buffer_bytes;
    Result<std::unique_ptr<BulkLoaderImpl>> made = MakeBulkLoader(options);
    if (made.ok()) {
      loader = *std::move(made);
      s = loader->WriteMergeFiles(docs, args, ingested);
    } else {
      s = made.status();
    }
  }
  if (s.ok() && !args.empty()) FlushBeforeIngesting(args);
  if (s.ok() && !args.empty() && ingested) s = IngestBesideQueries(args, *ingested);
  std::shared_ptr<StagingIndex> merged;
  {
    std::unique_lock exclusive(ingest_mu_);
    // Without the files' filters read ahead, queries wait for the
    // ingestion and for the filters read from the tables after it.
    if (s.ok() && !args.empty() && !ingested) {
      s = FromRocks(db_->IngestExternalFiles(args), "merging staged documents into the tables");
      PublishMemberFilters(args, ingested, s);
    }
    std::lock_guard lock(staging_mu_);
    if (s.ok()) {
      merged = std::move(merging_);
      merging_ids_.clear();
      merged_since_open_ = true;
    } else {
      // The staged documents stay staged and found; writes stop, as after
      // any background error, until the store is reopened.
      merge_error_ = s;
    }
  }
  staging_cv_.notify_all();
  // No reader holds it: they use it only under ingest_mu_ or staging_mu_.
  if (merged) {
    merged->Clear();
    spare_staging_ = std::move(merged);
  }
  return s;
}

Status StoreImpl::IngestBesideQueries(const std::vector<rocksdb::IngestExternalFileArg>& args,
                                      const TableFilters::Ingested& ingested) {
  rocksdb::Status rs;
  {
    // Writers wait, as they did while ingest_mu_ was held.
    std::unique_lock writers(load_mu_);
    // Filters first: a query that sees the files must have theirs. Ended
    // however the ingestion ends.
    table_filters_->AddPending(ingested);
    struct EndPending {
      TableFilters& filters;
      ~EndPending() { filters.EndPending(); }
    } end_pending{*table_filters_};
    // While any snapshot lives, RocksDB gives every file a sequence number
    // above the snapshots' (with none, a file for an empty table would go
    // in at 0 and show to queries whose snapshot still has the marks).
    rocksdb::ManagedSnapshot pinned(db_.get());
    rs = db_->IngestExternalFiles(args);
  }
  if (rs.ok()) AfterIngestion();
  const Status s = FromRocks(rs, "merging staged documents into the tables");
  if (!s.ok()) PublishMemberFilters(args, std::nullopt, s);
  return s;
}

std::optional<TableFilters::Ingested> StoreImpl::ReadIngestedFilters(
    std::span<const rocksdb::IngestExternalFileArg> args) const {
  Result<TableFilters::Ingested> read = table_filters_->ReadIngested(*db_, args);
  if (!read.ok()) return std::nullopt;
  return *std::move(read);
}

void StoreImpl::FlushBeforeIngesting(std::span<const rocksdb::IngestExternalFileArg> args) {
  std::vector<rocksdb::ColumnFamilyHandle*> families;
  for (const rocksdb::IngestExternalFileArg& arg : args) {
    std::uint64_t active = 0, immutable = 0;
    if (db_->GetIntProperty(arg.column_family, "rocksdb.num-entries-active-mem-table", &active) &&
        db_->GetIntProperty(arg.column_family, "rocksdb.num-entries-imm-mem-tables", &immutable) &&
        active + immutable == 0) {
      continue;
    }
    families.push_back(arg.column_family);
  }
  // As the ingestion's own flush would: at once, even if writes then
  // stall. A failure only leaves the flush to the ingestion.
  rocksdb::FlushOptions flush;
  flush.allow_write_stall = true;
  if (!families.empty()) db_->Flush(flush, families).PermitUncheckedError();
}

void StoreImpl::PublishMemberFilters(std::span<const rocksdb::IngestExternalFileArg> args,
                                     const std::optional<TableFilters::Ingested>& ingested,
                                     const Status& ingestion) const {
  if (ingestion.ok() && ingested) return table_filters_->AddIngested(*ingested);
  // Read from the tables as they are, whatever the ingestion did.
  std::vector<rocksdb::ColumnFamilyHandle*> families;
  for (const rocksdb::IngestExternalFileArg& arg : args) families.push_back(arg.column_family);
  table_filters_->Refresh(families);
}

void StoreImpl::MergeWhenFull() {
  std::unique_lock lock(staging_mu_);
  while (!stopping_) {
    // The timeout covers a notification sent between the check and the wait.
    staging_cv_.wait_for(lock, std::chrono::seconds(1), [&] {
      return stopping_ || (merge_error_.ok() && staging_->size() >= options_.staged_documents);
    });
    if (stopping_ || !merge_error_.ok() || staging_->size() < options_.staged_documents) continue;
    lock.unlock();
    for (int waiters; (waiters = merge_mu_waiters_.load()) != 0;) merge_mu_waiters_.wait(waiters);
    {
      std::lock_guard merge(merge_mu_);
      (void)MergeStaged();  // a failure is kept in merge_error_
    }
    lock.lock();
  }
}

std::unique_lock<std::mutex> StoreImpl::LockMergesAhead() {
  merge_mu_waiters_.fetch_add(1);
  std::unique_lock lock(merge_mu_);
  merge_mu_waiters_.fetch_sub(1);
  merge_mu_waiters_.notify_all();
  return lock;
}

Status StoreImpl::Flush() {
  if (Status s = CheckWritable(); !s.ok()) return s;
  std::lock_guard merge(merge_mu_);
  return MergeStaged();
}

}  // namespace fpstore::internal
