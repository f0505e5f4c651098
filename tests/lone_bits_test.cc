// Lone bits: a bulk load into an empty store marks, per fingerprint, the
// tables where it is alone with its prefix, and queries skip those tables
// once they have found it. Documents that join such a prefix later must be
// found all the same (their prefixes are recent), after a reopen too; and
// a wrong bit, which would lose matches, is what Verify reports.

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <chrono>
#include <string>
#include <vector>

#include "brute_force.h"
#include "fpstore/bulk_loader.h"
#include "fpstore/store.h"
#include "key_codec.h"
#include "raw_store.h"
#include "read_pool.h"
#include "recent_prefixes.h"
#include "store_checks.h"
#include "temp_dir.h"

namespace fpstore {
namespace {

using internal::IdFingerprint;
using internal::LoneBits;
using internal::RecentPrefixes;
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

// Each query against a brute-force scan of `docs`, at the plan's distance,
// with the tables read one after another and (once a probe found a
// document) side by side: hits from tables without ids learn their lone
// bits only on the first path.
void ExpectExact(Store& store, const std::vector<IdFingerprint>& docs,
                 const std::vector<Fingerprint>& queries, const std::string& phase) {
  SCOPED_TRACE(phase);
  const int k = store.plan().distance();
  for (std::chrono::nanoseconds slow :
       {std::chrono::nanoseconds(std::chrono::hours(1)), std::chrono::nanoseconds(0)}) {
    internal::SetSlowProbeTimeForTesting(slow);
    for (Fingerprint q : queries) {
      Result<std::vector<Match>> found = store.Query(q, k);
      ASSERT_TRUE(found.ok()) << found.status().ToString();
      ASSERT_EQ(testing::AsIdDistances(*found), testing::BruteForceQuery(docs, q, k))
          << "query " << q << (slow.count() == 0 ? ", side by side" : "");
    }
  }
  internal::SetSlowProbeTimeForTesting(std::chrono::nanoseconds(-1));
}

// Bits 0 .. n - 1 set for the plan's tables that lone bits can name.
LoneBits AllTables(const PermutationPlan& plan) {
  const std::size_t n = std::min(plan.table_count(), RecentPrefixes::kMaxTables);
  return n == 32 ? ~LoneBits{0} : (LoneBits{1} << n) - 1;
}

// The tables where `a` and `b` share their prefix, as lone bits.
LoneBits SharedTables(const PermutationPlan& plan, Fingerprint a, Fingerprint b) {
  LoneBits shared = 0;
  for (std::size_t t = 0; t < std::min(plan.table_count(), RecentPrefixes::kMaxTables); ++t) {
    const TablePermutation& perm = plan.table(t);
    if ((perm.Apply(a) & perm.prefix_mask()) == (perm.Apply(b) & perm.prefix_mask())) {
      shared |= LoneBits{1} << t;
    }
  }
  return shared;
}

TEST(RecentPrefixesTest, HoldsEveryPrefixAddedAndFewOthers) {
  Result<PermutationPlan> plan = PermutationPlan::Create(6, 3);
  ASSERT_TRUE(plan.ok());
  RecentPrefixes recent(*plan);
  Random rnd(TestSeed(5));
  // Past the first segments, which double from 8192 fingerprints.
  std::vector<Fingerprint> added;
  for (int i = 0; i < 40000; ++i) added.push_back(rnd.Next());
  for (Fingerprint fp : added) recent.Add(fp);
  EXPECT_EQ(recent.size(), added.size());
  for (Fingerprint fp : added) {
    for (std::size_t t = 0; t < plan->table_count(); ++t) {
      const TablePermutation& perm = plan->table(t);
      ASSERT_TRUE(recent.MayHold(t, perm.Apply(fp) & perm.prefix_mask())) << fp << " table " << t;
    }
  }
  int false_positives = 0;
  const int probes = 20000;
  for (int i = 0; i < probes; ++i) {
    const std::size_t t = rnd.Uniform(plan->table_count());
    false_positives += recent.MayHold(t, rnd.Next() & plan->table(t).prefix_mask());
  }
  // About 1% a segment, three segments.
  EXPECT_LT(false_positives, probes / 20);
}

TEST(LoneBitsTest, LoadedBitsAreWhatQueriesTrustAndVerifyChecks) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  Random rnd(TestSeed(17));
  const Fingerprint f = rnd.Next();
  // g differs from f in block 0 only: they share every prefix of the
  // tables that do not lead with block 0, and g is found in the first of
  // them, not in table 0 where f is.
  const Fingerprint g = f ^ (Fingerprint{1} << 62);
  const Fingerprint h = rnd.Next();
  const std::vector<IdFingerprint> docs = {{1, f}, {2, g}, {3, h}};
  {
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    BulkLoad(*store, docs);
    ExpectExact(*store, docs, {f, g, h}, "as loaded");
  }
  Result<PermutationPlan> plan = PermutationPlan::Create(6, 3);
  ASSERT_TRUE(plan.ok());
  const LoneBits shared = SharedTables(*plan, f, g);
  ASSERT_NE(shared & ~LoneBits{1}, 0u);  // some table after table 0
  const internal::TableKeyCodec codec0(plan->table(0).prefix_bits(),
                                       internal::TableKeyCodec::Ids::kKept);
  const internal::TableKey f_key = codec0.Encode(plan->table(0).Apply(f), 1);
  testing::EditWithRocksDb(path, [&](rocksdb::DB& db, const auto& family) {
    auto bits_of = [&](DocumentId id, Fingerprint fp) {
      const internal::TableKey key = codec0.Encode(plan->table(0).Apply(fp), id);
      std::string value;
      EXPECT_TRUE(
          db.Get({}, family("table-000"), rocksdb::Slice(key.data(), key.size()), &value).ok());
      return internal::DecodeLoneBits(value);
    };
    EXPECT_EQ(bits_of(1, f), AllTables(*plan) & ~shared);
    EXPECT_EQ(bits_of(2, g), AllTables(*plan) & ~shared);
    EXPECT_EQ(bits_of(3, h), AllTables(*plan));
    // Now claim that f is alone everywhere.
    EXPECT_TRUE(db.Put({}, family("table-000"), rocksdb::Slice(f_key.data(), f_key.size()),
                       internal::EncodeLoneBits(AllTables(*plan), plan->table_count()))
                    .ok());
  });
  std::unique_ptr<Store> store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  // The query believes the bit and skips the table where g is: the bits
  // are not advice, so a wrong one must not go unnoticed...
  Result<std::vector<Match>> found = store->Query(f, 3);
  ASSERT_TRUE(found.ok());
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].id, 1u);
  // ... and Verify names it.
  Status verify = store->Verify();
  EXPECT_TRUE(verify.IsCorruption()) << verify.ToString();
  EXPECT_NE(verify.message().find("document 1 is marked alone with its prefix"), std::string::npos)
      << verify.ToString();
}

