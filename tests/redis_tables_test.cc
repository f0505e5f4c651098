// The permutation tables in a Redis Cluster (lib/redis/tables.h), against brute force on a real
// cluster of 3 masters and 3 replicas on loopback: every stored document within k of a query is
// found, once, and nothing beyond k; removals take documents out; the sets spread over masters.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "brute_force.h"
#include "redis/tables.h"

namespace fpstore::internal::redis {
namespace {

using testing::MakeCorpus;
using testing::Plant;
using testing::Random;

std::string Seed() {
  const char* seed = std::getenv("FPSTORE_REDIS_SEED");
  return seed != nullptr ? seed : "127.0.0.1:7400";
}

std::set<std::pair<DocumentId, Fingerprint>> BruteForce(const std::map<DocumentId, Fingerprint>& docs,
                                                        Fingerprint q, int k) {
  std::set<std::pair<DocumentId, Fingerprint>> within;
  for (const auto& [id, fp] : docs) {
    if (WithinDistance(fp, q, k)) within.emplace(id, fp);
  }
  return within;
}

class RedisTablesTest : public ::testing::TestWithParam<int> {};

TEST_P(RedisTablesTest, ExactAgainstBruteForce) {
  Result<std::unique_ptr<ClusterClient>> client = ClusterClient::Connect(Seed());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  for (const std::string& m : (*client)->Masters()) ASSERT_TRUE((*client)->RunOn(m, {"FLUSHALL"}).ok());
  const PermutationPlan plan = *PermutationPlan::Create(6, 3);
  const int bucket_bits = GetParam();
  ASSERT_TRUE(Tables::Check(plan, bucket_bits).ok());
  EXPECT_FALSE(Tables::Check(plan, 0).ok());
  EXPECT_FALSE(Tables::Check(plan, 25).ok());
  Tables tables(**client, "exact", plan, bucket_bits);

  const std::vector<IdFingerprint> corpus =
      MakeCorpus(4100 + bucket_bits, 1500, {Plant{0, 20}, Plant{1, 30}, Plant{2, 30}, Plant{3, 30},
                                            Plant{4, 20}});
  ASSERT_TRUE(tables.Add(corpus).ok());
  std::map<DocumentId, Fingerprint> model;
  for (const IdFingerprint& d : corpus) model[d.id] = d.fingerprint;

  Random rnd(99);
  auto check = [&](const char* when) {
    std::vector<Fingerprint> queries;
    for (int i = 0; i < 150; ++i) {
      const Fingerprint base = corpus[rnd.Uniform(corpus.size())].fingerprint;
      queries.push_back(i % 3 == 0 ? rnd.Next() : base ^ rnd.Bits(static_cast<int>(i % 5)));
    }
    for (int k = 0; k <= 3; ++k) {
      Result<std::vector<std::vector<IdFingerprint>>> found = tables.Within(queries, k);
      ASSERT_TRUE(found.ok()) << found.status().ToString();
      for (std::size_t q = 0; q < queries.size(); ++q) {
        std::multiset<std::pair<DocumentId, Fingerprint>> got;
        for (const IdFingerprint& d : (*found)[q]) got.emplace(d.id, d.fingerprint);
        const auto want = BruteForce(model, queries[q], k);
        ASSERT_EQ(got.size(), want.size()) << when << ": query " << q << " k=" << k;
        EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << when << " query " << q;
      }
    }
  };
  ASSERT_NO_FATAL_FAILURE(check("loaded"));

  std::vector<IdFingerprint> removed;
  for (const IdFingerprint& d : corpus) {
    if (d.id % 3 == 0) removed.push_back(d);
  }
  ASSERT_TRUE(tables.Remove(removed).ok());
  ASSERT_TRUE(tables.Remove(removed).ok());  // again: changes nothing
  for (const IdFingerprint& d : removed) model.erase(d.id);
  ASSERT_NO_FATAL_FAILURE(check("after removals"));

  // Every master holds some of the sets.
  for (const std::string& m : (*client)->Masters()) {
    Result<Reply> keys = (*client)->RunOn(m, {"DBSIZE"});
    ASSERT_TRUE(keys.ok());
    EXPECT_GT(keys->integer, 0) << m;
  }
}

INSTANTIATE_TEST_SUITE_P(BucketBits, RedisTablesTest, ::testing::Values(4, 12, 24));

}  // namespace
}  // namespace fpstore::internal::redis
