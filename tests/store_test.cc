// The store against brute force: every query, batch query, FindAll and
// Clusters answer must equal a popcount scan over all documents, through
// inserts, removes, re-inserts, reopening and compaction, for several plans.
// Built twice: on the embedded store, and on a Redis Cluster
// (store_location.h).

#include "fpstore/store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "brute_force.h"
#include "store_checks.h"
#include "store_location.h"
#include "temp_dir.h"

namespace fpstore {
namespace {

using internal::IdFingerprint;
using testing::ExpectMatchesBruteForce;
using testing::MakeCorpus;
using testing::MetadataFor;
using testing::MustOpen;
using testing::Plant;
using testing::Random;
using testing::StoreAt;
using testing::TempDir;
using testing::TestSeed;

struct PlanCase {
  int blocks;
  int distance;
  // The merge threshold: small merges often in the background, large never
  // (every document stays staged until Flush or Compact).
  std::size_t staged_documents;
  // For the groups of tables 1 and up: 19 bits by default (1e8); 16 for
  // 1e7; for 1e12, 32, so that some tables' groups are their whole prefix.
  // A plan of 13-bit prefixes cuts them there whatever this says.
  std::optional<std::uint64_t> expected_documents = std::nullopt;
  int bits = 64;  // of the store's fingerprints
};

class StoreExactnessTest : public ::testing::TestWithParam<PlanCase> {
 protected:
  void SetUp() override {
    seed_ = TestSeed(20261122 + GetParam().blocks * 100 + GetParam().distance);
    options_.blocks = GetParam().blocks;
    options_.distance = GetParam().distance;
    options_.staged_documents = GetParam().staged_documents;
    options_.expected_documents = GetParam().expected_documents;
    options_.bits = GetParam().bits;
  }

