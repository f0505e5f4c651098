// The RocksDB options fpstore opens a store with: one block cache and one
// write-buffer budget shared by every family, member filters on the tables.

#ifndef FPSTORE_LIB_FORMAT_FAMILIES_H_
#define FPSTORE_LIB_FORMAT_FAMILIES_H_

#include <rocksdb/db.h>
#include <rocksdb/options.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fpstore/options.h"
#include "fpstore/permutation.h"

namespace fpstore::internal {

// The on-disk format this build reads and writes (docs/format.md).
inline constexpr int kFormatVersion = 16;

// Column family names and metadata keys, fixed by the on-disk format.
inline constexpr char kDocumentsFamily[] = "documents";
inline constexpr char kStagingFamily[] = "staging";
inline constexpr char kTimesFamily[] = "times";
inline constexpr char kFormatVersionKey[] = "fpstore.format_version";
inline constexpr char kPlanKey[] = "fpstore.plan";
inline constexpr char kGroupBitsKey[] = "fpstore.group_bits";
inline constexpr char kFingerprintKey[] = "fpstore.fingerprint";
inline constexpr char kMinSimilarityKey[] = "fpstore.min_similarity";
inline constexpr char kRetentionKey[] = "fpstore.retention";
inline constexpr char kSignedKey[] = "fpstore.signed";
inline constexpr char kDocumentCountKey[] = "fpstore.document_count";
// Table t's family: "table-000" and up.
std::string TableFamilyName(std::size_t table);

struct RocksConfig {
  rocksdb::DBOptions db;
  // In order: metadata (default), documents, staging, tables, times.
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  // The block cache every family shares (null for inspection).
  std::shared_ptr<rocksdb::Cache> block_cache;
};

// `group_bits`: as the store records it (format/groups.h).
RocksConfig MakeRocksConfig(const StoreOptions& options, const PermutationPlan& plan,
                            int group_bits);

// Read-only options for a store's metadata (the default family); the other
// families get RocksDB's defaults. Nothing is created.
RocksConfig MakeInspectionConfig(const std::vector<std::string>& family_names);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FORMAT_FAMILIES_H_
