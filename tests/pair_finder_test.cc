#include "plan/pair_finder.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "brute_force.h"
#include "fpstore/permutation.h"
#include "plan/near_pairs.h"

namespace fpstore::internal {
namespace {

using testing::BruteForcePairs;
using testing::MakeCorpus;
using testing::Plant;
using testing::SortedDifference;
using testing::TestSeed;

PermutationPlan MustCreate(int blocks, int distance) {
  Result<PermutationPlan> plan = PermutationPlan::Create(blocks, distance);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return *std::move(plan);
}

// Near-duplicates at every distance up to k + 1, exact copies included.
std::vector<Plant> PlantsUpTo(int k) {
  std::vector<Plant> plants;
  for (int d = 0; d <= k + 1; ++d) plants.push_back({d, 40});
  return plants;
}

void ExpectSameAsBruteForce(std::span<const IdFingerprint> docs, const PermutationPlan& plan,
                            int k) {
  SCOPED_TRACE(plan.ToString() + " k=" + std::to_string(k));
  const std::vector<NearPair> expected = BruteForcePairs(docs, k);
  const std::vector<NearPair> found = FindAllPairsInMemory(docs, plan, k);
  EXPECT_TRUE(found == expected) << SortedDifference(expected, found);
}

TEST(PairFinderTest, EmptyAndSingle) {
  const PermutationPlan plan = MustCreate(6, 3);
  EXPECT_TRUE(FindAllPairsInMemory({}, plan, 3).empty());
  const IdFingerprint one[] = {{7, 0x0123456789ABCDEFu}};
  EXPECT_TRUE(FindAllPairsInMemory(one, plan, 3).empty());
}

TEST(PairFinderTest, SmallHandExample) {
  const PermutationPlan plan = MustCreate(4, 2);
  const IdFingerprint docs[] = {
      {10, 0xFFFF000000000000u},  // the base
      {4, 0xFFFF000000000000u},   // the same fingerprint under another id
      {7, 0xFFFF000000000003u},   // 2 bits from the base
      {2, 0x7FFF000000000001u},   // 2 from the base, 2 from id 7
      {5, 0x0000FFFF00000000u},   // far from everything
  };
  const std::vector<NearPair> expected = {
      {2, 4, 2}, {2, 7, 2}, {2, 10, 2}, {4, 7, 2}, {4, 10, 0}, {7, 10, 2},
  };
  EXPECT_EQ(FindAllPairsInMemory(docs, plan, 2), expected);
  EXPECT_EQ(FindAllPairsInMemory(docs, plan, 0), (std::vector<NearPair>{{4, 10, 0}}));
}

TEST(PairFinderTest, MatchesBruteForceOnPlantedCorpora) {
  const std::uint64_t seed = TestSeed(11);
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::pair<int, int> plans[] = {{6, 3}, {5, 3}, {4, 2}, {8, 3}, {10, 4}, {3, 0}};
  std::uint64_t corpus_seed = seed;
  for (auto [m, k] : plans) {
    const PermutationPlan plan = MustCreate(m, k);
    const std::vector<IdFingerprint> docs = MakeCorpus(corpus_seed++, 1000, PlantsUpTo(k));
    ExpectSameAsBruteForce(docs, plan, k);
  }
}

TEST(PairFinderTest, SmallerDistanceThanThePlan) {
  const std::uint64_t seed = TestSeed(12);
  SCOPED_TRACE("seed " + std::to_string(seed));
  const PermutationPlan plan = MustCreate(6, 3);
  const std::vector<IdFingerprint> docs = MakeCorpus(seed, 1000, PlantsUpTo(3));
  for (int k = 0; k <= 3; ++k) ExpectSameAsBruteForce(docs, plan, k);
}

// Fingerprints that vary in only a few bits crowd many documents into each
// prefix and make many pairs, most of which several tables see.
TEST(PairFinderTest, MatchesBruteForceOnCrowdedFingerprints) {
  const std::uint64_t seed = TestSeed(13);
  SCOPED_TRACE("seed " + std::to_string(seed));
  testing::Random rnd(seed);
  for (auto [m, k] : {std::pair{6, 3}, {5, 3}, {8, 3}, {10, 4}}) {
    const std::uint64_t base = rnd.Next();
    const std::uint64_t varying = rnd.Bits(12);
    std::vector<IdFingerprint> docs;
    for (std::uint64_t id = 0; id < 400; ++id) {
      docs.push_back({id * 3 + 1, base ^ (rnd.Next() & varying)});
    }
    const PermutationPlan plan = MustCreate(m, k);
    ExpectSameAsBruteForce(docs, plan, k);
  }
}

// The sets links make, whether they are folded many times on the way (a first
// fold at 64 links) or once at the end: each as a plain union-find makes it,
// ascending, in the order of their first ids.
TEST(DisjointSetsTest, SetsAreTheLinksComponentsHoweverOftenFolded) {
  std::mt19937_64 rnd(TestSeed(29));
  std::vector<DocumentId> universe(2'000);
  for (DocumentId& id : universe) id = rnd();
  std::vector<std::pair<DocumentId, DocumentId>> links;
  for (int i = 0; i < 1'500; ++i) {
    links.emplace_back(universe[rnd() % universe.size()], universe[rnd() % universe.size()]);
  }
  // The reference: components by a map-based union-find, grouped and sorted.
  std::map<DocumentId, DocumentId> parent;
  std::function<DocumentId(DocumentId)> find = [&](DocumentId x) {
    auto [it, added] = parent.try_emplace(x, x);
    return it->second == x ? x : it->second = find(it->second);
  };
  for (auto [a, b] : links) {
    const DocumentId ra = find(a), rb = find(b);
    if (ra != rb) parent[ra] = rb;
  }
  std::map<DocumentId, std::vector<DocumentId>> by_root;
  for (const auto& [id, up] : parent) by_root[find(id)].push_back(id);
  std::vector<std::vector<DocumentId>> expected;
  for (auto& [root, ids] : by_root) {
    if (ids.size() < 2) continue;
    std::sort(ids.begin(), ids.end());
    expected.push_back(ids);
  }
  std::sort(expected.begin(), expected.end());
  ASSERT_GT(expected.size(), 100u);

  for (std::size_t first_fold : {std::size_t{64}, std::size_t{1} << 22}) {
    SCOPED_TRACE(first_fold);
    DisjointSets sets(first_fold);
    for (auto [a, b] : links) sets.Union(a, b);
    std::vector<std::vector<DocumentId>> got;
    sets.ForEachSet(
        [&](std::span<const DocumentId> set) { got.emplace_back(set.begin(), set.end()); });
    EXPECT_EQ(got, expected);
  }
}

}  // namespace
}  // namespace fpstore::internal
