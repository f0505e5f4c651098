// Tables without ids: every table but table 0 holds each fingerprint once, for all the documents
// that have it, so its key must stay while any document in the tables has that fingerprint and go
// with the last one, whichever path removes it.

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/table_properties.h>

#include <algorithm>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "brute_force.h"
#include "format/groups.h"
#include "format/member_filter.h"
#include "format/records.h"
#include "fpstore/bulk_loader.h"
#include "fpstore/store.h"
#include "open/store_impl.h"
#include "raw_store.h"
#include "store_checks.h"
#include "temp_dir.h"

namespace fpstore {
namespace {

using internal::IdFingerprint;
using testing::ExpectMatchesBruteForce;
using testing::MetadataFor;
using testing::MustOpen;
using testing::Random;
using testing::TempDir;
using testing::TestSeed;

// `copies` documents for each of `fingerprints` random fingerprints, ids
// from `first`.
std::vector<IdFingerprint> Copies(std::uint64_t seed, int fingerprints, int copies,
                                  DocumentId first = 0) {
  Random rnd(seed);
  std::vector<IdFingerprint> docs;
  for (int f = 0; f < fingerprints; ++f) {
    const std::uint64_t fp = rnd.Next();
    for (int c = 0; c < copies; ++c) docs.push_back({first + docs.size(), fp});
  }
  return docs;
}

// A store at `path` holding `docs`, merged into the tables.
std::unique_ptr<Store> StoreInTables(const std::string& path,
                                     const std::vector<IdFingerprint>& docs) {
  std::unique_ptr<Store> store = MustOpen(path);
  if (store == nullptr) return nullptr;
  for (const IdFingerprint& d : docs) {
    EXPECT_TRUE(store->Insert(d.id, d.fingerprint, MetadataFor(d.id)).ok());
  }
  EXPECT_TRUE(store->Flush().ok());
  return store;
}

void ExpectVerifies(Store& store) {
  const Status verify = store.Verify();
  EXPECT_TRUE(verify.ok()) << verify.ToString();
}

TEST(FingerprintTablesTest, NewStoresCutGroupsForTheDefaultSize) {
  TempDir dir;
  std::unique_ptr<Store> store = MustOpen(dir.Sub("store"));
  ASSERT_NE(store, nullptr);
  Result<StoreStats> stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->internals.group_bits, 19);  // cut for 100M documents, the default
}

// A plan whose prefixes are shorter than 6 bits cuts table 0's groups
// there: the in-memory scans, which read table 0 in slices, one a thread,
// must cut them between groups, however many threads read.
TEST(FingerprintTablesTest, ScansReadEveryDocumentOfGroupsFewerThanTheirSlices) {
  const std::uint64_t seed = TestSeed(69);
  TempDir dir;
  StoreOptions options;
  options.blocks = 13;  // 13 tables, prefixes of 4 and 5 bits
  options.distance = 12;
  std::unique_ptr<Store> store = MustOpen(dir.Sub("store"), options);
  ASSERT_NE(store, nullptr);
  ASSERT_LT(store->plan().table(0).prefix_bits(), 6);
  // Copies, so that FindAll at distance 0 has pairs in every group.
  const std::vector<IdFingerprint> docs = Copies(seed, 200, 2);
  std::vector<NewDocument> batch;
  for (const IdFingerprint& d : docs) batch.push_back({d.id, d.fingerprint, {}});
  ASSERT_TRUE(store->InsertBatch(batch).ok());
  ASSERT_TRUE(store->Flush().ok());
  for (int threads : {1, 2, 3, 5, 6}) {
    ScanOptions scan;
    scan.threads = threads;
    std::vector<NearPair> pairs;
    ASSERT_TRUE(store
                    ->FindAll(
                        0, [&](const NearPair& p) { pairs.push_back(p); }, scan)
                    .ok());
    std::sort(pairs.begin(), pairs.end());
    EXPECT_TRUE(pairs == testing::BruteForcePairs(docs, 0)) << threads << " threads";
  }
}

// The groups are cut for the documents expected when the store is created,
// and stay so: what a later open expects does not change them.
TEST(FingerprintTablesTest, GroupsAreCutForTheDocumentsExpectedAtCreation) {
  const std::uint64_t seed = TestSeed(67);
  const std::vector<IdFingerprint> docs = Copies(seed, 300, 1);
  TempDir dir;
  const std::string path = dir.Sub("store");
  StoreOptions options;
  options.durability = Durability::kNoSync;
  options.expected_documents = 1'000'000;
  {
    std::unique_ptr<Store> store = MustOpen(path, options);
    ASSERT_NE(store, nullptr);
    for (const IdFingerprint& d : docs) {
      ASSERT_TRUE(store->Insert(d.id, d.fingerprint, MetadataFor(d.id)).ok());
    }
    ASSERT_TRUE(store->Flush().ok());
    EXPECT_EQ(store->Stats()->internals.group_bits, 12);  // cut for 1M documents
    ASSERT_TRUE(store->Close().ok());
  }
  options.expected_documents = 1'000'000'000;
  std::unique_ptr<Store> store = MustOpen(path, options);
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->Stats()->internals.group_bits, 12);
  ExpectMatchesBruteForce(*store, docs, seed, "reopened");
  ExpectVerifies(*store);
}

