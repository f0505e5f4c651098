// Lone bits: a bulk load into an empty store marks, per fingerprint, the
// tables where it is alone with its prefix, and queries skip those tables
// once they have found it. Documents that join such a prefix later must be
// found all the same (their prefixes are recent), after a reopen too; a
// wrong bit, which would lose matches, is what Verify reports; and Compact,
// or the store in the background once enough were merged, writes every
// document's bits anew and forgets the recent fingerprints merged before,
// while merges go on.

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <atomic>
#include <chrono>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "brute_force.h"
#include "format/records.h"
#include "format/table_entries.h"
#include "fpstore/bulk_loader.h"
#include "fpstore/store.h"
#include "raw_store.h"
#include "store/read_pool.h"
#include "store/recent_prefixes.h"
#include "store/test_hooks.h"
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
  const std::size_t n = std::min(plan.table_count(), internal::kMaxLoneBitTables);
  return n == 32 ? ~LoneBits{0} : (LoneBits{1} << n) - 1;
}

// The tables where `a` and `b` share their prefix, as lone bits.
LoneBits SharedTables(const PermutationPlan& plan, Fingerprint a, Fingerprint b) {
  LoneBits shared = 0;
  for (std::size_t t = 0; t < std::min(plan.table_count(), internal::kMaxLoneBitTables); ++t) {
    const TablePermutation& perm = plan.table(t);
    if ((perm.Apply(a) & perm.prefix_mask()) == (perm.Apply(b) & perm.prefix_mask())) {
      shared |= LoneBits{1} << t;
    }
  }
  return shared;
}

// What table 0 should hold for each of `docs` (distinct ids): bits for the
// tables where no document with another fingerprint shares its prefix.
std::map<DocumentId, LoneBits> ExpectedBits(const PermutationPlan& plan,
                                            const std::vector<IdFingerprint>& docs) {
  std::map<DocumentId, LoneBits> bits;
  for (const IdFingerprint& d : docs) {
    LoneBits crowded = 0;
    for (const IdFingerprint& e : docs) {
      if (e.fingerprint != d.fingerprint) {
        crowded |= SharedTables(plan, d.fingerprint, e.fingerprint);
      }
    }
    bits[d.id] = AllTables(plan) & ~crowded;
  }
  return bits;
}

// The lone bits of each document of the closed store at `path`, by id: the
// crowded family's (a fingerprint not there is alone everywhere).
std::map<DocumentId, LoneBits> StoredBits(const std::string& path, const PermutationPlan& plan) {
  std::map<DocumentId, LoneBits> bits;
  testing::EditWithRocksDb(path, [&](rocksdb::DB& db, const auto& family) {
    std::map<Fingerprint, LoneBits> crowded;  // by table-0 permuted fingerprint
    std::unique_ptr<rocksdb::Iterator> it(db.NewIterator({}, family(internal::kCrowdedFamily)));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      ASSERT_EQ(it->key().size(), 8u);
      crowded[internal::GetBigEndian64(it->key().data())] =
          internal::DecodeLoneBits(it->value().ToStringView());
    }
    ASSERT_TRUE(it->status().ok());
    const internal::GroupLayout layout(plan.table(0).prefix_bits(),
                                       testing::RecordedGroupBits(path),
                                       internal::GroupLayout::Ids::kKept);
    it.reset(db.NewIterator({}, family("table-000")));
    internal::TableEntryCursor entries(*it, layout, "table-000");
    for (entries.SeekToFirst(); entries.Valid(); entries.Next()) {
      const internal::TableEntry& e = entries.entry();
      const auto c = crowded.find(e.permuted);
      bits[e.id] = c != crowded.end() ? c->second : AllTables(plan);
    }
    ASSERT_TRUE(entries.status().ok()) << entries.status().ToString();
  });
  return bits;
}

// Writes `value` as the lone bits of fingerprint `fp` in the closed store
// at `path`.
void WriteBits(const std::string& path, const PermutationPlan& plan, Fingerprint fp,
               const std::string& value) {
  testing::EditWithRocksDb(path, [&](rocksdb::DB& db, const auto& family) {
    char key[8];
    internal::PutBigEndian64(key, plan.table(0).Apply(fp));
    ASSERT_TRUE(db.Put({}, family(internal::kCrowdedFamily), rocksdb::Slice(key, 8), value).ok());
  });
}

std::uint64_t RecentCount(Store& store) {
  Result<StoreStats> stats = store.Stats();
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  return stats.ok() ? stats->internals.recent_fingerprints : 0;
}

// The recent fingerprints a merge or load of `docs` adds: each once.
std::uint64_t DistinctFingerprints(std::span<const IdFingerprint> docs) {
  std::set<Fingerprint> fps;
  for (const IdFingerprint& d : docs) fps.insert(d.fingerprint);
  return fps.size();
}

void Insert(Store& store, const std::vector<IdFingerprint>& docs) {
  std::vector<std::string> metadata;
  for (const IdFingerprint& d : docs) metadata.push_back(MetadataFor(d.id));
  std::vector<NewDocument> batch;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    batch.push_back({docs[i].id, docs[i].fingerprint, metadata[i]});
  }
  ASSERT_TRUE(store.InsertBatch(batch).ok());
}

