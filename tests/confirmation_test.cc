// Confirmed matches: queries, CheckAndInsert, FindAll and Clusters keep a
// candidate within k only when its estimated similarity passes, and report
// it; documents without a signature match by distance alone. Checked
// against brute force over crafted signatures.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fpstore/store.h"
#include "raw_store.h"
#include "store_location.h"
#include "temp_dir.h"

namespace fpstore {
namespace {

using testing::StoreAt;
using testing::TempDir;

constexpr int kBytes = 64;  // the default signature's

struct Doc {
  DocumentId id;
  Fingerprint fingerprint;
  Signature signature;
};

// Clusters of documents a few bits apart whose signatures differ from the
// cluster's in up to 200 of their 512 bits (an estimated similarity of 1
// down to about 0.75); every seventh has no signature.
std::vector<Doc> MakeCorpus(std::size_t clusters, std::size_t per_cluster, std::uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Doc> docs;
  DocumentId id = 1;
  for (std::size_t c = 0; c < clusters; ++c) {
    const Fingerprint base = rng();
    std::string bits(kBytes, '\0');
    for (char& s : bits) s = static_cast<char>(rng());
    for (std::size_t m = 0; m < per_cluster; ++m, ++id) {
      Fingerprint fp = base;
      for (std::uint64_t flips = rng() % 4; flips > 0; --flips)
        fp ^= Fingerprint{1} << (rng() % 64);
      std::string own = bits;
      const std::size_t changed = rng() % 200;
      for (std::size_t i = 0; i < changed; ++i) {
        const std::size_t at = rng() % (8 * kBytes);
        own[at / 8] = static_cast<char>(own[at / 8] ^ (1 << (at % 8)));
      }
      Signature signature = id % 7 == 0 ? Signature() : *Signature::FromBytes(own);
      docs.push_back({id, fp, std::move(signature)});
    }
  }
  return docs;
}

bool Passes(const Signature& a, const Signature& b, double t, std::optional<double>* similarity) {
  *similarity = EstimateSimilarity(a, b);
  return !*similarity || **similarity >= t;
}

// What Query must return: id -> similarity.
std::map<DocumentId, std::optional<double>> BruteForceQuery(const std::vector<Doc>& docs,
                                                            const Sketch& q, int k, double t) {
  std::map<DocumentId, std::optional<double>> out;
  for (const Doc& d : docs) {
    std::optional<double> similarity;
    if (HammingDistance(d.fingerprint, q.fingerprint) <= k &&
        Passes(q.signature, d.signature, t, &similarity)) {
      out[d.id] = similarity;
    }
  }
  return out;
}

std::map<std::pair<DocumentId, DocumentId>, std::optional<double>> BruteForcePairs(
    const std::vector<Doc>& docs, int k, double t) {
  std::map<std::pair<DocumentId, DocumentId>, std::optional<double>> out;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    for (std::size_t j = i + 1; j < docs.size(); ++j) {
      std::optional<double> similarity;
      if (HammingDistance(docs[i].fingerprint, docs[j].fingerprint) <= k &&
          Passes(docs[i].signature, docs[j].signature, t, &similarity)) {
        out[{std::min(docs[i].id, docs[j].id), std::max(docs[i].id, docs[j].id)}] = similarity;
      }
    }
  }
  return out;
}

// Connected components of the pairs, two documents or more, as sorted id lists in order.
std::vector<std::vector<DocumentId>> Components(
    const std::map<std::pair<DocumentId, DocumentId>, std::optional<double>>& pairs) {
  std::map<DocumentId, DocumentId> parent;
  auto find = [&](DocumentId x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  for (const auto& [p, s] : pairs) {
    parent.try_emplace(p.first, p.first);
    parent.try_emplace(p.second, p.second);
    const DocumentId a = find(p.first), b = find(p.second);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
  std::map<DocumentId, std::vector<DocumentId>> groups;
  for (const auto& [id, p] : parent) groups[find(id)].push_back(id);
  std::vector<std::vector<DocumentId>> out;
  for (auto& [root, ids] : groups) out.push_back(ids);
  return out;
}

class ConfirmationTest : public ::testing::Test {
 protected:
  // Half the corpus bulk-loaded into the tables, half inserted and left staged.
  void Fill(Store& store) {
    std::unique_ptr<BulkLoader> loader = *store.NewBulkLoader();
    std::vector<NewDocument> staged;
    for (std::size_t i = 0; i < docs_.size(); ++i) {
      const NewDocument doc{docs_[i].id, docs_[i].fingerprint, "m", docs_[i].signature};
      if (i % 2 == 0) {
        ASSERT_TRUE(loader->Add(doc).ok());
      } else {
        staged.push_back(doc);
      }
    }
    ASSERT_TRUE(loader->Finish().ok());
    ASSERT_TRUE(store.InsertBatch(staged).ok());
  }

  // `doc` refused with InvalidArgument in a batch, by CheckAndInsert and by
  // a bulk load, and nothing stored.
  static void ExpectEveryWriteRefused(Store& store, const NewDocument& doc) {
    EXPECT_EQ(store.InsertBatch(std::vector<NewDocument>{{2, 7, ""}, doc}).status().code(),
              Status::Code::kInvalidArgument);
    EXPECT_EQ(store.CheckAndInsert(doc).status().code(), Status::Code::kInvalidArgument);
    std::unique_ptr<BulkLoader> loader = *store.NewBulkLoader();
    EXPECT_EQ(loader->Add(doc).code(), Status::Code::kInvalidArgument);
    EXPECT_TRUE(loader->Finish().ok());
    EXPECT_EQ(store.Stats()->documents, 0u);
  }

  TempDir dir_;
  std::vector<Doc> docs_ = MakeCorpus(60, 6, 1);
};

TEST_F(ConfirmationTest, QueriesKeepTheCandidatesWhoseSimilarityPasses) {
  std::unique_ptr<Store> store = *Store::Open(StoreAt(dir_, "s"));
  Fill(*store);
  for (const double t : {0.0, 0.7, 0.9}) {
    for (const int k : {1, 3}) {
      std::vector<Sketch> queries;
      for (const Doc& d : docs_) queries.push_back({d.fingerprint ^ 1, d.signature});
      const std::vector<std::vector<Match>> answers = *store->QueryBatch(queries, {k, t});
      for (std::size_t q = 0; q < queries.size(); ++q) {
        std::map<DocumentId, std::optional<double>> got;
        for (const Match& m : answers[q]) got[m.id] = m.similarity;
        EXPECT_EQ(got, BruteForceQuery(docs_, queries[q], k, t)) << "query " << q << " t " << t;
        const std::vector<Match> one = *store->Query(queries[q], {k, t});
        ASSERT_EQ(one.size(), answers[q].size());
      }
    }
  }
  // The store's own threshold by default; a bare fingerprint confirms nothing.
  const Sketch q{docs_[1].fingerprint, docs_[1].signature};
  EXPECT_EQ(store->Query(q)->size(), BruteForceQuery(docs_, q, 3, 0.9).size());
  const std::vector<Match> bare = *store->Query(docs_[1].fingerprint, 3);
  EXPECT_EQ(bare.size(), BruteForceQuery(docs_, {docs_[1].fingerprint, {}}, 3, 0.9).size());
  for (const Match& m : bare) EXPECT_FALSE(m.similarity.has_value());
  EXPECT_EQ(store->Query(q, {std::nullopt, 1.5}).status().code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(store->Query(q, {4, std::nullopt}).status().code(), Status::Code::kInvalidArgument);
}

TEST_F(ConfirmationTest, FindAllAndClustersKeepThePairsWhoseSimilarityPasses) {
  std::unique_ptr<Store> store = *Store::Open(StoreAt(dir_, "s"));
  Fill(*store);
  ScanOptions in_memory, from_tables;
  from_tables.memory_bytes = 0;
  for (const double t : {0.0, 0.75, 0.9}) {
    for (ScanOptions scan : {in_memory, from_tables}) {
      scan.min_similarity = t;
      std::map<std::pair<DocumentId, DocumentId>, std::optional<double>> got;
      ASSERT_TRUE(store
                      ->FindAll(
                          3,
                          [&](const NearPair& p) {
                            got[{p.first, p.second}] = p.similarity;
                          },
                          scan)
                      .ok());
      const auto expected = BruteForcePairs(docs_, 3, t);
      EXPECT_EQ(got, expected) << "t " << t;
      std::vector<std::vector<DocumentId>> clusters;
      ASSERT_TRUE(store
                      ->Clusters(
                          3,
                          [&](std::span<const DocumentId> ids) {
                            clusters.emplace_back(ids.begin(), ids.end());
                          },
                          scan)
                      .ok());
      EXPECT_EQ(clusters, Components(expected)) << "t " << t;
    }
  }
}

TEST_F(ConfirmationTest, ClustersOfCopiesSplitByTheirSignatures) {
  // One fingerprint, two unrelated signatures and one document without: the
  // bare one joins everything, so all form one cluster; without it, two.
  std::unique_ptr<Store> store = *Store::Open(StoreAt(dir_, "s"));
  std::string x(kBytes, 'x'), y(kBytes, static_cast<char>(~'x'));  // every bit differs
  std::vector<NewDocument> docs = {{1, 42, "", *Signature::FromBytes(x)},
                                   {2, 42, "", *Signature::FromBytes(x)},
                                   {3, 42, "", *Signature::FromBytes(y)},
                                   {4, 42, "", *Signature::FromBytes(y)}};
  ASSERT_TRUE(store->InsertBatch(docs).ok());
  ASSERT_TRUE(store->Flush().ok());
  auto clusters = [&] {
    std::vector<std::vector<DocumentId>> out;
    EXPECT_TRUE(store
                    ->Clusters(0,
                               [&](std::span<const DocumentId> ids) {
                                 out.emplace_back(ids.begin(), ids.end());
                               })
                    .ok());
    return out;
  };
  EXPECT_EQ(clusters(), (std::vector<std::vector<DocumentId>>{{1, 2}, {3, 4}}));
  ASSERT_TRUE(store->Insert(5, 42).ok());
  EXPECT_EQ(clusters(), (std::vector<std::vector<DocumentId>>{{1, 2, 3, 4, 5}}));
}

TEST_F(ConfirmationTest, CheckAndInsertCallsADuplicateOnlyWhatPasses) {
  std::unique_ptr<Store> store = *Store::Open(StoreAt(dir_, "s"));
  std::string bits(kBytes, 'a');
  ASSERT_TRUE(store->Insert({1, 0xff, "first", *Signature::FromBytes(bits)}).ok());
  // One bit away but 192 of the 512 bits differ: an estimated similarity of
  // 1 - 128 ln(4) / 1024, about 0.83, not a near-duplicate at 0.9.
  std::string half = bits;
  for (std::size_t i = 0; i < 24; ++i) half[i] = static_cast<char>(~half[i]);
  const double similarity = 1 - 128 * std::log(4.0) / 1024;
  const NewDocument unlike{2, 0xfe, "second", *Signature::FromBytes(half)};
  Result<CheckResult> r = store->CheckAndInsert(unlike, InsertPolicy::kIfNoMatch);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->inserted);
  EXPECT_TRUE(r->matches.empty());
  // At 0.8 it would have been one.
  const NewDocument again{3, 0xfe, "third", *Signature::FromBytes(half)};
  r = store->CheckAndInsert(again, InsertPolicy::kIfNoMatch, {std::nullopt, 0.8});
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->inserted);
  ASSERT_EQ(r->matches.size(), 2u);  // document 2 exactly, document 1 at about 0.83
  EXPECT_EQ(r->matches[0].id, 2u);
  EXPECT_EQ(r->matches[0].similarity, 1.0);
  EXPECT_DOUBLE_EQ(*r->matches[1].similarity, similarity);
  EXPECT_EQ(store->Get(3).status().code(), Status::Code::kNotFound);
  // A bare fingerprint is matched by distance.
  r = store->CheckAndInsert(4, 0xfe, "fourth", InsertPolicy::kIfNoMatch);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->inserted);
  EXPECT_EQ(r->matches.size(), 2u);
  EXPECT_EQ(store->Get(1)->signature.bytes(), bits);
}

TEST_F(ConfirmationTest, SignaturesOfAnotherSizeAreRefusedAndChangeNothing) {
  std::unique_ptr<Store> store = *Store::Open(StoreAt(dir_, "s"));
  const Signature small = *Signature::FromBytes(std::string(kBytes / 2, 's'));
  const NewDocument doc{1, 7, "", small};
  EXPECT_EQ(store->Insert(doc).code(), Status::Code::kInvalidArgument);
  ExpectEveryWriteRefused(*store, doc);
  // A store made without signatures takes none.
  StoreOptions none;
  none.fingerprint = FingerprintOptions{.signature_bytes = 0};
  std::unique_ptr<Store> bare = *Store::Open(StoreAt(dir_, "bare"), none);
  EXPECT_EQ(bare->Insert({1, 7, "", *Signature::FromBytes(std::string(kBytes, 's'))}).code(),
            Status::Code::kInvalidArgument);
  EXPECT_TRUE(bare->Insert(1, 7).ok());
}

TEST_F(ConfirmationTest, WiderFingerprintsAreRefusedByA64BitStoreAndChangeNothing) {
  std::unique_ptr<Store> store = *Store::Open(StoreAt(dir_, "s"));
  const Fingerprint wide(1, 7);
  const NewDocument doc{1, wide, ""};
  const Status refused = store->Insert(doc);
  EXPECT_EQ(refused.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(refused.message(),
            "document 1 has a 128-bit fingerprint (0x00000000000000010000000000000007); "
            "this store holds 64-bit fingerprints");
  ExpectEveryWriteRefused(*store, doc);
  const Result<std::vector<Match>> query = store->Query(wide, 3);
  EXPECT_EQ(query.status().code(), Status::Code::kInvalidArgument);
  EXPECT_NE(query.status().message().find("query 0 has a 128-bit fingerprint"), std::string::npos)
      << query.status().message();
  EXPECT_EQ(store->QueryBatch(std::vector<Fingerprint>{7, wide}, 3).status().message(),
            "query 1 has a 128-bit fingerprint (0x00000000000000010000000000000007); "
            "this store holds 64-bit fingerprints");
  // The widest 64-bit value is one.
  EXPECT_TRUE(store->Insert(3, ~std::uint64_t{0}).ok());
  EXPECT_EQ(store->Query(~std::uint64_t{0}, 0)->size(), 1u);
}

// Fingerprint options that make 128-bit fingerprints make a 128-bit store,
// with the plan of that width by default; a width that disagrees with them,
// or is neither 64 nor 128, is refused and creates nothing.
TEST_F(ConfirmationTest, TheWidthIsTheFingerprintOptionsAndIsRecorded) {
  StoreOptions wide_options;
  wide_options.fingerprint = FingerprintOptions{.bits = 128};
  {
    Result<std::unique_ptr<Store>> store = Store::Open(StoreAt(dir_, "wide"), wide_options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    EXPECT_EQ((*store)->plan().bits(), 128);
    EXPECT_EQ((*store)->plan().blocks(), 8);
    EXPECT_EQ((*store)->plan().distance(), 6);
    const Fingerprint wide(1, 7);
    ASSERT_TRUE((*store)->Insert(1, wide).ok());
    ASSERT_TRUE((*store)->Insert(2, 7).ok());  // a value below 2^64 is a 128-bit one too
    EXPECT_EQ((*store)->Get(1)->fingerprint, wide);
    const Result<std::vector<Match>> near = (*store)->Query(wide, 1);
    ASSERT_TRUE(near.ok()) << near.status().ToString();
    ASSERT_EQ(near->size(), 2u);
    EXPECT_EQ((*near)[1].id, 2u);
    EXPECT_EQ((*near)[1].distance, 1);
    const Sketch text = *(*store)->fingerprinter().SketchText("the quick brown fox");
    EXPECT_FALSE(text.fingerprint.fits_64());
    ASSERT_TRUE((*store)->Insert(NewDocument{3, text.fingerprint, "fox", text.signature}).ok());
    EXPECT_EQ((*store)->Query(text, QueryOptions{})->size(), 1u);
    ASSERT_TRUE((*store)->Close().ok());
  }
  StoreOptions by_bits;
  by_bits.bits = 128;
  EXPECT_EQ(Store::Open(StoreAt(dir_, "wide"), by_bits).status().code(), Status::Code::kOk);
  by_bits.bits = 64;
  const Status narrower = Store::Open(StoreAt(dir_, "wide"), by_bits).status();
  EXPECT_EQ(narrower.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(narrower.message().find(" was created with bits 128, not 64"), std::string::npos)
      << narrower.message();
  StoreOptions disagreeing = wide_options;
  disagreeing.bits = 64;
  EXPECT_EQ(Store::Open(StoreAt(dir_, "new"), disagreeing).status().message(),
            "bits 64 disagrees with the fingerprint options \"v2 window=1 weighting=tf "
            "signature=64 signature_window=5 bits=128\", which make 128-bit fingerprints");
  StoreOptions odd;
  odd.bits = 96;
  EXPECT_EQ(Store::Open(StoreAt(dir_, "new"), odd).status().message(),
            "bits 96 is neither 64 nor 128");
  EXPECT_FALSE(std::filesystem::exists(StoreAt(dir_, "new")));
}

TEST_F(ConfirmationTest, TheThresholdIsRecordedAtCreation) {
  StoreOptions options;
  options.min_similarity = 0.8;
  {
    std::unique_ptr<Store> store = *Store::Open(StoreAt(dir_, "s"), options);
    EXPECT_EQ(store->Stats()->min_similarity, 0.8);
    ASSERT_TRUE(store->Close().ok());
  }
  EXPECT_EQ(Store::Open(StoreAt(dir_, "s"))->get()->Stats()->min_similarity, 0.8);
  options.min_similarity = 0.9;
  EXPECT_EQ(Store::Open(StoreAt(dir_, "s"), options).status().code(),
            Status::Code::kInvalidArgument);
  options.min_similarity = 1.5;
  EXPECT_EQ(Store::Open(StoreAt(dir_, "new"), options).status().code(),
            Status::Code::kInvalidArgument);
  StoreOptions no_create;
  no_create.create_if_missing = false;
  EXPECT_TRUE(Store::Open(StoreAt(dir_, "new"), no_create).status().IsNotFound());
  EXPECT_EQ(Store::Open(StoreAt(dir_, "default"))->get()->Stats()->min_similarity,
            StoreOptions::kDefaultMinSimilarity);
}

TEST_F(ConfirmationTest, TextsFindTheirNearCopiesAndNotPagesThatShareOnlyBoilerplate) {
  StoreOptions options;
  options.blocks = 8;
  options.distance = 6;
  options.fingerprint = FingerprintOptions{.window = 3};
  std::unique_ptr<Store> store = *Store::Open(StoreAt(dir_, "s"), options);
  const Fingerprinter& f = store->fingerprinter();
  // Two pages of one site: 400 words of navigation, then 70 of their own.
  std::string navigation;
  for (int i = 0; i < 400; ++i) {
    navigation += "nav" + std::to_string(i % 97) + " menu" + std::to_string(i) + " ";
  }
  std::string page = navigation, other = navigation;
  for (int i = 0; i < 70; ++i) {
    page += "alpha" + std::to_string(i) + " ";
    other += "beta" + std::to_string(i) + " ";
  }
  const Sketch stored = *f.SketchText(page);
  ASSERT_TRUE(store->Insert({1, stored.fingerprint, "page", stored.signature}).ok());
  // A copy with one word changed is found and confirmed.
  std::string edited = page;
  edited.replace(edited.find("alpha30 "), 8, "changed ");
  const std::vector<Match> found = *store->Query(*f.SketchText(edited));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_GT(*found[0].similarity, 0.9);
  // The other page is a candidate, but not a near-copy.
  const Sketch sibling = *f.SketchText(other);
  ASSERT_LE(HammingDistance(sibling.fingerprint, stored.fingerprint), 6);
  const std::vector<Match> candidates = *store->Query(sibling, {std::nullopt, 0.0});
  ASSERT_EQ(candidates.size(), 1u);
  EXPECT_LT(*candidates[0].similarity, 0.88);
  EXPECT_TRUE(store->Query(sibling)->empty());
  // As a bare fingerprint it stands on its distance.
  EXPECT_EQ(store->Query(sibling.fingerprint, 6)->size(), 1u);
}

#if !FPSTORE_TEST_REDIS  // the embedded store's records
TEST_F(ConfirmationTest, TheSignedRecordIsWrittenWithTheFirstSignatureAndVerified) {
  const Signature signature = *Signature::FromBytes(std::string(kBytes, 's'));
  // Bare fingerprints only: no record, and scans read no documents' records.
  {
    std::unique_ptr<Store> store = *Store::Open(StoreAt(dir_, "s"));
    ASSERT_TRUE(store->Insert(1, 7).ok());
    ASSERT_TRUE(store->Close().ok());
  }
  EXPECT_FALSE(testing::RecordedValue(StoreAt(dir_, "s"), "fpstore.signed").has_value());
  // The first signed insert writes it, in its own batch.
  {
    std::unique_ptr<Store> store = *Store::Open(StoreAt(dir_, "s"));
    ASSERT_TRUE(store->Insert({2, 7, "", signature}).ok());
    ASSERT_TRUE(store->Close().ok());
  }
  EXPECT_EQ(testing::RecordedValue(StoreAt(dir_, "s"), "fpstore.signed"), "1");
  // A bulk load writes it before it ingests its documents.
  {
    std::unique_ptr<Store> store = *Store::Open(StoreAt(dir_, "loaded"));
    std::unique_ptr<BulkLoader> loader = *store->NewBulkLoader();
    ASSERT_TRUE(loader->Add({1, 7, "", signature}).ok());
    ASSERT_TRUE(loader->Finish().ok());
    ASSERT_TRUE(store->Verify().ok());
    ASSERT_TRUE(store->Close().ok());
  }
  EXPECT_EQ(testing::RecordedValue(StoreAt(dir_, "loaded"), "fpstore.signed"), "1");
  // A store whose signed documents lack it is damaged, and Verify says so.
  testing::EditWithRocksDb(StoreAt(dir_, "loaded"), [](rocksdb::DB& db, const auto& family) {
    rocksdb::WriteOptions sync;
    sync.sync = true;
    EXPECT_TRUE(db.Delete(sync, family("default"), "fpstore.signed").ok());
  });
  std::unique_ptr<Store> store = *Store::Open(StoreAt(dir_, "loaded"));
  const Status verified = store->Verify();
  EXPECT_TRUE(verified.IsCorruption()) << verified.ToString();
  EXPECT_NE(verified.ToString().find("fpstore.signed"), std::string::npos) << verified.ToString();
}
#endif

}  // namespace
}  // namespace fpstore
