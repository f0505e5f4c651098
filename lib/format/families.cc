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

#include "format/groups.h"
#include "format/member_filter.h"
#include "platform/block_cache_allocator.h"

namespace fpstore::internal {

std::string TableFamilyName(std::size_t table) {
  char name[16];
  std::snprintf(name, sizeof name, "table-%03zu", table);
  return name;
}

namespace {

// Adds signed 64-bit deltas: the document count moves in the same atomic
// batch as the documents themselves.
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

// Block-table options for the documents and table families. Every probe
// consults each file's filter and index, so both are pinned in the block
// cache while the file is open, loaded when the store opens: a probe then
// needs no cache lookup for them, and data blocks cannot push them out (they
// did, sending warm misses to the page cache and cold ones to the disk).
// New files get one full filter and a one-level index: once pinned,
// partitions only add a search per probe (docs/performance.md has the
// measurements). Files written with partitions keep them, pinned too.
// Memory: about 1.35 bytes per entry per family, charged to the cache.
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
// it stays, at its fast level -1, as the bulk loader writes it. A query hit
// decompresses a data block in each of about ten tables: on a compacted 14M
// store, hits took 138 µs instead of 174 at the default level 3, for 4%
// more bytes (LZ4 there: 114 µs for 23% more).
void SetCompression(rocksdb::ColumnFamilyOptions& cf) {
  cf.compression = rocksdb::kLZ4Compression;
  cf.bottommost_compression = rocksdb::kZSTD;
  cf.bottommost_compression_opts.enabled = true;
  cf.bottommost_compression_opts.level = -1;
}

// A packed table (table_groups.h): point lookups of a group, read only
// when a file's member filter passes (member_filters.h), so no RocksDB
// filter, which would see group keys only and pass nearly every probe;
// members are random bits, so no compression; a merge operator folds
// merges' and removals' operands into their groups.
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

// For families that queries seldom or never read. Their compactions queue
// behind the tables', one at a time, and RocksDB slows and then stops all
// writes when any family has 20 and 36 level-0 files.
void AllowManyLevelZeroFiles(rocksdb::ColumnFamilyOptions& cf) {
  cf.level0_slowdown_writes_trigger = 128;
  cf.level0_stop_writes_trigger = 256;
}

rocksdb::ColumnFamilyOptions MetadataFamilyOptions() {
  rocksdb::ColumnFamilyOptions cf;
  cf.merge_operator = std::make_shared<Int64AddOperator>();
  return cf;
}

}  // namespace

RocksConfig MakeRocksConfig(const StoreOptions& options, const PermutationPlan& plan,
                            int group_bits) {
  RocksConfig config;
  rocksdb::DBOptions& db = config.db;
  db.create_if_missing = options.create_if_missing;
  // A new store creates its families explicitly; an existing one must have them all.
  db.create_missing_column_families = false;
  // RocksDB gives a quarter of its jobs, at least one, to flushes, and
  // runs more than one compaction only when compaction falls behind (a
  // family with 8 level-0 files, or writes delayed). With jobs = threads
  // it ran one at the default 2, and under sustained inserts the tables'
  // compactions, one core's worth, set the pace while the other core
  // waited (docs/performance.md). One more job: up to 6 threads, the
  // flushes' one.
  db.max_background_jobs = std::max(2, options.background_threads) + 1;
  db.write_buffer_manager =
      std::make_shared<rocksdb::WriteBufferManager>(options.write_buffer_bytes);
  // Every family shares one WAL; without a cap, a rarely written family
  // would keep old logs alive.
  db.max_total_wal_size = 4 * options.write_buffer_bytes;
  db.bytes_per_sync = 1 << 20;
  db.keep_log_file_num = 5;
  db.enable_pipelined_write = true;

  rocksdb::LRUCacheOptions cache_options;
  cache_options.capacity = options.block_cache_bytes;
  cache_options.memory_allocator = NewBlockCacheAllocator();
  const std::shared_ptr<rocksdb::Cache> cache = rocksdb::NewLRUCache(cache_options);
  config.block_cache = cache;
  // Each family's memtable gets its share of the budget, so families flush
  // on their own size; the write-buffer manager is the backstop (and the
  // limit, for budgets so small that the shares' 4 MiB floor adds up to
  // more). Were each share the whole budget, the manager would flush the
  // oldest memtable over and over, and that is usually a nearly empty one.
  const auto share = [&](std::size_t parts) {
    return std::max<std::size_t>(std::size_t{4} << 20, options.write_buffer_bytes / parts);
  };
  // Inserts reach the tables as ingested files, so their memtables take
  // only the operands of removals and replacements, while the documents
  // family takes every insert: at an even split it flushed often, and as
  // its compactions wait behind the tables', the benchmark's inserts
  // stalled on its 20 level-0 files. The documents family gets a quarter
  // of the budget, staging (its marks, flushed at every merge) an eighth,
  // and the others share half.
  const std::size_t memtable_bytes = share(2 * (plan.table_count() + 2));
  const std::size_t documents_memtable_bytes = share(4);
  const std::size_t staging_memtable_bytes = share(8);

  config.families.emplace_back(rocksdb::kDefaultColumnFamilyName, MetadataFamilyOptions());

  // Documents: point lookups by id, so whole-key bloom filters, in the
  // memtable too: every insert looks its ids up first, and a crawler's are
  // mostly new. Without it, skiplist searches of the memtable for absent
  // ids were a tenth of the CPU of batched inserts.
  {
    const rocksdb::BlockBasedTableOptions t = LookupTableOptions(cache);
    rocksdb::ColumnFamilyOptions cf;
    cf.memtable_whole_key_filtering = true;
    cf.memtable_prefix_bloom_size_ratio = 0.05;
    cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
    SetCompression(cf);
    cf.write_buffer_size = documents_memtable_bytes;
    cf.level_compaction_dynamic_level_bytes = true;
    config.families.emplace_back(kDocumentsFamily, cf);
  }

  // Staging marks: point lookups and deletions by id, few and short-lived.
  {
    rocksdb::ColumnFamilyOptions cf;
    cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(LookupTableOptions(cache)));
    cf.compression = rocksdb::kLZ4Compression;
    cf.write_buffer_size = staging_memtable_bytes;
    // Each merge adds two level-0 files here (the memtable flush its
    // ingestion forces, and its file of deleted marks): at RocksDB's stop
    // trigger of 36 files the benchmark's inserts stopped for 2.5 minutes.
    // Lookups here are few (replaced ids and staged candidates).
    AllowManyLevelZeroFiles(cf);
    config.families.emplace_back(kStagingFamily, cf);
  }

