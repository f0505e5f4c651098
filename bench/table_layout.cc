// What a packed table layout would save and cost, against the store's
// layout, on one table of plan (6, 3). The store keeps a RocksDB key per
// fingerprint (docs/format.md), so every table write, compaction and
// filter works per fingerprint: at 20 tables those per-key costs bound
// bulk loads and sustained inserts (docs/performance.md). The packed layout
// keeps a key per group of fingerprints that share their first G permuted
// bits, the group's other bits end to end in the value, and a merge
// operator that adds a merge's fingerprints to their groups.
//
// In one run, for each layout: the load's file of N fingerprints, merges of
// random fingerprints ingested into level 0 and the compaction that folds
// them in, then warm probes of hits and misses. Prints both and the packed
// layout's cost as a multiple of the store's. Reproduces "Packed tables"
// in docs/performance.md.
//
//   build/release/bench/table_layout [--n 10000000] [--merges 4]
//       [--merge-size 1048576] [--group-bits G] [--probes 200000]

#include <rocksdb/db.h>
#include <rocksdb/merge_operator.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table.h>
#include <rocksdb/table_properties.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "fpstore/permutation.h"
#include "fpstore/store.h"
#include "key_codec.h"
#include "rocks_config.h"
#include "sst_sink.h"
#include "store_impl.h"

namespace {

using fpstore::Fingerprint;

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

// A group's key is its first G permuted bits, left-aligned in whole bytes;
// its value the members' other 64 - G bits, each big-endian in whole bytes,
// sorted, end to end.
class GroupCodec {
 public:
  explicit GroupCodec(int group_bits)
      : group_bits_(group_bits), rest_bytes_((64 - group_bits + 7) / 8) {}
  int rest_bytes() const { return rest_bytes_; }
  Fingerprint Group(Fingerprint permuted) const { return permuted >> (64 - group_bits_); }
  Fingerprint Rest(Fingerprint permuted) const {
    return permuted & (~Fingerprint{0} >> group_bits_);
  }
  std::string Key(Fingerprint permuted) const {
    std::string key((group_bits_ + 7) / 8, '\0');
    Put(key.data(), Group(permuted) << (8 * key.size() - group_bits_), key.size());
    return key;
  }
  void AppendRest(std::string& value, Fingerprint permuted) const {
    const std::size_t at = value.size();
    value.resize(at + rest_bytes_);
    Put(value.data() + at, Rest(permuted), rest_bytes_);
  }
  Fingerprint RestAt(const char* in) const {
    Fingerprint v = 0;
    for (int i = 0; i < rest_bytes_; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
    return v;
  }

 private:
  static void Put(char* out, Fingerprint v, std::size_t bytes) {
    for (std::size_t i = bytes; i-- > 0; v >>= 8) out[i] = static_cast<char>(v & 0xff);
  }
  int group_bits_;
  int rest_bytes_;
};

// Adds operands' members to a group (inserts only: removals are not
// modelled here).
class GroupMergeOperator final : public rocksdb::MergeOperator {
 public:
  explicit GroupMergeOperator(GroupCodec codec) : codec_(codec) {}
  bool FullMergeV2(const MergeOperationInput& in, MergeOperationOutput* out) const override {
    out->new_value = Union(in.existing_value, in.operand_list);
    return true;
  }
  bool PartialMergeMulti(const rocksdb::Slice&, const std::deque<rocksdb::Slice>& operands,
                         std::string* out, rocksdb::Logger*) const override {
    *out = Union(nullptr, {operands.begin(), operands.end()});
    return true;
  }
  const char* Name() const override { return "table_layout.group"; }

