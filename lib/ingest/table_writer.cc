#include "ingest/table_writer.h"

#include <rocksdb/sst_file_reader.h>

#include <filesystem>
#include <latch>
#include <optional>
#include <queue>

#include "format/families.h"
#include "format/member_filter.h"
#include "ingest/group_writer.h"
#include "ingest/table_op_sort.h"
#include "util/parallel.h"
#include "util/record_file.h"
#include "util/rocks_status.h"
#include "util/zeroed_mapping.h"

namespace fpstore::internal {

namespace {

// A crowded-family entry: a fingerprint's lone bits, keyed by the
// fingerprint as table 0 permutes it. One alone everywhere has none.
Status PutLoneBits(SstSink& sink, Fingerprint permuted0, LoneBits lone, std::size_t tables) {
  if (lone == AllLoneBits(tables)) return Status::OK();
  return sink.Put(Key8(permuted0).view(), EncodeLoneBits(lone, tables));
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

// One table's file. With `crowded` (a mark per change), the changes of each
// prefix that more than one fingerprint has are marked crowded in this table;
// table 0 reads the marks as lone bits and writes them to the crowded family.
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
    // Only merges and bulk loads, one at a time, give a table members: one
    // without files has none, so its groups are written whole.
    rocksdb::ColumnFamilyMetaData family;
    target_.db->GetColumnFamilyMetaData(target_.tables[t], &family);
    whole_groups_ = family.file_count == 0;
  }

  // `before_writing`, if set, runs once the ops are sorted.
  Status Write(const std::function<void()>& before_writing);
  // Appends the table's files to `arg`, table 0's crowded files to `crowded_arg`.
  Status Finish(rocksdb::IngestExternalFileArg& arg, rocksdb::IngestExternalFileArg& crowded_arg);

 private:
  // A file of the table (or a half), with table 0's crowded-family file.
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
  // Final sizes up front: doubling would overshoot the memory budget.
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
  // Table 0 reads ids scattered, a cache miss each from the mapped file: they
  // are copied first where they fit in the worker's budget.
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

// Table 0 of a load, written last, writes its halves side by side on the cores
// the other tables left. They meet between groups, so between prefixes, which
// crowded marks and a fingerprint's copies go by.
Status TableWriter::Table::WriteSorted(std::span<const TableOp> sorted, bool split) {
  return ForEachHalf(
      sorted, split && sorted.size() >= split_above_,
      [&](const TableOp& op) { return layout_.GroupOf(op.permuted); },
      [&](std::size_t part, std::span<const TableOp> ops) {
        if (part == 0) return WritePrefixes(*first_, ops);
        second_.emplace(*this, writer_.dir_.Path(name_ + "-2.sst"));
        return WritePrefixes(*second_, ops);
      },
      "bulk load: ");
}

// Writes sorted ops ending with a whole prefix, crowded prefixes marked first.
// Marks and ids are read scattered, so they are fetched a few ops ahead.
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

// A table without ids takes a fingerprint once, however many documents share
// it. An op out of order is a bug in the sort or the merge of spills.
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

// Fetched as a batch first, so that each atomic OR does not wait out a miss.
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
  // Each worker takes the next table, within its share of the budget; with lone bits, table 0 goes
  // last and waits for the others' marks. Tasks are taken in order, so when table 0 starts every
  // other table has been taken, and each counts down once it ends, written or not.
  const int threads = ThreadsFor(options.threads, tables);
  const std::size_t max_ops =
      std::max<std::size_t>(1024, options.memory_bytes / threads / (2 * sizeof(TableOp)));
  std::latch others_done(static_cast<std::ptrdiff_t>(crowded != nullptr ? tables - 1 : 0));
  std::vector<rocksdb::IngestExternalFileArg> table_args(tables);
  rocksdb::IngestExternalFileArg crowded_arg;
  // A copy beside RocksDB's once the files are in: kept up to a quarter of the budget.
  std::vector<std::optional<std::vector<WrittenFile>>> properties(tables);
  std::atomic<std::size_t> property_bytes{0};
  const std::size_t max_property_bytes = options.memory_bytes / 4;
  std::vector<SortBuffers> buffers(threads);
  auto write_table = [&](std::size_t t, int worker) -> Status {
    Table table(*this, t, changes, old_keys_leaving, max_ops, buffers[worker], crowded, options);
    const bool last = crowded != nullptr && t == 0;
    Status s = table.Write(last ? std::function<void()>([&] { others_done.wait(); }) : nullptr);
    if (s.ok()) s = table.Finish(table_args[t], crowded_arg);
    if (!s.ok()) return s;
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
  Status s = ForEachInParallel(tables + (options.beside_table0 ? 1 : 0), threads,
                               [&](std::size_t i, int worker) {
                                 if (i == tables) return options.beside_table0();
                                 if (crowded == nullptr) return write_table(i, worker);
                                 const std::size_t t = (i + 1) % tables;
                                 if (t == 0) return write_table(t, worker);
                                 struct CountDown {
                                   std::latch& latch;
                                   ~CountDown() { latch.count_down(); }
                                 } count_down{others_done};
                                 return write_table(t, worker);
                               });
  if (!s.ok()) return s;
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
