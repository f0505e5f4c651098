// Tables a query skips: every file's member filter marks the prefixes that
// more than one distinct member of the file has ("crowded"), and a query
// that has found a fingerprint passes by each later table where it shares
// that fingerprint's prefix, one file alone may hold the prefix and the
// prefix is not crowded there. Answers stay exact through loads, merges,
// compactions, removals and reopens; a filter that hid a crowded prefix,
// which would lose matches, is what Verify reports.

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/perf_context.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/table_properties.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "brute_force.h"
#include "format/families.h"
#include "format/groups.h"
#include "format/member_filter.h"
#include "fpstore/bulk_loader.h"
#include "fpstore/store.h"
#include "raw_store.h"
#include "read/reader.h"
#include "store_checks.h"
#include "temp_dir.h"

namespace fpstore {
namespace {

using internal::IdFingerprint;
using internal::MemberFilter;
using testing::ExpectMatchesBruteForce;
using testing::MakeCorpus;
using testing::MetadataFor;
using testing::MustOpen;
using testing::Plant;
using testing::Random;
using testing::TempDir;
using testing::TestSeed;

void BulkLoad(Store& store, const std::vector<IdFingerprint>& docs) {
  Result<std::unique_ptr<BulkLoader>> loader = store.NewBulkLoader({});
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  for (const IdFingerprint& d : docs) {
    ASSERT_TRUE((*loader)->Add(d.id, d.fingerprint, MetadataFor(d.id)).ok());
  }
  Result<BulkLoadStats> stats = (*loader)->Finish();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
}

// ExpectMatchesBruteForce with the tables read one after another and, once a
// probe found a document, side by side (read_pool.h): the second path learns
// only the hits found before it hands the tables out.
void ExpectExact(Store& store, const std::vector<IdFingerprint>& docs, std::uint64_t seed,
                 const std::string& phase) {
  for (std::chrono::nanoseconds slow :
       {std::chrono::nanoseconds(std::chrono::hours(1)), std::chrono::nanoseconds(0)}) {
    internal::SetSlowProbeTimeForTesting(slow);
    ExpectMatchesBruteForce(store, docs, seed,
                            phase + (slow.count() == 0 ? ", side by side" : ", in turn"));
  }
  internal::SetSlowProbeTimeForTesting(std::chrono::nanoseconds(-1));
  const Status verified = store.Verify();
  EXPECT_TRUE(verified.ok()) << phase << ": " << verified.ToString();
}

bool Passes(std::string_view bits, std::uint64_t prefix) {
  const std::uint64_t hash = MemberFilter::Hash(prefix);
  return MemberFilter::BlockPasses(MemberFilter::BlockFor(bits, hash), hash);
}

bool SaysCrowded(std::string_view bits, std::uint64_t prefix) {
  const std::uint64_t hash = MemberFilter::Hash(prefix);
  return MemberFilter::BlockSaysCrowded(MemberFilter::BlockFor(bits, hash), hash);
}

// Every crowded prefix says so; few lone ones do, and few absent ones pass.
TEST(MemberFilterTest, MarksCrowdedPrefixesAndFewOthers) {
  Random rnd(TestSeed(71));
  std::vector<MemberFilter::Prefix> prefixes;
  for (int i = 0; i < 20000; ++i) {
    prefixes.push_back({rnd.Next() & ~std::uint64_t{0} << 31, /*crowded=*/i % 10 == 0});
  }
  std::string bits;
  MemberFilter::Build(prefixes, bits);
  int lone_said_crowded = 0, lone = 0;
  for (const MemberFilter::Prefix& p : prefixes) {
    ASSERT_TRUE(Passes(bits, p.prefix));
    if (p.crowded) {
      ASSERT_TRUE(SaysCrowded(bits, p.prefix)) << p.prefix;
    } else {
      ++lone;
      lone_said_crowded += SaysCrowded(bits, p.prefix);
    }
  }
  // Six bits of a block that holds about 1.1 prefixes' bits per 10: near 1%; 3% leaves room.
  EXPECT_LT(lone_said_crowded, lone * 3 / 100);
  int passed = 0;
  constexpr int kProbes = 100000;
  for (int i = 0; i < kProbes; ++i) passed += Passes(bits, rnd.Next() << 31);
  EXPECT_LT(passed, kProbes * 3 / 100);
}

// Random documents with planted copies and near-copies (clusters whose
// prefixes are crowded in some tables), reached through every way entries
// enter the tables' files: a load into the empty store (whole groups, one
// file a table), merges of inserts (operands in files of their own),
// replacements and removals (staged, then merged), a compaction, a reopen.
TEST(SkippedTablesTest, QueriesStayExactThroughEveryWayFilesAreWritten) {
  const std::uint64_t seed = TestSeed(72);
  std::vector<IdFingerprint> docs =
      MakeCorpus(seed, 3000, {Plant{0, 40}, Plant{1, 60}, Plant{2, 60}, Plant{3, 60}});
  TempDir dir;
  const std::string path = dir.Sub("store");
  StoreOptions options;
  options.staged_documents = 500;  // merges of their own while the inserts go on
  {
    std::unique_ptr<Store> store = MustOpen(path, options);
    ASSERT_NE(store, nullptr);
    ASSERT_NO_FATAL_FAILURE(BulkLoad(*store, docs));
    ASSERT_NO_FATAL_FAILURE(ExpectExact(*store, docs, seed, "loaded"));

    // Near-copies of loaded documents, merged into files of operands, so that a crowded prefix
    // has its members in two files.
    Random rnd(seed + 7);
    std::vector<IdFingerprint> more;
    for (DocumentId id = 10000; id < 11500; ++id) {
      const std::uint64_t original = docs[rnd.Uniform(docs.size())].fingerprint.low();
      more.push_back({id, original ^ rnd.Bits(static_cast<int>(rnd.Uniform(4)))});
    }
    for (const IdFingerprint& d : more) {
      ASSERT_TRUE(store->Insert(d.id, d.fingerprint, MetadataFor(d.id)).ok());
    }
    docs.insert(docs.end(), more.begin(), more.end());
    ASSERT_NO_FATAL_FAILURE(ExpectExact(*store, docs, seed + 1, "inserted, partly staged"));
    ASSERT_TRUE(store->Flush().ok());
    ASSERT_NO_FATAL_FAILURE(ExpectExact(*store, docs, seed + 2, "merged"));

    // Replacements (a recrawl) and removals, staged then merged: their leaving versions stay in
    // the tables until the merge, and count as members meanwhile.
    for (std::size_t i = 0; i < 300; ++i) {
      IdFingerprint& d = docs[rnd.Uniform(docs.size())];
      d.fingerprint = docs[rnd.Uniform(docs.size())].fingerprint ^ rnd.Bits(1);
      ASSERT_TRUE(store->Insert(d.id, d.fingerprint, MetadataFor(d.id)).ok());
    }
    for (std::size_t i = 0; i < 200; ++i) {
      const std::size_t at = rnd.Uniform(docs.size());
      ASSERT_TRUE(store->Remove(docs[at].id).ok());
      docs.erase(docs.begin() + static_cast<std::ptrdiff_t>(at));
    }
    ASSERT_NO_FATAL_FAILURE(ExpectExact(*store, docs, seed + 3, "replaced and removed, staged"));
    ASSERT_TRUE(store->Flush().ok());
    ASSERT_NO_FATAL_FAILURE(ExpectExact(*store, docs, seed + 4, "replaced and removed, merged"));
    ASSERT_TRUE(store->Compact().ok());
    ASSERT_NO_FATAL_FAILURE(ExpectExact(*store, docs, seed + 5, "compacted"));
    ASSERT_TRUE(store->Close().ok());
  }
  std::unique_ptr<Store> store = MustOpen(path, options);
  ASSERT_NE(store, nullptr);
  ASSERT_NO_FATAL_FAILURE(ExpectExact(*store, docs, seed + 6, "reopened"));
}

// The bytes of the groups a query of `query` reads from the tables: with one file a table, each a
// RocksDB Get (the documents' records are read by MultiGet, counted apart).
std::uint64_t GroupBytesRead(Store& store, std::uint64_t query) {
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
  rocksdb::get_perf_context()->Reset();
  Result<std::vector<Match>> found = store.Query(query, store.plan().distance());
  const std::uint64_t bytes = rocksdb::get_perf_context()->get_read_bytes;
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
  EXPECT_TRUE(found.ok()) << found.status().ToString();
  return bytes;
}

// In a store of one file a table, a query of a stored fingerprint that no
// other shares a prefix with reads table 0's group and skips every other
// table: the query shares the hit's prefix in each. One whose prefix is
// crowded in some table (a near-copy shares it) reads more.
TEST(SkippedTablesTest, ALoneHitReadsOneGroupAndACrowdedOneMore) {
  const std::uint64_t seed = TestSeed(73);
  std::vector<IdFingerprint> docs = MakeCorpus(seed, 2000, {});
  const std::uint64_t crowded = docs[0].fingerprint.low();
  docs.push_back({5000, crowded ^ 1});  // shares the prefix of every table that leaves bit 0 out
  TempDir dir;
  const std::string path = dir.Sub("store");
  std::unique_ptr<Store> store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  ASSERT_NO_FATAL_FAILURE(BulkLoad(*store, docs));
  const PermutationPlan& plan = store->plan();
  const internal::GroupLayout layout0 =
      internal::TableGroupLayout(plan, 0, testing::RecordedGroupBits(path));
  // The value of table 0's group of `fp`: every document whose table-0 key is the same.
  auto table0_group_bytes = [&](std::uint64_t fp) {
    const Fingerprint group = layout0.GroupOf(plan.table(0).Apply(fp));
    std::vector<internal::IdMember> members;
    for (const IdFingerprint& d : docs) {
      const Fingerprint permuted = plan.table(0).Apply(d.fingerprint);
      if (layout0.GroupOf(permuted) == group) {
        members.push_back({layout0.MemberBits(permuted), d.id});
      }
    }
    std::sort(members.begin(), members.end());
    return static_cast<std::uint64_t>(internal::EncodeGroupValue(layout0, members).size());
  };
  Random rnd(seed + 1);
  EXPECT_EQ(GroupBytesRead(*store, rnd.Next()), 0u);  // a miss: the filters tell
  std::size_t lone_read_one = 0;
  for (std::size_t i = 1; i < 21; ++i) {
    lone_read_one += GroupBytesRead(*store, docs[i].fingerprint.low()) ==
                     table0_group_bytes(docs[i].fingerprint.low());
  }
  // A lone prefix reads as crowded where a filter errs, about 1% a table.
  EXPECT_GE(lone_read_one, 16u) << "of 20 lone hits";
  EXPECT_GT(GroupBytesRead(*store, crowded), table0_group_bytes(crowded));
}

// A collector that builds files' member filters as the store's does, but
// says no prefix is crowded: a file whose filter lies.
class LyingCollector final : public rocksdb::TablePropertiesCollector {
 public:
  LyingCollector(internal::GroupLayout layout, int prefix_bits)
      : layout_(layout), prefix_mask_(internal::PrefixMask(prefix_bits)) {}
  rocksdb::Status AddUserKey(const rocksdb::Slice& key, const rocksdb::Slice& value,
                             rocksdb::EntryType type, rocksdb::SequenceNumber,
                             std::uint64_t) override {
    Fingerprint group_word;
    EXPECT_TRUE(layout_.DecodeKey(key.ToStringView(), &group_word));
    const std::uint64_t group = group_word.low();
    if (prefixes_.empty()) first_ = group;
    last_ = group;
    internal::ForEachMemberOf(layout_, value.ToStringView(), type == rocksdb::kEntryMerge,
                              [&](Fingerprint member) {
                                const std::uint64_t prefix = (group | member.low()) & prefix_mask_;
                                if (prefixes_.empty() || prefixes_.back().prefix != prefix) {
                                  prefixes_.push_back({prefix, false});
                                }
                              });
    return rocksdb::Status::OK();
  }
  rocksdb::Status Finish(rocksdb::UserCollectedProperties* properties) override {
    // One chunk (docs/format.md, "Member filters").
    std::string filter;
    MemberFilter::Build(prefixes_, filter);
    std::string value(4 + 20, '\0');
    internal::PutBigEndianBytes(value.data(), 1, 4);
    internal::PutBigEndian64(value.data() + 4, first_);
    internal::PutBigEndian64(value.data() + 12, last_);
    internal::PutBigEndianBytes(value.data() + 20, filter.size(), 4);
    (*properties)[internal::kMemberFilterProperty] = value + filter;
    return rocksdb::Status::OK();
  }
  rocksdb::UserCollectedProperties GetReadableProperties() const override { return {}; }
  const char* Name() const override { return "LyingCollector"; }

