// The RocksDB options fpstore opens a store with: one block cache and one
// write-buffer budget shared by every family, prefix filters on the tables.

#ifndef FPSTORE_LIB_ROCKS_CONFIG_H_
#define FPSTORE_LIB_ROCKS_CONFIG_H_

#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <string>
#include <vector>

#include "fpstore/options.h"
#include "fpstore/permutation.h"

namespace fpstore::internal {

struct RocksConfig {
  rocksdb::DBOptions db;
  // Metadata (default family), documents, staging, one per table, recent,
  // then crowded.
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  // The block cache every family shares (null for inspection).
  std::shared_ptr<rocksdb::Cache> block_cache;
};

// `group_bits`: where the store's packed tables cut their groups
// (table_groups.h), as it records.
RocksConfig MakeRocksConfig(const StoreOptions& options, const PermutationPlan& plan,
                            int group_bits);

// Options good enough to read the metadata of a store whose plan is not yet
// known, or with the `plan` and `group_bits` it records, its tables too.
// Reading only: nothing is created.
RocksConfig MakeInspectionConfig(const std::vector<std::string>& family_names);
RocksConfig MakeInspectionConfig(const std::vector<std::string>& family_names,
                                 const PermutationPlan& plan, int group_bits);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_ROCKS_CONFIG_H_
