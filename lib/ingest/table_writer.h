// Writes what a bulk load or a merge changes in the tables as one sorted
// SST file per table (two halves for the last table of a large load),
// ready for one atomic ingestion: each table's ops (a member added per
// document, one removed per version that leaves) sorted in memory, spilled
// and merged back when they outgrow their share of the budget, and written
// as groups (format/groups.h) through RocksDB's SstFileWriter. The tables
// are spread over threads.
//
// A load into an empty store also marks, as table by table it writes,
// which documents share their prefix with another fingerprint, and writes
// table 0 last, with the crowded family's file of the lone bits beside it
// (docs/format.md, "Lone bits").
//
// Thread safety: one Write at a time per writer.

#ifndef FPSTORE_LIB_INGEST_TABLE_WRITER_H_
#define FPSTORE_LIB_INGEST_TABLE_WRITER_H_

#include <rocksdb/db.h>
#include <rocksdb/table_properties.h>

#include <atomic>
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

// A file written for ingestion, with the family it goes into and its table
// properties (which hold its member filters), read while other tables are
// written.
struct WrittenFile {
  std::uint32_t family_id;
  std::shared_ptr<const rocksdb::TableProperties> properties;
};

// The files of `arg`, with their properties read back before the files
// are ingested.
Result<std::vector<WrittenFile>> ReadWrittenFiles(rocksdb::DB& db,
                                                  const rocksdb::IngestExternalFileArg& arg);

class TableWriter {
 public:
  // Where the files go: the store's tables, and its crowded family.
  struct Target {
    rocksdb::DB* db;
    const PermutationPlan* plan;
    std::span<rocksdb::ColumnFamilyHandle* const> tables;
    std::span<const GroupLayout> layouts;
    rocksdb::ColumnFamilyHandle* crowded;
  };

  struct Options {
    // Bytes for sorting, shared by the threads. Default: 1 GiB.
    std::size_t memory_bytes = std::size_t{1} << 30;
    // Threads that sort and write; 0: one per core.
    int threads = 0;
    // A bulk load's files (there to stay), or a merge's.
    SstUse use = SstUse::kLoad;
    // A load into an empty store: write the lone bits (crowded family).
    bool lone_bits = false;
    // Called after each table, from the writing threads one at a time.
    std::function<Status()> table_done;
    // One more task, taken after table 0: with lone bits, table 0 waits
    // for the others and writes alone, with a core to spare.
    std::function<Status()> beside_table0;
    // With lone bits, table 0 writes its halves side by side when it has
    // more than this many ops in memory.
    std::size_t split_above = std::size_t{1} << 20;
  };

  // The files written, for one ingestion.
  struct Output {
    std::vector<rocksdb::IngestExternalFileArg> args;
    // The tables' files' properties; none if a file's could not be read,
    // or if together they would take more than a quarter of the budget.
    std::optional<std::vector<WrittenFile>> properties;
  };

  TableWriter(const Target& target, const ScratchDir& dir) : target_(target), dir_(dir) {}

  // Writes every table's file for `changes`. `old_keys_leaving` (empty:
  // none): for each change, whether the tables without ids lose the key of
  // the version it takes out (no document keeps that fingerprint).
  Status Write(const Changes& changes, const std::vector<bool>& old_keys_leaving,
               const Options& options, Output& out) const;

 private:
  class Table;
  const Target target_;
  const ScratchDir& dir_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_INGEST_TABLE_WRITER_H_
