// The store's BulkLoader (include/fpstore/bulk_loader.h).

#ifndef FPSTORE_LIB_STORE_BULK_LOADER_H_
#define FPSTORE_LIB_STORE_BULK_LOADER_H_

#include <rocksdb/db.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "format/records.h"
#include "fpstore/bulk_loader.h"
#include "ingest/spills.h"
#include "ingest/sst_sink.h"
#include "plan/pair_finder.h"
#include "store/table_filters.h"

namespace fpstore::internal {

// The last table of a load writes its halves side by side when it has more
// than this many ops in memory (WriteTable); 0 restores the default, 1Mi.
void SetSplitLastTableAboveForTesting(std::size_t ops);

class StoreImpl;
struct StagedDocument;
class Changes;
class CrowdedTables;
struct SortBuffers;

class BulkLoaderImpl final : public BulkLoader {
 public:
  // `temp_dir` must be a fresh directory the loader may fill and remove.
  BulkLoaderImpl(StoreImpl& store, BulkLoadOptions options, std::string temp_dir);
  ~BulkLoaderImpl() override;

  Status Add(DocumentId id, Fingerprint fingerprint, std::string_view metadata) override;
  std::uint64_t added() const override { return next_seq_; }
  Result<BulkLoadStats> Finish() override;

  // Writes the files that move `staged` documents (by id) from the staging
  // family into the tables: their table entries, the removal of the
  // versions that leave, the deletion of their staging marks, and their
  // fingerprints for the recent family, whose prefixes it adds to the
  // store's RecentPrefixes. Appends them to
  // `args` for one atomic ingestion, and the tables' filters to `filters`
  // (as WriteTables).
  Status WriteMergeFiles(std::span<const StagedDocument> staged,
                         std::vector<rocksdb::IngestExternalFileArg>& args,
                         std::optional<TableFilters::Ingested>& filters) const;
  // The crowded family's file of a rewrite of the lone bits:
  // a range deletion of every key, and `crowded`'s fingerprints with their
  // bits, appended to `args`.
  Status WriteLoneBitsFile(const CrowdedTables& crowded,
                           std::vector<rocksdb::IngestExternalFileArg>& args) const;

 private:
  // Reserves the buffer's room for a whole run, on the first Add.
  void ReserveBuffer();
  // Sorts the buffer and writes it to a run file.
  Status SpillRun();
  // Calls options_.progress, if set; what it throws becomes an error.
  Status ReportProgress(std::uint64_t done, std::uint64_t total) const;
  // For each change, by its index, whether tables without ids lose the key
  // of the version it takes out: no document has that fingerprint once the
  // changes are in (`leaving` are those versions). Empty if none does.
  // REQUIRES: the store's merge lock held, and its load lock unless only
  // merges change the tables (format 8).
  Result<std::vector<bool>> OldKeysLeaving(std::vector<IdFingerprint> leaving,
                                           const Changes& changes) const;
  // Sorts table `t`'s puts and deletes from `changes` and writes
  // them as one SST, described in `arg` for ingestion. `old_keys_leaving`:
  // as OldKeysLeaving returns. With `crowded` (one per change, in the
  // changes' order; puts only), sets bit t of each change whose
  // fingerprint shares its prefix here with another, and table 0 writes
  // the other bits as lone bits, so it must come after the others: it
  // calls before_writing(), if set, once its ops are sorted. It writes
  // them as its values in formats 5 to 8, and from format 9 as the
  // crowded family's file, described in `lone_bits_arg`. `use`: how the
  // file is written (sst_sink.h): kLoad, or for a merge either merge use,
  // which it picks by whether the table has files.
  Status WriteTable(std::size_t t, const Changes& changes,
                    const std::vector<bool>& old_keys_leaving, std::size_t max_ops,
                    SortBuffers& buffers, std::atomic<LoneBits>* crowded,
                    const std::function<void()>& before_writing, SstUse use,
                    rocksdb::IngestExternalFileArg& arg,
                    rocksdb::IngestExternalFileArg& lone_bits_arg) const;
  // Writes every table's SST from `changes`, tables spread over
  // threads; calls table_done() after each table. Appends them to `args`,
  // and sets `filters` to the packed tables' filters read from the new
  // files (none if any could not be read), for PublishMemberFilters.
  // `crowded` and `use`: as WriteTable takes them (with `crowded`, table
  // 0 is written last). `beside_table0`, if set, is one more task, taken
  // after table 0: table 0 waits for the others and then writes alone,
  // with a core to spare.
  Status WriteTables(const Changes& changes, const std::vector<bool>& old_keys_leaving,
                     const std::function<Status()>& table_done, std::atomic<LoneBits>* crowded,
                     SstUse use, std::vector<rocksdb::IngestExternalFileArg>& args,
                     std::optional<TableFilters::Ingested>& filters,
                     const std::function<Status()>& beside_table0 = {}) const;
  // Adds `fingerprints` to the store's RecentPrefixes and, as a file of its
  // recent family, to `args`. Nothing in a store before format 5.
  Status AddRecent(std::vector<Fingerprint> fingerprints,
                   std::vector<rocksdb::IngestExternalFileArg>& args) const;
  std::string TempPath(const std::string& name) const;

  StoreImpl& store_;
  const BulkLoadOptions options_;
  const std::string temp_dir_;
  // The run being buffered; Finish reads the last one from memory.
  std::vector<BufferedRecord> buffer_;
  std::string buffer_metadata_;  // the buffered records' metadata, end to end
  std::size_t buffer_bytes_ = 0;
  std::vector<std::string> runs_;
  std::uint64_t next_seq_ = 0;
  bool finished_ = false;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_BULK_LOADER_H_
