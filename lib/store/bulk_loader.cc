#include "store/bulk_loader.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <mutex>
#include <new>
#include <optional>
#include <queue>
#include <utility>

#include "ingest/changes.h"
#include "ingest/spills.h"
#include "ingest/sst_sink.h"
#include "platform/huge_pages.h"
#include "store/store_impl.h"
#include "util/record_file.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

namespace fs = std::filesystem;

namespace {

// Approximate memory a buffered record takes: the record with room for
// the buffer's spare capacity, and its metadata.
std::size_t RecordBytes(std::string_view metadata) { return 64 + metadata.size(); }

// Steps of a process and their seconds, as "sorted 0.4 s, tables 9.1 s".
class PhaseClock {
 public:
  void Lap(const char* step) {
    const auto now = std::chrono::steady_clock::now();
    char part[64];
    std::snprintf(part, sizeof part, "%s%s %.1f s", text_.empty() ? "" : ", ", step,
                  std::chrono::duration<double>(now - std::exchange(last_, now)).count());
    text_ += part;
  }
  const std::string& ToString() const { return text_; }

 private:
  std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  std::string text_;
};

}  // namespace

BulkLoaderImpl::BulkLoaderImpl(StoreImpl& store, BulkLoadOptions options, std::string temp_dir)
    : store_(store), options_(std::move(options)), temp_dir_(std::move(temp_dir)) {}

BulkLoaderImpl::~BulkLoaderImpl() {
  std::error_code ec;
  fs::remove_all(temp_dir_, ec);
}

std::string BulkLoaderImpl::TempPath(const std::string& name) const {
  return (fs::path(temp_dir_) / name).string();
}

Status BulkLoaderImpl::Add(DocumentId id, Fingerprint fingerprint, std::string_view metadata) {
  if (finished_) return Status::InvalidArgument("the bulk load has finished");
  if (buffer_.capacity() == 0) ReserveBuffer();
  // All or nothing, should memory run out: a record without its metadata
  // would take the next one's.
  const std::size_t offset = buffer_metadata_.size();
  buffer_metadata_.append(metadata);
  try {
    buffer_.push_back({id, next_seq_, fingerprint, offset, metadata.size()});
  } catch (...) {
    buffer_metadata_.resize(offset);
    throw;
  }
  ++next_seq_;
  buffer_bytes_ += RecordBytes(metadata);
  return buffer_bytes_ >= options_.memory_bytes ? SpillRun() : Status::OK();
}

void BulkLoaderImpl::ReserveBuffer() {
  // Room for as many records as the budget takes, as address space only:
  // pages are touched as records fill them. Grown by doubling, the buffer
  // of a 10M load was copied and faulted in again and again (a fifth of
  // the time before the tables start). In huge pages: faulted in 4 KiB at
  // a time, the 400 MB of a 10M load made reading its input take 3.4-4.8 s
  // instead of 2.8-3.0.
  try {
    buffer_.reserve(options_.memory_bytes / RecordBytes({}) + 1);
    AdviseHugePages(buffer_);
  } catch (const std::bad_alloc&) {
    // Address space refused: grow as needed after all.
  }
}

Status BulkLoaderImpl::SpillRun() {
  SortRun(buffer_);
  const std::string path = TempPath("run-" + std::to_string(runs_.size()));
  if (Status s = WriteRun(path, buffer_, buffer_metadata_); !s.ok()) return s;
  runs_.push_back(path);
  buffer_.clear();
  buffer_metadata_.clear();
  buffer_bytes_ = 0;
  return Status::OK();
}