// Copies of docs[0 .. count) 1 to 3 bits away (ids from 5000), and the
// queries each pair is found by.
std::pair<std::vector<IdFingerprint>, std::vector<Fingerprint>> CopiesOfFirst(
    const std::vector<IdFingerprint>& docs, std::size_t count, std::uint64_t seed) {
  Random rnd(seed);
  std::vector<IdFingerprint> copies;
  std::vector<Fingerprint> queries;
  for (std::size_t i = 0; i < count; ++i) {
    const IdFingerprint& of = docs[i];
    copies.push_back({5000 + i, of.fingerprint ^ rnd.Bits(1 + static_cast<int>(rnd.Uniform(3)))});
    queries.push_back(of.fingerprint);
    queries.push_back(copies.back().fingerprint);
  }
  return {copies, queries};
}

class LoneBitsTest : public ::testing::Test {
 protected:
  std::unique_ptr<Store> MustOpen(const std::string& path, const StoreOptions& options = {}) {
    return testing::MustOpen(path, options);
  }
};

TEST(RecentPrefixesTest, HoldsEveryPrefixAddedAndFewOthers) {
  Result<PermutationPlan> plan = PermutationPlan::Create(6, 3);
  ASSERT_TRUE(plan.ok());
  RecentPrefixes recent(*plan);
  Random rnd(TestSeed(5));
  // Past the first segments, which double from 8192 fingerprints.
  std::vector<Fingerprint> added;
  for (int i = 0; i < 40000; ++i) added.push_back(rnd.Next());
  for (Fingerprint fp : added) recent.Add(std::span(&fp, 1));
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

TEST(RecentPrefixesTest, PastItsLimitHoldsEverythingUntilCleared) {
  Result<PermutationPlan> plan = PermutationPlan::Create(6, 3);
  ASSERT_TRUE(plan.ok());
  RecentPrefixes recent(*plan, /*limit=*/1000);
  Random rnd(TestSeed(7));
  auto held_of_random = [&] {
    int held = 0;
    for (int i = 0; i < 1000; ++i) {
      const std::size_t t = rnd.Uniform(plan->table_count());
      held += recent.MayHold(t, rnd.Next() & plan->table(t).prefix_mask());
    }
    return held;
  };
  std::vector<Fingerprint> fps;
  for (int i = 0; i < 1000; ++i) fps.push_back(rnd.Next());
  recent.Add(fps);
  EXPECT_FALSE(recent.full());
  EXPECT_LT(held_of_random(), 50);
  // One more, in a batch of two: the batch is not added, everything held.
  recent.Add(std::vector<Fingerprint>{rnd.Next(), rnd.Next()});
  EXPECT_TRUE(recent.full());
  EXPECT_EQ(recent.size(), 1002u);
  EXPECT_EQ(held_of_random(), 1000);
  recent.Clear();
  EXPECT_FALSE(recent.full());
  EXPECT_EQ(recent.size(), 0u);
  EXPECT_EQ(held_of_random(), 0);
  recent.Add(fps);
  EXPECT_FALSE(recent.full());
  EXPECT_TRUE(recent.MayHold(3, plan->table(3).Apply(fps[0]) & plan->table(3).prefix_mask()));
}

// What a rewrite of the bits seals goes when it drops them; what was added
// after stays, and each side has the limit to itself.
TEST(RecentPrefixesTest, DropSealedForgetsOnlyWhatWasSealed) {
  Result<PermutationPlan> plan = PermutationPlan::Create(6, 3);
  ASSERT_TRUE(plan.ok());
  RecentPrefixes recent(*plan, /*limit=*/20000);
  Random rnd(TestSeed(9));
  auto batch = [&](int n) {
    std::vector<Fingerprint> fps;
    for (int i = 0; i < n; ++i) fps.push_back(rnd.Next());
    return fps;
  };
  // How many of `fps` some table holds the prefix of.
  auto held = [&](const std::vector<Fingerprint>& fps) {
    int n = 0;
    for (Fingerprint fp : fps) {
      const std::size_t t = fp % plan->table_count();
      n += recent.MayHold(t, plan->table(t).Apply(fp) & plan->table(t).prefix_mask());
    }
    return n;
  };
  const std::vector<Fingerprint> before = batch(15000), after = batch(15000);
  recent.Add(before);
  recent.Seal();
  recent.Add(after);  // past the limit together, not apart
  EXPECT_FALSE(recent.full());
  EXPECT_EQ(recent.size(), 30000u);
  EXPECT_EQ(held(before), 15000);
  EXPECT_EQ(held(after), 15000);
  recent.DropSealed();
  EXPECT_EQ(recent.size(), 15000u);
  EXPECT_EQ(held(after), 15000);
  EXPECT_LT(held(before), 15000 / 20);  // false positives only
  // Sealed while full: everything held until the sealed side is dropped,
  // though the side after it is not full.
  recent.Add(batch(6000));
  EXPECT_TRUE(recent.full());
  recent.Seal();
  recent.Add(batch(100));
  EXPECT_TRUE(recent.full());
  EXPECT_EQ(held(batch(1000)), 1000);
  recent.DropSealed();
  EXPECT_FALSE(recent.full());
  EXPECT_EQ(recent.size(), 100u);
  EXPECT_LT(held(batch(1000)), 50);
  // Seals without drops (rewrites that failed) pile onto the sealed side;
  // past the memory of two full sides, what comes after is not kept.
  for (int seal = 0; seal < 3; ++seal) {
    recent.Seal();
    recent.Add(batch(100));
    EXPECT_FALSE(recent.full()) << seal;
  }
  recent.Seal();
  recent.Add(batch(100));
  EXPECT_TRUE(recent.full());
  // Those stay unkept until the rewrite after the next is done with them.
  recent.DropSealed();
  EXPECT_TRUE(recent.full());
  EXPECT_EQ(recent.size(), 100u);
  recent.Seal();
  recent.DropSealed();
  EXPECT_FALSE(recent.full());
  EXPECT_EQ(recent.size(), 0u);
}

TEST_F(LoneBitsTest, LoadedBitsAreWhatQueriesTrustAndVerifyChecks) {
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
  const std::map<DocumentId, LoneBits> bits = StoredBits(path, *plan);
  EXPECT_EQ(bits.at(1), AllTables(*plan) & ~shared);
  EXPECT_EQ(bits.at(2), AllTables(*plan) & ~shared);
  EXPECT_EQ(bits.at(3), AllTables(*plan));
  // Now claim that f is alone everywhere.
  WriteBits(path, *plan, f, internal::EncodeLoneBits(AllTables(*plan), plan->table_count()));
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
  const std::string named = "fingerprint " + std::to_string(f);
  EXPECT_NE(verify.message().find(named + " is marked alone with its prefix"), std::string::npos)
      << verify.ToString();
}

// A value with bits for tables the plan does not have (4 tables, one byte)
// names no table to a query, and Verify reports it.
TEST_F(LoneBitsTest, BitsPastThePlanAreReportedNotFollowed) {
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
  WriteBits(path, *plan, docs[0].fingerprint, "\xff");
  std::unique_ptr<Store> store = MustOpen(path, options);
  ASSERT_NE(store, nullptr);
  ExpectExact(*store, docs, {docs[0].fingerprint, docs[1].fingerprint}, "bits past the plan");
  Status verify = store->Verify();
  EXPECT_TRUE(verify.IsCorruption()) << verify.ToString();
  EXPECT_NE(verify.message().find("lone bits for tables the plan does not have"), std::string::npos)
      << verify.ToString();
}

TEST_F(LoneBitsTest, LaterDocumentsInLoneTablesAreFound) {
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

// Compact writes the bits of every document anew, inserted or loaded, and
// forgets the recent fingerprints, in memory and on disk; read in memory
// or, when the scan's budget is too small for that, from the tables.
TEST_F(LoneBitsTest, CompactWritesEveryDocumentsBitsAndForgetsRecent) {
  for (std::size_t memory_bytes : {std::size_t{1} << 30, std::size_t{1}}) {
    SCOPED_TRACE("scan memory " + std::to_string(memory_bytes));
    const std::uint64_t seed = TestSeed(31);
    TempDir dir;
    const std::string path = dir.Sub("store");
    const std::vector<IdFingerprint> corpus =
        MakeCorpus(seed, 1200, {Plant{0, 20}, Plant{1, 60}, Plant{2, 60}, Plant{3, 60}});
    const std::vector<IdFingerprint> first(corpus.begin(), corpus.begin() + 600);
    const std::vector<IdFingerprint> second(corpus.begin() + 600, corpus.end());
    Result<PermutationPlan> plan = PermutationPlan::Create(6, 3);
    ASSERT_TRUE(plan.ok());
    ScanOptions scan;
    scan.memory_bytes = memory_bytes;
    std::vector<Fingerprint> queries;
    for (const IdFingerprint& d : corpus) queries.push_back(d.fingerprint);
    {
      // A store built by inserts alone has no bits it can trust until it
      // is compacted: every fingerprint is recent.
      std::unique_ptr<Store> store = MustOpen(path);
      ASSERT_NE(store, nullptr);
      Insert(*store, first);
      ASSERT_TRUE(store->Flush().ok());
      EXPECT_EQ(RecentCount(*store), DistinctFingerprints(first));
      ASSERT_TRUE(store->Compact(scan).ok());
      EXPECT_EQ(RecentCount(*store), 0u);
      ExpectExact(*store, first, queries, "inserted, compacted");
    }
    EXPECT_EQ(StoredBits(path, *plan), ExpectedBits(*plan, first));
    std::vector<IdFingerprint> all = first;
    all.insert(all.end(), second.begin(), second.end());
    {
      // Loaded and inserted beside those bits, then compacted again.
      std::unique_ptr<Store> store = MustOpen(path);
      ASSERT_NE(store, nullptr);
      const std::span<const IdFingerprint> loaded(second.begin(), second.begin() + 300);
      const std::span<const IdFingerprint> inserted(second.begin() + 300, second.end());
      BulkLoad(*store, std::vector<IdFingerprint>(loaded.begin(), loaded.end()));
      Insert(*store, std::vector<IdFingerprint>(inserted.begin(), inserted.end()));
      ASSERT_TRUE(store->Flush().ok());
      EXPECT_EQ(RecentCount(*store), DistinctFingerprints(loaded) + DistinctFingerprints(inserted));
      // Read back from disk, each once.
      store.reset();
      store = MustOpen(path);
      ASSERT_NE(store, nullptr);
      EXPECT_EQ(RecentCount(*store), DistinctFingerprints(second));
      ExpectExact(*store, all, queries, "loaded and inserted");
      ASSERT_TRUE(store->Compact(scan).ok());
      EXPECT_EQ(RecentCount(*store), 0u);
      ExpectExact(*store, all, queries, "compacted again");
      EXPECT_TRUE(store->Verify().ok());
    }
    EXPECT_EQ(StoredBits(path, *plan), ExpectedBits(*plan, all));
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(RecentCount(*store), 0u);  // gone from disk too
    ExpectMatchesBruteForce(*store, all, seed, "reopened after compaction");
  }
}

// A rewrite replaces every fingerprint's bits: one whose company was
// removed is alone again, by the crowded family losing it.
TEST_F(LoneBitsTest, RemovalsLeaveFingerprintsAloneAtTheNextRewrite) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  Random rnd(TestSeed(71));
  const Fingerprint f = rnd.Next();
  const Fingerprint g = f ^ (Fingerprint{1} << 62);  // shares f's prefix in some tables
  const Fingerprint h = rnd.Next();
  Result<PermutationPlan> plan = PermutationPlan::Create(6, 3);
  ASSERT_TRUE(plan.ok());
  {
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    BulkLoad(*store, {{1, f}, {2, g}, {3, h}});
  }
  EXPECT_EQ(StoredBits(path, *plan).at(1), AllTables(*plan) & ~SharedTables(*plan, f, g));
  {
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->Remove(2).ok());
    ASSERT_TRUE(store->Compact().ok());
    EXPECT_TRUE(store->Verify().ok());
    ExpectExact(*store, {{1, f}, {3, h}}, {f, g, h}, "removed, rewritten");
  }
  const std::map<DocumentId, LoneBits> bits = StoredBits(path, *plan);
  EXPECT_EQ(bits.size(), 2u);
  EXPECT_EQ(bits.at(1), AllTables(*plan));
  EXPECT_EQ(bits.at(3), AllTables(*plan));
}

