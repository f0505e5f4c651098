#include "write/writer.h"

#include <algorithm>
#include <map>

#include "format/families.h"
#include "plan/table_entry.h"
#include "util/rocks_status.h"
#include "write/bulk_load.h"

namespace fpstore::internal {

namespace {

// How often a store with a retention sweeps, and the keys an expiry takes per atomic round.
constexpr std::chrono::milliseconds kSweepPeriod(1000);
constexpr std::size_t kExpireBatch = 1024;

}  // namespace

Writer::Writer(OpenedStore opened, std::shared_ptr<const BackgroundErrors> background_errors,
               std::shared_ptr<HeldDeletions> held)
    : Reader(std::move(opened)),
      background_errors_(std::move(background_errors)),
      ingest_guard_(*background_errors_, std::move(held)),
      near_plan_(*PermutationPlan::Create(plan_.distance() + 1, plan_.distance(), plan_.bits())),
      log_sync_([this] { return FromRocks(db_->SyncWAL(), "syncing " + path_); }),
      ingestion_(*db_, tables_, staging_, ingest_guard_),
      merger_(*db_, staging_, ingestion_, locks_, path_, options_.write_buffer_bytes),
      sweeper_([this](const std::atomic<bool>& stopping) { return SweepExpired(stopping); },
               kSweepPeriod) {}

void Writer::StartBackground() {
  merger_.Start();
  if (retention_seconds_ != 0) sweeper_.Start();
}

void Writer::StopBackground() {
  // The sweep first: it may wait for a merge to make room.
  sweeper_.Stop();
  merger_.Stop();
}

Status Writer::CheckWritable() const {
  if (Status s = CheckOpen(); !s.ok()) return s;
  if (options_.read_only) return Status::NotSupported("the store " + path_ + " is open read-only");
  return background_errors_->Stopped();
}

Status Writer::WritesStopped() const {
  if (Status s = background_errors_->Stopped(); !s.ok()) return s;
  return staging_.failed() ? staging_.failure() : Status::OK();
}

Status Writer::LockForWrite(std::span<const DocumentId> ids, std::size_t staged, WriteLocks& locks,
                            std::span<const LockKey> near) {
  Result<Staging::Room> room = staging_.Reserve(staged);
  if (!room.ok()) return room.status();
  std::vector<LockKey> keys(ids.begin(), ids.end());
  keys.insert(keys.end(), near.begin(), near.end());
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  while (true) {
    locks.writers.emplace(locks_.writers);
    locks.keys = keys_.Lock(keys);
    // Writers of ids that a merge is moving wait for it to end.
    if (!staging_.Merging(ids)) break;
    locks.Release();  // the room is not yet theirs
    if (Status s = staging_.WaitForMerge(); !s.ok()) return s;
  }
  locks.room = *std::move(room);
  return Status::OK();
}

Result<std::vector<Writer::IdVersions>> Writer::CurrentVersions(
    std::span<const DocumentId> ids) const {
  std::vector<IdVersions> versions(ids.size());
  Status s =
      documents_.Read(nullptr, ids, /*whole=*/false, [&](std::size_t i, const Document& doc) {
        versions[i].stored = doc.fingerprint;
        versions[i].stored_time = doc.time;
      });
  if (!s.ok()) return s;
  // Only staged documents and removals have marks; MayHaveMark spares most inserts the read.
  std::vector<DocumentId> marked;
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (!staging_.MayHaveMark(ids[i], versions[i].stored)) continue;
    marked.push_back(ids[i]);
    at.push_back(i);
  }
  Result<std::vector<StagingMark>> marks = staging_.Marks(nullptr, marked);
  if (!marks.ok()) return marks.status();
  for (std::size_t j = 0; j < marked.size(); ++j) {
    const StagingMark& mark = (*marks)[j];
    if (!mark.staged && !mark.leaving) continue;  // none
    IdVersions& v = versions[at[j]];
    if (v.stored.has_value() != mark.staged.has_value() ||
        (mark.staged && *mark.staged != *v.stored)) {
      return Status::Corruption("document " + std::to_string(marked[j]) +
                                "'s staging mark disagrees with its record");
    }
    v.staged = v.stored.has_value();
    v.leaving = mark.leaving;
  }
  return versions;
}