Result<BulkLoadStats> BulkLoaderImpl::Finish() {
  if (finished_) return Status::InvalidArgument("the bulk load has finished");
  finished_ = true;
  BulkLoadStats stats;
  if (runs_.empty() && buffer_.empty()) return stats;
  // How long each step took, for the store's LOG: where a load's time goes.
  PhaseClock phases;
  SortRun(buffer_);
  phases.Lap("sorted");

  rocksdb::DB& db = *store_.db_;
  const PermutationPlan& plan = store_.plan_;
  // Nothing else writes, or merges, while the documents are matched against
  // the store and ingested: the old versions read here must stay current.
  // Queries wait only for the ingestion itself (below): when the ingest
  // lock was held for all of Finish, they stopped for all of it (about
  // 40 s at 10M). A rewrite of the lone bits under way ends first.
  std::lock_guard refresh(store_.refresh_mu_);
  std::lock_guard merge(store_.merge_mu_);
  std::unique_lock writers(store_.load_mu_);
  {
    // After a failed merge its documents stay staged in an index of their
    // own, whose removals this load would not look for; writes
    // stop until the store is reopened, loads too.
    std::lock_guard lock(store_.staging_mu_);
    if (!store_.merge_error_.ok()) return store_.merge_error_;
  }

  // Merge the runs by (id, input order); the last record of an id wins.
  std::vector<std::unique_ptr<RunCursor>> cursors;
  struct Head {
    DocumentId id;
    std::uint64_t seq;
    Fingerprint fp;
    std::string metadata;
    std::size_t run;
    bool operator>(const Head& o) const { return id != o.id ? id > o.id : seq > o.seq; }
  };
  std::priority_queue<Head, std::vector<Head>, std::greater<>> heads;
  for (const std::string& path : runs_) cursors.push_back(ReadSpilledRun(path));
  cursors.push_back(ReadBufferedRun(buffer_, buffer_metadata_));
  for (std::size_t run = 0; run < cursors.size(); ++run) {
    Head h{};
    h.run = run;
    if (cursors[run]->Next(h.id, h.seq, h.fp, h.metadata)) heads.push(std::move(h));
    if (!cursors[run]->status().ok()) return cursors[run]->status();
  }

  // The documents' records, for their SST file: written beside table 0,
  // which has a core to spare while the other tables' writers wait for
  // none (WriteTables). Here the file cost a 10M load 1.8 s of one core.
  const std::string documents_path = TempPath("documents");
  RecordWriter documents(documents_path);
  // Per document: id, new fingerprint, old fingerprint, whether it had one.
  const std::string changes_path = TempPath("changes");
  RecordWriter changes(changes_path);
  std::uint64_t change_count = 0;
  // Documents whose old version leaves the tables.
  std::vector<IdFingerprint> leaving;
  // A replaced version that is staged leaves by the deletion of its mark:
  // it has no table entries, though the mark may name a version that
  // does, whose removal the load then takes over; and a removed document
  // may have such a mark left.
  rocksdb::ColumnFamilyHandle* const staging = store_.staging_family();
  SstSink staged_marks(db, staging, TempPath("staging.sst"));
  std::unique_ptr<rocksdb::Iterator> staged(db.NewIterator(rocksdb::ReadOptions(), staging));
  std::unique_ptr<rocksdb::Iterator> existing(
      db.NewIterator(rocksdb::ReadOptions(), store_.documents_family()));
  // Lone bits are exact only for a load into an empty store; later loads
  // add their fingerprints to the recent family instead.
  existing->SeekToFirst();
  if (!existing->status().ok()) return FromRocks(existing->status(), "reading documents");
  bool into_empty = !existing->Valid();
  // Removed documents may still be in the tables, their marks waiting for
  // a merge.
  if (into_empty) {
    staged->SeekToFirst();
    if (!staged->status().ok()) return FromRocks(staged->status(), "reading staging");
    into_empty = !staged->Valid();
  }
  std::vector<Fingerprint> recent;
  while (!heads.empty()) {
    Head h = heads.top();
    heads.pop();
    Head next{};
    next.run = h.run;
    if (cursors[h.run]->Next(next.id, next.seq, next.fp, next.metadata))
      heads.push(std::move(next));
    if (!cursors[h.run]->status().ok()) return cursors[h.run]->status();
    if (!heads.empty() && heads.top().id == h.id) {
      ++stats.superseded;
      continue;
    }
    const DocumentKey key = EncodeDocumentKey(h.id);
    const rocksdb::Slice key_slice(key.data(), key.size());
    Fingerprint old = 0;
    bool had_old = false;
    // Into an empty store there is nothing to find: skipping the seeks took
    // this loop at 10M from 3.6 s to 2.8 s (the documents' file included).
    if (!into_empty) {
      existing->Seek(key_slice);
      had_old = existing->Valid() && existing->key() == key_slice &&
                DecodeDocumentValue(existing->value().ToStringView(), &old, nullptr);
      if (!existing->status().ok()) return FromRocks(existing->status(), "reading documents");
    }
    ++(had_old ? stats.replaced : stats.added);
    bool old_in_tables = had_old;
    if (had_old || store_.staging_->HasRemoval(h.id)) {
      staged->Seek(key_slice);
      if (!staged->status().ok()) return FromRocks(staged->status(), "reading staging");
      if (staged->Valid() && staged->key() == key_slice) {
        StagingMark mark;
        if (Status s = store_.DecodeMark(h.id, staged->value().ToStringView(), &mark); !s.ok()) {
          return s;
        }
        if (Status s = staged_marks.Delete(key_slice); !s.ok()) return s;
        old_in_tables = mark.leaving.has_value();
        old = mark.leaving.value_or(old);
      }
    }
    const std::string value = EncodeDocumentValue(h.fp, h.metadata);
    documents.PutU64(h.id);
    documents.PutU64(value.size());
    documents.PutBytes(value);
    if (old_in_tables && old == h.fp) continue;  // table entries stay as they are
    if (old_in_tables) leaving.push_back({h.id, old});
    Change{h.id, h.fp, old, old_in_tables}.Write(changes);
    ++change_count;
    if (!into_empty) recent.push_back(h.fp);
  }
  if (Status s = changes.Close(); !s.ok()) return s;
  if (Status s = documents.Close(); !s.ok()) return s;
  phases.Lap("documents");
  // The tables get the memory budget to themselves.
  cursors.clear();
  std::vector<BufferedRecord>().swap(buffer_);
  std::string().swap(buffer_metadata_);
  Result<Changes> changes_read = Changes::InFile(changes_path, change_count);
  if (!changes_read.ok()) return changes_read.status();
  const Changes& table_changes = *changes_read;
  Result<std::vector<bool>> old_keys_leaving = OldKeysLeaving(std::move(leaving), table_changes);
  if (!old_keys_leaving.ok()) return old_keys_leaving.status();

  std::vector<rocksdb::IngestExternalFileArg> args;
  auto add_family = [&](rocksdb::ColumnFamilyHandle* family, SstSink& sink) {
    rocksdb::IngestExternalFileArg arg = IngestionInto(family);
    if (Status s = sink.Finish(arg.external_files); !s.ok()) return s;
    if (!arg.external_files.empty()) args.push_back(std::move(arg));
    return Status::OK();
  };
  rocksdb::IngestExternalFileArg documents_arg;
  auto write_documents = [&]() -> Status {
    SstSink sink(db, store_.documents_family(), TempPath("documents.sst"));
    RecordReader in(documents_path);
    std::uint64_t id = 0, size = 0;
    std::string value;
    while (in.GetU64(id)) {
      if (!in.GetU64(size) || !(value.resize(size), in.GetBytes(value.data(), size))) {
        return in.status().ok() ? Status::IOError("short read of " + documents_path) : in.status();
      }
      if (Status s = sink.Put(AsSlice(EncodeDocumentKey(id)), value); !s.ok()) return s;
    }
    if (!in.status().ok()) return in.status();
    documents_arg = IngestionInto(store_.documents_family());
    if (Status s = sink.Finish(documents_arg.external_files); !s.ok()) return s;
    return Status::OK();
  };
  if (Status s = add_family(staging, staged_marks); !s.ok()) return s;

  if (stats.added > 0) {
    SstSink meta(db, store_.meta(), TempPath("meta.sst"));
    char delta[8];
    PutBigEndian64(delta, stats.added);
    if (Status s = meta.Merge(kDocumentCountKey, rocksdb::Slice(delta, 8)); !s.ok()) return s;
    if (Status s = add_family(store_.meta(), meta); !s.ok()) return s;
  }

  const std::uint64_t total_work =
      (stats.added + stats.replaced) + change_count * plan.table_count();
  std::uint64_t work_done = stats.added + stats.replaced;
  if (Status s = ReportProgress(work_done, total_work); !s.ok()) return s;

  std::mutex progress_mu;
  auto table_done = [&] {
    std::lock_guard lock(progress_mu);
    work_done += change_count;
    return ReportProgress(work_done, total_work);
  };
  if (Status s = AddRecent(std::move(recent), args); !s.ok()) return s;
  // Marked and read in key order, so scattered: in huge pages, as in 4 KiB
  // ones nearly every read of table 0 missed the TLB.
  ZeroedMapping crowded_bits;
  std::atomic<LoneBits>* crowded = nullptr;
  // Always, in a load into an empty store: a fingerprint without bits is
  // alone everywhere, unless it is recent.
  if (into_empty) {
    crowded_bits = ZeroedMapping(change_count * sizeof(std::atomic<LoneBits>));
    crowded = static_cast<std::atomic<LoneBits>*>(crowded_bits.data());
    for (std::uint64_t i = 0; i < change_count; ++i) new (&crowded[i]) std::atomic<LoneBits>(0);
  }
  std::optional<TableFilters::Ingested> ingested;
  if (Status s = WriteTables(table_changes, *old_keys_leaving, table_done, crowded, SstUse::kLoad,
                             args, ingested, write_documents);
      !s.ok()) {
    return s;
  }
  if (!documents_arg.external_files.empty()) args.push_back(std::move(documents_arg));
  phases.Lap("tables");

  if (!args.empty()) {
    store_.FlushBeforeIngesting(args);
    std::unique_lock exclusive(store_.ingest_mu_);
    const Status s = FromRocks(db.IngestExternalFiles(args), "ingesting the bulk load");
    store_.PublishMemberFilters(args, ingested, s);
    if (!s.ok()) return s;
  }
  phases.Lap("ingested");
  rocksdb::Log(rocksdb::InfoLogLevel::INFO_LEVEL, db.GetDBOptions().info_log.get(),
               "fpstore: bulk load of %llu documents: %s",
               static_cast<unsigned long long>(stats.added + stats.replaced),
               phases.ToString().c_str());
  return stats;
}