// A load into a store that removals emptied writes the bits of what it
// loads; the crowded family keeps the entries of fingerprints
// no longer stored, whose bits claim no more than the truth, or a loaded
// fingerprint's entry replaces them.
TEST_F(LoneBitsTest, ALoadIntoAStoreEmptiedByRemovalsIsExact) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  Random rnd(TestSeed(73));
  const Fingerprint f = rnd.Next();
  const Fingerprint g = f ^ (Fingerprint{1} << 62);  // block 0
  const Fingerprint h = rnd.Next();
  const Fingerprint f2 = f ^ Fingerprint { 2 };  // block 5: other tables than g
  Result<PermutationPlan> plan = PermutationPlan::Create(6, 3);
  ASSERT_TRUE(plan.ok());
  std::unique_ptr<Store> store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  BulkLoad(*store, {{1, f}, {2, g}, {3, h}});
  for (DocumentId id : {1, 2, 3}) ASSERT_TRUE(store->Remove(id).ok());
  ASSERT_TRUE(store->Flush().ok());
  BulkLoad(*store, {{4, f}, {5, f2}, {6, g ^ (Fingerprint{1} << 40)}});
  const std::vector<IdFingerprint> now = {{4, f}, {5, f2}, {6, g ^ (Fingerprint{1} << 40)}};
  ExpectExact(*store, now, {f, g, h, f2, now[2].fingerprint}, "loaded after the removals");
  const Status verify = store->Verify();
  EXPECT_TRUE(verify.ok()) << verify.ToString();
  store.reset();
  EXPECT_EQ(StoredBits(path, *plan), ExpectedBits(*plan, now));
}