// Removal and replacement, one by one and in batches: a shared fingerprint
// is found while one of its documents is left, and leaves no key behind.
TEST(FingerprintTablesTest, SharedFingerprintLastsAsLongAsItsLastDocument) {
  const std::uint64_t seed = TestSeed(41);
  std::vector<IdFingerprint> docs = Copies(seed, 30, 4);
  TempDir dir;
  std::unique_ptr<Store> store = StoreInTables(dir.Sub("store"), docs);
  ASSERT_NE(store, nullptr);
  ExpectMatchesBruteForce(*store, docs, seed, "all copies");

  // std::uint64_t 0 loses one copy, 1 three, 2 all four one by one, 3 all
  // four in one batch that moves them elsewhere.
  for (DocumentId id : {0, 4, 5, 6, 8, 9, 10, 11}) ASSERT_TRUE(store->Remove(id).ok());
  std::erase_if(docs, [](const IdFingerprint& d) {
    return d.id == 0 || (d.id >= 4 && d.id <= 6) || (d.id >= 8 && d.id <= 11);
  });
  std::vector<NewDocument> moves;
  std::vector<std::string> metadata;
  metadata.reserve(docs.size());  // the moves point into it
  Random rnd(seed + 1);
  for (IdFingerprint& d : docs) {
    if (d.id < 12 || d.id >= 16) continue;
    d.fingerprint = rnd.Next();
    metadata.push_back(MetadataFor(d.id));
    moves.push_back({d.id, d.fingerprint, metadata.back()});
  }
  ASSERT_TRUE(store->InsertBatch(moves).ok());
  ExpectMatchesBruteForce(*store, docs, seed, "after removals and moves");
  ExpectVerifies(*store);
  ASSERT_TRUE(store->Compact().ok());
  ExpectMatchesBruteForce(*store, docs, seed, "compacted");
  ExpectVerifies(*store);
}

// Two writers removing copies of the same fingerprints at once: each must
// see the other's removal, or the last two would both leave the key behind.
TEST(FingerprintTablesTest, ConcurrentRemovalsOfCopiesLeaveNoKeyBehind) {
  const std::uint64_t seed = TestSeed(43);
  const std::vector<IdFingerprint> docs = Copies(seed, 50, 8);
  TempDir dir;
  std::unique_ptr<Store> store = StoreInTables(dir.Sub("store"), docs);
  ASSERT_NE(store, nullptr);
  // Even ids on one thread, odd on the other: every fingerprint's last two
  // copies go on different threads.
  std::vector<std::jthread> writers;
  std::vector<Status> failures(2);
  for (int w = 0; w < 2; ++w) {
    writers.emplace_back([&, w] {
      for (const IdFingerprint& d : docs) {
        if (static_cast<int>(d.id % 2) != w) continue;
        if (Status s = store->Remove(d.id); !s.ok() && failures[w].ok()) failures[w] = s;
      }
    });
  }
  writers.clear();
  for (const Status& s : failures) EXPECT_TRUE(s.ok()) << s.ToString();
  for (const IdFingerprint& d : docs) {
    Result<std::vector<Match>> found = store->Query(d.fingerprint, 3);
    ASSERT_TRUE(found.ok()) << found.status().ToString();
    EXPECT_TRUE(found->empty());
  }
  ExpectVerifies(*store);
  Result<StoreStats> stats = store->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->documents, 0u);
}

