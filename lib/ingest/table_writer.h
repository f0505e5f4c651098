// Writes what a bulk load or merge changes in the tables as one sorted SST per
// table, for one atomic ingestion: each table's ops (a member added per
// document, one removed per version leaving) sorted in memory, spilled past
// their budget, and written as groups (format/groups.h), tables on threads.
//
// Thread safety: one Write at a time per writer.

#ifndef FPSTORE_LIB_INGEST_TABLE_WRITER_H_
#define FPSTORE_LIB_INGEST_TABLE_WRITER_H_

#include <rocksdb/db.h>
#include <rocksdb/table_properties.h>

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "format/groups.h"
#include "format/records.h"
#include "fpstore/permutation.h"
#include "fpstore/status.h"
#include "ingest/changes.h"
#include "ingest/scratch_dir.h"
#include "ingest/sst_sink.h"

namespace fpstore::internal {

// A written file's family and table properties (holding its member filters).
struct WrittenFile {
  std::uint32_t family_id;
  std::shared_ptr<const rocksdb::TableProperties> properties;
};

// Reads back the properties of `arg`'s files before they are ingested.
Result<std::vector<WrittenFile>> ReadWrittenFiles(rocksdb::DB& db,
                                                  const rocksdb::IngestExternalFileArg& arg);

class TableWriter {
 public:
  struct Target {
    rocksdb::DB* db;
    const PermutationPlan* plan;
    std::span<rocksdb::ColumnFamilyHandle* const> tables;
    std::span<const GroupLayout> layouts;
  };

  struct Options {
    // Bytes for sorting, shared by the threads.
    std::size_t memory_bytes = std::size_t{1} << 30;
    // Threads that sort and write; 0: one per core.
    int threads = 0;
    SstUse use = SstUse::kLoad;
    // Called after each table, from the writing threads, possibly concurrently.
    std::function<Status()> table_done;
    // One more task, run on the same threads after the tables are taken.
    std::function<Status()> beside_tables;
  };

  struct Output {
    std::vector<rocksdb::IngestExternalFileArg> args;
    // The tables' files' properties; none if a file's could not be read,
    // or if together they would take more than a quarter of the budget.
    std::optional<std::vector<WrittenFile>> properties;
  };

  TableWriter(const Target& target, const ScratchDir& dir) : target_(target), dir_(dir) {}

  // `old_keys_leaving[i]` (empty: all false): whether tables without ids drop
  // change i's old fingerprint, which no document keeps.
  Status Write(const Changes& changes, const std::vector<bool>& old_keys_leaving,
               const Options& options, Output& out) const;

 private:
  class Table;
  const Target target_;
  const ScratchDir& dir_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_INGEST_TABLE_WRITER_H_
