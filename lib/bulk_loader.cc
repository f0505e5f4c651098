#include "bulk_loader.h"

#include <algorithm>
#include <condition_variable>
#include <exception>
#include <filesystem>
#include <limits>
#include <mutex>
#include <optional>
#include <queue>
#include <thread>

#include "document_runs.h"
#include "huge_pages.h"
#include "record_file.h"
#include "rocks_status.h"
#include "sst_sink.h"
#include "store_impl.h"
#include "table_op_sort.h"

namespace fpstore::internal {

namespace fs = std::filesystem;

namespace {

// Approximate memory a buffered record takes: the record with room for
// the buffer's spare capacity, and its metadata.
std::size_t RecordBytes(std::string_view metadata) { return 64 + metadata.size(); }

// A document whose table entries change: a bulk load's changes file
// holds one per document, as four integers.
struct Change {
  DocumentId id = 0;
  Fingerprint fingerprint = 0;
  Fingerprint old = 0;        // the replaced version's fingerprint
  std::uint64_t had_old = 0;  // whether that version is in the tables

  // One read and one write of 32 bytes each: every table reads every
  // change, so four calls each cost a 10M load 80 million more.
  static constexpr std::size_t kBytes = 32;
  void Write(RecordWriter& out) const {
    char bytes[kBytes];
    PutBigEndian64(bytes, id);
    PutBigEndian64(bytes + 8, fingerprint);
    PutBigEndian64(bytes + 16, old);
    PutBigEndian64(bytes + 24, had_old);
    out.PutBytes(std::string_view(bytes, kBytes));
  }
  Status Read(RecordReader& in, const std::string& path) {
    char bytes[kBytes];
    if (in.GetBytes(bytes, kBytes)) {
      id = GetBigEndian64(bytes);
      fingerprint = GetBigEndian64(bytes + 8);
      old = GetBigEndian64(bytes + 16);
      had_old = GetBigEndian64(bytes + 24);
      return Status::OK();
    }
    return in.status().ok() ? Status::IOError("short read of " + path) : in.status();
  }
};

}  // namespace

// Tables read every change in order, its place being the change's number.
// A bulk load's changes live in a file, for they may not fit beside the
// tables' buffers; a merge's are its staged documents, already in memory.
class Changes {
 public:
  static Changes InFile(std::string path, std::uint64_t count) {
    return Changes(std::move(path), {}, count);
  }
  static Changes Staged(std::span<const StagedDocument> staged) {
    return Changes({}, staged, staged.size());
  }

  std::uint64_t count() const { return count_; }

  // Calls visit(change, number) for each change in order; stops at the
  // first error, of reading or from visit.
  template <typename Visit>
  Status ForEach(Visit&& visit) const {
    if (path_.empty()) {
      // A staged version has no table entries to replace.
      for (std::size_t i = 0; i < staged_.size(); ++i) {
        if (Status s = visit(Change{staged_[i].id, staged_[i].fingerprint, 0, false}, i); !s.ok()) {
          return s;
        }
      }
      return Status::OK();
    }
    RecordReader in(path_);
    for (std::uint64_t i = 0; i < count_; ++i) {
      Change c;
      if (Status s = c.Read(in, path_); !s.ok()) return s;
      if (Status s = visit(c, i); !s.ok()) return s;
    }
    return Status::OK();
  }

 private:
  Changes(std::string path, std::span<const StagedDocument> staged, std::uint64_t count)
      : path_(std::move(path)), staged_(staged), count_(count) {}

  std::string path_;
  std::span<const StagedDocument> staged_;
  std::uint64_t count_;
};

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
  SortRun(buffer_);

  rocksdb::DB& db = *store_.db_;
  const PermutationPlan& plan = store_.plan_;
  // Nothing else writes, or merges, while the documents are matched against
  // the store and ingested: the old versions read here must stay current.
  // Queries wait only for the ingestion itself (below): when the ingest
  // lock was held for all of Finish, they stopped for all of it (about
  // 40 s at 10M).
  std::lock_guard merge(store_.merge_mu_);
  std::unique_lock writers(store_.load_mu_);

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

