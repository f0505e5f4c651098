// What the store's packed tables (lib/format/groups.h) save and cost against
// tables of a key per fingerprint, on one table of plan (6, 3), each with
// options and writers made for it: every table write, compaction and filter
// of the key-per-fingerprint layout works per fingerprint, and at 20 tables
// those per-key costs bound bulk loads and sustained inserts
// (docs/design.md, "Packed tables").
//
// In one run, for each layout: the load's file of N fingerprints, merges of
// random fingerprints ingested into level 0 and the compaction that folds
// them in, then warm probes of hits and misses. Prints both and the packed
// layout's cost as a multiple of the other's.
//
//   build/release/bench/table_layout [--n 10000000] [--merges 4]
//       [--merge-size 1048576] [--probes 200000] [--group-bits G]
//
// G: where the packed table cuts its groups; default, as a store created
// for N documents would (GroupBitsFor).

#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/table.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "format/families.h"
#include "format/groups.h"
#include "format/records.h"
#include "format/table_entries.h"
#include "fpstore/permutation.h"
#include "fpstore/store.h"
#include "ingest/group_writer.h"
#include "ingest/sst_sink.h"
#include "open/store_impl.h"
#include "read/tables.h"

namespace {

using std::uint64_t;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "table_layout: %s\n", message.c_str());
  std::exit(1);
}
void Check(const rocksdb::Status& s, const std::string& what) {
  if (!s.ok()) Die(what + ": " + s.ToString());
}
void Check(const fpstore::Status& s) {
  if (!s.ok()) Die(s.ToString());
}

// The whole process: compactions run on RocksDB's threads.
double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}
double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The key-per-fingerprint layout: the permuted fingerprint's p-bit prefix
// left-aligned in whole bytes, then its other bits left-aligned in whole
// bytes, so that a prefix bloom filter of ceil(p / 8) bytes tests exactly
// the bits a probe looks up.
class KeyLayout {
 public:
  explicit KeyLayout(int prefix_bits)
      : prefix_bits_(prefix_bits),
        prefix_bytes_((prefix_bits + 7) / 8),
        rest_bytes_((64 - prefix_bits + 7) / 8) {}
  std::size_t prefix_bytes() const { return prefix_bytes_; }
  std::string Encode(std::uint64_t permuted) const {
    std::string key(prefix_bytes_ + rest_bytes_, '\0');
    const int rest_bits = 64 - prefix_bits_;
    fpstore::internal::PutBigEndianBytes(
        key.data(), permuted >> rest_bits << (8 * prefix_bytes_ - prefix_bits_), prefix_bytes_);
    if (rest_bits > 0) {
      const std::uint64_t rest = permuted & (~std::uint64_t{0} >> prefix_bits_);
      fpstore::internal::PutBigEndianBytes(key.data() + prefix_bytes_,
                                           rest << (8 * rest_bytes_ - rest_bits), rest_bytes_);
    }
    return key;
  }
  std::uint64_t Decode(std::string_view key) const {
    const int rest_bits = 64 - prefix_bits_;
    const std::uint64_t prefix = fpstore::internal::GetBigEndianBytes(key.data(), prefix_bytes_);
    std::uint64_t permuted = (prefix >> (8 * prefix_bytes_ - prefix_bits_)) << rest_bits;
    if (rest_bits > 0) {
      const std::uint64_t rest =
          fpstore::internal::GetBigEndianBytes(key.data() + prefix_bytes_, rest_bytes_);
      permuted |= rest >> (8 * rest_bytes_ - rest_bits);
    }
    return permuted;
  }

 private:
  int prefix_bits_;
  std::size_t prefix_bytes_;
  std::size_t rest_bytes_;
};

// A key-per-fingerprint table's options: its prefix bloom filter, pinned
// with the index; 2 KiB blocks, of which a hit reads one; LZ4, and ZSTD at
// its fast level at the bottom.
rocksdb::ColumnFamilyOptions KeyTableOptions(const KeyLayout& layout) {
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = rocksdb::NewLRUCache(std::size_t{512} << 20);
  t.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  t.whole_key_filtering = false;
  t.block_size = 2048;
  t.cache_index_and_filter_blocks = true;
  t.cache_index_and_filter_blocks_with_high_priority = true;
  t.metadata_cache_options.unpartitioned_pinning = rocksdb::PinningTier::kAll;
  rocksdb::ColumnFamilyOptions cf;
  cf.prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(layout.prefix_bytes()));
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
  cf.compression = rocksdb::kLZ4Compression;
  cf.bottommost_compression = rocksdb::kZSTD;
  cf.bottommost_compression_opts.enabled = true;
  cf.bottommost_compression_opts.level = -1;
  cf.level_compaction_dynamic_level_bytes = true;
  return cf;
}

