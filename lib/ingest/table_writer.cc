#include "ingest/table_writer.h"

#include <rocksdb/sst_file_reader.h>

#include <filesystem>
#include <optional>
#include <queue>

#include "format/families.h"
#include "format/member_filter.h"
#include "ingest/group_writer.h"
#include "ingest/table_op_sort.h"
#include "plan/table_entry.h"
#include "util/parallel.h"
#include "util/record_file.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

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

// One table's file.
class TableWriter::Table {
 public:
  Table(const TableWriter& writer, std::size_t t, const Changes& changes,
        const std::vector<bool>& old_keys_leaving, std::size_t max_ops, SortBuffers& buffers,
        const Options& options)
      : writer_(writer),
        target_(writer.target_),
        t_(t),
        perm_(target_.plan->table(t)),
        layout_(target_.layouts[t]),
        name_(TableFamilyName(t)),
        changes_(changes),
        old_keys_leaving_(old_keys_leaving),
        buffers_(buffers),
        use_(options.use),
        capacity_(std::min<std::size_t>(max_ops - TailOps(layout_, changes, max_ops),
                                        2 * changes.count())) {
    // Only merges and bulk loads, one at a time, give a table members: one
    // without files has none, so its groups are written whole.
    rocksdb::ColumnFamilyMetaData family;
    target_.db->GetColumnFamilyMetaData(target_.tables[t], &family);
    whole_groups_ = family.file_count == 0;
    if (TailOps(layout_, changes, max_ops) > 0) tails_.resize(changes.count());
  }

  Status Write();
  // Appends the table's file to `arg`.
  Status Finish(rocksdb::IngestExternalFileArg& arg);

 private:
  // An op with its permuted fingerprint whole, in table order.
  struct Entry {
    Word permuted;
    std::uint64_t change;
    bool put;
    bool operator<(const Entry& o) const {
      return permuted != o.permuted ? permuted < o.permuted : change < o.change;
    }
  };

  // The table's file.
  struct Part {
    Part(const Table& table, const std::string& path)
        : sink(*table.target_.db, table.target_.tables[table.t_], path, table.use_),
          groups(sink, table.layout_,
                 table.whole_groups_ ? GroupWriter::kWhole : GroupWriter::kOperands) {}
    SstSink sink;
    GroupWriter groups;
    std::optional<TableOp> last;
    std::vector<Entry> run;  // a head's ops, where the layout keeps tails
  };