  SstSink documents(db, store_.documents_family(), TempPath("documents.sst"));
  // Per document: id, new fingerprint, old fingerprint, whether it had one.
  const std::string changes_path = TempPath("changes");
  RecordWriter changes(changes_path);
  std::uint64_t change_count = 0;
  // Documents whose old version leaves the tables.
  std::vector<IdFingerprint> leaving;
  // A replaced version that is staged leaves by the deletion of its mark:
  // it has no table entries.
  // (A format 2 store has no staging.)
  rocksdb::ColumnFamilyHandle* const staging = store_.staging_family();
  std::optional<SstSink> staged_marks;
  std::unique_ptr<rocksdb::Iterator> staged;
  if (staging != nullptr) {
    staged_marks.emplace(db, staging, TempPath("staging.sst"));
    staged.reset(db.NewIterator(rocksdb::ReadOptions(), staging));
  }
  std::unique_ptr<rocksdb::Iterator> existing(
      db.NewIterator(rocksdb::ReadOptions(), store_.documents_family()));
  // Lone bits are exact only for a load into an empty store; later loads
  // add their fingerprints to the recent family instead.
  existing->SeekToFirst();
  if (!existing->status().ok()) return FromRocks(existing->status(), "reading documents");
  const bool into_empty = !existing->Valid();
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
    if (had_old && staged) {
      staged->Seek(key_slice);
      if (!staged->status().ok()) return FromRocks(staged->status(), "reading staging");
      if (staged->Valid() && staged->key() == key_slice) {
        if (Status s = staged_marks->Delete(key_slice); !s.ok()) return s;
        old_in_tables = false;
      }
    }
    if (Status s = documents.Put(key_slice, EncodeDocumentValue(h.fp, h.metadata)); !s.ok()) {
      return s;
    }
    if (old_in_tables && old == h.fp) continue;  // table entries stay as they are
    if (old_in_tables) leaving.push_back({h.id, old});
    Change{h.id, h.fp, old, old_in_tables}.Write(changes);
    ++change_count;
    if (!into_empty && store_.recent_family() != nullptr) recent.push_back(h.fp);
  }
  if (Status s = changes.Close(); !s.ok()) return s;
  // The tables get the memory budget to themselves.
  cursors.clear();
  std::vector<BufferedRecord>().swap(buffer_);
  std::string().swap(buffer_metadata_);
  Result<std::vector<Fingerprint>> dropped =
      DroppedFingerprints(std::move(leaving), Changes::InFile(changes_path, change_count));
  if (!dropped.ok()) return dropped.status();

  std::vector<rocksdb::IngestExternalFileArg> args;
  auto add_family = [&](rocksdb::ColumnFamilyHandle* family, SstSink& sink) {
    rocksdb::IngestExternalFileArg arg;
    arg.column_family = family;
    arg.options.move_files = true;
    if (Status s = sink.Finish(arg.external_files); !s.ok()) return s;
    if (!arg.external_files.empty()) args.push_back(std::move(arg));
    return Status::OK();
  };
  if (Status s = add_family(store_.documents_family(), documents); !s.ok()) return s;
  if (staged_marks) {
    if (Status s = add_family(staging, *staged_marks); !s.ok()) return s;
  }

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
  std::vector<std::atomic<LoneBits>> crowded;
  if (into_empty && store_.recent_family() != nullptr &&
      change_count <= std::numeric_limits<std::uint32_t>::max()) {
    crowded = std::vector<std::atomic<LoneBits>>(change_count);
  }
  if (Status s = WriteTables(Changes::InFile(changes_path, change_count), *dropped, table_done,
                             crowded.empty() ? nullptr : crowded.data(), args);
      !s.ok()) {
    return s;
  }

  if (!args.empty()) {
    std::unique_lock exclusive(store_.ingest_mu_);
    if (Status s = FromRocks(db.IngestExternalFiles(args), "ingesting the bulk load"); !s.ok()) {
      return s;
    }
  }
  return stats;
}

Result<std::vector<Fingerprint>> BulkLoaderImpl::DroppedFingerprints(
    std::vector<IdFingerprint> leaving, const Changes& changes) const {
  std::vector<Fingerprint> dropped;
  if (store_.format_version_ < 4 || leaving.empty()) return dropped;
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
  return dropped;
}

