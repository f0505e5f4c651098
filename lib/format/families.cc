#include "format/families.h"

#include <rocksdb/cache.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/merge_operator.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <rocksdb/write_buffer_manager.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "faults/info_log.h"
#include "format/groups.h"
#include "format/member_filter.h"
#include "util/big_endian.h"

namespace fpstore::internal {

std::string TableFamilyName(std::size_t table) {
  // Room for any size_t, so that GCC's -Wformat-truncation has nothing to warn of.
  char name[32];
  std::snprintf(name, sizeof name, "table-%03zu", table);
  return name;
}

namespace {

// Sums signed 64-bit deltas: the document count moves in the documents' batch.
class Int64AddOperator final : public rocksdb::AssociativeMergeOperator {
 public:
  bool Merge(const rocksdb::Slice&, const rocksdb::Slice* existing, const rocksdb::Slice& value,
             std::string* new_value, rocksdb::Logger*) const override {
    std::int64_t sum = Decode(value);
    if (existing != nullptr) sum += Decode(*existing);
    new_value->resize(8);
    PutBigEndian64(new_value->data(), static_cast<std::uint64_t>(sum));
    return true;
  }
  const char* Name() const override { return "fpstore.Int64Add"; }

 private:
  static std::int64_t Decode(const rocksdb::Slice& s) {
    return s.size() == 8 ? static_cast<std::int64_t>(GetBigEndian64(s.data())) : 0;
  }
};

// For point lookups: every probe consults each file's filter and index, so
// both are pinned in the block cache from open, unpartitioned (partitions
// would only add a search per probe).
rocksdb::BlockBasedTableOptions LookupTableOptions(const std::shared_ptr<rocksdb::Cache>& cache) {
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = cache;
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  t.index_type = rocksdb::BlockBasedTableOptions::kBinarySearch;
  t.partition_filters = false;
  t.cache_index_and_filter_blocks = true;
  t.cache_index_and_filter_blocks_with_high_priority = true;
  t.metadata_cache_options.top_level_index_pinning = rocksdb::PinningTier::kAll;
  t.metadata_cache_options.partition_pinning = rocksdb::PinningTier::kAll;
  t.metadata_cache_options.unpartitioned_pinning = rocksdb::PinningTier::kAll;
  return t;
}

// LZ4 while data is young and rewritten often; ZSTD at the bottom, where
// it stays, at its fast level -1: a query's reads decompress blocks.
void SetCompression(rocksdb::ColumnFamilyOptions& cf) {
  cf.compression = rocksdb::kLZ4Compression;
  cf.bottommost_compression = rocksdb::kZSTD;
  cf.bottommost_compression_opts.enabled = true;
  cf.bottommost_compression_opts.level = -1;
}

// A table (format/groups.h): no RocksDB filter, which would see group keys
// only and pass nearly every probe (format/member_filter.h does that job);
// members are random bits, so no compression.
rocksdb::ColumnFamilyOptions PackedTableOptions(const std::shared_ptr<rocksdb::Cache>& cache,
                                                const GroupLayout& layout, int prefix_bits,
                                                std::size_t memtable_bytes) {
  rocksdb::BlockBasedTableOptions bt = LookupTableOptions(cache);
  bt.filter_policy.reset();
  bt.block_size = 4096;
  rocksdb::ColumnFamilyOptions cf;
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(bt));
  cf.compression = rocksdb::kNoCompression;
  cf.bottommost_compression = rocksdb::kDisableCompressionOption;
  cf.merge_operator = std::make_shared<GroupMergeOperator>(layout);
  cf.table_properties_collector_factories = {NewMemberFilterCollectorFactory(layout, prefix_bits)};
  cf.write_buffer_size = memtable_bytes;
  cf.level_compaction_dynamic_level_bytes = true;
  return cf;
}

// A family that queries seldom read but every merge adds a file to: its
// compactions lag the tables', and RocksDB's default triggers (20, 36 level-0
// files) would stall all writes.
void AllowManyLevelZeroFiles(rocksdb::ColumnFamilyOptions& cf) {
  cf.level0_slowdown_writes_trigger = 128;
  cf.level0_stop_writes_trigger = 256;
}

// A family of point keys (an id, a fingerprint), LZ4-compressed, with its memtable
// budget; read by point lookups (LookupTableOptions) if `lookup_cache` is set.
rocksdb::ColumnFamilyOptions KeyedFamilyOptions(const std::shared_ptr<rocksdb::Cache>& lookup_cache,
                                                std::size_t memtable_bytes) {
  rocksdb::ColumnFamilyOptions cf;
  if (lookup_cache) {
    cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(LookupTableOptions(lookup_cache)));
  }
  cf.compression = rocksdb::kLZ4Compression;
  cf.write_buffer_size = memtable_bytes;
  return cf;
}