// Inserts and removals while Compact writes the bits: merges go on, and
// every answer stays exact.
TEST_F(LoneBitsTest, WritesDuringCompactAreFound) {
  const std::uint64_t seed = TestSeed(37);
  TempDir dir;
  const std::string path = dir.Sub("store");
  std::vector<IdFingerprint> docs =
      MakeCorpus(seed, 3000, {Plant{1, 100}, Plant{2, 100}, Plant{3, 100}});
  StoreOptions options;
  options.staged_documents = 50;  // merges while Compact runs
  std::unique_ptr<Store> store = MustOpen(path, options);
  ASSERT_NE(store, nullptr);
  BulkLoad(*store, docs);
  Random rnd(seed + 1);
  std::vector<IdFingerprint> inserted;
  for (std::size_t i = 0; i < 600; ++i) {
    const Fingerprint of = docs[rnd.Uniform(docs.size())].fingerprint;
    inserted.push_back({10000 + i, of ^ rnd.Bits(1 + static_cast<int>(rnd.Uniform(3)))});
  }
  std::atomic<bool> compacting{true};
  std::thread writer([&] {
    for (std::size_t i = 0; i < inserted.size(); i += 20) {
      Insert(*store, std::vector<IdFingerprint>(inserted.begin() + i, inserted.begin() + i + 20));
      ASSERT_TRUE(store->Remove(docs[i].id).ok());
    }
    compacting.wait(true);
  });
  Status compacted = store->Compact();
  compacting = false;
  compacting.notify_all();
  writer.join();
  ASSERT_TRUE(compacted.ok()) << compacted.ToString();
  std::vector<IdFingerprint> now;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    if (i % 20 != 0 || i >= inserted.size()) now.push_back(docs[i]);
  }
  now.insert(now.end(), inserted.begin(), inserted.end());
  ExpectMatchesBruteForce(*store, now, seed, "written during compaction");
  std::vector<Fingerprint> queries;
  for (const IdFingerprint& d : inserted) queries.push_back(d.fingerprint);
  ExpectExact(*store, now, queries, "inserted during compaction");
  ASSERT_TRUE(store->Flush().ok());
  ExpectExact(*store, now, queries, "merged after compaction");
  EXPECT_TRUE(store->Verify().ok());
}

