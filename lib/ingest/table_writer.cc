#include "ingest/table_writer.h"

#include <rocksdb/sst_file_reader.h>

#include <condition_variable>
#include <exception>
#include <filesystem>
#include <mutex>
#include <optional>
#include <queue>
#include <system_error>
#include <thread>

#include "format/families.h"
#include "format/member_filter.h"
#include "ingest/group_writer.h"
#include "ingest/table_op_sort.h"
#include "util/record_file.h"
#include "util/rocks_status.h"
#include "util/zeroed_mapping.h"

namespace fpstore::internal {

namespace {

// A crowded-family entry: a fingerprint's lone bits, keyed by the
// fingerprint as table 0 permutes it. One alone everywhere has none.
Status PutLoneBits(SstSink& sink, Fingerprint permuted0, LoneBits lone, std::size_t tables) {
  if (lone == AllLoneBits(tables)) return Status::OK();
  char key[8];
  PutBigEndian64(key, permuted0);
  return sink.Put(rocksdb::Slice(key, 8), EncodeLoneBits(lone, tables));
}

Status Failed(const char* what, const std::exception& e) {
  return Status::IOError(std::string(what) + ": " + e.what());
}

}  // namespace

Result<std::vector<WrittenFile>> ReadWrittenFiles(rocksdb::DB& db,
                                                  const rocksdb::IngestExternalFileArg& arg) {
  std::vector<WrittenFile> files;
  for (const std::string& path : arg.external_files) {
    rocksdb::SstFileReader reader(db.GetOptions(arg.column_family));
    if (Status s = FromRocks(reader.Open(path), "reading " + path); !s.ok()) return s;
    files.push_back({arg.column_family->GetID(), reader.GetTableProperties()});
  }
  return files;
}

// One table's file: its ops collected from the changes, sorted (spilled and
// merged back if they outgrow `max_ops`), and written in key order. With
// `crowded` (one mark per change), each prefix's changes are marked crowded
// in this table if more than one fingerprint has it; table 0 then reads the
// marks as lone bits and writes them to the crowded family beside itself.
class TableWriter::Table {
 public:
  Table(const TableWriter& writer, std::size_t t, const Changes& changes,
        const std::vector<bool>& old_keys_leaving, std::size_t max_ops, SortBuffers& buffers,
        std::atomic<LoneBits>* crowded, const Options& options)
      : writer_(writer),
        target_(writer.target_),
        t_(t),
        perm_(target_.plan->table(t)),
        layout_(target_.layouts[t]),
        name_(TableFamilyName(t)),
        changes_(changes),
        old_keys_leaving_(old_keys_leaving),
        buffers_(buffers),
        crowded_(crowded),
        reads_crowded_(crowded != nullptr && t == 0),
        marks_crowded_(crowded != nullptr && t < kMaxLoneBitTables),
        use_(options.use),
        split_above_(options.split_above),
        capacity_(std::min<std::size_t>(max_ops, 2 * changes.count())) {
    // Merges and bulk loads, one at a time, are what give a table files,
    // and members: a table with none has no members, and its groups are
    // written whole rather than as operands.
    rocksdb::ColumnFamilyMetaData family;
    target_.db->GetColumnFamilyMetaData(target_.tables[t], &family);
    whole_groups_ = family.file_count == 0;
  }

  // Collects, sorts and writes; `before_writing`, if set, is called once
  // the ops are sorted, before the first is written.
  Status Write(const std::function<void()>& before_writing);
  // Finishes the file(s): appends the table's to `arg`, and table 0's
  // crowded files to `crowded_arg`.
  Status Finish(rocksdb::IngestExternalFileArg& arg, rocksdb::IngestExternalFileArg& crowded_arg);

 private:
  // One file of the table, or one of its two halves; and with it, table
  // 0's crowded-family file of the same fingerprints.
  struct Part {
    Part(const Table& table, const std::string& path)
        : sink(*table.target_.db, table.target_.tables[table.t_], path, table.use_),
          groups(sink, table.layout_,
                 table.whole_groups_ ? GroupWriter::kWhole : GroupWriter::kOperands) {
      if (table.reads_crowded_) {
        crowded.emplace(*table.target_.db, table.target_.crowded, path + ".crowded", table.use_);
      }
    }
    SstSink sink;
    GroupWriter groups;
    std::optional<SstSink> crowded;
    std::optional<TableOp> last;
    std::vector<std::uint64_t> to_mark;  // crowded changes not yet marked
  };