  for (std::size_t t = 0; t < plan.table_count(); ++t) {
    config.families.emplace_back(TableFamilyName(t),
                                 PackedTableOptions(cache, TableGroupLayout(plan, t, group_bits),
                                                    plan.table(t).prefix_bits(), memtable_bytes));
  }

  // Fingerprints that came after the lone bits: read whole on open only.
  {
    rocksdb::ColumnFamilyOptions cf;
    cf.compression = rocksdb::kLZ4Compression;
    cf.write_buffer_size = memtable_bytes;
    // A file a merge, read only on open and by Verify: the benchmark's
    // inserts left 16.
    AllowManyLevelZeroFiles(cf);
    config.families.emplace_back(kRecentFamily, cf);
  }

  // The crowded fingerprints' lone bits: a point lookup for each hit, most
  // of them of fingerprints that are not there (alone everywhere). Written
  // whole, by a bulk load into an empty store or a rewrite of the bits.
  {
    rocksdb::ColumnFamilyOptions cf;
    cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(LookupTableOptions(cache)));
    cf.compression = rocksdb::kLZ4Compression;
    cf.write_buffer_size = memtable_bytes;
    cf.level_compaction_dynamic_level_bytes = true;
    config.families.emplace_back(kCrowdedFamily, cf);
  }
  return config;
}

RocksConfig MakeInspectionConfig(const std::vector<std::string>& family_names) {
  RocksConfig config;
  for (const std::string& name : family_names) {
    config.families.emplace_back(name, name == rocksdb::kDefaultColumnFamilyName
                                           ? MetadataFamilyOptions()
                                           : rocksdb::ColumnFamilyOptions());
  }
  return config;
}

RocksConfig MakeInspectionConfig(const std::vector<std::string>& family_names,
                                 const PermutationPlan& plan, int group_bits) {
  RocksConfig config = MakeInspectionConfig(family_names);
  // A table's merge operands (removals, and merges into tables with
  // files) need its operator, whose layout comes from the plan.
  for (rocksdb::ColumnFamilyDescriptor& family : config.families) {
    for (std::size_t t = 0; t < plan.table_count(); ++t) {
      if (family.name == TableFamilyName(t)) {
        family.options.merge_operator =
            std::make_shared<GroupMergeOperator>(TableGroupLayout(plan, t, group_bits));
      }
    }
  }
  return config;
}

}  // namespace fpstore::internal