Result<std::vector<bool>> BulkLoaderImpl::OldKeysLeaving(std::vector<IdFingerprint> leaving,
                                                         const Changes& changes) const {
  if (leaving.empty()) return std::vector<bool>();
  std::vector<Fingerprint> dropped;
  std::sort(leaving.begin(), leaving.end(), ByFingerprint);
  for (const IdFingerprint& l : leaving) {
    if (dropped.empty() || dropped.back() != l.fingerprint) dropped.push_back(l.fingerprint);
  }
  // A fingerprint stays if a document that stays in the tables has it...
  Result<std::vector<Fingerprint>> kept = store_.FingerprintsKept(leaving);
  if (!kept.ok()) return kept.status();
  std::vector<bool> stays(dropped.size(), false);
  for (Fingerprint fp : *kept) {
    stays[std::lower_bound(dropped.begin(), dropped.end(), fp) - dropped.begin()] = true;
  }
  // ... or a loaded document takes it.
  Status s = changes.ForEach([&](const Change& c, std::uint64_t) {
    if (!c.adds) return Status::OK();
    auto at = std::lower_bound(dropped.begin(), dropped.end(), c.fingerprint);
    if (at != dropped.end() && *at == c.fingerprint) stays[at - dropped.begin()] = true;
    return Status::OK();
  });
  if (!s.ok()) return s;
  std::size_t n = 0;
  for (std::size_t i = 0; i < dropped.size(); ++i) {
    if (!stays[i]) dropped[n++] = dropped[i];
  }
  dropped.resize(n);
  if (dropped.empty()) return std::vector<bool>();
  // Looked up once here rather than by every table as it reads the
  // changes: nineteen binary searches of a merge's half a million dropped
  // fingerprints, each a few cache misses, were 2.4 µs a replacement.
  std::vector<bool> old_keys_leaving(changes.count());
  s = changes.ForEach([&](const Change& c, std::uint64_t i) {
    if (c.had_old && std::binary_search(dropped.begin(), dropped.end(), c.old)) {
      old_keys_leaving[i] = true;
    }
    return Status::OK();
  });
  if (!s.ok()) return s;
  return old_keys_leaving;
}

Status BulkLoaderImpl::ReportProgress(std::uint64_t done, std::uint64_t total) const {
  if (!options_.progress) return Status::OK();
  try {
    options_.progress(done, total);
  } catch (const std::exception& e) {
    return Status::IOError(std::string("bulk load stopped by its progress callback: ") + e.what());
  }
  return Status::OK();
}

}  // namespace fpstore::internal
