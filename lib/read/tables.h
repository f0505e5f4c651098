// The permutation tables (docs/design.md, "Storing it"): a column family per table of packed groups
// of permuted fingerprints (format/groups.h), with ids in table 0 only, and their files' member
// filters (table_filters.h). Only read here; merges and bulk loads write them by ingestion.
//
// Thread safety: thread-safe.

#ifndef FPSTORE_LIB_READ_TABLES_H_
#define FPSTORE_LIB_READ_TABLES_H_

#include <rocksdb/db.h>

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "format/groups.h"
#include "fpstore/permutation.h"
#include "fpstore/status.h"
#include "plan/table_entry.h"
#include "read/table_filters.h"

namespace fpstore::internal {

class Tables {
 public:
  // `families`: table t's at [t]. `filters` must be attached to them.
  Tables(rocksdb::DB& db, const PermutationPlan& plan, int group_bits,
         std::vector<rocksdb::ColumnFamilyHandle*> families, std::shared_ptr<TableFilters> filters);

  const PermutationPlan& plan() const { return plan_; }
  int group_bits() const { return group_bits_; }
  std::span<rocksdb::ColumnFamilyHandle* const> families() const { return families_; }
  const GroupLayout& layout(std::size_t t) const { return layouts_[t]; }
  std::span<const GroupLayout> layouts() const { return layouts_; }
  TableFilters& filters() const { return *filters_; }
  // An iterator over table t's groups; the caller deletes it.
  rocksdb::Iterator* NewIterator(std::size_t t, const rocksdb::ReadOptions& options) const;

  // Reads table t's group holding `permuted` at `snapshot`, operands folded; false if none. Reads
  // only the files that `filter` (the reader's view) shows may change a member with its prefix.
  Result<bool> ReadGroup(std::size_t t, const TableMemberFilter& filter,
                         const rocksdb::Snapshot* snapshot, Fingerprint permuted,
                         rocksdb::PinnableSlice& value) const;

  // Calls found(id), in id order while it returns true, for each document table 0 holds with
  // `fingerprint`, read through `table0`; callers going in table 0's order read each group once.
  Status ForEachIdOf(rocksdb::Iterator& table0, Fingerprint fingerprint,
                     const std::function<bool(DocumentId)>& found) const;

  // Of the fingerprints of `leaving` (sorted by ByFingerprint), those that table 0, at its latest
  // state, holds for a document not in `leaving`, ascending: the tables without ids keep them.
  Result<std::vector<Fingerprint>> FingerprintsKept(std::span<const IdFingerprint> leaving) const;

 private:
  rocksdb::DB& db_;
  const PermutationPlan plan_;
  const int group_bits_;
  const std::vector<rocksdb::ColumnFamilyHandle*> families_;
  const std::vector<GroupLayout> layouts_;
  const std::shared_ptr<TableFilters> filters_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_READ_TABLES_H_
