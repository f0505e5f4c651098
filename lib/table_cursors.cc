#include "table_cursors.h"

#include <utility>

#include "rocks_status.h"

namespace fpstore::internal {

namespace {

class DropIdleCursors final : public rocksdb::EventListener {
 public:
  explicit DropIdleCursors(std::shared_ptr<TableCursorPool> pool) : pool_(std::move(pool)) {}
  // RocksDB calls these without holding its own locks, so the iterators can
  // be destroyed here.
  void OnFlushCompleted(rocksdb::DB*, const rocksdb::FlushJobInfo& info) override {
    pool_->DropIdle(info.cf_id);
  }
  void OnCompactionCompleted(rocksdb::DB*, const rocksdb::CompactionJobInfo& info) override {
    pool_->DropIdle(info.cf_id);
  }

 private:
  const std::shared_ptr<TableCursorPool> pool_;
};

}  // namespace

std::shared_ptr<rocksdb::EventListener> TableCursorPool::MakeListener(
    std::shared_ptr<TableCursorPool> pool) {
  return std::make_shared<DropIdleCursors>(std::move(pool));
}

TableCursors NewTableCursors(rocksdb::DB& db, std::span<rocksdb::ColumnFamilyHandle* const> tables,
                             const rocksdb::ReadOptions& options) {
  TableCursors cursors;
  cursors.tables.reserve(tables.size());
  for (rocksdb::ColumnFamilyHandle* table : tables) {
    cursors.tables.emplace_back(db.NewIterator(options, table));
  }
  return cursors;
}

void TableCursorPool::Attach(rocksdb::DB* db, std::span<rocksdb::ColumnFamilyHandle* const> tables) {
  std::lock_guard lock(mu_);
  db_ = db;
  tables_.assign(tables.begin(), tables.end());
  for (rocksdb::ColumnFamilyHandle* table : tables_) table_ids_.insert(table->GetID());
}

void TableCursorPool::Detach() {
  std::lock_guard lock(mu_);
  db_ = nullptr;
  tables_.clear();
  idle_.clear();
}

Result<std::unique_ptr<TableCursors>> TableCursorPool::Acquire() {
  std::unique_ptr<TableCursors> cursors;
  std::uint64_t generation;
  {
    std::lock_guard lock(mu_);
    if (db_ == nullptr) return Status::InvalidArgument("the store is closed");
    if (!idle_.empty()) {
      cursors = std::move(idle_.back());
      idle_.pop_back();
    }
    generation = generation_;
  }
  if (cursors == nullptr) {
    rocksdb::ReadOptions options = TableReadOptions();
    // Files an iterator was the last to use are deleted in the background,
    // not by the query or compaction thread that lets it go.
    options.background_purge_on_iterator_cleanup = true;
    // db_ and tables_ change only in Attach and Detach, never while a
    // query runs.
    cursors = std::make_unique<TableCursors>(NewTableCursors(*db_, tables_, options));
    cursors->generation = generation;
  } else if (refresh_) {
    for (const std::unique_ptr<rocksdb::Iterator>& it : cursors->tables) {
      if (Status s = FromRocks(it->Refresh(), "refreshing a table iterator"); !s.ok()) return s;
    }
  }
  return cursors;
}

void TableCursorPool::Release(std::unique_ptr<TableCursors> cursors) {
  std::lock_guard lock(mu_);
  if (db_ != nullptr && cursors->generation == generation_) idle_.push_back(std::move(cursors));
}

void TableCursorPool::DropIdle(std::uint32_t family_id) {
  std::vector<std::unique_ptr<TableCursors>> idle;
  {
    std::lock_guard lock(mu_);
    if (!table_ids_.contains(family_id)) return;
    ++generation_;
    idle.swap(idle_);
  }
  // Destroyed outside the lock, so that queries need not wait for it. The
  // database cannot close meanwhile: it waits for the flush or compaction
  // that called this.
}

}  // namespace fpstore::internal