// A bulk load that replaces some copies keeps the key; one that replaces
// every copy, or moves them all to one new fingerprint, drops it.
TEST(FingerprintTablesTest, BulkLoadDropsAFingerprintOnlyWithItsLastDocument) {
  const std::uint64_t seed = TestSeed(47);
  std::vector<IdFingerprint> docs = Copies(seed, 20, 3);
  TempDir dir;
  std::unique_ptr<Store> store = StoreInTables(dir.Sub("store"), docs);
  ASSERT_NE(store, nullptr);

  Random rnd(seed + 1);
  const std::uint64_t shared_target = rnd.Next();
  Result<std::unique_ptr<BulkLoader>> loader = store->NewBulkLoader({});
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  for (IdFingerprint& d : docs) {
    const std::size_t group = d.id / 3;
    // Groups 0-4 lose one copy, 5-9 all three, 10-11 move to one shared
    // new fingerprint, 12 takes group 13's fingerprint whose copies move
    // away.
    std::uint64_t next = d.fingerprint.low();
    if (group < 5 && d.id % 3 == 0) next = rnd.Next();
    if (group >= 5 && group < 10) next = rnd.Next();
    if (group == 10 || group == 11) next = shared_target;
    if (group == 12) next = docs[13 * 3].fingerprint.low();
    if (group == 13) next = rnd.Next();
    if (next == d.fingerprint) continue;
    d.fingerprint = next;
    ASSERT_TRUE((*loader)->Add(d.id, next, MetadataFor(d.id)).ok());
  }
  // New documents with fingerprints that are already stored.
  for (DocumentId id = 1000; id < 1005; ++id) {
    docs.push_back({id, docs[id - 1000].fingerprint});
    ASSERT_TRUE((*loader)->Add(id, docs.back().fingerprint, MetadataFor(id)).ok());
  }
  Result<BulkLoadStats> stats = (*loader)->Finish();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  ExpectMatchesBruteForce(*store, docs, seed, "after the bulk load");
  ExpectVerifies(*store);
}

// A streamed FindAll with no memory to spare reads the ids of linked
// fingerprints in batches of about a thousand entries; thousands of near
// pairs take several batches per table, and every pair is still found once.
TEST(FingerprintTablesTest, StreamedScansReadIdsInBatches) {
  const std::uint64_t seed = TestSeed(59);
  Random rnd(seed);
  std::vector<IdFingerprint> docs;
  for (DocumentId id = 0; id < 16000; id += 2) {
    const std::uint64_t fp = rnd.Next();
    docs.push_back({id, fp});
    docs.push_back({id + 1, fp ^ (std::uint64_t{1} << rnd.Uniform(64))});
  }
  docs.push_back({16000, docs[0].fingerprint});  // a copy: an id-less key with two ids
  TempDir dir;
  std::unique_ptr<Store> store = StoreInTables(dir.Sub("store"), docs);
  ASSERT_NE(store, nullptr);
  ScanOptions streamed;
  streamed.memory_bytes = 0;
  std::vector<NearPair> pairs;
  ASSERT_TRUE(store
                  ->FindAll(
                      3, [&](const NearPair& p) { pairs.push_back(p); }, streamed)
                  .ok());
  std::sort(pairs.begin(), pairs.end());
  EXPECT_TRUE(pairs == testing::BruteForcePairs(docs, 3));
  std::vector<std::vector<DocumentId>> clusters;
  ASSERT_TRUE(
      store
          ->Clusters(
              3, [&](std::span<const DocumentId> c) { clusters.emplace_back(c.begin(), c.end()); },
              streamed)
          .ok());
  EXPECT_EQ(clusters, testing::BruteForceClusters(docs, 3));
}

