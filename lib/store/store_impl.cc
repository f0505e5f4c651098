// Writes, point reads and maintenance of the RocksDB-backed store.

#include "store/store_impl.h"

#include <rocksdb/utilities/checkpoint.h>
#include <rocksdb/write_batch.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <system_error>
#include <thread>

#include "store/bulk_loader.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

Status StoreImpl::CheckOpen() const {
  return closed_ ? Status::InvalidArgument("the store " + path_ + " is closed") : Status::OK();
}

Status StoreImpl::Closing() const { return Status::Busy("the store " + path_ + " is closing"); }

Status StoreImpl::CheckWritable() const {
  if (Status s = CheckOpen(); !s.ok()) return s;
  if (options_.read_only) {
    return Status::NotSupported("the store " + path_ + " is open read-only");
  }
  return Status::OK();
}

Status StoreImpl::CheckDistance(int k) const {
  if (Status s = CheckOpen(); !s.ok()) return s;
  if (k < 0 || k > plan_.distance()) {
    return Status::InvalidArgument("distance " + std::to_string(k) + " is outside 0.." +
                                   std::to_string(plan_.distance()) +
                                   ", the distance this store was planned for");
  }
  return Status::OK();
}

Status MalformedStagingMark(DocumentId id) {
  return Status::Corruption("document " + std::to_string(id) + " has a malformed staging mark");
}

Status StoreImpl::MultiGetIds(
    rocksdb::ColumnFamilyHandle* family, const rocksdb::Snapshot* snapshot,
    std::span<const DocumentId> ids,
    const std::function<Status(std::size_t, std::string_view)>& found) const {
  std::vector<DocumentKey> keys;
  keys.reserve(ids.size());
  for (DocumentId id : ids) keys.push_back(EncodeDocumentKey(id));
  std::vector<rocksdb::Slice> slices;
  slices.reserve(ids.size());
  for (const DocumentKey& key : keys) slices.push_back(AsSlice(key));
  std::vector<rocksdb::PinnableSlice> values(ids.size());
  std::vector<rocksdb::Status> statuses(ids.size());
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  db_->MultiGet(ro, family, slices.size(), slices.data(), values.data(), statuses.data(),
                /*sorted_input=*/true);
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (statuses[i].IsNotFound()) continue;
    if (!statuses[i].ok()) {
      return FromRocks(statuses[i],
                       "reading " + family->GetName() + " of document " + std::to_string(ids[i]));
    }
    if (Status s = found(i, values[i].ToStringView()); !s.ok()) return s;
  }
  return Status::OK();
}

Status StoreImpl::DecodeMark(DocumentId id, std::string_view value, StagingMark* mark) const {
  if (!DecodeStagingMark(value, mark)) {
    return MalformedStagingMark(id);
  }
  return Status::OK();
}

Result<std::vector<StagingMark>> StoreImpl::StagingMarks(const rocksdb::Snapshot* snapshot,
                                                         std::span<const DocumentId> ids) const {
  std::vector<StagingMark> marks(ids.size());
  Status s = MultiGetIds(
      staging_family(), snapshot, ids,
      [&](std::size_t i, std::string_view value) { return DecodeMark(ids[i], value, &marks[i]); });
  if (!s.ok()) return s;
  return marks;
}