struct Costs {
  double load_cpu_ns = 0, load_bytes = 0;  // per fingerprint
  double merge_cpu_ns = 0;                 // writing the merges' files, per fingerprint
  double compact_cpu_ns = 0, compact_wall_s = 0, compacted_bytes = 0;
  double hit_us = 0, miss_us = 0;  // per probe of one table
  double miss_unfiltered_us = 0;   // packed: without the member filters
};

class Bench {
 public:
  Bench(std::size_t n, int merges, std::size_t merge_size, std::size_t probes, int group_bits)
      : merges_(merges),
        merge_size_(merge_size),
        probes_(probes),
        plan_(*fpstore::PermutationPlan::Create(6, 3)),
        prefix_bits_(plan_.table(kTable).prefix_bits()),
        keys_layout_(prefix_bits_),
        group_bits_(group_bits),
        groups_(prefix_bits_, group_bits),
        dir_(std::filesystem::temp_directory_path() /
             ("fpstore-table-layout." + std::to_string(::getpid()))) {
    std::mt19937_64 rng(1);
    load_.resize(n);
    for (std::uint64_t& f : load_) f = rng();
    std::sort(load_.begin(), load_.end());
    load_.erase(std::unique(load_.begin(), load_.end()), load_.end());
    for (int m = 0; m < merges; ++m) {
      std::vector<std::uint64_t> batch(merge_size);
      for (std::uint64_t& f : batch) f = rng();
      std::sort(batch.begin(), batch.end());
      batch.erase(std::unique(batch.begin(), batch.end()), batch.end());
      merge_batches_.push_back(std::move(batch));
    }
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_ / "files");
    Open();
  }
  ~Bench() {
    for (rocksdb::ColumnFamilyHandle* h : handles_) db_->DestroyColumnFamilyHandle(h);
    db_.reset();
    std::filesystem::remove_all(dir_);
  }

  int prefix_bits() const { return prefix_bits_; }
  int group_bits() const { return groups_.group_bits(); }

  Costs Run(bool packed) {
    rocksdb::ColumnFamilyHandle* family = packed ? packed_ : keys_;
    Costs c;
    double cpu = CpuSeconds();
    const std::string load_path = WriteFile(packed, load_, "load", /*into_empty=*/true);
    c.load_cpu_ns = 1e9 * (CpuSeconds() - cpu) / static_cast<double>(load_.size());
    c.load_bytes = static_cast<double>(std::filesystem::file_size(load_path)) /
                   static_cast<double>(load_.size());
    Ingest(family, load_path);

    cpu = CpuSeconds();
    std::vector<std::string> merge_paths;
    std::size_t merged = 0;
    for (int m = 0; m < merges_; ++m) {
      merge_paths.push_back(WriteFile(packed, merge_batches_[m], "merge" + std::to_string(m),
                                      /*into_empty=*/false));
      merged += merge_batches_[m].size();
    }
    c.merge_cpu_ns = 1e9 * (CpuSeconds() - cpu) / static_cast<double>(merged);
    for (const std::string& path : merge_paths) Ingest(family, path);

    std::vector<std::uint64_t> all = load_;
    for (const auto& batch : merge_batches_) all.insert(all.end(), batch.begin(), batch.end());
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    cpu = CpuSeconds();
    const double wall = WallSeconds();
    Check(db_->CompactRange(rocksdb::CompactRangeOptions(), family, nullptr, nullptr),
          "compacting");
    c.compact_wall_s = WallSeconds() - wall;
    c.compact_cpu_ns = 1e9 * (CpuSeconds() - cpu) / static_cast<double>(all.size());
    std::string sst_bytes;
    db_->GetProperty(family, "rocksdb.total-sst-files-size", &sst_bytes);
    c.compacted_bytes = std::stod(sst_bytes) / static_cast<double>(all.size());

    std::mt19937_64 rng(7);
    std::vector<std::uint64_t> hits(probes_), misses(probes_);
    for (std::uint64_t& f : hits) f = all[rng() % all.size()];
    for (std::uint64_t& f : misses) f = rng();
    c.hit_us = ProbeMicros(packed, hits, /*expect_all=*/true, /*filtered=*/true);
    c.miss_us = ProbeMicros(packed, misses, /*expect_all=*/false, /*filtered=*/true);
    if (packed) c.miss_unfiltered_us = ProbeMicros(packed, misses, false, /*filtered=*/false);
    return c;
  }

 private:
  static constexpr std::size_t kTable = 1;  // a table without ids

  // Table 1's family as the store makes it.
  rocksdb::ColumnFamilyDescriptor PackedFamily() const {
    const fpstore::internal::RocksConfig config =
        fpstore::internal::MakeRocksConfig(fpstore::StoreOptions(), plan_, group_bits_);
    for (const rocksdb::ColumnFamilyDescriptor& f : config.families) {
      if (f.name == fpstore::internal::TableFamilyName(kTable)) return {"packed", f.options};
    }
    Die("no table family");
  }

  void Open() {
    fpstore::internal::RocksConfig config =
        fpstore::internal::MakeRocksConfig(fpstore::StoreOptions(), plan_, group_bits_);
    config.db.create_if_missing = true;
    config.db.create_missing_column_families = true;
    std::vector<rocksdb::ColumnFamilyDescriptor> families = {
        {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
        {"keys", KeyTableOptions(keys_layout_)},
        PackedFamily()};
    // Each layout's compaction is timed on its own.
    for (auto& f : families) f.options.disable_auto_compactions = true;
    rocksdb::DB* db = nullptr;
    Check(rocksdb::DB::Open(config.db, dir_.string(), families, &handles_, &db), "opening");
    db_.reset(db);
    keys_ = handles_[1];
    packed_ = handles_[2];
  }

  // Writes `fps` (sorted, unique) as one file, as the store's loader
  // (`into_empty`) or its merges write them.
  std::string WriteFile(bool packed, const std::vector<std::uint64_t>& fps, const std::string& name,
                        bool into_empty) {
    using fpstore::internal::SstUse;
    const std::string path = (dir_ / "files" / (name + (packed ? ".packed" : ".keys"))).string();
    fpstore::internal::SstSink sink(*db_, packed ? packed_ : keys_, path,
                                    into_empty ? SstUse::kLoad : SstUse::kMerge);
    if (packed) {
      fpstore::internal::GroupWriter writer(sink, groups_,
                                            into_empty ? fpstore::internal::GroupWriter::kWhole
                                                       : fpstore::internal::GroupWriter::kOperands);
      for (std::uint64_t f : fps) Check(writer.Add(f, /*put=*/true));
      Check(writer.Finish());
    } else {
      for (std::uint64_t f : fps) Check(sink.Put(keys_layout_.Encode(f), rocksdb::Slice()));
    }
    std::vector<std::string> files;
    Check(sink.Finish(files));
    return path;
  }

  void Ingest(rocksdb::ColumnFamilyHandle* family, const std::string& path) {
    rocksdb::IngestExternalFileOptions options;
    options.move_files = true;
    Check(db_->IngestExternalFile(family, {path}, options), "ingesting " + path);
  }

  // Warm: one untimed pass, then a timed one. Each probe finds the entries
  // that share the query's p-bit prefix, as the store's probes of a table
  // do (a packed table's first asks the files' member filters, if
  // `filtered`).
  double ProbeMicros(bool packed, const std::vector<std::uint64_t>& queries, bool expect_all,
                     bool filtered) {
    const std::uint64_t prefix_mask = ~std::uint64_t{0} << (64 - prefix_bits_);
    rocksdb::ReadOptions options;
    options.ignore_range_deletions = true;
    std::shared_ptr<const fpstore::internal::TableMemberFilter> filter;
    if (packed) {
      fpstore::Result<std::shared_ptr<const fpstore::internal::TableMemberFilter>> read =
          fpstore::internal::TableMemberFilter::Read(*db_, packed_, groups_, prefix_bits_);
      Check(read.status());
      filter = *read;
    }
    double seconds = 0;
    for (int pass = 0; pass < 2; ++pass) {
      std::size_t found = 0;
      const double start = WallSeconds();
      std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(options, packed ? packed_ : keys_));
      fpstore::internal::TableEntryCursor entries(*it, groups_, "packed");
      for (std::uint64_t q : queries) {
        if (filtered && filter && !filter->MayContain(q)) continue;
        if (packed) {
          for (entries.Seek(q & prefix_mask);
               entries.Valid() && (entries.entry().permuted & prefix_mask) == (q & prefix_mask);
               entries.Next()) {
            ++found;
          }
          Check(entries.status());
          continue;
        }
        for (it->Seek(keys_layout_.Encode(q & prefix_mask));
             it->Valid() &&
             (keys_layout_.Decode(it->key().ToStringView()) & prefix_mask) == (q & prefix_mask);
             it->Next()) {
          ++found;
        }
        Check(it->status(), "probing");
      }
      seconds = WallSeconds() - start;
      if (expect_all && found < queries.size()) Die("a stored fingerprint was not found");
    }
    return 1e6 * seconds / static_cast<double>(queries.size());
  }

  const int merges_;
  const std::size_t merge_size_;
  const std::size_t probes_;
  fpstore::PermutationPlan plan_;
  const int prefix_bits_;
  const KeyLayout keys_layout_;
  const int group_bits_;
  const fpstore::internal::GroupLayout groups_;
  std::filesystem::path dir_;
  std::vector<std::uint64_t> load_;
  std::vector<std::vector<std::uint64_t>> merge_batches_;
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  rocksdb::ColumnFamilyHandle* keys_ = nullptr;
  rocksdb::ColumnFamilyHandle* packed_ = nullptr;
};