  Status CollectOps();
  Status Spill();
  Status CopyIds();
  Status WriteMergedSpills(const std::function<void()>& before_writing);
  Status WriteSorted(std::span<const TableOp> sorted, bool split);
  Status WritePrefixes(Part& part, std::span<const TableOp> sorted);
  Status WriteOp(Part& part, const TableOp& op);
  void MarkCrowded(Part& part);
  DocumentId IdOf(std::uint64_t change) const {
    return !ids_.empty() ? ids_[change] : changes_.IdOf(change);
  }

  const TableWriter& writer_;
  const Target& target_;
  const std::size_t t_;
  const TablePermutation& perm_;
  const GroupLayout& layout_;
  const std::string name_;
  const Changes& changes_;
  const std::vector<bool>& old_keys_leaving_;
  SortBuffers& buffers_;
  std::atomic<LoneBits>* const crowded_;
  const bool reads_crowded_;
  const bool marks_crowded_;
  const SstUse use_;
  const std::size_t split_above_;
  const std::size_t capacity_;
  bool whole_groups_ = false;
  std::vector<DocumentId> ids_;  // table 0's, copied from a load's changes
  std::vector<std::string> spills_;
  std::optional<Part> first_;
  std::optional<Part> second_;  // the second half, if the table is split
};

Status TableWriter::Table::Write(const std::function<void()>& before_writing) {
  first_.emplace(*this, writer_.dir_.Path(name_ + ".sst"));
  // Both buffers at their final size up front: growth by doubling would
  // overshoot the memory budget.
  buffers_.ops.clear();
  buffers_.ops.reserve(capacity_);
  buffers_.scratch.reserve(capacity_);
  if (Status s = CollectOps(); !s.ok()) return s;
  if (!spills_.empty()) return WriteMergedSpills(before_writing);
  if (Status s = CopyIds(); !s.ok()) return s;
  SortOps(buffers_);
  if (before_writing) before_writing();
  return WriteSorted(buffers_.ops, /*split=*/static_cast<bool>(before_writing));
}

Status TableWriter::Table::CollectOps() {
  std::vector<TableOp>& ops = buffers_.ops;
  const bool reads_ids = t_ == 0;
  return changes_.ForEach([&](const Change& c, std::uint64_t change) {
    if (ops.size() + 2 > capacity_) {
      if (Status s = Spill(); !s.ok()) return s;
    }
    // Made whole, then copied: built in place, its bit fields would be
    // or'ed into the buffer's word, a read before the write.
    if (c.adds) {
      const TableOp put{perm_.Apply(c.fingerprint), change, true};
      ops.push_back(put);
    }
    if (c.had_old && (reads_ids || (!old_keys_leaving_.empty() && old_keys_leaving_[change]))) {
      const TableOp remove{perm_.Apply(c.old), change, false};
      ops.push_back(remove);
    }
    return Status::OK();
  });
}

Status TableWriter::Table::Spill() {
  buffers_.touched_ops = std::max(buffers_.touched_ops, buffers_.ops.size());
  SortOps(buffers_);
  const std::string path = writer_.dir_.Path(name_ + ".ops-" + std::to_string(spills_.size()));
  RecordWriter out(path);
  for (const TableOp& op : buffers_.ops) {
    out.PutU64(op.permuted);
    out.PutU64(std::uint64_t{op.change} << 1 | op.put);
  }
  buffers_.ops.clear();
  spills_.push_back(path);
  return out.Close();
}

Status TableWriter::Table::CopyIds() {
  // Table 0 reads the ids in key order, scattered over the changes: from a
  // load's mapped file, a cache miss each. Where they fit beside what the
  // worker's buffers have touched, within its share of the budget, they
  // are copied into memory first. A merge's staged documents hold theirs
  // in memory already.
  buffers_.touched_ops = std::max(buffers_.touched_ops, buffers_.ops.size());
  const std::size_t ids_room = changes_.count() * sizeof(DocumentId) / (2 * sizeof(TableOp)) + 1;
  if (t_ != 0 || !changes_.mapped() || buffers_.touched_ops + ids_room > capacity_) {
    return Status::OK();
  }
  ids_.reserve(changes_.count());
  return changes_.ForEach([&](const Change& c, std::uint64_t) {
    ids_.push_back(c.id);
    return Status::OK();
  });
}

Status TableWriter::Table::WriteMergedSpills(const std::function<void()>& before_writing) {
  if (Status s = Spill(); !s.ok()) return s;
  if (before_writing) before_writing();
  std::vector<std::unique_ptr<RecordReader>> readers;
  using Item = std::pair<TableOp, std::size_t>;
  auto later = [](const Item& a, const Item& b) { return b.first < a.first; };
  std::priority_queue<Item, std::vector<Item>, decltype(later)> heap(later);
  auto pull = [&](std::size_t r) {
    std::uint64_t permuted, change_put;
    if (readers[r]->GetU64(permuted) && readers[r]->GetU64(change_put)) {
      heap.push({TableOp{permuted, change_put >> 1, change_put & 1}, r});
    }
    return readers[r]->status();
  };
  for (const std::string& path : spills_) {
    readers.push_back(std::make_unique<RecordReader>(path));
    if (Status s = pull(readers.size() - 1); !s.ok()) return s;
  }
  // In order again, a prefix at a time.
  std::vector<TableOp> prefix_ops;
  while (!heap.empty()) {
    const auto [op, r] = heap.top();
    heap.pop();
    if (!prefix_ops.empty() &&
        (prefix_ops.back().permuted & perm_.prefix_mask()) != (op.permuted & perm_.prefix_mask())) {
      if (Status s = WritePrefixes(*first_, prefix_ops); !s.ok()) return s;
      prefix_ops.clear();
    }
    prefix_ops.push_back(op);
    if (Status s = pull(r); !s.ok()) return s;
  }
  if (Status s = WritePrefixes(*first_, prefix_ops); !s.ok()) return s;
  std::error_code ec;
  for (const std::string& path : spills_) std::filesystem::remove(path, ec);
  return Status::OK();
}

// The last table of a load (table 0, which waits for the others' crowded
// marks) writes its two halves side by side: nothing else is left for the
// other core but the documents' file. The halves meet between groups, each
// a key of one file, and so between prefixes, as crowded marks and a
// fingerprint's copies go by prefix.
Status TableWriter::Table::WriteSorted(std::span<const TableOp> sorted, bool split) {
  std::size_t half = sorted.size() / 2;
  while (half > 0 && half < sorted.size() &&
         layout_.GroupOf(sorted[half].permuted) == layout_.GroupOf(sorted[half - 1].permuted)) {
    ++half;
  }
  if (!split || sorted.size() < split_above_ || half == sorted.size()) {
    return WritePrefixes(*first_, sorted);
  }
  second_.emplace(*this, writer_.dir_.Path(name_ + "-2.sst"));
  auto write_half = [&](Part& part, std::span<const TableOp> ops) -> Status {
    try {
      return WritePrefixes(part, ops);
    } catch (const std::exception& e) {
      return Failed("bulk load", e);
    }
  };
  Status second;
  std::thread helper;
  try {
    helper = std::thread([&] { second = write_half(*second_, sorted.subspan(half)); });
  } catch (const std::system_error&) {  // no thread to be had: one after the other
    second = write_half(*second_, sorted.subspan(half));
  }
  // The helper is joined however the first half ends: out of memory fails
  // the load, not the process.
  const Status first = write_half(*first_, sorted.first(half));
  if (helper.joinable()) helper.join();
  return first.ok() ? second : first;
}

// Writes sorted ops that end with a whole prefix, each prefix's changes
// first marked crowded if more than one fingerprint has it. The marks and
// the ids are read in key order, scattered: fetched a few ops ahead.
Status TableWriter::Table::WritePrefixes(Part& part, std::span<const TableOp> sorted) {
  constexpr std::size_t kAhead = 16;
  constexpr std::size_t kMarkBatch = 64;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t end = i + 1;
    if (marks_crowded_) {
      const Fingerprint prefix = sorted[i].permuted & perm_.prefix_mask();
      while (end < sorted.size() && (sorted[end].permuted & perm_.prefix_mask()) == prefix) ++end;
      if (sorted[i].permuted != sorted[end - 1].permuted) {
        for (std::size_t j = i; j < end; ++j) part.to_mark.push_back(sorted[j].change);
        // Table 0 writes this prefix's bits next: its own bit first.
        if (part.to_mark.size() >= kMarkBatch || reads_crowded_) MarkCrowded(part);
      }
    }
    for (; i < end; ++i) {
      if (i + kAhead < sorted.size()) {
        if (reads_crowded_) __builtin_prefetch(&crowded_[sorted[i + kAhead].change]);
        if (t_ == 0) {
          __builtin_prefetch(!ids_.empty()
                                 ? reinterpret_cast<const char*>(&ids_[sorted[i + kAhead].change])
                                 : changes_.IdAddress(sorted[i + kAhead].change));
        }
      }
      if (Status s = WriteOp(part, sorted[i]); !s.ok()) return s;
    }
  }
  return Status::OK();
}