  Status CollectOps();
  Status Spill();
  Status CopyIds();
  Status WriteMergedSpills();
  Status WriteOps(std::span<const TableOp> sorted);
  Status WriteOp(const TableOp& op);
  Status WriteRun();
  DocumentId IdOf(std::uint64_t change) const {
    return !ids_.empty() ? ids_[change] : changes_.IdOf(change);
  }
  // The tails of the changes' fingerprints, side by side, take the room of this many ops of the
  // budget (a put's op and its sort's scratch: 32 bytes), where they fit in a quarter of it: read
  // from the changes as the ops come out of the sort, each would be a cache miss and a
  // permutation. None for a layout without tails.
  static std::size_t TailOps(const GroupLayout& layout, const Changes& changes,
                             std::size_t max_ops) {
    if (!layout.keeps_tails() || changes.count() > max_ops) return 0;
    return (changes.count() + 3) / 4;
  }
  // The tail of `op`'s permuted fingerprint. REQUIRES: the layout keeps tails.
  std::uint64_t Tail(const TableOp& op) const {
    if (op.put && !tails_.empty()) return tails_[op.change];
    const Change c = changes_.At(op.change);
    return Permute(perm_, op.put ? c.fingerprint : c.old).low();
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
  const SstUse use_;
  const std::size_t capacity_;
  bool whole_groups_ = false;
  std::vector<DocumentId> ids_;       // table 0's, copied from a load's changes
  std::vector<std::uint64_t> tails_;  // by change, of the added fingerprints, where kept
  std::vector<std::string> spills_;
  std::optional<Part> part_;
};

Status TableWriter::Table::Write() {
  part_.emplace(*this, writer_.dir_.Path(name_ + ".sst"));
  // Final sizes up front: doubling would overshoot the memory budget.
  buffers_.ops.clear();
  buffers_.ops.reserve(capacity_);
  buffers_.scratch.reserve(capacity_);
  if (Status s = CollectOps(); !s.ok()) return s;
  if (!spills_.empty()) return WriteMergedSpills();
  if (Status s = CopyIds(); !s.ok()) return s;
  SortOps(buffers_);
  return WriteOps(buffers_.ops);
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
      const Word permuted = Permute(perm_, c.fingerprint);
      const TableOp put{layout_.HeadOf(permuted), change, true};
      ops.push_back(put);
      if (!tails_.empty()) tails_[change] = permuted.low();
    }
    if (c.had_old && (reads_ids || (!old_keys_leaving_.empty() && old_keys_leaving_[change]))) {
      const Word permuted = Permute(perm_, c.old);
      const TableOp remove{layout_.HeadOf(permuted), change, false};
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
    out.PutU64(op.head);
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

Status TableWriter::Table::WriteMergedSpills() {
  if (Status s = Spill(); !s.ok()) return s;
  std::vector<std::unique_ptr<RecordReader>> readers;
  using Item = std::pair<TableOp, std::size_t>;
  auto later = [](const Item& a, const Item& b) { return b.first < a.first; };
  std::priority_queue<Item, std::vector<Item>, decltype(later)> heap(later);
  auto pull = [&](std::size_t r) {
    std::uint64_t head, change_put;
    if (readers[r]->GetU64(head) && readers[r]->GetU64(change_put)) {
      heap.push({TableOp{head, change_put >> 1, change_put & 1}, r});
    }
    return readers[r]->status();
  };
  for (const std::string& path : spills_) {
    readers.push_back(std::make_unique<RecordReader>(path));
    if (Status s = pull(readers.size() - 1); !s.ok()) return s;
  }
  while (!heap.empty()) {
    const auto [op, r] = heap.top();
    heap.pop();
    if (Status s = WriteOp(op); !s.ok()) return s;
    if (Status s = pull(r); !s.ok()) return s;
  }
  std::error_code ec;
  for (const std::string& path : spills_) std::filesystem::remove(path, ec);
  return Status::OK();
}

// Writes sorted ops. Table 0's ids and the tails are read scattered, so they are fetched a few ops
// ahead.
Status TableWriter::Table::WriteOps(std::span<const TableOp> sorted) {
  constexpr std::size_t kAhead = 16;
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (i + kAhead < sorted.size()) {
      const TableOp& ahead = sorted[i + kAhead];
      if (t_ == 0) {
        __builtin_prefetch(!ids_.empty() ? reinterpret_cast<const char*>(&ids_[ahead.change])
                                         : changes_.IdAddress(ahead.change));
      }
      if (ahead.put && !tails_.empty()) __builtin_prefetch(&tails_[ahead.change]);
    }
    if (Status s = WriteOp(sorted[i]); !s.ok()) return s;
  }
  return Status::OK();
}

// An op out of order is a bug in the sort or the merge of spills. A table without ids takes a
// fingerprint once, however many documents share it. Where the layout keeps tails, the ops of one
// head wait in `run` until the next head, to be written in (tail, change) order.
Status TableWriter::Table::WriteOp(const TableOp& op) {
  Part& part = *part_;
  if (part.last) {
    if (op < *part.last) {
      return Status::Corruption("bulk load: " + name_ + "'s entries out of order");
    }
    if (layout_.keeps_tails()) {
      if (op.head != part.last->head) {
        if (Status s = WriteRun(); !s.ok()) return s;
      }
    } else if (t_ != 0 && op.head == part.last->head) {
      return Status::OK();
    }
  }
  part.last = op;
  if (layout_.keeps_tails()) {
    part.run.push_back({Word(op.head, Tail(op)), op.change, op.put != 0});
    return Status::OK();
  }
  return part.groups.Add(Word(op.head), op.put, t_ == 0 ? IdOf(op.change) : 0);
}

// A head's ops, whole, in table order; tables without ids take each fingerprint once.
Status TableWriter::Table::WriteRun() {
  std::vector<Entry>& run = part_->run;
  std::sort(run.begin(), run.end());
  for (std::size_t i = 0; i < run.size(); ++i) {
    const Entry& e = run[i];
    if (t_ != 0 && i > 0 && e.permuted == run[i - 1].permuted) continue;
    if (Status s = part_->groups.Add(e.permuted, e.put, t_ == 0 ? IdOf(e.change) : 0); !s.ok()) {
      return s;
    }
  }
  run.clear();
  return Status::OK();
}

Status TableWriter::Table::Finish(rocksdb::IngestExternalFileArg& arg) {
  arg = IngestionInto(target_.tables[t_]);
  if (Status s = WriteRun(); !s.ok()) return s;
  if (Status s = part_->groups.Finish(); !s.ok()) return s;
  return part_->sink.Finish(arg.external_files);
}

Status TableWriter::Write(const Changes& changes, const std::vector<bool>& old_keys_leaving,
                          const Options& options, Output& out) const {
  const std::size_t tables = target_.tables.size();
  // Each worker takes the next table, within its share of the budget.
  const int threads = ThreadsFor(options.threads, tables);
  const std::size_t max_ops =
      std::max<std::size_t>(1024, options.memory_bytes / threads / (2 * sizeof(TableOp)));
  std::vector<rocksdb::IngestExternalFileArg> table_args(tables);
  // A copy beside RocksDB's once the files are in: kept up to a quarter of the budget.
  std::vector<std::optional<std::vector<WrittenFile>>> properties(tables);
  std::atomic<std::size_t> property_bytes{0};
  const std::size_t max_property_bytes = options.memory_bytes / 4;
  std::vector<SortBuffers> buffers(threads);
  auto write_table = [&](std::size_t t, int worker) -> Status {
    Table table(*this, t, changes, old_keys_leaving, max_ops, buffers[worker], options);
    Status s = table.Write();
    if (s.ok()) s = table.Finish(table_args[t]);
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
  Status s = ForEachInParallel(
      tables + (options.beside_tables ? 1 : 0), threads, [&](std::size_t i, int worker) {
        return i == tables ? options.beside_tables() : write_table(i, worker);
      });
  if (!s.ok()) return s;
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