Result<std::vector<StoreImpl::IdVersions>> StoreImpl::CurrentVersions(
    std::span<const DocumentId> ids) const {
  std::vector<IdVersions> versions(ids.size());
  Status s =
      MultiGetIds(documents_family(), nullptr, ids, [&](std::size_t i, std::string_view value) {
        Fingerprint fp;
        if (!DecodeDocumentValue(value, &fp, nullptr)) {
          return Status::Corruption("document " + std::to_string(ids[i]) +
                                    " has a malformed record");
        }
        versions[i].stored = StoredVersion{fp, false};
        return Status::OK();
      });
  if (!s.ok()) return s;
  // Only a staged document, or one whose removal is staged, has a mark: its
  // current version has an entry in the staging index, or its removal is
  // there. A crawler's inserts are mostly new, and a recrawl mostly
  // replaces documents already in the tables, which have none: a lookup
  // of the staging family each; replacements ran 11-22% faster without. Writers
  // hold the ids, which are in no index being merged (LockForWrite), and
  // the index they are staged in cannot be merged meanwhile.
  std::vector<DocumentId> marked;
  std::vector<std::size_t> at;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const std::optional<StoredVersion>& stored = versions[i].stored;
    if (stored ? !staging_->HoldsEntry(ids[i], stored->fingerprint)
               : !staging_->HasRemoval(ids[i])) {
      continue;
    }
    marked.push_back(ids[i]);
    at.push_back(i);
  }
  Result<std::vector<StagingMark>> marks = StagingMarks(nullptr, marked);
  if (!marks.ok()) return marks.status();
  for (std::size_t j = 0; j < marked.size(); ++j) {
    const StagingMark& mark = (*marks)[j];
    if (!mark.staged && !mark.leaving) continue;  // none
    IdVersions& v = versions[at[j]];
    if (v.stored.has_value() != mark.staged.has_value() ||
        (mark.staged && *mark.staged != v.stored->fingerprint)) {
      return Status::Corruption("document " + std::to_string(marked[j]) +
                                "'s staging mark disagrees with its record");
    }
    if (v.stored) v.stored->staged = true;
    v.leaving = mark.leaving;
  }
  return versions;
}

int StoreImpl::StageInserts(rocksdb::WriteBatch& batch, std::span<const PendingInsert> inserts) {
  // A version in the tables leaves them when the next merge moves the new
  // one in: its mark says what leaves.
  int added = 0;
  std::vector<StagingIndex::Entry> staged;
  staged.reserve(inserts.size());
  for (const PendingInsert& p : inserts) {
    const std::optional<StoredVersion>& old = p.old.stored;
    batch
        .Put(documents_family(), AsSlice(EncodeDocumentKey(p.doc->id)),
             EncodeDocumentValue(p.doc->fingerprint, p.doc->metadata))
        .PermitUncheckedError();
    added += !old;
    if (old && old->fingerprint == p.doc->fingerprint) continue;  // entries stay as they are
    staged.push_back({p.doc->id, p.doc->fingerprint});
    const StagingMark mark{p.doc->fingerprint, p.old.in_tables()};
    batch.Put(staging_family(), AsSlice(EncodeDocumentKey(p.doc->id)), EncodeStagingMark(mark))
        .PermitUncheckedError();
  }
  // Into the index before RocksDB: a reader whose snapshot holds this
  // write must find the entries (staging_index.h).
  staging_->Add(staged);
  if (staging_->size() >= options_.staged_documents) staging_cv_.notify_all();
  return added;
}

Result<std::vector<Fingerprint>> StoreImpl::FingerprintsKept(
    std::span<const IdFingerprint> leaving) const {
  // A seek in table 0 per fingerprint, 2-7 µs each at 10M: a merge of
  // half a million replacements spent seconds here while writers waited
  // for room. Two halves on two threads, split between fingerprints.
  // Out of memory, on the helper thread too, fails the merge, not the
  // process.
  const auto kept_of = [&](std::span<const IdFingerprint> part,
                           std::vector<Fingerprint>& kept) -> Status {
    try {
      std::unique_ptr<rocksdb::Iterator> table0(db_->NewIterator(rocksdb::ReadOptions(), table(0)));
      // Once per fingerprint (a batch may replace thousands of copies of
      // one), in table 0's order: a packed table 0 then reads each group
      // once for all its fingerprints (ForEachIdOf).
      std::vector<Fingerprint> fps;
      for (std::size_t i = 0; i < part.size(); ++i) {
        if (i == 0 || part[i - 1].fingerprint != part[i].fingerprint) {
          fps.push_back(part[i].fingerprint);
        }
      }
      const TablePermutation& perm0 = plan_.table(0);
      std::sort(fps.begin(), fps.end(),
                [&](Fingerprint a, Fingerprint b) { return perm0.Apply(a) < perm0.Apply(b); });
      for (const Fingerprint fp : fps) {
        bool keeps = false;
        Status s = ForEachIdOf(*table0, fp, [&](DocumentId id) {
          keeps = !std::binary_search(leaving.begin(), leaving.end(), IdFingerprint{id, fp},
                                      ByFingerprint);
          return !keeps;
        });
        if (!s.ok()) return s;
        if (keeps) kept.push_back(fp);
      }
      return Status::OK();
    } catch (const std::exception& e) {
      return Status::IOError(std::string("finding the fingerprints that stay: ") + e.what());
    }
  };
  constexpr std::size_t kSplitAbove = 4096;
  std::size_t half = leaving.size() / 2;
  while (half > 0 && half < leaving.size() &&
         leaving[half].fingerprint == leaving[half - 1].fingerprint) {
    ++half;
  }
  std::vector<Fingerprint> kept, kept_after;
  Status first, second;
  if (leaving.size() <= kSplitAbove || half == leaving.size()) {
    first = kept_of(leaving, kept);
  } else {
    std::thread helper;
    try {
      helper = std::thread([&] { second = kept_of(leaving.subspan(half), kept_after); });
    } catch (const std::system_error&) {  // no thread to be had: one after the other
      second = kept_of(leaving.subspan(half), kept_after);
    }
    first = kept_of(leaving.first(half), kept);
    if (helper.joinable()) helper.join();
  }
  if (!first.ok()) return first;
  if (!second.ok()) return second;
  kept.insert(kept.end(), kept_after.begin(), kept_after.end());
  std::sort(kept.begin(), kept.end());
  return kept;
}