  std::uint64_t seed_ = 0;
  StoreOptions options_;
};

TEST_P(StoreExactnessTest, MatchesBruteForceThroughItsLife) {
  const int k = GetParam().distance;
  std::vector<Plant> plants;
  for (int d = 0; d <= k + 1; ++d) plants.push_back({d, 60});
  const int bits = GetParam().bits;
  std::vector<IdFingerprint> docs = MakeCorpus(seed_, 600, plants, bits);

  TempDir dir;
  std::unique_ptr<Store> store = MustOpen(StoreAt(dir, "store"), options_);
  ASSERT_NE(store, nullptr);
  // Half one by one, half in batches.
  const std::size_t half = docs.size() / 2;
  for (std::size_t i = 0; i < half; ++i) {
    ASSERT_TRUE(store->Insert(docs[i].id, docs[i].fingerprint, MetadataFor(docs[i].id)).ok());
  }
  std::vector<std::string> metadata;
  for (std::size_t i = half; i < docs.size(); ++i) metadata.push_back(MetadataFor(docs[i].id));
  std::vector<NewDocument> batch;
  for (std::size_t i = half; i < docs.size(); ++i) {
    batch.push_back({docs[i].id, docs[i].fingerprint, metadata[i - half]});
  }
  ASSERT_TRUE(store->InsertBatch(batch).ok());
  ExpectMatchesBruteForce(*store, docs, seed_, "after inserts");
  // Some documents in the tables, the rest staged from here on.
  ASSERT_TRUE(store->Flush().ok());
  ExpectMatchesBruteForce(*store, docs, seed_, "after a flush");

  // Remove a tenth; move another tenth to new fingerprints near others.
  Random rnd(seed_ + 2);
  rnd.Shuffle(docs);
  const std::size_t tenth = docs.size() / 10;
  for (std::size_t i = 0; i < tenth; ++i) ASSERT_TRUE(store->Remove(docs[i].id).ok());
  EXPECT_TRUE(store->Remove(docs[0].id).IsNotFound());
  docs.erase(docs.begin(), docs.begin() + tenth);
  for (std::size_t i = 0; i < tenth; ++i) {
    const Fingerprint moved = docs[docs.size() - 1 - i].fingerprint ^
                              (Fingerprint(1) << static_cast<int>(rnd.Uniform(bits)));
    docs[i].fingerprint = moved;
    ASSERT_TRUE(store->Insert(docs[i].id, moved, MetadataFor(docs[i].id)).ok());
  }
  ExpectMatchesBruteForce(*store, docs, seed_, "after removes and re-inserts");

  // CheckAndInsert of new documents near stored ones: it reports what brute force finds within
  // the store's distance, and, inserting only where it finds none, leaves the rest out.
  for (int i = 0; i < 20; ++i) {
    const DocumentId id = 100000 + i;
    const Fingerprint fp = i % 4 == 3 ? rnd.Next(bits)
                                      : docs[rnd.Uniform(docs.size())].fingerprint ^
                                            rnd.Bits(static_cast<int>(rnd.Uniform(k + 2)), bits);
    const std::vector<testing::IdDistance> expected = testing::BruteForceQuery(docs, fp, k);
    Result<CheckResult> r =
        store->CheckAndInsert({id, fp, MetadataFor(id), {}}, InsertPolicy::kIfNoMatch);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(testing::AsIdDistances(r->matches), expected) << "CheckAndInsert " << i;
    EXPECT_EQ(r->inserted, expected.empty());
    if (r->inserted) docs.push_back({id, fp});
  }
  ExpectMatchesBruteForce(*store, docs, seed_, "after CheckAndInsert");

  ASSERT_TRUE(store->Close().ok());
  store = MustOpen(StoreAt(dir, "store"), options_);
  ASSERT_NE(store, nullptr);
  ExpectMatchesBruteForce(*store, docs, seed_, "after reopening");

  // Two families at a time, reporting each as it ends, one report at a time.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> reports;
  std::atomic<bool> reporting{false};
  ScanOptions scan;
  scan.threads = 2;
  scan.progress = [&](std::uint64_t done, std::uint64_t total) {
    EXPECT_FALSE(reporting.exchange(true)) << "reports overlap";
    reports.emplace_back(done, total);
    reporting = false;
  };
  ASSERT_TRUE(store->Compact(scan).ok());
  ExpectMatchesBruteForce(*store, docs, seed_, "after compaction");
  ASSERT_FALSE(reports.empty());
  const std::uint64_t families = reports.front().second;
  EXPECT_EQ(reports.size(), families + 1);
  for (std::size_t i = 0; i < reports.size(); ++i) {
    EXPECT_EQ(reports[i], std::make_pair(std::uint64_t{i}, families)) << "report " << i;
  }
}

// An empty store, scanned both ways; in memory, sizing the sorters for no
// documents once divided by zero.
TEST(StoreTest, EmptyStoreScansFindNothingEitherWay) {
  TempDir dir;
  std::unique_ptr<Store> store = MustOpen(StoreAt(dir, "store"), {});
  ASSERT_NE(store, nullptr);
  for (std::size_t memory : {std::size_t{0}, ScanOptions().memory_bytes}) {
    ScanOptions scan;
    scan.memory_bytes = memory;
    int found = 0;
    EXPECT_TRUE(store
                    ->FindAll(
                        3, [&](const NearPair&) { ++found; }, scan)
                    .ok());
    EXPECT_TRUE(store
                    ->Clusters(
                        3, [&](std::span<const DocumentId>) { ++found; }, scan)
                    .ok());
    EXPECT_EQ(found, 0) << "memory " << memory;
  }
}

// Regression: a document without metadata made EncodeDocumentValue call
// memcpy with a null source, which UBSan aborts on.
TEST(StoreTest, DocumentWithoutMetadata) {
  TempDir dir;
  StoreOptions options;
  options.durability = Durability::kNoSync;
  Result<std::unique_ptr<Store>> store = Store::Open(StoreAt(dir, "store"), options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->Insert(7, 0x1234).ok());
  Result<Document> doc = (*store)->Get(7);
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(doc->fingerprint, 0x1234u);
  EXPECT_EQ(doc->metadata, "");
  Result<std::vector<Match>> matches = (*store)->Query(0x1234, 0);
  ASSERT_TRUE(matches.ok());
  ASSERT_EQ(matches->size(), 1u);
  EXPECT_EQ((*matches)[0].metadata, "");
}

// Regression: a store destroyed by a thread-local (or static) destructor, after the library's own
// thread-locals were destroyed, used a freed per-thread list to close (heap corruption, which
// AddressSanitizer reports here). Hosts keep stores in such objects.
TEST(StoreTest, ClosesFromAThreadLocalDestructor) {
  TempDir dir;
  const std::string path = StoreAt(dir, "store");
  std::thread([&path] {
    // Constructed before the store's first call, so destroyed after whatever that call left.
    thread_local std::unique_ptr<Store> held;
    Result<std::unique_ptr<Store>> store = Store::Open(path, {});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    held = *std::move(store);
    ASSERT_TRUE(held->Insert(7, 0x1234).ok());
    ASSERT_TRUE(held->Query(0x1234, 0).ok());
  }).join();
  Result<std::unique_ptr<Store>> reopened = Store::Open(path, {});
  ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
  Result<Document> doc = (*reopened)->Get(7);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(doc->fingerprint, 0x1234u);
}

#if !FPSTORE_TEST_REDIS  // the embedded store's logs and merges
// Each writable open starts a new write-ahead log; one that writes nothing must not leave its
// empty log behind for good (RocksDB 7.8 does: 26 empty logs after 30 such opens).
TEST(StoreTest, OpensThatWriteNothingLeaveNoLogsBehind) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  const auto logs = [&] {
    int count = 0;
    for (const auto& entry : std::filesystem::directory_iterator(path)) {
      count += entry.path().extension() == ".log";
    }
    return count;
  };
  {
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_TRUE(store->Insert(1, 0x1234).ok());
    ASSERT_TRUE(store->Close().ok());
  }
  for (int i = 0; i < 10; ++i) {
    std::unique_ptr<Store> store = MustOpen(path);
    EXPECT_TRUE(store->Remove(99).IsNotFound());  // writes nothing
    ASSERT_TRUE(store->Close().ok());
  }
  EXPECT_LE(logs(), 2);
  std::unique_ptr<Store> store = MustOpen(path);
  EXPECT_TRUE(store->Get(1).ok());
  EXPECT_TRUE(store->Verify().ok());
}

// A merge reads the staged marks of its ids' range only (store_merge.cc):
// the smallest and the largest ids must be among them, also behind the
// deletions an earlier merge left.
TEST(StoreTest, MergesMoveTheSmallestAndLargestIds) {
  TempDir dir;
  std::unique_ptr<Store> store = MustOpen(StoreAt(dir, "store"));
  ASSERT_NE(store, nullptr);
  constexpr DocumentId kMax = std::numeric_limits<DocumentId>::max();
  const std::vector<std::vector<NewDocument>> merges = {
      {{5, 0x1111, {}}, {6, 0x2222, {}}},
      {{0, 0x3333, {}}, {kMax - 1, 0x4444, {}}, {kMax, 0x5555, {}}},
      {{7, 0x6666, {}}, {kMax, 0x7777, {}}}};
  std::map<DocumentId, std::uint64_t> stored;
  for (const std::vector<NewDocument>& batch : merges) {
    ASSERT_TRUE(store->InsertBatch(batch).ok());
    ASSERT_TRUE(store->Flush().ok());
    for (const NewDocument& d : batch) stored[d.id] = d.fingerprint.low();
    Result<StoreStats> stats = store->Stats();
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(stats->staged_documents, 0u);
  }
  for (const auto& [id, fp] : stored) {
    Result<std::vector<Match>> found = store->Query(fp, 0);
    ASSERT_TRUE(found.ok());
    ASSERT_EQ(found->size(), 1u) << "document " << id;
    EXPECT_EQ((*found)[0].id, id);
  }
  const Status verified = store->Verify();
  EXPECT_TRUE(verified.ok()) << verified.ToString();
}

#endif

// A crawl holds thousands of identical pages (empty, redirect stubs). Every
// answer must stay exact, each document reported once, and Clusters must
// join the identical ones into one cluster.
TEST(StoreTest, ThousandsOfIdenticalFingerprints) {
  TempDir dir;
  std::unique_ptr<Store> store = MustOpen(StoreAt(dir, "store"));
  ASSERT_NE(store, nullptr);
  const std::uint64_t common = 0x0123456789abcdefULL;
  std::vector<NewDocument> batch;
  for (DocumentId id = 0; id < 2000; ++id) batch.push_back({id, common, {}});
  // A few near ones, and one at k + 1 from them all but 5000.
  batch.push_back({5000, common ^ 0x1, {}});
  batch.push_back({5001, common ^ 0x8000000000000100ULL, {}});
  batch.push_back({5002, common ^ 0x0000000100010001ULL, {}});
  batch.push_back({5003, common ^ 0xf, {}});
  ASSERT_TRUE(store->InsertBatch(batch).ok());

  Result<std::vector<Match>> exact = store->Query(common, 0);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->size(), 2000u);
  // From `common`: the 2000 at 0, 5000 at 1, 5001 at 2, 5002 at 3, 5003 at 4.
  Result<std::vector<Match>> near = store->Query(common, 3);
  ASSERT_TRUE(near.ok());
  std::set<DocumentId> ids;
  for (const Match& m : *near) ids.insert(m.id);
  EXPECT_EQ(ids.size(), near->size()) << "a document reported twice";
  EXPECT_EQ(near->size(), 2003u);
  EXPECT_FALSE(ids.contains(5003));
  EXPECT_EQ(near->back().id, 5002u);

