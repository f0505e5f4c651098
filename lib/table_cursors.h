// Iterators over every table, kept from one query to the next.
//
// A query is a prefix seek in each of the plan's tables; one that finds
// nothing spent about 40% of its time creating and destroying the twenty
// RocksDB iterators (docs/performance.md). A kept iterator is refreshed to
// the latest state instead, which costs a few loads while nothing was
// flushed or compacted, and a rebuild after.
//
// Refreshed one at a time, the iterators show one state of the tables only
// if nothing wrote to the tables in between: TableWriteClock tells a query
// whether that held, and if not the query runs again on fresh iterators at
// one snapshot.

#ifndef FPSTORE_LIB_TABLE_CURSORS_H_
#define FPSTORE_LIB_TABLE_CURSORS_H_

#include <rocksdb/db.h>
#include <rocksdb/listener.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <vector>

#include "fpstore/status.h"

namespace fpstore::internal {

// How queries read the tables. fpstore deletes no ranges; left on, range
// deletions made the refreshed iterators of a writable store answer hits at
// 10M in 235 µs instead of 150.
inline rocksdb::ReadOptions TableReadOptions() {
  rocksdb::ReadOptions options;
  options.ignore_range_deletions = true;
  return options;
}

// Counts the writes to the tables that queries may overlap: merges'
// ingestions (a bulk load's holds queries off).
// Thread-safe.
class TableWriteClock {
 public:
  struct Reading {
    std::uint64_t started;
    bool quiet;  // no write was running
  };

  // Around each such write.
  void Begin() { started_.fetch_add(1); }
  void End() { finished_.fetch_add(1); }

  Reading Read() const {
    const std::uint64_t finished = finished_.load();
    const std::uint64_t started = started_.load();
    return {started, started == finished};
  }
  // True if no write ran at `before` and none has started since: every
  // read in between saw the tables in one state.
  bool QuietSince(const Reading& before) const {
    return before.quiet && started_.load() == before.started;
  }

 private:
  std::atomic<std::uint64_t> started_{0};
  std::atomic<std::uint64_t> finished_{0};
};

// One iterator per table, used by one query at a time.
struct TableCursors {
  std::vector<std::unique_ptr<rocksdb::Iterator>> tables;
  std::uint64_t generation = 0;  // a pool's, when it made them
};

// New iterators over `tables`, in order, reading with `options`.
TableCursors NewTableCursors(rocksdb::DB& db, std::span<rocksdb::ColumnFamilyHandle* const> tables,
                             const rocksdb::ReadOptions& options);

// Idle cursors, handed to one query at a time. Thread-safe.
class TableCursorPool {
 public:
  // `refresh`: false for a read-only store, whose state never changes (and
  // whose iterators cannot be refreshed).
  explicit TableCursorPool(bool refresh) : refresh_(refresh) {}

  // Drops idle cursors after each flush and compaction, so that they do not
  // keep replaced memtables and files alive. For the database's options,
  // before it opens.
  static std::shared_ptr<rocksdb::EventListener> MakeListener(
      std::shared_ptr<TableCursorPool> pool);

  // REQUIRES: called once, before Acquire.
  void Attach(rocksdb::DB* db, std::span<rocksdb::ColumnFamilyHandle* const> tables);
  // Destroys the idle cursors and hands out no more. REQUIRES: none in use.
  void Detach();

  // Cursors at the latest state: kept ones refreshed, or new ones.
  Result<std::unique_ptr<TableCursors>> Acquire();
  // Keeps `cursors` for the next query, unless idle ones were dropped while
  // they were in use.
  void Release(std::unique_ptr<TableCursors> cursors);
  // After a flush or compaction of family `family_id`: if it is a table,
  // destroys the idle cursors; those in use are destroyed when released.
  void DropIdle(std::uint32_t family_id);

 private:
  const bool refresh_;
  std::mutex mu_;
  rocksdb::DB* db_ = nullptr;  // null when detached
  std::vector<rocksdb::ColumnFamilyHandle*> tables_;
  std::set<std::uint32_t> table_ids_;
  std::vector<std::unique_ptr<TableCursors>> idle_;
  // Bumped by DropIdle: cursors of an older generation are not kept.
  std::uint64_t generation_ = 0;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_TABLE_CURSORS_H_