namespace {

void StageCountChange(rocksdb::WriteBatch& batch, rocksdb::ColumnFamilyHandle* meta,
                      std::int64_t delta) {
  if (delta == 0) return;
  char value[8];
  PutBigEndian64(value, static_cast<std::uint64_t>(delta));
  batch.Merge(meta, kDocumentCountKey, rocksdb::Slice(value, 8)).PermitUncheckedError();
}

}  // namespace

Status StoreImpl::WriteUnsynced(rocksdb::WriteBatch& batch) {
  // Writers put records and marks (and merge the document count): only
  // merges and bulk loads change the tables, by ingestion.
  return FromRocks(db_->Write(rocksdb::WriteOptions(), &batch), "writing to " + path_);
}

Status StoreImpl::MakeDurable() {
  switch (options_.durability) {
    case Durability::kSync:
      return FromRocks(db_->SyncWAL(), "syncing " + path_);
    case Durability::kGroupCommit:
      return group_commit_.WaitDurable(group_commit_.Written());
    case Durability::kNoSync:
      break;
  }
  return Status::OK();
}

Status StoreImpl::Insert(DocumentId id, Fingerprint fingerprint, std::string_view metadata) {
  const NewDocument doc{id, fingerprint, metadata};
  return InsertBatch(std::span(&doc, 1));
}

Result<StoreImpl::WriteLocks> StoreImpl::LockForWrite(std::span<const DocumentId> ids,
                                                      std::size_t staged) {
  Result<StagingRoom> room = ReserveStagingRoom(staged);
  if (!room.ok()) return room.status();
  while (true) {
    WriteLocks locks{
        {}, std::shared_lock(load_mu_), std::shared_lock(ingest_mu_), id_locks_.Lock(ids)};
    const bool merging = merging_ && std::any_of(ids.begin(), ids.end(), [&](DocumentId id) {
                           return std::binary_search(merging_ids_.begin(), merging_ids_.end(), id);
                         });
    if (!merging) {
      locks.room = *std::move(room);
      return locks;
    }
    locks.ids = {};
    locks.ingest.unlock();
    locks.load.unlock();
    std::unique_lock lock(staging_mu_);
    staging_cv_.wait(lock, [&] { return !merging_ || !merge_error_.ok(); });
    if (!merge_error_.ok()) return merge_error_;
  }
}

Status StoreImpl::InsertBatch(std::span<const NewDocument> docs) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  if (docs.empty()) return Status::OK();
  // The last occurrence of an id wins; the ones before it are dropped.
  std::map<DocumentId, const NewDocument*> latest;
  for (const NewDocument& d : docs) latest[d.id] = &d;
  std::vector<DocumentId> ids;
  ids.reserve(latest.size());
  for (const auto& [id, doc] : latest) ids.push_back(id);
  {
    Result<WriteLocks> locks = LockForWrite(ids, ids.size());
    if (!locks.ok()) return locks.status();
    Result<std::vector<IdVersions>> old = CurrentVersions(ids);
    if (!old.ok()) return old.status();
    std::vector<PendingInsert> inserts;
    inserts.reserve(latest.size());
    std::size_t i = 0;
    for (const auto& [id, doc] : latest) inserts.push_back({doc, (*old)[i++]});
    rocksdb::WriteBatch batch;
    StageCountChange(batch, meta(), StageInserts(batch, inserts));
    if (Status s = WriteUnsynced(batch); !s.ok()) return s;
  }
  // Durable outside the locks, so that other writers can join the fsync.
  return MakeDurable();
}