 private:
  std::string Union(const rocksdb::Slice* base, const std::vector<rocksdb::Slice>& operands) const {
    std::vector<Fingerprint> rests;
    auto add = [&](const rocksdb::Slice& v) {
      for (std::size_t i = 0; i + codec_.rest_bytes() <= v.size(); i += codec_.rest_bytes()) {
        rests.push_back(codec_.RestAt(v.data() + i));
      }
    };
    if (base != nullptr) add(*base);
    for (const rocksdb::Slice& op : operands) add(op);
    std::sort(rests.begin(), rests.end());
    rests.erase(std::unique(rests.begin(), rests.end()), rests.end());
    std::string value;
    value.reserve(rests.size() * codec_.rest_bytes());
    for (Fingerprint r : rests) codec_.AppendRest(value, r);
    return value;
  }
  GroupCodec codec_;
};

// A blocked Bloom filter of the members' p-bit prefixes, about 10 bits a
// member: six bits in one 64-byte block per prefix.
class MemberFilter {
 public:
  static std::string Build(const std::vector<Fingerprint>& prefixes) {
    const std::size_t blocks = std::max<std::size_t>(1, (prefixes.size() * 10 + 511) / 512);
    std::string bits(blocks * 64, '\0');
    for (Fingerprint p : prefixes) {
      const std::uint64_t h = Mix(p);
      char* block = bits.data() + 64 * Block(h, blocks);
      for (int i = 0; i < 6; ++i) {
        const unsigned bit = (h >> (9 * i)) & 511;
        block[bit / 8] = static_cast<char>(block[bit / 8] | (1 << (bit % 8)));
      }
    }
    return bits;
  }
  static bool MayContain(std::string_view bits, Fingerprint prefix) {
    const std::uint64_t h = Mix(prefix);
    const char* block = bits.data() + 64 * Block(h, bits.size() / 64);
    for (int i = 0; i < 6; ++i) {
      const unsigned bit = (h >> (9 * i)) & 511;
      if ((block[bit / 8] & (1 << (bit % 8))) == 0) return false;
    }
    return true;
  }

 private:
  static std::uint64_t Mix(std::uint64_t x) {  // splitmix64's finalizer
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
  }
  static std::size_t Block(std::uint64_t h, std::size_t blocks) {
    return static_cast<std::size_t>(((h >> 32) * blocks) >> 32);
  }
};

constexpr char kMemberFilterProperty[] = "table_layout.member_filter";

// Every file of the packed family, whether written by SstFileWriter, a
// flush or a compaction, carries a filter of its members' prefixes in its
// properties: a miss skips a file the way a prefix bloom filter lets the
// store's layout skip one.
class MemberFilterCollector final : public rocksdb::TablePropertiesCollector {
 public:
  MemberFilterCollector(GroupCodec codec, int group_bits, Fingerprint prefix_mask)
      : codec_(codec), group_bits_(group_bits), prefix_mask_(prefix_mask) {}
  rocksdb::Status AddUserKey(const rocksdb::Slice& key, const rocksdb::Slice& value,
                             rocksdb::EntryType type, rocksdb::SequenceNumber,
                             std::uint64_t) override {
    if (type != rocksdb::kEntryPut && type != rocksdb::kEntryMerge) return rocksdb::Status::OK();
    Fingerprint group = 0;
    for (std::size_t i = 0; i < key.size(); ++i) {
      group = (group << 8) | static_cast<unsigned char>(key[i]);
    }
    group >>= 8 * key.size() - group_bits_;
    for (std::size_t i = 0; i + codec_.rest_bytes() <= value.size(); i += codec_.rest_bytes()) {
      const Fingerprint member = (group << (64 - group_bits_)) | codec_.RestAt(value.data() + i);
      const Fingerprint prefix = member & prefix_mask_;
      if (prefixes_.empty() || prefixes_.back() != prefix) prefixes_.push_back(prefix);
    }
    return rocksdb::Status::OK();
  }
  rocksdb::Status Finish(rocksdb::UserCollectedProperties* properties) override {
    properties->emplace(kMemberFilterProperty, MemberFilter::Build(prefixes_));
    return rocksdb::Status::OK();
  }
  rocksdb::UserCollectedProperties GetReadableProperties() const override { return {}; }
  const char* Name() const override { return "table_layout.members"; }