// Ops with one fingerprint, from documents that share it, go in once in a
// table without ids: a group's members are unique. One out of order is a
// bug in the sort or the merge of spills, and would lose its member.
Status TableWriter::Table::WriteOp(Part& part, const TableOp& op) {
  const bool same_fingerprint = part.last && op.permuted == part.last->permuted;
  if (part.last) {
    if (op < *part.last)
      return Status::Corruption("bulk load: " + name_ + "'s entries out of order");
    if (t_ != 0 && same_fingerprint) return Status::OK();
  }
  part.last = op;
  if (part.crowded && op.put && !same_fingerprint) {
    const std::size_t tables = target_.plan->table_count();
    const LoneBits lone = AllLoneBits(tables) & ~crowded_[op.change].load();
    if (Status s = PutLoneBits(*part.crowded, op.permuted, lone, tables); !s.ok()) return s;
  }
  return part.groups.Add(op.permuted, op.put, t_ == 0 ? IdOf(op.change) : 0);
}

// A batch at a time, their cache lines fetched first: marked one by one,
// each atomic OR waited out its own cache miss.
void TableWriter::Table::MarkCrowded(Part& part) {
  for (std::uint64_t change : part.to_mark) __builtin_prefetch(&crowded_[change], 1);
  for (std::uint64_t change : part.to_mark) crowded_[change].fetch_or(LoneBits{1} << t_);
  part.to_mark.clear();
}