 private:
  const internal::GroupLayout layout_;
  const std::uint64_t prefix_mask_;
  std::vector<MemberFilter::Prefix> prefixes_;
  std::uint64_t first_ = 0, last_ = 0;
};

class LyingCollectorFactory final : public rocksdb::TablePropertiesCollectorFactory {
 public:
  LyingCollectorFactory(internal::GroupLayout layout, int prefix_bits)
      : layout_(layout), prefix_bits_(prefix_bits) {}
  rocksdb::TablePropertiesCollector* CreateTablePropertiesCollector(
      rocksdb::TablePropertiesCollectorFactory::Context) override {
    return new LyingCollector(layout_, prefix_bits_);
  }
  const char* Name() const override { return "LyingCollectorFactory"; }

 private:
  const internal::GroupLayout layout_;
  const int prefix_bits_;
};

// Table 1 rewritten whole, the same entries in one file, with a filter
// that shows every prefix alone: a query of a document whose near-copy
// shares its prefix only there would pass the copy by. Verify names it.
TEST(SkippedTablesTest, VerifyReportsAFilterThatHidesASharedPrefix) {
  const std::uint64_t seed = TestSeed(74);
  std::vector<IdFingerprint> docs = MakeCorpus(seed, 500, {});
  TempDir dir;
  const std::string path = dir.Sub("store");
  const PermutationPlan plan = *PermutationPlan::Create(6, 3);
  // A near-copy that first shares its prefix with docs[0] in table 1.
  Random rnd(seed + 1);
  std::uint64_t copy = docs[0].fingerprint.low() ^ rnd.Bits(3);
  while (plan.FirstSharedTable(docs[0].fingerprint, copy) != 1) {
    copy = docs[0].fingerprint.low() ^ rnd.Bits(3);
  }
  docs.push_back({900, copy});
  {
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    ASSERT_NO_FATAL_FAILURE(BulkLoad(*store, docs));
    ASSERT_TRUE(store->Verify().ok());
    ASSERT_TRUE(store->Close().ok());
  }
  const std::string table = internal::TableFamilyName(1);
  const int group_bits = testing::RecordedGroupBits(path);
  const internal::GroupLayout layout = internal::TableGroupLayout(plan, 1, group_bits);
  testing::EditWithRocksDb(path, [&](rocksdb::DB& db, const auto& family) {
    rocksdb::Options options(db.GetDBOptions(), db.GetOptions(family(table)));
    options.table_properties_collector_factories = {
        std::make_shared<LyingCollectorFactory>(layout, plan.table(1).prefix_bits())};
    const std::string sst = dir.Sub("lying.sst");
    rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), options);
    ASSERT_TRUE(writer.Open(sst).ok());
    std::unique_ptr<rocksdb::Iterator> it(db.NewIterator({}, family(table)));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      ASSERT_TRUE(writer.Put(it->key(), it->value()).ok());
    }
    ASSERT_TRUE(it->status().ok());
    it.reset();
    ASSERT_TRUE(writer.Finish().ok());
    rocksdb::ColumnFamilyHandle* old = family(table);
    const rocksdb::ColumnFamilyOptions table_options = db.GetOptions(old);
    ASSERT_TRUE(db.DropColumnFamily(old).ok());
    rocksdb::ColumnFamilyHandle* fresh = nullptr;
    ASSERT_TRUE(db.CreateColumnFamily(table_options, table, &fresh).ok());
    ASSERT_TRUE(db.IngestExternalFile(fresh, {sst}, {}).ok());
    ASSERT_TRUE(db.DestroyColumnFamilyHandle(fresh).ok());
  });
  std::unique_ptr<Store> store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  // The lie costs the match: table 0 gives docs[0] itself, and table 1 is skipped.
  Result<std::vector<Match>> found = store->Query(docs[0].fingerprint, 3);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->size(), 1u);
  const Status verified = store->Verify();
  EXPECT_TRUE(verified.IsCorruption()) << verified.ToString();
  EXPECT_NE(verified.message().find("table-001: the member filters show fingerprint"),
            std::string::npos)
      << verified.ToString();
}

}  // namespace
}  // namespace fpstore
