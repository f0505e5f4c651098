// The store against brute force: every query, batch query, FindAll and
// Clusters answer must equal a popcount scan over all documents, through
// inserts, removes, re-inserts, reopening and compaction, for several plans.

#include "fpstore/store.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "brute_force.h"
#include "temp_dir.h"

namespace fpstore {
namespace {

using internal::IdFingerprint;
using testing::BruteForcePairs;
using testing::BruteForceQuery;
using testing::IdDistance;
using testing::MakeCorpus;
using testing::Plant;
using testing::Random;
using testing::SortedDifference;
using testing::TempDir;
using testing::TestSeed;

std::unique_ptr<Store> MustOpen(const std::string& path, StoreOptions options = {}) {
  options.durability = Durability::kNoSync;  // durability has tests of its own
  options.block_cache_bytes = 8 << 20;
  options.write_buffer_bytes = 8 << 20;
  Result<std::unique_ptr<Store>> store = Store::Open(path, options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? *std::move(store) : nullptr;
}

std::string MetadataFor(DocumentId id) { return "https://example.org/page/" + std::to_string(id); }

std::vector<IdDistance> AsIdDistances(const std::vector<Match>& matches) {
  std::vector<IdDistance> out;
  for (const Match& m : matches) out.push_back({m.id, m.distance});
  std::sort(out.begin(), out.end());
  return out;
}

// Connected components of the brute-force pair graph, two or more members.
std::vector<std::vector<DocumentId>> BruteForceClusters(std::span<const IdFingerprint> docs,
                                                        int k) {
  std::map<DocumentId, DocumentId> parent;
  auto find = [&](DocumentId x) {
    while (parent.at(x) != x) x = parent.at(x);
    return x;
  };
  for (const IdFingerprint& d : docs) parent[d.id] = d.id;
  for (const NearPair& p : BruteForcePairs(docs, k)) {
    const DocumentId a = find(p.first), b = find(p.second);
    parent[std::max(a, b)] = std::min(a, b);
  }
  std::map<DocumentId, std::vector<DocumentId>> groups;
  for (const IdFingerprint& d : docs) groups[find(d.id)].push_back(d.id);
  std::vector<std::vector<DocumentId>> clusters;
  for (auto& [root, ids] : groups) {
    std::sort(ids.begin(), ids.end());
    if (ids.size() > 1) clusters.push_back(ids);
  }
  std::sort(clusters.begin(), clusters.end());
  return clusters;
}

struct PlanCase {
  int blocks;
  int distance;
};

class StoreExactnessTest : public ::testing::TestWithParam<PlanCase> {
 protected:
  void SetUp() override {
    seed_ = TestSeed(20261122 + GetParam().blocks * 100 + GetParam().distance);
    options_.blocks = GetParam().blocks;
    options_.distance = GetParam().distance;
  }

  // The store must answer exactly as brute force over `docs` does.
  void ExpectExact(Store& store, const std::vector<IdFingerprint>& docs, const char* phase) {
    SCOPED_TRACE(std::string(phase) + " seed=" + std::to_string(seed_) +
                 " plan=" + store.plan().ToString());
    const int k_max = GetParam().distance;
    Random rnd(seed_ + 1);
    // Queries: stored fingerprints, their planted neighbours at every
    // distance up to k + 1, and random ones.
    std::vector<Fingerprint> queries;
    for (int i = 0; i < 30 && !docs.empty(); ++i) {
      Fingerprint q = docs[rnd.Uniform(docs.size())].fingerprint;
      const int flips = static_cast<int>(rnd.Uniform(k_max + 2));
      for (int f = 0; f < flips; ++f) q ^= Fingerprint{1} << rnd.Uniform(64);
      queries.push_back(q);
    }
    for (int i = 0; i < 10; ++i) queries.push_back(rnd.Next());

    for (int k = 0; k <= k_max; ++k) {
      Result<std::vector<std::vector<Match>>> batch = store.QueryBatch(queries, k);
      ASSERT_TRUE(batch.ok()) << batch.status().ToString();
      for (std::size_t i = 0; i < queries.size(); ++i) {
        const std::vector<IdDistance> expected = BruteForceQuery(docs, queries[i], k);
        Result<std::vector<Match>> single = store.Query(queries[i], k);
        ASSERT_TRUE(single.ok()) << single.status().ToString();
        ASSERT_EQ(AsIdDistances(*single), expected)
            << "query " << queries[i] << " k=" << k << " "
            << SortedDifference(expected, AsIdDistances(*single));
        ASSERT_EQ(AsIdDistances((*batch)[i]), expected) << "batch query " << queries[i];
        // Nearest first, metadata and fingerprint of the stored document.
        for (std::size_t j = 0; j < single->size(); ++j) {
          const Match& m = (*single)[j];
          EXPECT_EQ(m.metadata, MetadataFor(m.id));
          EXPECT_EQ(HammingDistance(m.fingerprint, queries[i]), m.distance);
          if (j > 0) {
            EXPECT_LE((*single)[j - 1].distance, m.distance);
          }
        }
      }
    }

    for (int k : {0, k_max}) {
      std::vector<NearPair> pairs;
      ASSERT_TRUE(store.FindAll(k, [&](const NearPair& p) { pairs.push_back(p); }).ok());
      std::sort(pairs.begin(), pairs.end());
      const std::vector<NearPair> expected = BruteForcePairs(docs, k);
      EXPECT_TRUE(pairs == expected) << "FindAll k=" << k << " "
                                     << SortedDifference(expected, pairs);

      std::vector<std::vector<DocumentId>> clusters;
      ASSERT_TRUE(store
                      .Clusters(k, [&](std::span<const DocumentId> ids) {
                        clusters.emplace_back(ids.begin(), ids.end());
                      })
                      .ok());
      EXPECT_EQ(clusters, BruteForceClusters(docs, k)) << "Clusters k=" << k;
    }
    Status verify = store.Verify();
    EXPECT_TRUE(verify.ok()) << verify.ToString();
    Result<StoreStats> stats = store.Stats();
    ASSERT_TRUE(stats.ok());
    EXPECT_EQ(stats->documents, docs.size());
  }

  std::uint64_t seed_ = 0;
  StoreOptions options_;
};

TEST_P(StoreExactnessTest, MatchesBruteForceThroughItsLife) {
  const int k = GetParam().distance;
  std::vector<Plant> plants;
  for (int d = 0; d <= k + 1; ++d) plants.push_back({d, 60});
  std::vector<IdFingerprint> docs = MakeCorpus(seed_, 600, plants);

  TempDir dir;
  std::unique_ptr<Store> store = MustOpen(dir.Sub("store"), options_);
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
  ExpectExact(*store, docs, "after inserts");

  // Remove a tenth; move another tenth to new fingerprints near others.
  Random rnd(seed_ + 2);
  rnd.Shuffle(docs);
  const std::size_t tenth = docs.size() / 10;
  for (std::size_t i = 0; i < tenth; ++i) ASSERT_TRUE(store->Remove(docs[i].id).ok());
  EXPECT_TRUE(store->Remove(docs[0].id).IsNotFound());
  docs.erase(docs.begin(), docs.begin() + tenth);
  for (std::size_t i = 0; i < tenth; ++i) {
    Fingerprint moved = docs[docs.size() - 1 - i].fingerprint ^ (Fingerprint{1} << rnd.Uniform(64));
    docs[i].fingerprint = moved;
    ASSERT_TRUE(store->Insert(docs[i].id, moved, MetadataFor(docs[i].id)).ok());
  }
  ExpectExact(*store, docs, "after removes and re-inserts");

  ASSERT_TRUE(store->Close().ok());
  store = MustOpen(dir.Sub("store"));
  ASSERT_NE(store, nullptr);
  ExpectExact(*store, docs, "after reopening");

  ASSERT_TRUE(store->Compact().ok());
  ExpectExact(*store, docs, "after compaction");
}

INSTANTIATE_TEST_SUITE_P(Plans, StoreExactnessTest,
                         ::testing::Values(PlanCase{6, 3}, PlanCase{5, 3}, PlanCase{4, 2},
                                           PlanCase{8, 3}, PlanCase{10, 4}),
                         [](const auto& info) {
                           return "blocks" + std::to_string(info.param.blocks) + "_distance" +
                                  std::to_string(info.param.distance);
                         });

}  // namespace
}  // namespace fpstore