 private:
  GroupCodec codec_;
  int group_bits_;
  Fingerprint prefix_mask_;
  std::vector<Fingerprint> prefixes_;
};

class MemberFilterCollectorFactory final : public rocksdb::TablePropertiesCollectorFactory {
 public:
  MemberFilterCollectorFactory(GroupCodec codec, int group_bits, Fingerprint prefix_mask)
      : codec_(codec), group_bits_(group_bits), prefix_mask_(prefix_mask) {}
  rocksdb::TablePropertiesCollector* CreateTablePropertiesCollector(
      rocksdb::TablePropertiesCollectorFactory::Context) override {
    return new MemberFilterCollector(codec_, group_bits_, prefix_mask_);
  }
  const char* Name() const override { return "table_layout.members"; }

 private:
  GroupCodec codec_;
  int group_bits_;
  Fingerprint prefix_mask_;
};

struct Costs {
  double load_cpu_ns = 0, load_bytes = 0;  // per fingerprint
  double merge_cpu_ns = 0;                 // writing the merges' files, per fingerprint
  double compact_cpu_ns = 0, compact_wall_s = 0, compacted_bytes = 0;
  double hit_us = 0, miss_us = 0;  // per probe of one table
  double miss_unfiltered_us = 0;   // packed: without the member filter
};

class Bench {
 public:
  Bench(std::size_t n, int merges, std::size_t merge_size, int group_bits, std::size_t probes)
      : merges_(merges),
        merge_size_(merge_size),
        probes_(probes),
        plan_(*fpstore::PermutationPlan::Create(6, 3)),
        prefix_bits_(plan_.table(kTable).prefix_bits()),
        keys_codec_(prefix_bits_, fpstore::internal::TableKeyCodec::Ids::kNone),
        group_bits_(group_bits),
        group_(group_bits),
        dir_(std::filesystem::temp_directory_path() /
             ("fpstore-table-layout." + std::to_string(::getpid()))) {
    std::mt19937_64 rng(1);
    load_.resize(n);
    for (Fingerprint& f : load_) f = rng();
    std::sort(load_.begin(), load_.end());
    load_.erase(std::unique(load_.begin(), load_.end()), load_.end());
    for (int m = 0; m < merges; ++m) {
      std::vector<Fingerprint> batch(merge_size);
      for (Fingerprint& f : batch) f = rng();
      std::sort(batch.begin(), batch.end());
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

  Costs Run(bool packed) {
    rocksdb::ColumnFamilyHandle* family = packed ? packed_ : keys_;
    Costs c;
    double cpu = CpuSeconds();
    const std::string load_path = WriteFile(packed, load_, "load", /*operands=*/false);
    c.load_cpu_ns = 1e9 * (CpuSeconds() - cpu) / static_cast<double>(load_.size());
    c.load_bytes = static_cast<double>(std::filesystem::file_size(load_path)) /
                   static_cast<double>(load_.size());
    Ingest(family, load_path);

    cpu = CpuSeconds();
    std::vector<std::string> merge_paths;
    for (int m = 0; m < merges_; ++m) {
      merge_paths.push_back(
          WriteFile(packed, merge_batches_[m], "merge" + std::to_string(m), /*operands=*/true));
    }
    c.merge_cpu_ns = 1e9 * (CpuSeconds() - cpu) / static_cast<double>(merges_ * merge_size_);
    for (const std::string& path : merge_paths) Ingest(family, path);

    std::vector<Fingerprint> all = load_;
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
    std::vector<Fingerprint> hits(probes_), misses(probes_);
    for (Fingerprint& f : hits) f = all[rng() % all.size()];
    for (Fingerprint& f : misses) f = rng();
    c.hit_us = ProbeMicros(packed, hits, /*expect_all=*/true, /*filtered=*/true);
    c.miss_us = ProbeMicros(packed, misses, /*expect_all=*/false, /*filtered=*/true);
    if (packed) c.miss_unfiltered_us = ProbeMicros(packed, misses, false, /*filtered=*/false);
    return c;
  }

 private:
  static constexpr std::size_t kTable = 1;  // a table without ids

  void Open() {
    fpstore::internal::RocksConfig config = fpstore::internal::MakeRocksConfig(
        fpstore::StoreOptions(), plan_, fpstore::Store::kFormatVersion);
    config.db.create_if_missing = true;
    config.db.create_missing_column_families = true;
    const std::string table_name = fpstore::internal::TableFamilyName(kTable);
    std::vector<rocksdb::ColumnFamilyDescriptor> families;
    for (const rocksdb::ColumnFamilyDescriptor& f : config.families) {
      if (f.name == rocksdb::kDefaultColumnFamilyName || f.name == table_name) {
        families.push_back(f);
      }
    }
    if (families.size() != 2) Die("no family " + table_name);
    // Each layout's compaction is timed on its own.
    families[1].options.disable_auto_compactions = true;
    families[1].name = "keys";
    rocksdb::ColumnFamilyOptions packed = families[1].options;
    packed.prefix_extractor.reset();
    packed.compression = rocksdb::kNoCompression;  // the rests are random bits
    packed.bottommost_compression = rocksdb::kDisableCompressionOption;
    packed.merge_operator = std::make_shared<GroupMergeOperator>(group_);
    packed.table_properties_collector_factories = {std::make_shared<MemberFilterCollectorFactory>(
        group_, group_bits_, ~Fingerprint{0} << (64 - prefix_bits_))};
    // No filter: a miss's group exists once groups hold several members.
    rocksdb::BlockBasedTableOptions t =
        *packed.table_factory->GetOptions<rocksdb::BlockBasedTableOptions>();
    t.filter_policy.reset();
    t.block_size = 4096;
    packed.table_factory.reset(rocksdb::NewBlockBasedTableFactory(t));
    families.emplace_back("packed", packed);

    rocksdb::DB* db = nullptr;
    Check(rocksdb::DB::Open(config.db, dir_.string(), families, &handles_, &db), "opening");
    db_.reset(db);
    keys_ = handles_[1];
    packed_ = handles_[2];
  }

  // Writes `fps` (sorted) as one file, as the store's loader (`operands`
  // false) or its merges write them; the packed layout's merges write merge
  // operands.
  std::string WriteFile(bool packed, const std::vector<Fingerprint>& fps, const std::string& name,
                        bool operands) {
    const std::string path = (dir_ / "files" / (name + (packed ? ".packed" : ".keys"))).string();
    if (!packed) {
      fpstore::internal::SstSink sink(*db_, keys_, path,
                                      operands ? fpstore::internal::SstUse::kMergeIntoLevel0
                                               : fpstore::internal::SstUse::kLoad);
      for (std::size_t i = 0; i < fps.size(); ++i) {
        if (i > 0 && fps[i] == fps[i - 1]) continue;
        const fpstore::internal::TableKey key = keys_codec_.Encode(fps[i], 0);
        Check(sink.Put(rocksdb::Slice(key.data(), key.size()), rocksdb::Slice()));
      }
      std::vector<std::string> files;
      Check(sink.Finish(files));
      return path;
    }
    rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), db_->GetOptions(packed_), packed_);
    Check(writer.Open(path), "creating " + path);
    std::string value;
    for (std::size_t i = 0; i < fps.size();) {
      const Fingerprint group = group_.Group(fps[i]);
      value.clear();
      for (; i < fps.size() && group_.Group(fps[i]) == group; ++i) {
        if (i > 0 && fps[i] == fps[i - 1]) continue;
        group_.AppendRest(value, fps[i]);
      }
      const std::string key = group_.Key(fps[i - 1]);
      Check(operands ? writer.Merge(key, value) : writer.Put(key, value), "writing " + path);
    }
    Check(writer.Finish(), "finishing " + path);
    return path;
  }