std::size_t Flag(int argc, char** argv, const std::string& name, std::size_t fallback) {
  for (int i = 1; i + 1 < argc; i += 2) {
    if (argv[i] == "--" + name) return std::strtoull(argv[i + 1], nullptr, 10);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc % 2 != 1) Die("flags come in pairs: --name value");
  const std::size_t n = Flag(argc, argv, "n", 10'000'000);
  const int merges = static_cast<int>(Flag(argc, argv, "merges", 4));
  const std::size_t merge_size = Flag(argc, argv, "merge-size", std::size_t{1} << 20);
  const std::size_t probes = Flag(argc, argv, "probes", 200'000);
  const int group_bits =
      static_cast<int>(Flag(argc, argv, "group-bits", fpstore::internal::GroupBitsFor(n)));
  if (n == 0 || merges < 1 || merge_size == 0 || probes == 0) Die("counts must be positive");
  if (group_bits < 1 || group_bits > 64) Die("--group-bits: 1 to 64");

  Bench bench(n, merges, merge_size, probes, group_bits);
  std::printf(
      "one table of plan (6, 3) (prefix %d bits), %zu fingerprints, %d merges of %zu; "
      "packed: groups of %d bits\n",
      bench.prefix_bits(), n, merges, merge_size, bench.group_bits());
  const Costs keys = bench.Run(false);
  const Costs packed = bench.Run(true);
  struct Row {
    const char* name;
    double Costs::*field;
  };
  const Row rows[] = {
      {"load file: CPU ns per fingerprint", &Costs::load_cpu_ns},
      {"load file: bytes per fingerprint", &Costs::load_bytes},
      {"merge files: CPU ns per fingerprint", &Costs::merge_cpu_ns},
      {"compaction of the merges: CPU ns per fingerprint", &Costs::compact_cpu_ns},
      {"compaction of the merges: wall s", &Costs::compact_wall_s},
      {"after compaction: bytes per fingerprint", &Costs::compacted_bytes},
      {"warm probe, hit: us", &Costs::hit_us},
      {"warm probe, miss: us", &Costs::miss_us},
  };
  std::printf("%-50s %12s %12s %10s\n", "", "a key each", "packed", "packed / keys");
  for (const Row& r : rows) {
    std::printf("%-50s %12.2f %12.2f %9.2fx\n", r.name, keys.*r.field, packed.*r.field,
                packed.*r.field / keys.*r.field);
  }
  std::printf("packed, warm probe, miss, without its member filters: %.2f us (%.2fx)\n",
              packed.miss_unfiltered_us, packed.miss_unfiltered_us / keys.miss_us);
  return 0;
}