// Adds (or takes out) `fp` in table t (not table 0), as a raw write that
// bypasses the store.
void EditTable(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* family, const TablePermutation& perm,
               int group_bits, std::uint64_t fp, bool add) {
  const Fingerprint permuted = perm.Apply(fp);
  // The group's value rewritten, with or without the member.
  const internal::GroupLayout layout(perm.prefix_bits(), group_bits);
  const internal::GroupLayout::Key k = layout.KeyOf(permuted);
  const rocksdb::Slice key(k.data(), layout.key_bytes());
  std::string value;
  const rocksdb::Status s = db.Get({}, family, key, &value);
  ASSERT_TRUE(s.ok() || s.IsNotFound()) << s.ToString();
  std::vector<Fingerprint> members;
  ASSERT_TRUE(internal::DecodeGroupValue(layout, value, members));
  const Fingerprint member = layout.MemberBits(permuted);
  const auto at = std::lower_bound(members.begin(), members.end(), member);
  if (add) {
    members.insert(at, member);
  } else {
    ASSERT_TRUE(at != members.end() && *at == member);
    members.erase(at);
  }
  EXPECT_TRUE(db.Put({}, family, key, internal::EncodeGroupValue(layout, members)).ok());
}

// Verify names a table's fingerprint that no document has, and one that
// is missing; a query that meets the stray entry reports corruption.
TEST(FingerprintTablesTest, VerifyFindsStrayAndMissingFingerprints) {
  const std::uint64_t seed = TestSeed(53);
  const std::vector<IdFingerprint> docs = Copies(seed, 40, 2);
  TempDir dir;
  const std::string path = dir.Sub("store");
  PermutationPlan plan = *PermutationPlan::Create(6, 3);
  int group_bits = 0;
  {
    std::unique_ptr<Store> store = StoreInTables(path, docs);
    ASSERT_NE(store, nullptr);
    group_bits = store->Stats()->internals.group_bits;
    ASSERT_TRUE(store->Close().ok());
  }
  const std::uint64_t stray = Random(seed + 1).Next();
  testing::EditWithRocksDb(path, [&](rocksdb::DB& db, const auto& family) {
    EditTable(db, family("table-005"), plan.table(5), group_bits, docs[0].fingerprint.low(), false);
    EditTable(db, family("table-007"), plan.table(7), group_bits, stray, true);
  });
  std::unique_ptr<Store> store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  const Status verify = store->Verify();
  ASSERT_TRUE(verify.IsCorruption()) << verify.ToString();
  EXPECT_NE(verify.message().find("table-005: fingerprint " +
                                  std::to_string(docs[0].fingerprint.low()) + " of document "),
            std::string::npos)
      << verify.message();
  EXPECT_NE(verify.message().find("table-007: fingerprint " + std::to_string(stray) +
                                  ", which no document in the tables has"),
            std::string::npos)
      << verify.message();
  // Table 0 still finds the copies of the fingerprint whose entry went.
  Result<std::vector<Match>> found = store->Query(docs[0].fingerprint, 0);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(found->size(), 2u);
  // A query whose first table shared with `stray` is table 7 meets the
  // stray entry there, and no document for it in table 0.
  std::uint64_t probe = stray;
  for (int i = 0; i < 64 && probe == stray; ++i) {
    for (int j = i + 1; j < 64; ++j) {
      const std::uint64_t q = stray ^ (std::uint64_t{1} << i) ^ (std::uint64_t{1} << j);
      if (plan.FirstSharedTable(q, stray) == 7) {
        probe = q;
        break;
      }
    }
  }
  ASSERT_NE(probe, stray);
  Result<std::vector<Match>> stray_found = store->Query(probe, 3);
  ASSERT_FALSE(stray_found.ok());
  EXPECT_TRUE(stray_found.status().IsCorruption()) << stray_found.status().ToString();
}