Result<InsertStats> Writer::WriteInserts(std::span<const DocumentId> ids,
                                         std::span<const NewDocument* const> docs,
                                         DocumentTime now) {
  Result<std::vector<IdVersions>> versions = CurrentVersions(ids);
  if (!versions.ok()) return versions.status();
  const std::vector<IdVersions>& old = *versions;
  rocksdb::WriteBatch batch;
  InsertStats stats;
  const DocumentTime cutoff = RetentionCutoff(now, retention_seconds_);
  std::vector<StagingIndex::Entry> staged;
  staged.reserve(docs.size());
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const NewDocument& doc = *docs[i];
    const DocumentTime time = doc.time.value_or(now);
    documents_.Put(batch, doc, time);
    if (old[i].stored && old[i].stored_time != time)
      times_.Delete(batch, old[i].stored_time, doc.id);
    if (!old[i].stored || old[i].stored_time != time) times_.Put(batch, time, doc.id);
    ++(old[i].stored ? stats.replaced : stats.added);
    stats.past_retention += time < cutoff;
    if (old[i].stored == doc.fingerprint) continue;  // its entries stay as they are
    staged.push_back({doc.id, doc.fingerprint});
    // The mark names any version in the tables, which the next merge takes out.
    batch
        .Put(staging_.family(), Key8(doc.id).view(),
             EncodeStagingMark({doc.fingerprint, old[i].in_tables()}, plan_.bits()))
        .PermitUncheckedError();
  }
  // Indexed before the RocksDB write: a snapshot that holds it must find them.
  staging_.Add(staged);
  documents_.CountChange(batch, static_cast<std::int64_t>(stats.added));
  if (Status s = WriteUnsynced(batch); !s.ok()) return s;
  if (std::any_of(docs.begin(), docs.end(),
                  [](const NewDocument* d) { return !d->signature.empty(); })) {
    documents_.WroteSigned();
  }
  return stats;
}

Status Writer::WriteUnsynced(rocksdb::WriteBatch& batch) {
  return FromRocks(db_->Write(rocksdb::WriteOptions(), &batch), "writing to " + path_);
}

Status Writer::MakeDurable() {
  switch (options_.durability) {
    case Durability::kSync:
      return FromRocks(db_->SyncWAL(), "syncing " + path_);
    case Durability::kGroupCommit:
      return log_sync_.WaitDurable(log_sync_.Written());
    case Durability::kNoSync:
      break;
  }
  return Status::OK();
}

Result<InsertStats> Writer::InsertBatch(std::span<const NewDocument> docs) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  if (docs.empty()) return InsertStats{};
  for (const NewDocument& d : docs) {
    if (Status s = CheckDocument(d, plan().bits(), fingerprinter_.options().signature_bytes);
        !s.ok()) {
      return s;
    }
  }
  Result<DocumentTime> now = Now(options_.clock);
  if (!now.ok()) return now.status();
  // The last occurrence of an id wins.
  std::map<DocumentId, const NewDocument*> latest;
  for (const NewDocument& d : docs) latest[d.id] = &d;
  std::vector<DocumentId> ids;
  std::vector<const NewDocument*> pending;
  ids.reserve(latest.size());
  pending.reserve(latest.size());
  for (const auto& [id, doc] : latest) {
    ids.push_back(id);
    pending.push_back(doc);
  }
  InsertStats stats;
  {
    WriteLocks locks;
    if (Status s = LockForWrite(ids, ids.size(), locks); !s.ok()) return s;
    Result<InsertStats> wrote = WriteInserts(ids, pending, *now);
    if (!wrote.ok()) return wrote.status();
    stats = *wrote;
  }
  if (Status s = MakeDurable(); !s.ok()) return s;
  return stats;
}

Status Writer::Remove(DocumentId id) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  {
    WriteLocks locks;
    // A removal may stage a mark: room for its entry.
    if (Status s = LockForWrite(std::span(&id, 1), 1, locks); !s.ok()) return s;
    Result<std::vector<IdVersions>> old = CurrentVersions(std::span(&id, 1));
    if (!old.ok()) return old.status();
    if (!(*old)[0].stored) {
      locks.Release();
      // Another caller's removal may not be durable yet: a power loss must not undo "not found".
      if (Status s = MakeDurable(); !s.ok()) return s;
      return Status::NotFound("document " + std::to_string(id));
    }
    rocksdb::WriteBatch batch;
    StageRemoval(batch, id, (*old)[0]);
    documents_.CountChange(batch, -1);
    if (Status s = WriteUnsynced(batch); !s.ok()) return s;
  }
  return MakeDurable();
}

