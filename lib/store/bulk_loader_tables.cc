// The bulk loader's tables: each table's changes sorted and written as one
// SST, the tables spread over threads; and a merge's files.

#include <condition_variable>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <queue>
#include <system_error>
#include <thread>

#include "ingest/changes.h"
#include "ingest/group_writer.h"
#include "ingest/sst_sink.h"
#include "ingest/table_op_sort.h"
#include "platform/huge_pages.h"
#include "store/bulk_loader.h"
#include "store/store_impl.h"
#include "util/record_file.h"

namespace fpstore::internal {

namespace fs = std::filesystem;

namespace {

std::atomic<std::size_t> split_above_for_testing{0};

}  // namespace

void SetSplitLastTableAboveForTesting(std::size_t ops) { split_above_for_testing = ops; }

namespace {

// A crowded-family entry: a fingerprint's lone bits, keyed by
// the fingerprint as table 0 permutes it. One alone everywhere has none.
Status PutLoneBits(SstSink& sink, Fingerprint permuted0, LoneBits lone, std::size_t tables) {
  if (lone == AllLoneBits(tables)) return Status::OK();
  char key[8];
  PutBigEndian64(key, permuted0);
  return sink.Put(rocksdb::Slice(key, 8), EncodeLoneBits(lone, tables));
}

}  // namespace

Status BulkLoaderImpl::WriteLoneBitsFile(const CrowdedTables& crowded,
                                         std::vector<rocksdb::IngestExternalFileArg>& args) const {
  SstSink sink(*store_.db_, store_.crowded_family(), TempPath("crowded.sst"));
  const std::string end(9, '\xff');  // past every 8-byte key
  if (Status s = sink.DeleteRange(rocksdb::Slice(), end); !s.ok()) return s;
  const std::size_t tables = store_.plan_.table_count();
  Status s = crowded.ForEach([&](Fingerprint permuted0, LoneBits lone) {
    return PutLoneBits(sink, permuted0, lone, tables);
  });
  if (!s.ok()) return s;
  rocksdb::IngestExternalFileArg arg = IngestionInto(store_.crowded_family());
  if (Status s = sink.Finish(arg.external_files); !s.ok()) return s;
  args.push_back(std::move(arg));
  return Status::OK();
}

Status BulkLoaderImpl::WriteTables(const Changes& changes,
                                   const std::vector<bool>& old_keys_leaving,
                                   const std::function<Status()>& table_done,
                                   std::atomic<LoneBits>* crowded, SstUse use,
                                   std::vector<rocksdb::IngestExternalFileArg>& args,
                                   std::optional<TableFilters::Ingested>& filters,
                                   const std::function<Status()>& beside_table0) const {
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
  rocksdb::IngestExternalFileArg lone_bits_arg;
  std::vector<std::optional<TableFilters::Ingested>> table_filters(tables);
  // The filters read ahead are a copy beside the one RocksDB's table
  // readers hold once the files are in: at 100M, 2.4 GB more at the
  // ingestion. Past a quarter of the memory budget none are kept, and the
  // filter set reads RocksDB's after the ingestion instead (Refresh).
  std::atomic<std::size_t> filter_bytes{0};
  const std::size_t max_filter_bytes = options_.memory_bytes / 4;
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
      const std::size_t tasks = tables + (beside_table0 ? 1 : 0);
      for (std::size_t i; failures[w].ok() && (i = next_table.fetch_add(1)) < tasks;) {
        if (i == tables) {
          try {
            failures[w] = beside_table0();
          } catch (const std::exception& e) {
            failures[w] = Status::IOError(std::string("bulk load: ") + e.what());
          }
          continue;
        }
        const std::size_t t = crowded != nullptr ? (i + 1) % tables : i;
        // Table 0 reads and sorts its ops while the last tables are
        // written, and waits for them before it writes the first key.
        auto wait_for_others = [&] {
          std::unique_lock lock(done_mu);
          all_but_table0_done.wait(lock, [&] { return done == tables - 1; });
        };
        try {
          failures[w] =
              WriteTable(t, changes, old_keys_leaving, max_ops, buffers, crowded,
                         crowded != nullptr && t == 0 ? wait_for_others : std::function<void()>(),
                         use, table_args[t], lone_bits_arg);
          // Read while other tables are written, not all after them: 0.3 s
          // of one core at 10M, with the other idle.
          if (failures[w].ok() && filter_bytes <= max_filter_bytes) {
            table_filters[t] = store_.ReadIngestedFilters({&table_args[t], 1});
            const std::size_t bytes = table_filters[t] ? table_filters[t]->bytes() : 0;
            if (filter_bytes += bytes; filter_bytes > max_filter_bytes) table_filters[t].reset();
          }
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
  table_args.push_back(std::move(lone_bits_arg));
  for (rocksdb::IngestExternalFileArg& arg : table_args) {
    if (!arg.external_files.empty()) args.push_back(std::move(arg));
  }
  filters.emplace();
  for (std::optional<TableFilters::Ingested>& table : table_filters) {
    if (!table) {  // not read, or dropped as too big
      filters.reset();
      break;
    }
    for (auto& file : table->files) filters->files.push_back(std::move(file));
  }

  return Status::OK();
}

Status BulkLoaderImpl::WriteMergeFiles(std::span<const StagedDocument> staged,
                                       std::vector<rocksdb::IngestExternalFileArg>& args,
                                       std::optional<TableFilters::Ingested>& filters) const {
  SstSink marks(*store_.db_, store_.staging_family(), TempPath("staging.sst"));
  std::vector<Fingerprint> recent;
  recent.reserve(staged.size());
  std::vector<IdFingerprint> leaving;
  for (const StagedDocument& doc : staged) {
    if (!doc.removal) recent.push_back(doc.fingerprint);
    if (doc.leaving) leaving.push_back({doc.id, *doc.leaving});
    const DocumentKey key = EncodeDocumentKey(doc.id);
    if (Status s = marks.Delete(AsSlice(key)); !s.ok()) return s;
  }
  const Changes changes = Changes::Staged(staged);
  Result<std::vector<bool>> old_keys_leaving = OldKeysLeaving(std::move(leaving), changes);
  if (!old_keys_leaving.ok()) return old_keys_leaving.status();
  rocksdb::IngestExternalFileArg arg = IngestionInto(store_.staging_family());
  if (Status s = marks.Finish(arg.external_files); !s.ok()) return s;
  if (!arg.external_files.empty()) args.push_back(std::move(arg));
  if (Status s = AddRecent(std::move(recent), args); !s.ok()) return s;
  // WriteTable turns this into kMergeIntoEmpty for a table without files.
  return WriteTables(
      changes, *old_keys_leaving, [] { return Status::OK(); }, nullptr, SstUse::kMergeIntoLevel0,
      args, filters);
}

Status BulkLoaderImpl::AddRecent(std::vector<Fingerprint> fingerprints,
                                 std::vector<rocksdb::IngestExternalFileArg>& args) const {
  if (fingerprints.empty()) return Status::OK();
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
    store_.AddRecentPrefixes(fingerprints);
  } catch (const std::exception& e) {
    return Status::IOError(std::string("adding recent prefixes: ") + e.what());
  }
  rocksdb::IngestExternalFileArg arg = IngestionInto(store_.recent_family());
  if (Status s = sink.Finish(arg.external_files); !s.ok()) return s;
  args.push_back(std::move(arg));
  return Status::OK();
}

Status BulkLoaderImpl::WriteTable(std::size_t t, const Changes& changes,
                                  const std::vector<bool>& old_keys_leaving, std::size_t max_ops,
                                  SortBuffers& buffers, std::atomic<LoneBits>* crowded,
                                  const std::function<void()>& before_writing, SstUse use,
                                  rocksdb::IngestExternalFileArg& arg,
                                  rocksdb::IngestExternalFileArg& lone_bits_arg) const {
  const TablePermutation& perm = store_.plan_.table(t);
  const std::string name = "table-" + std::to_string(t);
  // Merges and bulk loads, one at a time, are what give a table files, and
  // members: a table with no files has none, and its groups are
  // written whole rather than as operands.
  rocksdb::ColumnFamilyMetaData family;
  store_.db_->GetColumnFamilyMetaData(store_.table(t), &family);
  if (use != SstUse::kLoad) {
    // Were the guess wrong it would cost bytes or time, not answers.
    use = family.file_count == 0 ? SstUse::kMergeIntoEmpty : SstUse::kMergeIntoLevel0;
  }
  const bool reads_crowded = crowded != nullptr && t == 0;
  const std::size_t tables = store_.plan_.table_count();
  // One file of the table, or one of its two halves; and table 0's
  // crowded-family file of the same fingerprints, when it reads the crowded
  // marks.
  struct FilePart {
    FilePart(const BulkLoaderImpl& loader, std::size_t t, const std::string& path, SstUse use,
             bool whole_groups, bool writes_crowded)
        : sink(*loader.store_.db_, loader.store_.table(t), path, use),
          groups(sink, loader.store_.group_layout(t),
                 whole_groups ? GroupWriter::kWhole : GroupWriter::kOperands) {
      if (writes_crowded) {
        crowded.emplace(*loader.store_.db_, loader.store_.crowded_family(), path + ".crowded", use);
      }
    }
    SstSink sink;
    GroupWriter groups;
    std::optional<SstSink> crowded;
    std::optional<TableOp> last;
    std::vector<std::uint64_t> to_mark;  // crowded changes not yet marked
  };
  const bool writes_crowded = reads_crowded;
  FilePart part(*this, t, TempPath(name + ".sst"), use, family.file_count == 0, writes_crowded);
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
  // A table keyed by id reads the ids in key order, scattered over the
  // changes: read from the mapped file, nearly each missed the TLB, and
  // that was half of table 0's time at 10M. Where its ops did not spill
  // and the ids fit beside what the worker's buffers have touched, within
  // its share of the memory budget (at 10M and the default 1 GiB, 80 MB
  // beside 320 MB of 512), they are copied into huge pages for the table.
  // A merge's staged documents hold theirs in memory already.
  const bool reads_ids = t == 0;
  std::vector<DocumentId> ids;
  auto id_address = [&](std::uint64_t change) {
    return !ids.empty() ? reinterpret_cast<const char*>(&ids[change]) : changes.IdAddress(change);
  };
  auto copy_ids = [&]() -> Status {
    buffers.touched_ops = std::max(buffers.touched_ops, ops.size());
    const std::size_t ids_room = changes.count() * sizeof(DocumentId) / (2 * sizeof(TableOp)) + 1;
    if (!reads_ids || !changes.mapped() || buffers.touched_ops + ids_room > max_ops) {
      return Status::OK();
    }
    ids.reserve(changes.count());
    AdviseHugePages(ids);
    return changes.ForEach([&](const Change& c, std::uint64_t) {
      ids.push_back(c.id);
      return Status::OK();
    });
  };
  std::vector<std::string> spills;
  auto spill = [&]() -> Status {
    buffers.touched_ops = std::max(buffers.touched_ops, ops.size());
    SortOps(buffers);
    const std::string path = TempPath(name + ".ops-" + std::to_string(spills.size()));
    RecordWriter out(path);
    for (const TableOp& op : ops) {
      out.PutU64(op.permuted);
      out.PutU64(std::uint64_t{op.change} << 1 | op.put);
    }
    ops.clear();
    spills.push_back(path);
    return out.Close();
  };
  // Ops with one fingerprint, from documents that share it, go in once in
  // a table without ids: an SST's keys must be unique. One out of order is
  // a bug in the sort or the merge of runs, and would lose its key.
  auto write = [&](FilePart& f, const TableOp& op) -> Status {
    const bool same_fingerprint = f.last && op.permuted == f.last->permuted;
    if (f.last) {
      if (op < *f.last) return Status::Corruption("bulk load: " + name + "'s entries out of order");
      if (!reads_ids && same_fingerprint) return Status::OK();
    }
    f.last = op;
    const LoneBits lone =
        reads_crowded && op.put ? AllLoneBits(tables) & ~crowded[op.change].load() : 0;
    if (f.crowded && op.put && !same_fingerprint) {
      if (Status s = PutLoneBits(*f.crowded, op.permuted, lone, tables); !s.ok()) return s;
    }
    const DocumentId id = !reads_ids ? 0 : !ids.empty() ? ids[op.change] : changes.IdOf(op.change);
    return f.groups.Add(op.permuted, op.put, id);
  };
  // Crowded changes are marked a batch at a time, their cache lines
  // fetched first: marked one by one, each locked OR waited out its own
  // cache miss. Table 0, which reads every change's bits in key order,
  // fetches them ahead too. The misses were 5% of a 10M load's CPU.
  auto mark_crowded = [&](FilePart& f) {
    for (std::uint64_t change : f.to_mark) __builtin_prefetch(&crowded[change], 1);
    for (std::uint64_t change : f.to_mark) crowded[change].fetch_or(LoneBits{1} << t);
    f.to_mark.clear();
  };
  constexpr std::size_t kAhead = 16;
  constexpr std::size_t kMarkBatch = 64;
  // Writes sorted ops that end with a whole prefix. With lone bits, each
  // prefix's ops are first marked crowded if more than one fingerprint has
  // it.
  const bool marks_crowded = crowded != nullptr && t < RecentPrefixes::kMaxTables;
  auto write_prefixes = [&](FilePart& f, std::span<const TableOp> sorted) -> Status {
    for (std::size_t i = 0; i < sorted.size();) {
      std::size_t end = i + 1;
      if (marks_crowded) {
        const Fingerprint prefix = sorted[i].permuted & perm.prefix_mask();
        while (end < sorted.size() && (sorted[end].permuted & perm.prefix_mask()) == prefix) ++end;
        if (sorted[i].permuted != sorted[end - 1].permuted) {
          for (std::size_t j = i; j < end; ++j) f.to_mark.push_back(sorted[j].change);
          // Table 0 writes this prefix's bits next: its own bit first.
          if (f.to_mark.size() >= kMarkBatch || reads_crowded) mark_crowded(f);
        }
      }
      for (; i < end; ++i) {
        if (i + kAhead < sorted.size()) {
          if (reads_crowded) __builtin_prefetch(&crowded[sorted[i + kAhead].change]);
          if (reads_ids) __builtin_prefetch(id_address(sorted[i + kAhead].change));
        }
        if (Status s = write(f, sorted[i]); !s.ok()) return s;
      }
    }
    return Status::OK();
  };
  // The last table of a load (table 0, which waits for the others' crowded
  // marks) writes its two halves side by side: nothing else is left for
  // the other core but the documents' file, and table 0 alone took 2.5 s
  // of one core at 10M. The halves meet between prefixes, as crowded marks
  // and a fingerprint's duplicates go by prefix; in a table between
  // groups, each a key of one file.
  std::optional<FilePart> second_half;
  const GroupLayout groups = store_.group_layout(t);
  auto same_part = [&](Fingerprint a, Fingerprint b) {
    return groups.GroupOf(a) == groups.GroupOf(b);
  };
  auto write_sorted = [&](std::span<const TableOp> sorted) -> Status {
    const std::size_t split_above =
        split_above_for_testing.load() != 0 ? split_above_for_testing.load() : std::size_t{1} << 20;
    std::size_t half = sorted.size() / 2;
    while (half > 0 && half < sorted.size() &&
           same_part(sorted[half].permuted, sorted[half - 1].permuted)) {
      ++half;
    }
    if (!before_writing || sorted.size() < split_above || half == sorted.size()) {
      return write_prefixes(part, sorted);
    }
    second_half.emplace(*this, t, TempPath(name + "-2.sst"), use, family.file_count == 0,
                        writes_crowded);
    Status second;
    std::thread helper;
    try {
      helper = std::thread([&] {
        try {
          second = write_prefixes(*second_half, sorted.subspan(half));
        } catch (const std::exception& e) {
          second = Status::IOError(std::string("bulk load: ") + e.what());
        }
      });
    } catch (const std::system_error&) {  // no thread to be had: one after the other
      second = write_prefixes(*second_half, sorted.subspan(half));
    }
    // The helper is joined however the first half ends: out of memory
    // fails the load, not the process.
    Status first;
    try {
      first = write_prefixes(part, sorted.first(half));
    } catch (const std::exception& e) {
      first = Status::IOError(std::string("bulk load: ") + e.what());
    }
    if (helper.joinable()) helper.join();
    return first.ok() ? second : first;
  };
  Status read = changes.ForEach([&](const Change& c, std::uint64_t i) {
    if (ops.size() + 2 > capacity) {
      if (Status s = spill(); !s.ok()) return s;
    }
    const std::uint64_t change = i;
    // Made whole, then copied: built in place, its bit fields were
    // or'ed into the buffer's word, a read that mapped the zero page and
    // then faulted again to write (2% of a 10M load's CPU).
    if (c.adds) {
      const TableOp put{perm.Apply(c.fingerprint), change, true};
      ops.push_back(put);
    }
    if (c.had_old && (reads_ids || (!old_keys_leaving.empty() && old_keys_leaving[change]))) {
      const TableOp remove{perm.Apply(c.old), change, false};
      ops.push_back(remove);
    }
    return Status::OK();
  });
  if (!read.ok()) return read;
  if (spills.empty()) {
    if (Status s = copy_ids(); !s.ok()) return s;
    SortOps(buffers);
    if (before_writing) before_writing();
    if (Status s = write_sorted(ops); !s.ok()) return s;
  } else {
    if (Status s = spill(); !s.ok()) return s;
    if (before_writing) before_writing();
    std::vector<std::unique_ptr<RecordReader>> readers;
    using Item = std::pair<TableOp, std::size_t>;
    auto later = [](const Item& a, const Item& b) { return b.first < a.first; };
    std::priority_queue<Item, std::vector<Item>, decltype(later)> merge(later);
    auto pull = [&](std::size_t r) {
      std::uint64_t permuted, change_put;
      if (readers[r]->GetU64(permuted) && readers[r]->GetU64(change_put)) {
        merge.push({TableOp{permuted, change_put >> 1, change_put & 1}, r});
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
        if (Status s = write_prefixes(part, prefix_ops); !s.ok()) return s;
        prefix_ops.clear();
      }
      prefix_ops.push_back(op);
      if (Status s = pull(r); !s.ok()) return s;
    }
    if (Status s = write_prefixes(part, prefix_ops); !s.ok()) return s;
    for (const std::string& path : spills) fs::remove(path);
  }
  arg = IngestionInto(store_.table(t));
  for (FilePart* f : {&part, second_half ? &*second_half : nullptr}) {
    if (f == nullptr) continue;
    mark_crowded(*f);  // before table 0 reads them
    if (Status s = f->groups.Finish(); !s.ok()) return s;
    if (Status s = f->sink.Finish(arg.external_files); !s.ok()) return s;
    if (f->crowded) {
      if (lone_bits_arg.external_files.empty()) {
        lone_bits_arg = IngestionInto(store_.crowded_family());
      }
      if (Status s = f->crowded->Finish(lone_bits_arg.external_files); !s.ok()) return s;
    }
  }
  return Status::OK();
}

}  // namespace fpstore::internal