// A value with bits for tables the plan does not have (4 tables, one byte)
// names no table to a query, and Verify reports it.
TEST(LoneBitsTest, BitsPastThePlanAreReportedNotFollowed) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  Random rnd(TestSeed(29));
  const std::vector<IdFingerprint> docs = {{1, rnd.Next()}, {2, rnd.Next()}};
  StoreOptions options;
  options.blocks = 4;
  options.distance = 3;
  {
    std::unique_ptr<Store> store = MustOpen(path, options);
    ASSERT_NE(store, nullptr);
    BulkLoad(*store, docs);
  }
  Result<PermutationPlan> plan = PermutationPlan::Create(4, 3);
  ASSERT_TRUE(plan.ok());
  ASSERT_EQ(plan->table_count(), 4u);
  const internal::TableKeyCodec codec0(plan->table(0).prefix_bits(),
                                       internal::TableKeyCodec::Ids::kKept);
  const internal::TableKey key = codec0.Encode(plan->table(0).Apply(docs[0].fingerprint), 1);
  testing::EditWithRocksDb(path, [&](rocksdb::DB& db, const auto& family) {
    EXPECT_TRUE(
        db.Put({}, family("table-000"), rocksdb::Slice(key.data(), key.size()), "\xff").ok());
  });
  std::unique_ptr<Store> store = MustOpen(path, options);
  ASSERT_NE(store, nullptr);
  ExpectExact(*store, docs, {docs[0].fingerprint, docs[1].fingerprint}, "bits past the plan");
  Status verify = store->Verify();
  EXPECT_TRUE(verify.IsCorruption()) << verify.ToString();
  EXPECT_NE(verify.message().find("lone bits for tables the plan does not have"), std::string::npos)
      << verify.ToString();
}