  void Ingest(rocksdb::ColumnFamilyHandle* family, const std::string& path) {
    rocksdb::IngestExternalFileOptions options;
    options.move_files = true;
    Check(db_->IngestExternalFile(family, {path}, options), "ingesting " + path);
  }

  // Warm: one untimed pass, then a timed one. Each probe finds the members
  // that share the query's p-bit prefix, as a query probes a table.
  // The packed layout's probe checks each file's member filter (`filtered`)
  // and reads the group only if one passes.
  double ProbeMicros(bool packed, const std::vector<Fingerprint>& queries, bool expect_all,
                     bool filtered) {
    const Fingerprint prefix_mask = ~Fingerprint{0} << (64 - prefix_bits_);
    rocksdb::ReadOptions options;
    options.ignore_range_deletions = true;
    double seconds = 0;
    for (int pass = 0; pass < 2; ++pass) {
      std::size_t found = 0;
      const double start = WallSeconds();
      if (!packed) {
        std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(options, keys_));
        for (Fingerprint q : queries) {
          const fpstore::internal::TableKey key = keys_codec_.Encode(q & prefix_mask, 0);
          for (it->Seek(rocksdb::Slice(key.data(), key.size())); it->Valid(); it->Next()) {
            fpstore::internal::TableEntry e;
            if (!keys_codec_.Decode(it->key().ToStringView(), &e)) Die("malformed key");
            if ((e.permuted & prefix_mask) != (q & prefix_mask)) break;
            ++found;
          }
          Check(it->status(), "probing");
        }
      } else {
        rocksdb::TablePropertiesCollection files;
        Check(db_->GetPropertiesOfAllTables(packed_, &files), "reading properties");
        std::vector<std::string_view> filters;
        for (const auto& [name, properties] : files) {
          const auto f = properties->user_collected_properties.find(kMemberFilterProperty);
          if (f == properties->user_collected_properties.end()) Die(name + " has no filter");
          filters.push_back(f->second);
        }
        rocksdb::PinnableSlice value;
        for (Fingerprint q : queries) {
          if (filtered && std::none_of(filters.begin(), filters.end(), [&](std::string_view f) {
                return MemberFilter::MayContain(f, q & prefix_mask);
              })) {
            continue;
          }
          value.Reset();
          const rocksdb::Status s = db_->Get(options, packed_, group_.Key(q), &value);
          if (s.IsNotFound()) continue;
          Check(s, "probing");
          const Fingerprint want = group_.Rest(q & prefix_mask);
          const Fingerprint rest_mask = group_.Rest(prefix_mask);
          for (std::size_t i = 0; i < value.size(); i += group_.rest_bytes()) {
            found += (group_.RestAt(value.data() + i) & rest_mask) == want;
          }
        }
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
  const fpstore::internal::TableKeyCodec keys_codec_;
  const int group_bits_;
  const GroupCodec group_;
  std::filesystem::path dir_;
  std::vector<Fingerprint> load_;
  std::vector<std::vector<Fingerprint>> merge_batches_;
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
  // About 8 members a group at N.
  const int default_group_bits = std::max(1, static_cast<int>(std::bit_width(n)) - 4);
  const int group_bits = static_cast<int>(Flag(argc, argv, "group-bits", default_group_bits));
  const std::size_t probes = Flag(argc, argv, "probes", 200'000);
  if (group_bits < 1 || group_bits > 32) Die("--group-bits must be 1 to 32");

  Bench bench(n, merges, merge_size, group_bits, probes);
  std::printf(
      "one table of plan (6, 3) (prefix %d bits), %zu fingerprints, %d merges of %zu; "
      "packed: groups of %d bits\n",
      bench.prefix_bits(), n, merges, merge_size, group_bits);
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
  std::printf("%-50s %12s %12s %10s\n", "", "key each", "packed", "packed/key");
  for (const Row& r : rows) {
    std::printf("%-50s %12.2f %12.2f %9.2fx\n", r.name, keys.*r.field, packed.*r.field,
                packed.*r.field / keys.*r.field);
  }
  std::printf("packed, warm probe, miss, without its member filter: %.2f us (%.2fx)\n",
              packed.miss_unfiltered_us, packed.miss_unfiltered_us / keys.miss_us);
  return 0;
}