// A store whose recent fingerprints outgrow the filter's limit stops
// using lone bits (merged documents past the limit are not in the filter),
// after a reopen too, until Compact writes the bits anew.
TEST_F(LoneBitsTest, TooManyRecentFingerprintsStopTheSkipsUntilCompact) {
  const std::uint64_t seed = TestSeed(43);
  TempDir dir;
  const std::string path = dir.Sub("store");
  std::vector<IdFingerprint> docs = MakeCorpus(seed, 1000, {});
  const auto [copies, queries] = CopiesOfFirst(docs, 300, seed + 1);
  struct Limit {
    explicit Limit(std::uint64_t n) {
      internal::SetRecentPrefixesLimitForTesting(n);
      internal::SetLoneBitsRewriteThresholdForTesting(~std::uint64_t{0});  // no rewrites
    }
    ~Limit() {
      internal::SetRecentPrefixesLimitForTesting(0);
      internal::SetLoneBitsRewriteThresholdForTesting(0);
    }
  };
  std::optional<Limit> limit(std::in_place, 100);
  {
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    BulkLoad(*store, docs);
    Insert(*store, std::vector<IdFingerprint>(copies.begin(), copies.begin() + 50));
    ASSERT_TRUE(store->Flush().ok());
    Result<StoreStats> stats = store->Stats();
    ASSERT_TRUE(stats.ok());
    EXPECT_TRUE(stats->internals.lone_bits_used);
    Insert(*store, std::vector<IdFingerprint>(copies.begin() + 50, copies.end()));
    ASSERT_TRUE(store->Flush().ok());
    stats = store->Stats();
    ASSERT_TRUE(stats.ok());
    EXPECT_FALSE(stats->internals.lone_bits_used);
    EXPECT_EQ(stats->internals.recent_fingerprints, 300u);
    std::vector<IdFingerprint> all = docs;
    all.insert(all.end(), copies.begin(), copies.end());
    ExpectExact(*store, all, queries, "past the limit");
  }
  docs.insert(docs.end(), copies.begin(), copies.end());
  {
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    Result<StoreStats> stats = store->Stats();
    ASSERT_TRUE(stats.ok());
    EXPECT_FALSE(stats->internals.lone_bits_used);
    ExpectExact(*store, docs, queries, "past the limit, reopened");
  }
  limit.reset();
  std::unique_ptr<Store> store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Compact().ok());
  Result<StoreStats> stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_TRUE(stats->internals.lone_bits_used);
  EXPECT_EQ(stats->internals.recent_fingerprints, 0u);
  ExpectExact(*store, docs, queries, "compacted");
}

// A recent family emptied by a range deletion (no build writes one; a tool
// on the raw database can), which a snapshot can keep past the compaction
// that follows: fingerprints merged after it still come back on open.
TEST_F(LoneBitsTest, FingerprintsMergedAfterTheRecentClearingComeBack) {
  const std::uint64_t seed = TestSeed(53);
  TempDir dir;
  const std::string path = dir.Sub("store");
  const std::vector<IdFingerprint> corpus = MakeCorpus(seed, 400, {});
  const std::vector<IdFingerprint> before(corpus.begin(), corpus.begin() + 200);
  const std::vector<IdFingerprint> after(corpus.begin() + 200, corpus.end());
  {
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    Insert(*store, before);
    ASSERT_TRUE(store->Flush().ok());
  }
  testing::EditWithRocksDb(path, [](rocksdb::DB& db, const auto& family) {
    const std::string end(9, '\xff');
    ASSERT_TRUE(
        db.DeleteRange(rocksdb::WriteOptions(), family("recent"), rocksdb::Slice(), end).ok());
  });
  {
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(RecentCount(*store), 0u);
    Insert(*store, after);
    ASSERT_TRUE(store->Flush().ok());
  }
  std::unique_ptr<Store> store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(RecentCount(*store), DistinctFingerprints(after));
  ExpectMatchesBruteForce(*store, corpus, seed, "merged after the clearing");
}

