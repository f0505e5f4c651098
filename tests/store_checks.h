// Checks that a store answers exactly as a brute-force scan over the
// documents it should hold: Query, QueryBatch, FindAll, Clusters, Verify and
// the document count.

#ifndef FPSTORE_TESTS_STORE_CHECKS_H_
#define FPSTORE_TESTS_STORE_CHECKS_H_

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "brute_force.h"
#include "fpstore/store.h"
#include "open/store_impl.h"
#include "store_location.h"

namespace fpstore::testing {

using internal::IdFingerprint;

// The metadata the checks expect each document to carry.
inline std::string MetadataFor(DocumentId id) {
  return "https://example.org/page/" + std::to_string(id);
}

inline std::vector<IdDistance> AsIdDistances(const std::vector<Match>& matches) {
  std::vector<IdDistance> out;
  for (const Match& m : matches) out.push_back({m.id, m.distance});
  std::sort(out.begin(), out.end());
  return out;
}

// Connected components of the brute-force pair graph, two or more members.
inline std::vector<std::vector<DocumentId>> BruteForceClusters(std::span<const IdFingerprint> docs,
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

// Opens (creating if needed) a store sized for tests: small caches and no
// fsync, since durability has tests of its own, and in Redis, unless the
// test says otherwise, buckets cut for the few thousand documents tests
// hold (a store cut for the default 100 million would give each entry a
// sorted set of its own). Null, with a test failure, if it cannot.
inline std::unique_ptr<Store> MustOpen(const std::string& path, StoreOptions options = {}) {
  options.durability = Durability::kNoSync;
  if (kRedisBackend && !options.expected_documents) options.expected_documents = 4096;
  options.block_cache_bytes = 8 << 20;
  options.write_buffer_bytes = 8 << 20;
  Result<std::unique_ptr<Store>> store = Store::Open(path, options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? *std::move(store) : nullptr;
}

// What a store should hold, id -> fingerprint, and its documents in id
// order for the checks below.
using DocumentModel = std::map<DocumentId, std::uint64_t>;
inline std::vector<IdFingerprint> DocsOf(const DocumentModel& model) {
  std::vector<IdFingerprint> docs;
  for (const auto& [id, fp] : model) docs.push_back({id, fp});
  return docs;
}

// Each of `queries` at every distance up to the plan's, one by one and
// batched, against brute force over `docs`: the same documents at the same
// distances, nearest first, each with its stored fingerprint and metadata.
// REQUIRES: every stored document's metadata is MetadataFor(id).
inline void ExpectQueriesMatchBruteForce(Store& store, const std::vector<IdFingerprint>& docs,
                                         const std::vector<Fingerprint>& queries) {
  std::unordered_map<DocumentId, Fingerprint> stored;
  for (const IdFingerprint& d : docs) stored.emplace(d.id, d.fingerprint);
  for (int k = 0; k <= store.plan().distance(); ++k) {
    Result<std::vector<std::vector<Match>>> batch = store.QueryBatch(queries, k);
    ASSERT_TRUE(batch.ok()) << batch.status().ToString();
    ASSERT_EQ(batch->size(), queries.size());
    for (std::size_t i = 0; i < queries.size(); ++i) {
      const std::vector<IdDistance> expected = BruteForceQuery(docs, queries[i], k);
      Result<std::vector<Match>> single = store.Query(queries[i], k);
      ASSERT_TRUE(single.ok()) << single.status().ToString();
      ASSERT_EQ(AsIdDistances(*single), expected)
          << "query " << queries[i] << " k=" << k << " "
          << SortedDifference(expected, AsIdDistances(*single));
      ASSERT_EQ(AsIdDistances((*batch)[i]), expected)
          << "batch query " << queries[i] << " k=" << k << " "
          << SortedDifference(expected, AsIdDistances((*batch)[i]));
      for (const std::vector<Match>* answer : {&*single, &(*batch)[i]}) {
        for (std::size_t j = 0; j < answer->size(); ++j) {
          const Match& m = (*answer)[j];
          // A stale table entry would carry a version the document left.
          EXPECT_EQ(m.fingerprint, stored.at(m.id)) << "document " << m.id;
          EXPECT_EQ(m.metadata, MetadataFor(m.id));
          EXPECT_EQ(HammingDistance(m.fingerprint, queries[i]), m.distance);
          if (j > 0) {
            EXPECT_LE((*answer)[j - 1].distance, m.distance);
          }
        }
      }
    }
  }
}

inline void ExpectQueriesMatchBruteForce(Store& store, const std::vector<IdFingerprint>& docs,
                                         const std::vector<std::uint64_t>& queries) {
  ExpectQueriesMatchBruteForce(store, docs, Fingerprints(queries));
}

// REQUIRES: every stored document's metadata is MetadataFor(id).
inline void ExpectMatchesBruteForce(Store& store, const std::vector<IdFingerprint>& docs,
                                    std::uint64_t seed, const std::string& phase) {
  SCOPED_TRACE(std::string(phase) + " seed=" + std::to_string(seed) +
               " plan=" + store.plan().ToString());
  const int k_max = store.plan().distance();
  const int bits = store.plan().bits();
  Random rnd(seed + 1);
  // Queries: stored fingerprints, their planted neighbours at every
  // distance up to k + 1, and random ones.
  std::vector<Fingerprint> queries;
  for (int i = 0; i < 30 && !docs.empty(); ++i) {
    Fingerprint q = docs[rnd.Uniform(docs.size())].fingerprint;
    const int flips = static_cast<int>(rnd.Uniform(k_max + 2));
    for (int f = 0; f < flips; ++f) q ^= Fingerprint(1) << static_cast<int>(rnd.Uniform(bits));
    queries.push_back(q);
  }
  for (int i = 0; i < 10; ++i) queries.push_back(rnd.Next(bits));
  ASSERT_NO_FATAL_FAILURE(ExpectQueriesMatchBruteForce(store, docs, queries));

  // Sorted in memory, and (no memory for that) read table by table.
  ScanOptions streamed;
  streamed.memory_bytes = 0;
  for (const ScanOptions& scan : {ScanOptions(), streamed}) {
    const std::string how = scan.memory_bytes == 0 ? " streamed" : " in memory";
    for (int k : {0, k_max}) {
      std::vector<NearPair> pairs;
      ASSERT_TRUE(store
                      .FindAll(
                          k, [&](const NearPair& p) { pairs.push_back(p); }, scan)
                      .ok());
      std::sort(pairs.begin(), pairs.end());
      const std::vector<NearPair> expected = BruteForcePairs(docs, k);
      EXPECT_TRUE(pairs == expected)
          << "FindAll k=" << k << how << " " << SortedDifference(expected, pairs);

      std::vector<std::vector<DocumentId>> clusters;
      ASSERT_TRUE(store
                      .Clusters(
                          k,
                          [&](std::span<const DocumentId> ids) {
                            clusters.emplace_back(ids.begin(), ids.end());
                          },
                          scan)
                      .ok());
      EXPECT_EQ(clusters, BruteForceClusters(docs, k)) << "Clusters k=" << k << how;
    }
  }
  std::vector<IdFingerprint> listed;
  ASSERT_TRUE(store
                  .ForEachDocument([&](const Document& d) {
                    EXPECT_EQ(d.metadata, MetadataFor(d.id));
                    listed.push_back({d.id, d.fingerprint});
                  })
                  .ok());
  std::vector<IdFingerprint> expected_docs = docs;
  std::sort(expected_docs.begin(), expected_docs.end(),
            [](const IdFingerprint& a, const IdFingerprint& b) { return a.id < b.id; });
  ASSERT_EQ(listed.size(), expected_docs.size());
  for (std::size_t i = 0; i < listed.size(); ++i) {
    ASSERT_EQ(listed[i].id, expected_docs[i].id) << "ForEachDocument order";
    ASSERT_EQ(listed[i].fingerprint, expected_docs[i].fingerprint) << "document " << listed[i].id;
  }

  Status verify = store.Verify();
  EXPECT_TRUE(verify.ok()) << verify.ToString();
  Result<StoreStats> stats = store.Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->documents, docs.size());
}

}  // namespace fpstore::testing

#endif  // FPSTORE_TESTS_STORE_CHECKS_H_
