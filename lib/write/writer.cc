#include "write/writer.h"

#include <algorithm>
#include <map>

#include "format/families.h"
#include "plan/table_entry.h"
#include "util/rocks_status.h"
#include "write/bulk_load.h"

namespace fpstore::internal {

Writer::Writer(OpenedStore opened, std::shared_ptr<const BackgroundErrors> background_errors,
               std::shared_ptr<HeldDeletions> held)
    : Reader(std::move(opened)),
      background_errors_(std::move(background_errors)),
      ingest_guard_(*background_errors_, std::move(held)),
      near_plan_(*PermutationPlan::Create(plan_.distance() + 1, plan_.distance(), plan_.bits())),
      log_sync_([this] { return FromRocks(db_->SyncWAL(), "syncing " + path_); }),
      ingestion_(*db_, tables_, staging_, ingest_guard_),
      merger_(*db_, staging_, ingestion_, locks_, path_, options_.write_buffer_bytes) {}

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
  Status s = documents_.Read(
      nullptr, ids, /*whole=*/false,
      [&](std::size_t i, const Document& doc) { versions[i].stored = doc.fingerprint; });
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

Status Writer::WriteInserts(std::span<const DocumentId> ids,
                            std::span<const NewDocument* const> docs, DocumentTime now) {
  Result<std::vector<IdVersions>> versions = CurrentVersions(ids);
  if (!versions.ok()) return versions.status();
  const std::vector<IdVersions>& old = *versions;
  rocksdb::WriteBatch batch;
  int added = 0;
  std::vector<StagingIndex::Entry> staged;
  staged.reserve(docs.size());
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const NewDocument& doc = *docs[i];
    documents_.Put(batch, doc, doc.time.value_or(now));
    added += !old[i].stored;
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
  documents_.CountChange(batch, added);
  if (Status s = WriteUnsynced(batch); !s.ok()) return s;
  if (std::any_of(docs.begin(), docs.end(),
                  [](const NewDocument* d) { return !d->signature.empty(); })) {
    documents_.WroteSigned();
  }
  return Status::OK();
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

Status Writer::InsertBatch(std::span<const NewDocument> docs) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  if (docs.empty()) return Status::OK();
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
  {
    WriteLocks locks;
    if (Status s = LockForWrite(ids, ids.size(), locks); !s.ok()) return s;
    if (Status s = WriteInserts(ids, pending, *now); !s.ok()) return s;
  }
  return MakeDurable();
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
    documents_.Delete(batch, id);
    const Key8 key(id);
    const rocksdb::Slice key_slice = key.view();
    if (const std::optional<Word> in_tables = (*old)[0].in_tables()) {
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
    documents_.CountChange(batch, -1);
    if (Status s = WriteUnsynced(batch); !s.ok()) return s;
  }
  return MakeDurable();
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
      if (Status s = WriteInserts(std::span(&id, 1), std::span(&pending, 1), *now); !s.ok()) {
        return s;
      }
      result.inserted = true;
    }
  }
  // Synced even when nothing was written: the matches may be other callers' unsynced writes, which
  // a power loss could take back.
  if (Status s = MakeDurable(); !s.ok()) return s;
  return result;
}

Result<std::unique_ptr<BulkLoader>> Writer::NewBulkLoader(const BulkLoadOptions& options) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  Result<DocumentTime> now = Now(options_.clock);
  if (!now.ok()) return now.status();
  Result<ScratchDir> dir = ScratchDir::Make(path_, options.temp_dir);
  if (!dir.ok()) return dir.status();
  const BulkLoaderImpl::Context context{db_.get(),
                                        &documents_,
                                        &staging_,
                                        &ingestion_,
                                        &locks_,
                                        plan().bits(),
                                        fingerprinter_.options().signature_bytes,
                                        *now};
  return std::unique_ptr<BulkLoader>(
      std::make_unique<BulkLoaderImpl>(context, options, *std::move(dir)));
}

Status Writer::Flush() {
  if (Status s = CheckWritable(); !s.ok()) return s;
  return merger_.MergeNow();
}

}  // namespace fpstore::internal