// Compact computes the bits from the tables at one snapshot and merges go
// on while it writes them: a merge landing in between gets bits that ignore
// its neighbours and leaves its neighbours' bits ignoring it. Its prefixes
// stay recent, after a reopen too, so that every answer stays exact, until
// a later rewrite takes it in.
TEST_F(LoneBitsTest, MergesDuringTheRewriteStayRecent) {
  const std::uint64_t seed = TestSeed(41);
  TempDir dir;
  const std::string path = dir.Sub("store");
  std::vector<IdFingerprint> docs = MakeCorpus(seed, 1000, {});
  const auto [copies, queries] = CopiesOfFirst(docs, 200, seed + 1);
  const Result<PermutationPlan> plan = PermutationPlan::Create(6, 3);
  ASSERT_TRUE(plan.ok());
  {
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    BulkLoad(*store, docs);
    // Lands before the compaction that writes the bits, which takes it in.
    internal::SetBeforeLoneBitsRewriteForTesting([&, &copies = copies](const auto&) {
      Insert(*store, copies);
      EXPECT_TRUE(store->Flush().ok());
    });
    const Status compacted = store->Compact();
    internal::SetBeforeLoneBitsRewriteForTesting({});
    ASSERT_TRUE(compacted.ok()) << compacted.ToString();
    EXPECT_EQ(RecentCount(*store), DistinctFingerprints(copies));
    docs.insert(docs.end(), copies.begin(), copies.end());
    ExpectExact(*store, docs, queries, "merged during the rewrite");
    EXPECT_TRUE(store->Verify().ok());
  }
  // The premise: copies are marked alone where their originals are.
  const std::map<DocumentId, LoneBits> stored = StoredBits(path, *plan);
  const std::map<DocumentId, LoneBits> exact = ExpectedBits(*plan, docs);
  int wrong_without_recent = 0;
  for (const auto& [id, bits] : stored) wrong_without_recent += (bits & ~exact.at(id)) != 0;
  EXPECT_GT(wrong_without_recent, 0);
  std::unique_ptr<Store> store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(RecentCount(*store), DistinctFingerprints(copies));
  ExpectExact(*store, docs, queries, "reopened");
  ASSERT_TRUE(store->Compact().ok());
  EXPECT_EQ(RecentCount(*store), 0u);
  store.reset();
  EXPECT_EQ(StoredBits(path, *plan), exact);
}

// Past its threshold of recent fingerprints a store writes the bits anew by
// itself, while inserts and merges go on; every answer stays exact
// throughout, and once the inserts stop the bits are exact again.
TEST_F(LoneBitsTest, TheStoreRewritesTheBitsInTheBackground) {
  const std::uint64_t seed = TestSeed(59);
  TempDir dir;
  const std::string path = dir.Sub("store");
  std::vector<IdFingerprint> docs =
      MakeCorpus(seed, 1000, {Plant{1, 50}, Plant{2, 50}, Plant{3, 50}});
  const Result<PermutationPlan> plan = PermutationPlan::Create(6, 3);
  ASSERT_TRUE(plan.ok());
  struct Threshold {
    Threshold() { internal::SetLoneBitsRewriteThresholdForTesting(60); }
    ~Threshold() { internal::SetLoneBitsRewriteThresholdForTesting(0); }
  } threshold;
  StoreOptions options;
  options.staged_documents = 40;  // merges all along
  std::unique_ptr<Store> store = MustOpen(path, options);
  ASSERT_NE(store, nullptr);
  BulkLoad(*store, docs);
  const auto [copies, queries] = CopiesOfFirst(docs, 300, seed + 1);
  const std::vector<Fingerprint> probes(queries.begin(), queries.begin() + 60);
  for (std::size_t i = 0; i < copies.size(); i += 30) {
    const std::vector<IdFingerprint> batch(copies.begin() + i, copies.begin() + i + 30);
    Insert(*store, batch);
    docs.insert(docs.end(), batch.begin(), batch.end());
    if (i % 90 == 0) ExpectExact(*store, docs, probes, "while inserting");
  }
  ASSERT_TRUE(store->Flush().ok());
  // The last rewrite may still be running, or wait for the refresher.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (RecentCount(*store) >= 60 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_LT(RecentCount(*store), 60u);
  ExpectExact(*store, docs, queries, "rewritten in the background");
  EXPECT_TRUE(store->Verify().ok());
  store.reset();
  store = MustOpen(path, options);
  ASSERT_NE(store, nullptr);
  ExpectExact(*store, docs, probes, "reopened");
  // Nothing recent once a last rewrite has nothing merged beside it.
  ASSERT_TRUE(store->Compact().ok());
  EXPECT_EQ(RecentCount(*store), 0u);
  store.reset();
  EXPECT_EQ(StoredBits(path, *plan), ExpectedBits(*plan, docs));
}