Status StoreImpl::Remove(DocumentId id) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  // A removal may stage a mark: room for its entry.
  Result<WriteLocks> locks = LockForWrite(std::span(&id, 1), 1);
  if (!locks.ok()) return locks.status();
  Result<std::vector<IdVersions>> old = CurrentVersions(std::span(&id, 1));
  if (!old.ok()) return old.status();
  if (!(*old)[0].stored) {
    // The document may be gone by another caller's delete that is not yet
    // durable; "not found" must not be taken back by a power loss.
    *locks = {};
    if (Status s = MakeDurable(); !s.ok()) return s;
    return Status::NotFound("document " + std::to_string(id));
  }
  const std::optional<Fingerprint> in_tables = (*old)[0].in_tables();
  rocksdb::WriteBatch batch;
  batch.Delete(documents_family(), AsSlice(EncodeDocumentKey(id))).PermitUncheckedError();
  if (in_tables) {
    // The next merge takes the version in the tables out.
    staging_->AddRemoval(id);
    batch
        .Put(staging_family(), AsSlice(EncodeDocumentKey(id)),
             EncodeStagingMark({std::nullopt, in_tables}))
        .PermitUncheckedError();
  } else {
    // Staged only: it leaves with its mark.
    batch.Delete(staging_family(), AsSlice(EncodeDocumentKey(id))).PermitUncheckedError();
  }
  StageCountChange(batch, meta(), -1);
  if (Status s = WriteUnsynced(batch); !s.ok()) return s;
  *locks = {};
  return MakeDurable();
}

Result<Document> StoreImpl::Get(DocumentId id) const {
  if (Status s = CheckOpen(); !s.ok()) return s;
  std::string value;
  rocksdb::Status rs =
      db_->Get(rocksdb::ReadOptions(), documents_family(), AsSlice(EncodeDocumentKey(id)), &value);
  if (rs.IsNotFound()) return Status::NotFound("document " + std::to_string(id));
  if (!rs.ok()) return FromRocks(rs, "reading document " + std::to_string(id));
  Document doc;
  doc.id = id;
  if (!DecodeDocumentValue(value, &doc.fingerprint, &doc.metadata)) {
    return Status::Corruption("document " + std::to_string(id) + " has a malformed record");
  }
  return doc;
}

Result<CheckResult> StoreImpl::CheckAndInsert(DocumentId id, Fingerprint fingerprint,
                                              std::string_view metadata, InsertPolicy policy) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  CheckResult result;
  rocksdb::WriteBatch batch;
  {
    std::lock_guard check(check_mu_);
    Result<WriteLocks> locks = LockForWrite(std::span(&id, 1), 1);
    if (!locks.ok()) return locks.status();
    Result<std::vector<std::vector<Match>>> matches =
        QueryBatchLocked(std::span(&fingerprint, 1), plan_.distance());
    if (!matches.ok()) return matches.status();
    result.matches = std::move((*matches)[0]);
    std::erase_if(result.matches, [id](const Match& m) { return m.id == id; });
    if (policy == InsertPolicy::kAlways || result.matches.empty()) {
      Result<std::vector<IdVersions>> old = CurrentVersions(std::span(&id, 1));
      if (!old.ok()) return old.status();
      const NewDocument doc{id, fingerprint, metadata};
      const PendingInsert insert{&doc, (*old)[0]};
      StageCountChange(batch, meta(), StageInserts(batch, std::span(&insert, 1)));
      // Written unsynced while the lock is held, so that the next
      // CheckAndInsert already sees it; made durable below, outside the
      // lock, where concurrent callers can share the fsync.
      if (Status s = WriteUnsynced(batch); !s.ok()) return s;
      result.inserted = true;
    }
  }
  // Durable before answering even when nothing was written: the matches may
  // be another caller's writes that are not synced yet, and a crawler must
  // not drop a page as the duplicate of one a power loss could take back.
  if (Status s = MakeDurable(); !s.ok()) return s;
  return result;
}