TEST(LoneBitsTest, LaterDocumentsInLoneTablesAreFound) {
  const std::uint64_t seed = TestSeed(23);
  TempDir dir;
  const std::string path = dir.Sub("store");
  std::vector<IdFingerprint> docs =
      MakeCorpus(seed, 2000, {Plant{0, 20}, Plant{1, 40}, Plant{2, 40}, Plant{3, 40}});
  Random rnd(seed + 1);
  // Near-duplicates of loaded documents, which join prefixes those are
  // marked alone with; and the queries that would miss them if the marks
  // were trusted: the loaded documents and the new ones.
  auto near_copies = [&](std::size_t count) {
    std::vector<IdFingerprint> copies;
    for (std::size_t i = 0; i < count; ++i) {
      const Fingerprint of = docs[rnd.Uniform(2000)].fingerprint;
      copies.push_back(
          {docs.size() + copies.size(), of ^ rnd.Bits(1 + static_cast<int>(rnd.Uniform(3)))});
    }
    return copies;
  };
  std::vector<Fingerprint> queries;
  auto add_queries = [&](const std::vector<IdFingerprint>& copies) {
    for (const IdFingerprint& c : copies) {
      queries.push_back(c.fingerprint);
      for (const IdFingerprint& d : docs) {
        if (HammingDistance(d.fingerprint, c.fingerprint) <= 3) queries.push_back(d.fingerprint);
      }
    }
  };
  {
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    BulkLoad(*store, docs);
    ExpectMatchesBruteForce(*store, docs, seed, "after a load into an empty store");

    // Merged inserts.
    std::vector<IdFingerprint> inserted = near_copies(150);
    std::vector<std::string> metadata;
    for (const IdFingerprint& d : inserted) metadata.push_back(MetadataFor(d.id));
    std::vector<NewDocument> batch;
    for (std::size_t i = 0; i < inserted.size(); ++i) {
      batch.push_back({inserted[i].id, inserted[i].fingerprint, metadata[i]});
    }
    ASSERT_TRUE(store->InsertBatch(batch).ok());
    add_queries(inserted);
    docs.insert(docs.end(), inserted.begin(), inserted.end());
    ExpectExact(*store, docs, queries, "inserted, staged");
    ASSERT_TRUE(store->Flush().ok());
    ExpectExact(*store, docs, queries, "inserted, merged");

    // A load into a store that is not empty.
    std::vector<IdFingerprint> loaded = near_copies(150);
    BulkLoad(*store, loaded);
    add_queries(loaded);
    docs.insert(docs.end(), loaded.begin(), loaded.end());
    ExpectExact(*store, docs, queries, "loaded again");
    ExpectMatchesBruteForce(*store, docs, seed, "after the later writes");
  }
  // The recent prefixes come back from disk.
  std::unique_ptr<Store> store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  ExpectExact(*store, docs, queries, "reopened");
  ASSERT_TRUE(store->Compact().ok());
  ExpectExact(*store, docs, queries, "compacted");
  ExpectMatchesBruteForce(*store, docs, seed, "reopened and compacted");
}

}  // namespace
}  // namespace fpstore