void Writer::StageRemoval(rocksdb::WriteBatch& batch, DocumentId id, const IdVersions& old) {
  documents_.Delete(batch, id);
  times_.Delete(batch, old.stored_time, id);
  const Key8 key(id);
  const rocksdb::Slice key_slice = key.view();
  if (const std::optional<Word> in_tables = old.in_tables()) {
    // The next merge takes the version in the tables out.
    staging_.AddRemoval(id);
    batch
        .Put(staging_.family(), key_slice,
             EncodeStagingMark({std::nullopt, in_tables}, plan_.bits()))
        .PermitUncheckedError();
  } else {
    // Staged only: it leaves with its mark.
    batch.Delete(staging_.family(), key_slice).PermitUncheckedError();
  }
}

Status Writer::ExpireRound(DocumentTime before, std::size_t limit, std::uint64_t* removed,
                           bool* done) {
  *removed = 0;
  Result<std::vector<TimeIndex::Entry>> keys = times_.KeysBefore(nullptr, before, limit);
  if (!keys.ok()) return keys.status();
  *done = keys->size() < limit;
  if (keys->empty()) return Status::OK();
  std::vector<DocumentId> ids;
  for (const TimeIndex::Entry& e : *keys) ids.push_back(e.id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  WriteLocks locks;
  if (Status s = LockForWrite(ids, ids.size(), locks); !s.ok()) return s;
  // Read under the locks: a document inserted again since has a new time, and stays.
  Result<std::vector<IdVersions>> versions = CurrentVersions(ids);
  if (!versions.ok()) return versions.status();
  rocksdb::WriteBatch batch;
  std::vector<bool> removing(ids.size(), false);
  for (const TimeIndex::Entry& e : *keys) {
    const std::size_t at = std::lower_bound(ids.begin(), ids.end(), e.id) - ids.begin();
    const IdVersions& v = (*versions)[at];
    if (v.stored && v.stored_time == e.time && e.time < before) {
      removing[at] = true;  // StageRemoval deletes its key
    } else {
      times_.Delete(batch, e.time, e.id);  // stale: its document moved on or is gone
    }
  }
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (!removing[i]) continue;
    StageRemoval(batch, ids[i], (*versions)[i]);
    ++*removed;
  }
  documents_.CountChange(batch, -static_cast<std::int64_t>(*removed));
  return WriteUnsynced(batch);
}

Result<std::uint64_t> Writer::Expire(DocumentTime before) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  if (Status s = CheckTime(before, "the time to expire before"); !s.ok()) return s;
  const std::atomic<bool> never{false};
  return ExpireBefore(before, never);
}

Result<std::uint64_t> Writer::ExpireBefore(DocumentTime before, const std::atomic<bool>& stopping) {
  std::uint64_t total = 0;
  bool done = false;
  while (!done && !stopping.load(std::memory_order_relaxed)) {
    std::uint64_t removed = 0;
    if (Status s = ExpireRound(before, kExpireBatch, &removed, &done); !s.ok()) return s;
    total += removed;
  }
  if (Status s = MakeDurable(); !s.ok()) return s;
  return total;
}

Status Writer::SweepExpired(const std::atomic<bool>& stopping) {
  if (Status s = WritesStopped(); !s.ok()) return s;
  Result<DocumentTime> before = ExpiredBefore();
  if (!before.ok()) return before.status();
  return ExpireBefore(*before, stopping).status();
}

