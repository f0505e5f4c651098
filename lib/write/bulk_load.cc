#include "write/bulk_load.h"

#include <chrono>
#include <cstdio>
#include <exception>
#include <mutex>
#include <new>
#include <optional>
#include <queue>
#include <utility>

#include "format/families.h"
#include "format/records.h"
#include "plan/table_entry.h"
#include "util/record_file.h"
#include "util/rocks_status.h"
#include "util/test_hooks.h"

namespace fpstore::internal {

namespace {

// A buffered record's approximate memory, spare buffer capacity included.
std::size_t RecordBytes(std::string_view tail) { return 64 + tail.size(); }

// Time keys a bulk load writes per batch.
constexpr int kTimeKeysPerWrite = 1 << 16;

// Each step's duration, for the store's LOG: where a load's time goes.
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

// The load's documents in id order, from the spills and buffer; of an id, the last added.
class InIdOrder {
 public:
  InIdOrder(std::vector<std::unique_ptr<SpillCursor>> cursors) : cursors_(std::move(cursors)) {}

  struct Doc {
    DocumentId id;
    std::uint64_t seq;
    Word fp;
    std::string tail;  // of its documents-family value (format/records.h)
    std::size_t cursor;
    bool operator>(const Doc& o) const { return id != o.id ? id > o.id : seq > o.seq; }
  };
  Status Start() {
    for (std::size_t c = 0; c < cursors_.size(); ++c) {
      if (Status s = Pull(c); !s.ok()) return s;
    }
    return Status::OK();
  }
  // The next document, or none; `superseded` counts those replaced by a later one.
  Result<std::optional<Doc>> Next(std::uint64_t& superseded) {
    while (!heads_.empty()) {
      Doc doc = heads_.top();
      heads_.pop();
      if (Status s = Pull(doc.cursor); !s.ok()) return s;
      if (!heads_.empty() && heads_.top().id == doc.id) {
        ++superseded;
        continue;
      }
      return std::optional<Doc>(std::move(doc));
    }
    return std::optional<Doc>();
  }