namespace {

constexpr std::string_view kBulkDirPrefix = "bulk-load.";

// Removes the temporary directories of bulk loads whose process is gone.
void SweepAbandonedBulkLoads(const std::string& store_path) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(store_path, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_directory(ec) || !name.starts_with(kBulkDirPrefix)) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(name.c_str() + kBulkDirPrefix.size()));
    if (pid > 0 && ::kill(pid, 0) != 0 && errno == ESRCH) std::filesystem::remove_all(entry, ec);
  }
}

}  // namespace

Result<std::unique_ptr<BulkLoaderImpl>> StoreImpl::MakeBulkLoader(const BulkLoadOptions& options) {
  static std::atomic<int> counter{0};
  const std::string name = std::string(kBulkDirPrefix) + std::to_string(::getpid()) + "." +
                           std::to_string(counter.fetch_add(1));
  std::string dir = options.temp_dir.empty()
                        ? (std::filesystem::path(path_) / name).string()
                        : (std::filesystem::path(options.temp_dir) / name).string();
  if (options.temp_dir.empty()) SweepAbandonedBulkLoads(path_);
  std::error_code ec;
  if (!std::filesystem::create_directories(dir, ec)) {
    return Status::IOError("creating " + dir + ": " + ec.message());
  }
  return std::make_unique<BulkLoaderImpl>(*this, options, std::move(dir));
}

Result<std::unique_ptr<BulkLoader>> StoreImpl::NewBulkLoader(const BulkLoadOptions& options) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  Result<std::unique_ptr<BulkLoaderImpl>> loader = MakeBulkLoader(options);
  if (!loader.ok()) return loader.status();
  return std::unique_ptr<BulkLoader>(*std::move(loader));
}

std::uint64_t StoreImpl::EstimatedEntries() const {
  std::uint64_t n = 0;
  db_->GetIntProperty(documents_family(), rocksdb::DB::Properties::kEstimateNumKeys, &n);
  return n;
}

Result<StoreStats> StoreImpl::Stats() const {
  if (Status s = CheckOpen(); !s.ok()) return s;
  StoreStats stats;
  stats.format_version = kFormatVersion;
  stats.group_bits = group_bits_;
  stats.blocks = plan_.blocks();
  stats.distance = plan_.distance();
  stats.fingerprint = fingerprinter_.options();
  std::string count;
  rocksdb::Status rs = db_->Get(rocksdb::ReadOptions(), meta(), kDocumentCountKey, &count);
  if (rs.ok() && count.size() == 8) {
    stats.documents = GetBigEndian64(count.data());
  } else if (!rs.IsNotFound()) {
    return rs.ok() ? Status::Corruption("malformed document count record")
                   : FromRocks(rs, "reading the document count");
  }
  Result<std::vector<StagedDocument>> staged = StagedDocuments(nullptr);
  if (!staged.ok()) return staged.status();
  stats.staged_documents = staged->size();
  stats.recent_fingerprints = recent_.size();
  stats.lone_bits_used = !recent_.full();
  for (std::size_t t = 0; t < plan_.table_count(); ++t) {
    stats.table_entries.push_back(EstimatedEntries());
    rocksdb::ColumnFamilyMetaData family;
    db_->GetColumnFamilyMetaData(table(t), &family);
    stats.table_bytes.push_back(family.size);
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path_, ec)) {
    if (entry.is_regular_file(ec)) stats.bytes_on_disk += entry.file_size(ec);
  }
  return stats;
}

Status StoreImpl::Checkpoint(const std::string& dir) const {
  if (Status s = CheckOpen(); !s.ok()) return s;
  rocksdb::Checkpoint* raw = nullptr;
  if (Status s = FromRocks(rocksdb::Checkpoint::Create(db_.get(), &raw), "checkpoint"); !s.ok()) {
    return s;
  }
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  return FromRocks(checkpoint->CreateCheckpoint(dir), "writing checkpoint " + dir);
}

}  // namespace fpstore::internal