  std::vector<std::vector<DocumentId>> clusters;
  ASSERT_TRUE(
      store
          ->Clusters(
              3, [&](std::span<const DocumentId> c) { clusters.emplace_back(c.begin(), c.end()); })
          .ok());
  ASSERT_EQ(clusters.size(), 1u);
  EXPECT_EQ(clusters[0].size(), 2004u);  // 5003 joins through 5000, 3 bits away
  std::uint64_t pairs = 0;
  ASSERT_TRUE(store->FindAll(3, [&](const NearPair&) { ++pairs; }).ok());
  std::vector<internal::IdFingerprint> docs;
  for (const NewDocument& d : batch) docs.push_back({d.id, d.fingerprint.low()});
  EXPECT_EQ(pairs, testing::BruteForcePairs(docs, 3).size());
}

INSTANTIATE_TEST_SUITE_P(Plans, StoreExactnessTest,
                         ::testing::Values(PlanCase{6, 3, 37}, PlanCase{6, 3, 1 << 19},
                                           PlanCase{5, 3, 37}, PlanCase{4, 2, 1 << 19},
                                           PlanCase{8, 3, 37}, PlanCase{10, 4, 1 << 19},
                                           PlanCase{6, 3, 37, 10'000'000},
                                           PlanCase{6, 3, 37, 1'000'000'000'000},
                                           PlanCase{5, 4, 37},
                                           // 128 bits: prefixes within the head and past it,
                                           // tables that group by all of a short prefix.
                                           PlanCase{8, 6, 37, std::nullopt, 128},
                                           PlanCase{4, 1, 1 << 19, std::nullopt, 128},
                                           PlanCase{7, 6, 37, 10'000'000, 128}),
                         [](const auto& info) {
                           return "blocks" + std::to_string(info.param.blocks) + "_distance" +
                                  std::to_string(info.param.distance) + "_staged" +
                                  std::to_string(info.param.staged_documents) + "_expected" +
                                  std::to_string(info.param.expected_documents.value_or(0)) +
                                  (info.param.bits == 64 ? "" : "_bits128");
                         });

}  // namespace
}  // namespace fpstore