// The tables' members are random bits: their files are never compressed,
// whether a merge wrote them into an empty table (the bottom level) or
// into one with files (level 0), or a compaction rewrote them.
TEST(FingerprintTablesTest, TableFilesAreNeverCompressed) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  Random rnd(TestSeed(21));
  const auto insert_and_flush = [&] {
    std::unique_ptr<Store> store = MustOpen(path);
    ASSERT_NE(store, nullptr);
    std::vector<NewDocument> batch;
    for (int i = 0; i < 1000; ++i) batch.push_back({rnd.Next(), rnd.Next(), {}});
    ASSERT_TRUE(store->InsertBatch(batch).ok());
    ASSERT_TRUE(store->Flush().ok());
    ASSERT_TRUE(store->Close().ok());
  };
  insert_and_flush();
  insert_and_flush();
  // Every table file's compression: both merges' files, or what
  // compactions made of them.
  std::vector<std::string> names;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
  std::size_t files = 0;
  testing::EditWithRocksDb(path, [&](rocksdb::DB& db, const auto& family) {
    for (const std::string& name : names) {
      if (!name.starts_with("table-")) continue;
      rocksdb::TablePropertiesCollection properties;
      ASSERT_TRUE(db.GetPropertiesOfAllTables(family(name), &properties).ok());
      for (const auto& [file_path, table] : properties) {
        ++files;
        EXPECT_EQ(table->compression_name, "NoCompression") << file_path;
      }
    }
  });
  EXPECT_GE(files, 20u);
}

// What stays pinned while a store answers queries (every file's index and
// RocksDB filter, and the tables' member filters) is what
// EstimateStoreMemory, without its block cache, says: per document while a
// table's prefixes are mostly free, and no more once every prefix is taken,
// the case of a billion documents in 10 tables (docs/performance.md, "Memory").
TEST(StoreEstimatesTest, PinnedMemoryIsWhatTheModelSays) {
  struct Case {
    int blocks;
    int documents;
    bool saturated;  // documents well past 2^prefix bits
  };
  // (6, 3): 31-33-bit prefixes; (4, 3): 16 bits, 4.6 documents a prefix.
  for (const Case c : {Case{6, 100'000, false}, Case{4, 300'000, true}}) {
    SCOPED_TRACE(::testing::Message() << "blocks " << c.blocks);
    TempDir dir;
    const std::string path = dir.path() + "/store";
    StoreOptions options;
    options.blocks = c.blocks;
    options.distance = 3;
    options.expected_documents = c.documents;
    options.fingerprint = FingerprintOptions{};
    options.fingerprint->signature_bytes = 0;
    {
      std::unique_ptr<Store> store = *Store::Open(path, options);
      std::unique_ptr<BulkLoader> loader = *store->NewBulkLoader();
      Random rnd(TestSeed(31));
      for (int i = 0; i < c.documents; ++i)
        ASSERT_TRUE(loader->Add({DocumentId(i), rnd.Next()}).ok());
      ASSERT_TRUE(loader->Finish().ok());
      ASSERT_TRUE(store->Close().ok());
    }
    std::vector<std::string> names;
    ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
    double pinned = 0, member_filters = 0;
    testing::EditWithRocksDb(path, [&](rocksdb::DB& db, const auto& family) {
      for (const std::string& name : names) {
        rocksdb::TablePropertiesCollection properties;
        ASSERT_TRUE(db.GetPropertiesOfAllTables(family(name), &properties).ok());
        for (const auto& [file, table] : properties) {
          pinned += double(table->filter_size + table->index_size);
          if (const std::string* filter = internal::MemberFilterProperty(*table)) {
            member_filters += double(filter->size());
          }
        }
      }
    });
    pinned += member_filters;
    const PermutationPlan plan = *PermutationPlan::Create(c.blocks, 3);
    const double estimate = EstimateStoreMemory(plan, c.documents, 0, 0);
    EXPECT_NEAR(pinned / estimate, 1.0, 0.1)
        << pinned << " bytes pinned, " << estimate << " estimated";
    // About 10 bits a member and table while the prefixes are mostly free; once
    // they are all taken, 10 bits for each prefix and 10 more for each crowded
    // one: (0.99 + 0.94) * 2^16 * 10 / 8 / 300,000 = 0.53 bytes a member.
    const double per_member = member_filters / c.documents / double(plan.table_count());
    EXPECT_NEAR(per_member, c.saturated ? 0.53 : 1.25, 0.05);
  }
}

}  // namespace
}  // namespace fpstore