// The recent family's entries by epoch: (fingerprint, epoch), and the store's recent epoch.
struct RecentEntries {
  std::map<Fingerprint, std::uint64_t> entries;
  std::uint64_t epoch = 0;
};

RecentEntries ReadRecentFamily(const std::string& path) {
  RecentEntries out;
  testing::EditWithRocksDb(path, [&](rocksdb::DB& db, const auto& family) {
    std::string value;
    if (db.Get({}, family(rocksdb::kDefaultColumnFamilyName), internal::kRecentEpochKey, &value)
            .ok()) {
      out.epoch = std::stoull(value);
    }
    std::unique_ptr<rocksdb::Iterator> it(db.NewIterator({}, family(internal::kRecentFamily)));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      const std::optional<internal::RecentEntry> entry =
          internal::DecodeRecentKey(it->key().ToStringView());
      ASSERT_TRUE(entry.has_value()) << it->key().ToString(true);
      ASSERT_TRUE(it->value().empty()) << it->key().ToString(true);
      // A fingerprint merged again in a later epoch has an entry of each: the latest counts.
      std::uint64_t& epoch = out.entries[entry->fingerprint];
      epoch = std::max(epoch, entry->epoch);
    }
    ASSERT_TRUE(it->status().ok());
  });
  return out;
}