 private:
  Status Pull(std::size_t c) {
    Doc next{};
    next.cursor = c;
    if (cursors_[c]->Next(next.id, next.seq, next.fp, next.tail)) heads_.push(std::move(next));
    return cursors_[c]->status();
  }
  std::vector<std::unique_ptr<SpillCursor>> cursors_;
  std::priority_queue<Doc, std::vector<Doc>, std::greater<>> heads_;
};

}  // namespace

struct BulkLoaderImpl::Matched {
  BulkLoadStats stats;
  // Into an empty store there is nothing to match.
  bool into_empty = true;
  std::string documents_path, changes_path;
  std::uint64_t changes = 0;
  std::optional<Changes> table_changes;
  // Versions that leave the tables, and the marks the load takes over.
  std::vector<IdFingerprint> leaving;
  std::optional<SstSink> marks;
};

Status BulkLoaderImpl::Add(const NewDocument& doc) {
  if (finished_) return Status::InvalidArgument("the bulk load has finished");
  if (Status s = CheckDocument(doc, store_.bits, store_.signature_bytes); !s.ok()) return s;
  if (buffer_.capacity() == 0) ReserveBuffer();
  const std::string tail =
      EncodeDocumentTail(doc.time.value_or(store_.began), doc.signature.bytes(), doc.metadata);
  // All or nothing on bad_alloc: a record without its tail would take the next one's.
  const std::size_t offset = buffer_tails_.size();
  buffer_tails_.append(tail);
  try {
    buffer_.push_back({doc.id, next_seq_, doc.fingerprint, offset, tail.size()});
  } catch (...) {
    buffer_tails_.resize(offset);
    throw;
  }
  ++next_seq_;
  any_signed_ = any_signed_ || !doc.signature.empty();
  buffer_bytes_ += RecordBytes(tail);
  return buffer_bytes_ >= options_.memory_bytes ? Spill() : Status::OK();
}

void BulkLoaderImpl::ReserveBuffer() {
  // Address space for the whole budget, touched only as records fill it: grown by doubling, the
  // buffer would be copied and faulted in repeatedly.
  try {
    buffer_.reserve(options_.memory_bytes / RecordBytes({}) + 1);
  } catch (const std::bad_alloc&) {
    // Address space refused: grow as needed after all.
  }
}

Status BulkLoaderImpl::Spill() {
  SortSpill(buffer_);
  const std::string path = dir_.Path("spill-" + std::to_string(spills_.size()));
  if (Status s = WriteSpill(path, buffer_, buffer_tails_); !s.ok()) return s;
  spills_.push_back(path);
  buffer_.clear();
  buffer_tails_.clear();
  buffer_bytes_ = 0;
  return Status::OK();
}

Result<BulkLoadStats> BulkLoaderImpl::Finish() {
  if (finished_) return Status::InvalidArgument("the bulk load has finished");
  finished_ = true;
  if (spills_.empty() && buffer_.empty()) return BulkLoadStats();
  PhaseClock phases;
  SortSpill(buffer_);
  phases.Lap("sorted");
  // No writes or merges until the ingestion: the versions matched must stay current.
  StoreLocks& locks = *store_.locks;
  MergeTurnLock merge(locks.merge, MergeTurnLock::kAhead);
  WriterLock writers(locks.writers);
  // After a failed merge its documents stay staged in an index of their own, whose removals this
  // load would not look for: loads stop too.
  if (Status s = store_.staging->failure(); !s.ok()) return s;
  Matched m;
  if (Status s = Match(m); !s.ok()) return s;
  phases.Lap("documents");
  TableWriter::Output files;
  if (Status s = WriteFiles(m, files); !s.ok()) return s;
  phases.Lap("tables");
  // Before the documents go in: a scan that sees them must know to confirm their pairs, and every
  // document must have its time's key.
  if (any_signed_) {
    if (Status s = store_.documents->WriteSigned(); !s.ok()) return s;
  }
  if (wrote_time_keys_) {
    if (Status s = FromRocks(store_.db->SyncWAL(), "syncing times"); !s.ok()) return s;
  }
  if (!files.args.empty()) {
    store_.ingestion->FlushBefore(files);
    Status s = store_.ingestion->Ingest(files, Ingestion::Readers::kHoldingNewReaders);
    if (!s.ok()) return s;
  }
  phases.Lap("ingested");
  rocksdb::Log(rocksdb::InfoLogLevel::INFO_LEVEL, store_.db->GetDBOptions().info_log.get(),
               "fpstore: bulk load of %llu documents: %s",
               static_cast<unsigned long long>(m.stats.added + m.stats.replaced),
               phases.ToString().c_str());
  return m.stats;
}

Status BulkLoaderImpl::Match(Matched& m) {
  rocksdb::DB& db = *store_.db;
  std::vector<std::unique_ptr<SpillCursor>> cursors;
  for (const std::string& path : spills_) cursors.push_back(std::make_unique<SpillCursor>(path));
  cursors.push_back(std::make_unique<SpillCursor>(buffer_, buffer_tails_));
  InIdOrder docs(std::move(cursors));
  if (Status s = docs.Start(); !s.ok()) return s;
  m.documents_path = dir_.Path("documents");
  m.changes_path = dir_.Path("changes");
  RecordWriter documents(m.documents_path);
  RecordWriter changes(m.changes_path);
  // A staged version leaves by its mark's deletion; the load takes over the removal of any version
  // in the tables the mark names (a removed document may have such a mark too).
  m.marks.emplace(db, store_.staging->family(), dir_.Path("staging.sst"));
  std::unique_ptr<rocksdb::Iterator> staged(
      db.NewIterator(rocksdb::ReadOptions(), store_.staging->family()));
  std::unique_ptr<rocksdb::Iterator> existing(
      db.NewIterator(rocksdb::ReadOptions(), store_.documents->family()));
  existing->SeekToFirst();
  staged->SeekToFirst();
  m.into_empty = !existing->Valid() && !staged->Valid();
  if (!existing->status().ok()) return FromRocks(existing->status(), "reading documents");
  if (!staged->status().ok()) return FromRocks(staged->status(), "reading staging");
  while (true) {
    Result<std::optional<InIdOrder::Doc>> next = docs.Next(m.stats.superseded);
    if (!next.ok()) return next.status();
    if (!*next) break;
    const InIdOrder::Doc& doc = **next;
    const Key8 key(doc.id);
    const rocksdb::Slice key_slice = key.view();
    Fingerprint stored;
    DocumentTime time;
    bool had_old = false;
    // Into an empty store there is nothing to find.
    if (!m.into_empty) {
      existing->Seek(key_slice);
      had_old = existing->Valid() && existing->key() == key_slice &&
                DecodeDocumentValue(existing->value().ToStringView(), store_.bits, &stored, &time,
                                    nullptr, nullptr);
      if (!existing->status().ok()) return FromRocks(existing->status(), "reading documents");
    }
    ++(had_old ? m.stats.replaced : m.stats.added);
    Word old = stored;
    bool old_in_tables = had_old;
    if (had_old || store_.staging->MayHaveMark(doc.id, std::nullopt)) {
      staged->Seek(key_slice);
      if (!staged->status().ok()) return FromRocks(staged->status(), "reading staging");
      if (staged->Valid() && staged->key() == key_slice) {
        StagingMark mark;
        if (!DecodeStagingMark(staged->value().ToStringView(), store_.bits, &mark)) {
          return Status::Corruption("document " + std::to_string(doc.id) +
                                    " has a malformed staging mark");
        }
        if (Status s = m.marks->Delete(key_slice); !s.ok()) return s;
        old_in_tables = mark.leaving.has_value();
        old = mark.leaving.value_or(old);
      }
    }
    const std::string value = EncodeDocumentValue(doc.fp, doc.tail, store_.bits);
    documents.PutU64(doc.id);
    documents.PutU64(value.size());
    documents.PutBytes(value);
    if (old_in_tables && old == doc.fp) continue;  // table entries stay as they are
    if (old_in_tables) m.leaving.push_back({doc.id, old});
    Change{doc.id, doc.fp, old, old_in_tables}.Write(changes, store_.bits);
    ++m.changes;
  }
  if (Status s = changes.Close(); !s.ok()) return s;
  if (Status s = documents.Close(); !s.ok()) return s;
  // The tables get the memory budget to themselves.
  std::vector<BufferedRecord>().swap(buffer_);
  std::string().swap(buffer_tails_);
  Result<Changes> read = Changes::InFile(m.changes_path, m.changes, store_.bits);
  if (!read.ok()) return read.status();
  m.table_changes.emplace(*std::move(read));
  return Status::OK();
}

Status BulkLoaderImpl::WriteTimeKeys(rocksdb::WriteBatch& batch) {
  if (batch.Count() == 0) return Status::OK();
  Status s = FromRocks(store_.db->Write(rocksdb::WriteOptions(), &batch), "writing times");
  batch.Clear();
  wrote_time_keys_ = true;
  return s;
}

Status BulkLoaderImpl::WriteFiles(Matched& m, TableWriter::Output& out) {
  rocksdb::DB& db = *store_.db;
  Result<std::vector<bool>> old_keys_leaving =
      store_.ingestion->OldKeysLeaving(std::move(m.leaving), *m.table_changes);
  if (!old_keys_leaving.ok()) return old_keys_leaving.status();
  if (Status s = m.marks->FinishInto(out.args); !s.ok()) return s;
  if (m.stats.added > 0) {
    SstSink count(db, store_.documents->count_family(), dir_.Path("count.sst"));
    char delta[8];
    PutBigEndian64(delta, m.stats.added);
    if (Status s = count.Merge(kDocumentCountKey, rocksdb::Slice(delta, 8)); !s.ok()) return s;
    if (Status s = count.FinishInto(out.args); !s.ok()) return s;
  }
  // The documents' file and their time keys' are written on the tables' threads, once they are
  // all taken. A time key goes in the file while the keys come in order (times that rise with the
  // ids, such as one time for the whole load), and is otherwise written ahead of the ingestion: a
  // stale key, should the load not finish.
  rocksdb::IngestExternalFileArg documents_arg, times_arg;
  auto write_documents = [&]() -> Status {
    SstSink sink(db, store_.documents->family(), dir_.Path("documents.sst"));
    SstSink times(db, store_.times->family(), dir_.Path("times.sst"));
    std::string last_time_key;  // of `times`
    rocksdb::WriteBatch out_of_order;
    RecordReader in(m.documents_path);
    std::uint64_t id = 0, size = 0;
    std::string value;
    const std::size_t time_at = FingerprintBytes(store_.bits);
    while (in.GetU64(id)) {
      if (!in.GetU64(size) || size < time_at + kTimeBytes ||
          !(value.resize(size), in.GetBytes(value.data(), size))) {
        return in.status().ok() ? Status::IOError("short read of " + m.documents_path)
                                : in.status();
      }
      if (Status s = sink.Put(Key8(id).view(), value); !s.ok()) return s;
      const auto time = static_cast<DocumentTime>(GetBigEndian64(value.data() + time_at));
      m.stats.past_retention += time < store_.expired_before;
      const std::string time_key = TimeIndex::Key(time, id);
      if (time_key > last_time_key) {
        if (Status s = times.Put(time_key, rocksdb::Slice()); !s.ok()) return s;
        last_time_key = time_key;
        continue;
      }
      out_of_order.Put(store_.times->family(), time_key, rocksdb::Slice()).PermitUncheckedError();
      if (out_of_order.Count() == kTimeKeysPerWrite) {
        if (Status s = WriteTimeKeys(out_of_order); !s.ok()) return s;
      }
    }
    if (!in.status().ok()) return in.status();
    if (Status s = WriteTimeKeys(out_of_order); !s.ok()) return s;
    times_arg = IngestionInto(store_.times->family());
    if (Status s = times.Finish(times_arg.external_files); !s.ok()) return s;
    documents_arg = IngestionInto(store_.documents->family());
    return sink.Finish(documents_arg.external_files);
  };
  const std::size_t tables = store_.ingestion->target().tables.size();
  const std::uint64_t total = m.stats.added + m.stats.replaced + m.changes * tables;
  std::uint64_t done = m.stats.added + m.stats.replaced;
  if (Status s = ReportProgress(done, total); !s.ok()) return s;
  std::mutex progress_mu;
  TableWriter::Options options;
  options.memory_bytes = options_.memory_bytes;
  options.threads = options_.threads;
  options.beside_tables = write_documents;
  options.table_done = [&] {
    std::lock_guard lock(progress_mu);
    done += m.changes;
    return ReportProgress(done, total);
  };
  Status s = TableWriter(store_.ingestion->target(), dir_)
                 .Write(*m.table_changes, *old_keys_leaving, options, out);
  if (!s.ok()) return s;
  if (!documents_arg.external_files.empty()) out.args.push_back(std::move(documents_arg));
  if (!times_arg.external_files.empty()) out.args.push_back(std::move(times_arg));
  return Status::OK();
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