Status BulkLoaderImpl::WriteTables(const Changes& changes, std::span<const Fingerprint> dropped,
                                   const std::function<Status()>& table_done,
                                   std::atomic<LoneBits>* crowded,
                                   std::vector<rocksdb::IngestExternalFileArg>& args) const {
  const PermutationPlan& plan = store_.plan_;
  const std::size_t tables = plan.table_count();
  // Tables are independent: each worker takes the next one not taken,
  // within its share of the memory budget. Table 0, which writes the lone
  // bits from what the others found, goes last and waits for them.
  const int threads = static_cast<int>(std::min<std::size_t>(
      tables,
      options_.threads > 0 ? options_.threads : std::max(1u, std::thread::hardware_concurrency())));
  const std::size_t max_ops =
      std::max<std::size_t>(1024, options_.memory_bytes / threads / (2 * sizeof(TableOp)));
  std::vector<rocksdb::IngestExternalFileArg> table_args(tables);
  std::vector<Status> failures(threads);
  std::atomic<std::size_t> next_table{0};
  std::mutex done_mu;
  std::condition_variable all_but_table0_done;
  std::size_t done = 0;  // tables other than 0 finished, or given up on
  auto finished_one = [&] {
    {
      std::lock_guard lock(done_mu);
      ++done;
    }
    all_but_table0_done.notify_all();
  };
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w) {
    workers.emplace_back([&, w] {
      // An exception (out of memory) must not end the process from a
      // worker thread: it fails the load.
      SortBuffers buffers;
      for (std::size_t i; failures[w].ok() && (i = next_table.fetch_add(1)) < tables;) {
        const std::size_t t = crowded != nullptr ? (i + 1) % tables : i;
        // Table 0 reads and sorts its ops while the last tables are
        // written, and waits for them before it writes the first key.
        auto wait_for_others = [&] {
          std::unique_lock lock(done_mu);
          all_but_table0_done.wait(lock, [&] { return done == tables - 1; });
        };
        try {
          failures[w] =
              WriteTable(t, changes, dropped, max_ops, buffers, crowded,
                         crowded != nullptr && t == 0 ? wait_for_others : std::function<void()>(),
                         table_args[t]);
          if (failures[w].ok()) failures[w] = table_done();
        } catch (const std::exception& e) {
          failures[w] = Status::IOError(std::string("writing the tables: ") + e.what());
        }
        if (t != 0) finished_one();
      }
      // A worker that stops early gives up its untaken tables, so that
      // nobody waits for them.
      while (true) {
        const std::size_t i = next_table.fetch_add(1);
        if (i >= tables) break;
        if (crowded == nullptr || (i + 1) % tables != 0) finished_one();
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  for (const Status& s : failures) {
    if (!s.ok()) return s;
  }
  for (rocksdb::IngestExternalFileArg& arg : table_args) {
    if (!arg.external_files.empty()) args.push_back(std::move(arg));
  }

  return Status::OK();
}

Status BulkLoaderImpl::WriteMergeFiles(std::span<const StagedDocument> staged,
                                       std::vector<rocksdb::IngestExternalFileArg>& args) const {
  SstSink marks(*store_.db_, store_.staging_family(), TempPath("staging.sst"));
  std::vector<Fingerprint> recent;
  if (store_.recent_family() != nullptr) recent.reserve(staged.size());
  for (const StagedDocument& doc : staged) {
    if (store_.recent_family() != nullptr) recent.push_back(doc.fingerprint);
    const DocumentKey key = EncodeDocumentKey(doc.id);
    if (Status s = marks.Delete(AsSlice(key)); !s.ok()) return s;
  }
  rocksdb::IngestExternalFileArg arg;
  arg.column_family = store_.staging_family();
  arg.options.move_files = true;
  if (Status s = marks.Finish(arg.external_files); !s.ok()) return s;
  if (!arg.external_files.empty()) args.push_back(std::move(arg));
  if (Status s = AddRecent(std::move(recent), args); !s.ok()) return s;
  return WriteTables(
      Changes::Staged(staged), {}, [] { return Status::OK(); }, nullptr, args);
}

Status BulkLoaderImpl::AddRecent(std::vector<Fingerprint> fingerprints,
                                 std::vector<rocksdb::IngestExternalFileArg>& args) const {
  if (store_.recent_family() == nullptr || fingerprints.empty()) return Status::OK();
  std::sort(fingerprints.begin(), fingerprints.end());
  fingerprints.erase(std::unique(fingerprints.begin(), fingerprints.end()), fingerprints.end());
  SstSink sink(*store_.db_, store_.recent_family(), TempPath("recent.sst"));
  for (Fingerprint fp : fingerprints) {
    char key[8];
    PutBigEndian64(key, fp);
    if (Status s = sink.Put(rocksdb::Slice(key, 8), rocksdb::Slice()); !s.ok()) return s;
  }
  // Before the tables can hold them: queries that see their entries must
  // see their prefixes too (recent_prefixes.h). Out of memory here, on the
  // merge thread, fails the merge rather than the process.
  try {
    store_.recent_.Add(fingerprints);
  } catch (const std::exception& e) {
    return Status::IOError(std::string("adding recent prefixes: ") + e.what());
  }
  rocksdb::IngestExternalFileArg arg;
  arg.column_family = store_.recent_family();
  arg.options.move_files = true;
  if (Status s = sink.Finish(arg.external_files); !s.ok()) return s;
  args.push_back(std::move(arg));
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

Status BulkLoaderImpl::WriteTable(std::size_t t, const Changes& changes,
                                  std::span<const Fingerprint> dropped, std::size_t max_ops,
                                  SortBuffers& buffers, std::atomic<LoneBits>* crowded,
                                  const std::function<void()>& before_writing,
                                  rocksdb::IngestExternalFileArg& arg) const {
  const TablePermutation& perm = store_.plan_.table(t);
  const TableKeyCodec codec = store_.codec(t);
  const std::string name = "table-" + std::to_string(t);
  SstSink sink(*store_.db_, store_.table(t), TempPath(name + ".sst"));
  // Both buffers at their final size up front: growth by doubling would
  // overshoot the memory budget.
  const std::size_t capacity = std::min<std::size_t>(max_ops, 2 * changes.count());
  std::vector<TableOp>& ops = buffers.ops;
  ops.clear();
  ops.reserve(capacity);
  buffers.scratch.reserve(capacity);
  // The sort goes through both in scattered order: in huge pages a 10M
  // load's twenty sorts took 5.4 s instead of 6.1-6.5, building the ops
  // 7.2-7.6 s instead of 8.1-8.8 (fewer faults and TLB misses).
  AdviseHugePages(ops);
  AdviseHugePages(buffers.scratch);
  std::vector<std::string> spills;
  auto spill = [&]() -> Status {
    SortOps(buffers);
    const std::string path = TempPath(name + ".ops-" + std::to_string(spills.size()));
    RecordWriter out(path);
    for (const TableOp& op : ops) {
      out.PutU64(op.permuted);
      out.PutU64(op.id);
      out.PutU64(std::uint64_t{op.change} << 1 | op.put);
    }
    ops.clear();
    spills.push_back(path);
    return out.Close();
  };
  // Equal ops, from documents that share a fingerprint in a table without
  // ids, go in once: an SST's keys must be unique. One out of order is a
  // bug in the sort or the merge of runs, and would lose its key.
  std::optional<TableOp> last;
  auto write = [&](const TableOp& op) -> Status {
    if (last && !(*last < op)) {
      return op < *last ? Status::Corruption("bulk load: " + name + "'s entries out of order")
                        : Status::OK();
    }
    last = op;
    const TableKey key = codec.Encode(op.permuted, op.id);
    if (!op.put) return sink.Delete(AsSlice(key));
    if (crowded != nullptr && t == 0) {
      const std::size_t tables = store_.plan_.table_count();
      return sink.Put(AsSlice(key),
                      EncodeLoneBits(AllLoneBits(tables) & ~crowded[op.change].load(), tables));
    }
    return sink.Put(AsSlice(key), rocksdb::Slice());
  };
  // Crowded changes are marked a batch at a time, their cache lines
  // fetched first: marked one by one, each locked OR waited out its own
  // cache miss. Table 0, which reads every change's bits in key order,
  // fetches them ahead too. The misses were 5% of a 10M load's CPU.
  std::vector<std::uint32_t> to_mark;
  auto mark_crowded = [&] {
    for (std::uint32_t change : to_mark) __builtin_prefetch(&crowded[change], 1);
    for (std::uint32_t change : to_mark) crowded[change].fetch_or(LoneBits{1} << t);
    to_mark.clear();
  };
  const bool reads_crowded = crowded != nullptr && t == 0;
  constexpr std::size_t kAhead = 16;
  constexpr std::size_t kMarkBatch = 64;
  // Writes sorted ops that end with a whole prefix. With lone bits, each
  // prefix's ops are first marked crowded if more than one fingerprint has
  // it.
  const bool marks_crowded = crowded != nullptr && t < RecentPrefixes::kMaxTables;
  auto write_prefixes = [&](std::span<const TableOp> sorted) -> Status {
    for (std::size_t i = 0; i < sorted.size();) {
      std::size_t end = i + 1;
      if (marks_crowded) {
        const Fingerprint prefix = sorted[i].permuted & perm.prefix_mask();
        while (end < sorted.size() && (sorted[end].permuted & perm.prefix_mask()) == prefix) ++end;
        if (sorted[i].permuted != sorted[end - 1].permuted) {
          for (std::size_t j = i; j < end; ++j) to_mark.push_back(sorted[j].change);
          // Table 0 writes this prefix's bits next: its own bit first.
          if (to_mark.size() >= kMarkBatch || reads_crowded) mark_crowded();
        }
      }
      for (; i < end; ++i) {
        if (reads_crowded && i + kAhead < sorted.size()) {
          __builtin_prefetch(&crowded[sorted[i + kAhead].change]);
        }
        if (Status s = write(sorted[i]); !s.ok()) return s;
      }
    }
    return Status::OK();
  };
  Status read = changes.ForEach([&](const Change& c, std::uint64_t i) {
    if (ops.size() + 2 > capacity) {
      if (Status s = spill(); !s.ok()) return s;
    }
    // A table without ids holds a fingerprint once, for all its documents.
    const DocumentId id = codec.keeps_ids() ? c.id : 0;
    const auto change = static_cast<std::uint32_t>(i);
    ops.push_back({perm.Apply(c.fingerprint), id, change, true});
    if (c.had_old &&
        (codec.keeps_ids() || std::binary_search(dropped.begin(), dropped.end(), c.old))) {
      ops.push_back({perm.Apply(c.old), id, change, false});
    }
    return Status::OK();
  });
  if (!read.ok()) return read;
  if (spills.empty()) {
    SortOps(buffers);
    if (before_writing) before_writing();
    if (Status s = write_prefixes(ops); !s.ok()) return s;
  } else {
    if (Status s = spill(); !s.ok()) return s;
    if (before_writing) before_writing();
    std::vector<std::unique_ptr<RecordReader>> readers;
    using Item = std::pair<TableOp, std::size_t>;
    auto later = [](const Item& a, const Item& b) { return b.first < a.first; };
    std::priority_queue<Item, std::vector<Item>, decltype(later)> merge(later);
    auto pull = [&](std::size_t r) {
      std::uint64_t permuted, id, change_put;
      if (readers[r]->GetU64(permuted) && readers[r]->GetU64(id) &&
          readers[r]->GetU64(change_put)) {
        merge.push({TableOp{permuted, id, static_cast<std::uint32_t>(change_put >> 1),
                            (change_put & 1) != 0},
                    r});
      }
      return readers[r]->status();
    };
    for (const std::string& path : spills) {
      readers.push_back(std::make_unique<RecordReader>(path));
      if (Status s = pull(readers.size() - 1); !s.ok()) return s;
    }
    // The merged ops a prefix at a time.
    std::vector<TableOp> prefix_ops;
    while (!merge.empty()) {
      const auto [op, r] = merge.top();
      merge.pop();
      if (!prefix_ops.empty() &&
          (prefix_ops.back().permuted & perm.prefix_mask()) != (op.permuted & perm.prefix_mask())) {
        if (Status s = write_prefixes(prefix_ops); !s.ok()) return s;
        prefix_ops.clear();
      }
      prefix_ops.push_back(op);
      if (Status s = pull(r); !s.ok()) return s;
    }
    if (Status s = write_prefixes(prefix_ops); !s.ok()) return s;
    for (const std::string& path : spills) fs::remove(path);
  }
  mark_crowded();  // before table 0 reads them
  arg.column_family = store_.table(t);
  arg.options.move_files = true;
  return sink.Finish(arg.external_files);
}

}  // namespace fpstore::internal