rocksdb::ColumnFamilyOptions MetadataFamilyOptions() {
  rocksdb::ColumnFamilyOptions cf;
  cf.merge_operator = std::make_shared<Int64AddOperator>();
  return cf;
}

rocksdb::DBOptions DatabaseOptions(const StoreOptions& options) {
  rocksdb::DBOptions db;
  db.create_if_missing = options.create_if_missing;
  db.create_missing_column_families = false;
  // RocksDB gives a quarter of its jobs, at least one, to flushes: one job
  // more than the compaction threads, so that compactions get them all.
  db.max_background_jobs = std::max(2, options.background_threads) + 1;
  db.write_buffer_manager =
      std::make_shared<rocksdb::WriteBufferManager>(options.write_buffer_bytes);
  // Every family shares one WAL; without a cap, a rarely written family
  // would keep old logs alive.
  db.max_total_wal_size = 4 * options.write_buffer_bytes;
  db.bytes_per_sync = 1 << 20;
  db.enable_pipelined_write = true;
  // Replay the logs up to the first record that cannot be read: after a crash, the torn last write,
  // never acknowledged. Damage with intact records after it is found before RocksDB opens
  // (store/damaged_log.h) and refused unless StoreOptions::drop_damaged_log.
  db.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
  return db;
}

}  // namespace

RocksConfig MakeRocksConfig(const StoreOptions& options, const PermutationPlan& plan,
                            int group_bits) {
  RocksConfig config;
  config.db = DatabaseOptions(options);
  rocksdb::LRUCacheOptions cache_options;
  cache_options.capacity = options.block_cache_bytes;
  const std::shared_ptr<rocksdb::Cache> cache = rocksdb::NewLRUCache(cache_options);
  config.block_cache = cache;
  // Each memtable gets its share of the budget and flushes on its own size (on
  // a shared budget the manager would keep flushing the oldest, nearly empty
  // one). Inserts reach the tables by ingestion: documents get a quarter,
  // staging an eighth, the tables half between them.
  const auto share = [&](std::size_t parts) {
    return std::max<std::size_t>(std::size_t{4} << 20, options.write_buffer_bytes / parts);
  };
  const std::size_t memtable_bytes = share(2 * plan.table_count());
  const std::size_t documents_memtable_bytes = share(4);
  const std::size_t staging_memtable_bytes = share(8);

  config.families.emplace_back(rocksdb::kDefaultColumnFamilyName, MetadataFamilyOptions());

  // Documents: whole-key Bloom filters, in the memtable too: every insert looks
  // its id up first, and most ids are new.
  rocksdb::ColumnFamilyOptions documents = KeyedFamilyOptions(cache, documents_memtable_bytes);
  documents.memtable_whole_key_filtering = true;
  documents.memtable_prefix_bloom_size_ratio = 0.05;
  SetCompression(documents);
  documents.level_compaction_dynamic_level_bytes = true;
  config.families.emplace_back(kDocumentsFamily, documents);

  // Staging marks: point lookups and deletions by id, few and short-lived.
  rocksdb::ColumnFamilyOptions staging = KeyedFamilyOptions(cache, staging_memtable_bytes);
  AllowManyLevelZeroFiles(staging);
  config.families.emplace_back(kStagingFamily, staging);

  for (std::size_t t = 0; t < plan.table_count(); ++t) {
    config.families.emplace_back(TableFamilyName(t),
                                 PackedTableOptions(cache, TableGroupLayout(plan, t, group_bits),
                                                    plan.table(t).prefix_bits(), memtable_bytes));
  }

  // Times (format/time_index.h): keys only, written with every insert, read in key order by
  // expiry and scans, never probed: no filter.
  rocksdb::BlockBasedTableOptions times_table = LookupTableOptions(cache);
  times_table.filter_policy.reset();
  rocksdb::ColumnFamilyOptions times = KeyedFamilyOptions(nullptr, staging_memtable_bytes);
  times.table_factory.reset(rocksdb::NewBlockBasedTableFactory(times_table));
  SetCompression(times);
  times.level_compaction_dynamic_level_bytes = true;
  config.families.emplace_back(kTimesFamily, times);

  return config;
}

RocksConfig MakeInspectionConfig(const std::vector<std::string>& family_names) {
  RocksConfig config;
  // Inspection writes no LOG: it must change nothing in the directory it looks at.
  config.db.info_log = InfoLog::Discarding();
  for (const std::string& name : family_names) {
    config.families.emplace_back(name, name == rocksdb::kDefaultColumnFamilyName
                                           ? MetadataFamilyOptions()
                                           : rocksdb::ColumnFamilyOptions());
  }
  return config;
}

}  // namespace fpstore::internal