Status TableWriter::Table::Finish(rocksdb::IngestExternalFileArg& arg,
                                  rocksdb::IngestExternalFileArg& crowded_arg) {
  arg = IngestionInto(target_.tables[t_]);
  for (Part* part : {&*first_, second_ ? &*second_ : nullptr}) {
    if (part == nullptr) continue;
    if (crowded_ != nullptr) MarkCrowded(*part);  // before table 0 reads them
    if (Status s = part->groups.Finish(); !s.ok()) return s;
    if (Status s = part->sink.Finish(arg.external_files); !s.ok()) return s;
    if (part->crowded) {
      if (crowded_arg.external_files.empty()) crowded_arg = IngestionInto(target_.crowded);
      if (Status s = part->crowded->Finish(crowded_arg.external_files); !s.ok()) return s;
    }
  }
  return Status::OK();
}

Status TableWriter::Write(const Changes& changes, const std::vector<bool>& old_keys_leaving,
                          const Options& options, Output& out) const {
  const std::size_t tables = target_.tables.size();
  ZeroedMapping crowded_marks;
  std::atomic<LoneBits>* crowded = nullptr;
  if (options.lone_bits) {
    crowded_marks = ZeroedMapping(changes.count() * sizeof(std::atomic<LoneBits>));
    crowded = static_cast<std::atomic<LoneBits>*>(crowded_marks.data());
    for (std::uint64_t i = 0; i < changes.count(); ++i) new (&crowded[i]) std::atomic<LoneBits>(0);
  }
  // Tables are independent: each worker takes the next one not taken,
  // within its share of the budget. Table 0, which writes the lone bits
  // from what the others marked, goes last and waits for them.
  const int threads = static_cast<int>(std::min<std::size_t>(
      tables,
      options.threads > 0 ? options.threads : std::max(1u, std::thread::hardware_concurrency())));
  const std::size_t max_ops =
      std::max<std::size_t>(1024, options.memory_bytes / threads / (2 * sizeof(TableOp)));
  std::vector<rocksdb::IngestExternalFileArg> table_args(tables);
  rocksdb::IngestExternalFileArg crowded_arg;
  // The properties read ahead are a copy beside the one RocksDB's readers
  // hold once the files are in: past a quarter of the budget none are kept.
  std::vector<std::optional<std::vector<WrittenFile>>> properties(tables);
  std::atomic<std::size_t> property_bytes{0};
  const std::size_t max_property_bytes = options.memory_bytes / 4;
  std::vector<Status> failures(threads);
  std::atomic<std::size_t> next_task{0};
  std::mutex done_mu;
  std::condition_variable others_done_cv;
  std::size_t others_done = 0;  // tables other than 0 finished, or given up on
  auto finished_one = [&] {
    {
      std::lock_guard lock(done_mu);
      ++others_done;
    }
    others_done_cv.notify_all();
  };
  auto wait_for_others = [&] {
    std::unique_lock lock(done_mu);
    others_done_cv.wait(lock, [&] { return others_done == tables - 1; });
  };
  auto write_table = [&](std::size_t t, SortBuffers& buffers) -> Status {
    Table table(*this, t, changes, old_keys_leaving, max_ops, buffers, crowded, options);
    const bool last = crowded != nullptr && t == 0;
    if (Status s = table.Write(last ? std::function<void()>(wait_for_others) : nullptr); !s.ok()) {
      return s;
    }
    if (Status s = table.Finish(table_args[t], crowded_arg); !s.ok()) return s;
    // Read while other tables are written, not all after them.
    if (property_bytes <= max_property_bytes) {
      Result<std::vector<WrittenFile>> read = ReadWrittenFiles(*target_.db, table_args[t]);
      if (read.ok()) {
        std::size_t bytes = 0;
        for (const WrittenFile& f : *read) {
          if (const std::string* p = MemberFilterProperty(*f.properties)) bytes += p->size();
        }
        if ((property_bytes += bytes) <= max_property_bytes) properties[t] = *std::move(read);
      }
    }
    return options.table_done ? options.table_done() : Status::OK();
  };
  std::vector<std::thread> workers;
  for (int w = 0; w < threads; ++w) {
    workers.emplace_back([&, w] {
      SortBuffers buffers;
      const std::size_t tasks = tables + (options.beside_table0 ? 1 : 0);
      for (std::size_t i; failures[w].ok() && (i = next_task.fetch_add(1)) < tasks;) {
        // An exception (out of memory) must not end the process from a
        // worker thread: it fails the write.
        try {
          if (i == tables) {
            failures[w] = options.beside_table0();
            continue;
          }
          const std::size_t t = crowded != nullptr ? (i + 1) % tables : i;
          failures[w] = write_table(t, buffers);
        } catch (const std::exception& e) {
          failures[w] = Failed("writing the tables", e);
        }
        if (i < tables && (crowded == nullptr || (i + 1) % tables != 0)) finished_one();
      }
      // A worker that stops early gives up its untaken tables, so that
      // nobody waits for them.
      for (std::size_t i; (i = next_task.fetch_add(1)) < tables;) {
        if (crowded == nullptr || (i + 1) % tables != 0) finished_one();
      }
    });
  }
  for (std::thread& worker : workers) worker.join();
  for (const Status& s : failures) {
    if (!s.ok()) return s;
  }
  table_args.push_back(std::move(crowded_arg));
  for (rocksdb::IngestExternalFileArg& arg : table_args) {
    if (!arg.external_files.empty()) out.args.push_back(std::move(arg));
  }
  out.properties.emplace();
  for (std::optional<std::vector<WrittenFile>>& table : properties) {
    if (!table) {
      out.properties.reset();
      break;
    }
    out.properties->insert(out.properties->end(), table->begin(), table->end());
  }
  return Status::OK();
}

}  // namespace fpstore::internal