Result<CheckResult> Writer::CheckAndInsert(const NewDocument& doc, InsertPolicy policy,
                                           const QueryOptions& options) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  Result<Matching> matching = MatchingFor(options.distance, options.min_similarity);
  if (!matching.ok()) return matching.status();
  if (Status s = CheckDocument(doc, plan().bits(), fingerprinter_.options().signature_bytes);
      !s.ok()) {
    return s;
  }
  Result<DocumentTime> now = Now(options_.clock);
  if (!now.ok()) return now.status();
  const DocumentId id = doc.id;
  CheckResult result;
  {
    // Near-duplicates share a near key: of two offered at once, one waits for the other's write.
    const std::vector<LockKey> near = NearKeys(near_plan_, doc.fingerprint);
    WriteLocks locks;
    if (Status s = LockForWrite(std::span(&id, 1), 1, locks, near); !s.ok()) return s;
    const Sketch query{doc.fingerprint, doc.signature};
    Result<std::vector<std::vector<Match>>> matches =
        Run(std::span(&query, 1), matching->distance, matching->min_similarity, staging_.ReadAt());
    if (!matches.ok()) return matches.status();
    result.matches = std::move((*matches)[0]);
    std::erase_if(result.matches, [id](const Match& m) { return m.id == id; });
    if (policy == InsertPolicy::kAlways || result.matches.empty()) {
      const NewDocument* pending = &doc;
      // Written under the lock so that the next CheckAndInsert sees it.
      Result<InsertStats> stats = WriteInserts(std::span(&id, 1), std::span(&pending, 1), *now);
      if (!stats.ok()) return stats.status();
      result.inserted = true;
      result.past_retention = stats->past_retention != 0;
    }
  }
  if (options_.refresh_matches && !result.matches.empty()) {
    std::size_t kept = 0;
    if (Status s = Refresh(result.matches, doc.time.value_or(*now), &kept); !s.ok()) return s;
    // Every match went (past the retention, swept) between the check and the refresh: the page
    // would be lost. Checked again, it finds them gone.
    if (kept == 0 && !result.inserted) return CheckAndInsert(doc, policy, options);
  }
  // Synced even when nothing was written: the matches may be other callers' unsynced writes, which
  // a power loss could take back.
  if (Status s = MakeDurable(); !s.ok()) return s;
  return result;
}

Status Writer::Refresh(std::span<const Match> matches, DocumentTime time, std::size_t* kept) {
  std::vector<DocumentId> ids;
  for (const Match& m : matches) {
    if (m.time < time) ids.push_back(m.id);
  }
  *kept = matches.size() - ids.size();
  if (ids.empty()) return Status::OK();
  std::sort(ids.begin(), ids.end());
  WriteLocks locks;
  // The fingerprints stay: nothing is staged.
  if (Status s = LockForWrite(ids, 0, locks); !s.ok()) return s;
  // Read under the locks: a document written or removed since the match is left as it is.
  std::vector<std::optional<Document>> stored(ids.size());
  Status s = documents_.Read(nullptr, ids, /*whole=*/true,
                             [&](std::size_t i, const Document& doc) { stored[i] = doc; });
  if (!s.ok()) return s;
  std::vector<DocumentId> refreshing;
  std::vector<NewDocument> docs;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const auto match = std::find_if(matches.begin(), matches.end(),
                                    [&](const Match& m) { return m.id == ids[i]; });
    if (!stored[i] || stored[i]->fingerprint != match->fingerprint) continue;
    ++*kept;
    if (stored[i]->time >= time) continue;
    refreshing.push_back(ids[i]);
    docs.push_back(
        {ids[i], stored[i]->fingerprint, stored[i]->metadata, stored[i]->signature, time});
  }
  if (docs.empty()) return Status::OK();
  std::vector<const NewDocument*> pending;
  for (const NewDocument& d : docs) pending.push_back(&d);
  return WriteInserts(refreshing, pending, time).status();
}

Result<std::unique_ptr<BulkLoader>> Writer::NewBulkLoader(const BulkLoadOptions& options) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  Result<DocumentTime> now = Now(options_.clock);
  if (!now.ok()) return now.status();
  Result<ScratchDir> dir = ScratchDir::Make(path_, options.temp_dir);
  if (!dir.ok()) return dir.status();
  const BulkLoaderImpl::Context context{db_.get(),     &documents_,
                                        &times_,       &staging_,
                                        &ingestion_,   &locks_,
                                        plan().bits(), fingerprinter_.options().signature_bytes,
                                        *now,          RetentionCutoff(*now, retention_seconds_)};
  return std::unique_ptr<BulkLoader>(
      std::make_unique<BulkLoaderImpl>(context, options, *std::move(dir)));
}

Status Writer::Flush() {
  if (Status s = CheckWritable(); !s.ok()) return s;
  return merger_.MergeNow();
}

}  // namespace fpstore::internal