// A rewrite retires the recent entries it took in by raising the store's recent epoch, not by
// deleting each: they stay in the family, are no longer recent after a reopen, and compactions
// drop them. Fingerprints merged after the rewrite stay recent throughout.
TEST_F(LoneBitsTest, ARewriteRetiresTheEntriesItTookInAndCompactionsDropThem) {
  const std::uint64_t seed = TestSeed(61);
  TempDir dir;
  const std::string path = dir.Sub("store");
  const std::vector<IdFingerprint> docs = MakeCorpus(seed, 600, {Plant{1, 40}, Plant{2, 40}});
  const std::vector<IdFingerprint> loaded(docs.begin(), docs.begin() + 300);
  const std::vector<IdFingerprint> before(docs.begin() + 300, docs.begin() + 450);
  const std::vector<IdFingerprint> after(docs.begin() + 450, docs.end());
  {
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    BulkLoad(*store, loaded);
    {
      // A background rewrite once `before` is merged (one merge, one file of the family).
      struct Threshold {
        Threshold() { internal::SetLoneBitsRewriteThresholdForTesting(60); }
        ~Threshold() { internal::SetLoneBitsRewriteThresholdForTesting(0); }
      } threshold;
      Insert(*store, before);
      ASSERT_TRUE(store->Flush().ok());
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
      while (RecentCount(*store) != 0 && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      ASSERT_EQ(RecentCount(*store), 0u);
    }
    Insert(*store, after);
    ASSERT_TRUE(store->Flush().ok());
    EXPECT_EQ(RecentCount(*store), DistinctFingerprints(after));
  }
  std::set<Fingerprint> merged_after;
  for (const IdFingerprint& d : after) merged_after.insert(d.fingerprint);
  // `after`'s entries are of the store's epoch; `before`'s of the one before, or gone already
  // (RocksDB compacts a family's bottom files once no snapshot needs their sequence numbers).
  RecentEntries family = ReadRecentFamily(path);
  EXPECT_EQ(family.epoch, 1u);
  for (const auto& [fp, epoch] : family.entries) {
    EXPECT_EQ(epoch, merged_after.count(fp) != 0 ? family.epoch : 0u) << fp;
  }
  for (const Fingerprint fp : merged_after) EXPECT_EQ(family.entries.count(fp), 1u) << fp;
  // Retired entries that no compaction has reached yet: written back as the rewrite left them.
  testing::EditWithRocksDb(path, [&](rocksdb::DB& db, const auto& column) {
    for (const IdFingerprint& d : before) {
      if (merged_after.count(d.fingerprint) != 0) continue;
      ASSERT_TRUE(db.Put({}, column(internal::kRecentFamily),
                         internal::RecentKey(0, d.fingerprint).view(), rocksdb::Slice())
                      .ok());
    }
  });
  ASSERT_GT(ReadRecentFamily(path).entries.size(), merged_after.size() + 100);
  {
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(RecentCount(*store), DistinctFingerprints(after));
    ExpectMatchesBruteForce(*store, docs, seed, "reopened after the rewrite");
    EXPECT_TRUE(store->Verify().ok());
    ASSERT_TRUE(store->Compact().ok());  // a rewrite with nothing merged beside, then compactions
    EXPECT_EQ(RecentCount(*store), 0u);
    ExpectMatchesBruteForce(*store, docs, seed, "compacted");
  }
  family = ReadRecentFamily(path);
  EXPECT_EQ(family.epoch, 2u);
  EXPECT_TRUE(family.entries.empty()) << family.entries.size() << " entries left";
}

// A rewrite and the compactions after it may end while Verify reads at a snapshot from before:
// the compaction filter drops the entries the rewrite retired even from under that snapshot, whose
// bits still count on them. Verify reads the recent family as it was at its snapshot, and passes.
TEST_F(LoneBitsTest, VerifyBesideACompactThatRetiresWhatItsSnapshotCountsRecent) {
  const std::uint64_t seed = TestSeed(67);
  TempDir dir;
  const std::string path = dir.Sub("store");
  std::vector<IdFingerprint> docs = MakeCorpus(seed, 1000, {});
  const auto [copies, queries] = CopiesOfFirst(docs, 200, seed + 1);
  const Result<PermutationPlan> plan = PermutationPlan::Create(6, 3);
  ASSERT_TRUE(plan.ok());
  {
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    BulkLoad(*store, docs);
    Insert(*store, copies);
    ASSERT_TRUE(store->Flush().ok());
  }
  docs.insert(docs.end(), copies.begin(), copies.end());
  // The premise: without the recent entries, the stored bits would be wrong.
  const std::map<DocumentId, LoneBits> exact = ExpectedBits(*plan, docs);
  int wrong_without_recent = 0;
  for (const auto& [id, bits] : StoredBits(path, *plan)) {
    wrong_without_recent += (bits & ~exact.at(id)) != 0;
  }
  ASSERT_GT(wrong_without_recent, 0);
  {
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(RecentCount(*store), DistinctFingerprints(copies));
    struct Reset {
      ~Reset() { internal::SetAfterVerifySnapshotForTesting({}); }
    } reset;
    int compactions = 0;
    internal::SetAfterVerifySnapshotForTesting([&] {
      ++compactions;
      EXPECT_TRUE(store->Compact().ok());
    });
    const Status verified = store->Verify();
    EXPECT_TRUE(verified.ok()) << verified.ToString();
    EXPECT_EQ(compactions, 1);
    EXPECT_EQ(RecentCount(*store), 0u);
    ExpectExact(*store, docs, queries, "compacted");
  }
  // The compactions did drop the entries Verify read.
  EXPECT_TRUE(ReadRecentFamily(path).entries.empty());
  EXPECT_EQ(StoredBits(path, *plan), exact);
}

// A recent entry with a malformed key, or a value where none belongs, is refused at open, naming
// the family and the key, rather than read as recent or not.
TEST_F(LoneBitsTest, AMalformedRecentEntryIsCorruption) {
  const struct {
    std::string key, value, message;
  } cases[] = {
      {std::string(internal::Key8(42).view()), "", "recent: malformed key"},
      {std::string(internal::RecentKey(0, 42).view()), "abc", "recent: a value where none belongs"},
  };
  for (const auto& c : cases) {
    TempDir dir;
    const std::string path = dir.Sub("store");
    {
      std::unique_ptr<Store> store = MustOpen(path);
      ASSERT_NE(store, nullptr);
    }
    testing::EditWithRocksDb(path, [&](rocksdb::DB& db, const auto& column) {
      ASSERT_TRUE(db.Put({}, column(internal::kRecentFamily), c.key, c.value).ok());
    });
    Result<std::unique_ptr<Store>> store = Store::Open(path);
    ASSERT_FALSE(store.ok()) << c.message;
    EXPECT_EQ(store.status().code(), Status::Code::kCorruption) << store.status().ToString();
    EXPECT_NE(store.status().ToString().find(c.message), std::string::npos)
        << store.status().ToString();
  }
}

// Close stops a rewrite under way; what it leaves is a store whose recent
// fingerprints still cover the old bits.
TEST_F(LoneBitsTest, CloseStopsARewriteUnderWay) {
  const std::uint64_t seed = TestSeed(61);
  TempDir dir;
  const std::string path = dir.Sub("store");
  std::vector<IdFingerprint> docs = MakeCorpus(seed, 1000, {});
  const auto [copies, queries] = CopiesOfFirst(docs, 200, seed + 1);
  {
    // Outlives the store, whose Close lets the hook return.
    struct Reset {
      ~Reset() {
        internal::SetLoneBitsRewriteThresholdForTesting(0);
        internal::SetBeforeLoneBitsRewriteForTesting({});
      }
    } reset;
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    BulkLoad(*store, docs);
    Insert(*store, copies);
    ASSERT_TRUE(store->Flush().ok());
    std::atomic<bool> rewriting{false};
    // The rewrite goes on once Close has begun (and Close waits for it).
    internal::SetBeforeLoneBitsRewriteForTesting([&](const std::atomic<bool>& closing) {
      rewriting = true;
      closing.wait(false);
    });
    internal::SetLoneBitsRewriteThresholdForTesting(1);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!rewriting && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(rewriting) << "no rewrite began in the background";
    ASSERT_TRUE(store->Close().ok());
  }
  docs.insert(docs.end(), copies.begin(), copies.end());
  // Nor does a rewrite begin before a merge since the open: a process that
  // only queries, or inserts a little and closes, pays for none. (A pace:
  // the refresher looks at least once a second.)
  internal::SetLoneBitsRewriteThresholdForTesting(1);
  std::unique_ptr<Store> store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  internal::SetLoneBitsRewriteThresholdForTesting(0);
  EXPECT_EQ(RecentCount(*store), DistinctFingerprints(copies));
  ExpectExact(*store, docs, queries, "reopened");
  EXPECT_TRUE(store->Verify().ok());
}

}  // namespace
}  // namespace fpstore
