// Every document's time: given with it or taken from the store's clock, reported by Get, queries,
// CheckAndInsert and scans, replaced by a re-insert, kept through merges, bulk loads and
// reopening; bad times refused whole. Built for both backends (store_location.h).

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "fpstore/store.h"
#include "store_location.h"
#include "temp_dir.h"

namespace fpstore {
namespace {

using testing::StoreAt;
using testing::TempDir;

// A clock the test sets; the store reads it through StoreOptions::clock.
struct TestClock {
  std::shared_ptr<std::atomic<DocumentTime>> now = std::make_shared<std::atomic<DocumentTime>>(0);
  std::function<DocumentTime()> Function() const {
    return [now = now] { return now->load(); };
  }
  void Set(DocumentTime t) const { now->store(t); }
};

class DocumentTimeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.durability = Durability::kNoSync;
    options_.clock = clock_.Function();
    path_ = StoreAt(dir_, "store");
    Open();
  }

  void Open() {
    store_.reset();
    Result<std::unique_ptr<Store>> store = Store::Open(path_, options_);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = *std::move(store);
  }

  DocumentTime TimeOf(DocumentId id) const {
    Result<Document> doc = store_->Get(id);
    EXPECT_TRUE(doc.ok()) << id << ": " << doc.status().ToString();
    return doc.ok() ? doc->time : -1;
  }

  // Every stored document's time, by id, as ForEachDocument reports them.
  std::map<DocumentId, DocumentTime> Times() const {
    std::map<DocumentId, DocumentTime> times;
    EXPECT_TRUE(store_->ForEachDocument([&](const Document& d) { times[d.id] = d.time; }).ok());
    return times;
  }

  TempDir dir_;
  TestClock clock_;
  StoreOptions options_;
  std::string path_;
  std::unique_ptr<Store> store_;
};

TEST_F(DocumentTimeTest, GivenOrTheClocksAndReportedEverywhere) {
  clock_.Set(1'000);
  ASSERT_TRUE(store_->Insert(1, 0xabc).ok());
  ASSERT_TRUE(store_->Insert({2, 0xf0f0, "two", {}, 5}).ok());
  EXPECT_EQ(TimeOf(1), 1'000);
  EXPECT_EQ(TimeOf(2), 5);

  // A re-insert, with the same fingerprint or another, takes the new time.
  clock_.Set(2'000);
  ASSERT_TRUE(store_->Insert(1, 0xabc).ok());
  EXPECT_EQ(TimeOf(1), 2'000);
  ASSERT_TRUE(store_->Insert({2, 0xf0f1, "two", {}, 7}).ok());
  EXPECT_EQ(TimeOf(2), 7);

  // Queries report the stored document's time; CheckAndInsert's matches too, and the document it
  // inserts has its own.
  Result<std::vector<Match>> matches = store_->Query(0xabc, 1);
  ASSERT_TRUE(matches.ok()) << matches.status().ToString();
  ASSERT_EQ(matches->size(), 1u);
  EXPECT_EQ((*matches)[0].time, 2'000);
  Result<CheckResult> checked = store_->CheckAndInsert({3, 0xabd, "", {}, 3'000});
  ASSERT_TRUE(checked.ok()) << checked.status().ToString();
  ASSERT_EQ(checked->matches.size(), 1u);
  EXPECT_EQ(checked->matches[0].id, 1u);
  EXPECT_EQ(checked->matches[0].time, 2'000);
  EXPECT_EQ(TimeOf(3), 3'000);
  Result<std::vector<std::vector<Match>>> batch =
      store_->QueryBatch(std::vector<Fingerprint>{0xf0f1, 0xabc}, 1);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ASSERT_EQ((*batch)[0].size(), 1u);
  EXPECT_EQ((*batch)[0][0].time, 7);
  ASSERT_EQ((*batch)[1].size(), 2u);
  EXPECT_EQ((*batch)[1][0].time, 2'000);  // distance 0: document 1
  EXPECT_EQ((*batch)[1][1].time, 3'000);

  // Through a merge and a reopening.
  ASSERT_TRUE(store_->Flush().ok());
  Open();
  const std::map<DocumentId, DocumentTime> expected{{1, 2'000}, {2, 7}, {3, 3'000}};
  EXPECT_EQ(Times(), expected);
}

TEST_F(DocumentTimeTest, ABulkLoadTakesTheClockWhenItBegan) {
  clock_.Set(4'000);
  ASSERT_TRUE(store_->Insert(9, 0x99).ok());
  Result<std::unique_ptr<BulkLoader>> loader = store_->NewBulkLoader();
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  clock_.Set(5'000);
  ASSERT_TRUE((*loader)->Add(1, 0x11).ok());
  ASSERT_TRUE((*loader)->Add({2, 0x22, "", {}, 77}).ok());
  ASSERT_TRUE((*loader)->Add({9, 0x99, "", {}, 88}).ok());  // replaces the inserted one
  ASSERT_TRUE((*loader)->Finish().ok());
  loader->reset();  // before its store goes
  const std::map<DocumentId, DocumentTime> expected{{1, 4'000}, {2, 77}, {9, 88}};
  EXPECT_EQ(Times(), expected);
  // Out of key order (2's time is before 1's), some time keys went ahead of the ingestion: every
  // document has its key all the same, and an expiry finds them.
  EXPECT_TRUE(store_->Verify().ok());
  Open();
  EXPECT_EQ(Times(), expected);
  if (!testing::kRedisBackend) {
    EXPECT_EQ(*store_->Expire(80), 1u);  // document 2
    EXPECT_EQ(Times(), (std::map<DocumentId, DocumentTime>{{1, 4'000}, {9, 88}}));
  }
}

TEST_F(DocumentTimeTest, TimesOutOfRangeAreRefusedWhole) {
  ASSERT_TRUE(store_->Insert({1, 0x11, "", {}, 10}).ok());
  for (const DocumentTime bad : {DocumentTime{-1}, kMaxDocumentTime + 1}) {
    const std::vector<NewDocument> batch{{2, 0x22, "", {}, 20}, {3, 0x33, "", {}, bad}};
    const Status s = store_->InsertBatch(batch);
    EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
    EXPECT_NE(s.message().find("document 3's time"), std::string::npos) << s.ToString();
    EXPECT_TRUE(store_->CheckAndInsert({4, 0x44, "", {}, bad}).status().IsInvalidArgument());
    Result<std::unique_ptr<BulkLoader>> loader = store_->NewBulkLoader();
    ASSERT_TRUE(loader.ok());
    EXPECT_TRUE((*loader)->Add({5, 0x55, "", {}, bad}).IsInvalidArgument());
  }
  // The edges are times.
  ASSERT_TRUE(store_->Insert({6, 0x66, "", {}, 0}).ok());
  ASSERT_TRUE(store_->Insert({7, 0x77, "", {}, kMaxDocumentTime}).ok());
  // A clock out of range fails the writes that read it, and they write nothing.
  clock_.Set(-5);
  const Status s = store_->Insert(8, 0x88);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_NE(s.message().find("clock"), std::string::npos) << s.ToString();
  EXPECT_TRUE(store_->CheckAndInsert(8, 0x88).status().IsInvalidArgument());
  EXPECT_TRUE(store_->NewBulkLoader().status().IsInvalidArgument());
  const std::map<DocumentId, DocumentTime> expected{{1, 10}, {6, 0}, {7, kMaxDocumentTime}};
  EXPECT_EQ(Times(), expected);
}

#if !FPSTORE_TEST_REDIS  // retention and expiry: the embedded store's

// The ids a query, FindAll, Clusters and ForEachDocument report.
struct Seen {
  std::set<DocumentId> query;
  std::set<std::pair<DocumentId, DocumentId>> pairs;
  std::set<std::set<DocumentId>> clusters;
  std::set<DocumentId> documents;
  friend bool operator==(const Seen&, const Seen&) = default;
};

Seen SeenIn(const Store& store, Fingerprint near) {
  Seen seen;
  Result<std::vector<Match>> matches = store.Query(near, 3);
  EXPECT_TRUE(matches.ok()) << matches.status().ToString();
  if (matches.ok()) {
    for (const Match& m : *matches) seen.query.insert(m.id);
  }
  EXPECT_TRUE(store.FindAll(3,
                            [&](const NearPair& p) {
                              seen.pairs.insert({p.first, p.second});
                            })
                  .ok());
  EXPECT_TRUE(store
                  .Clusters(3,
                            [&](std::span<const DocumentId> c) {
                              seen.clusters.insert(std::set<DocumentId>(c.begin(), c.end()));
                            })
                  .ok());
  EXPECT_TRUE(store.ForEachDocument([&](const Document& d) { seen.documents.insert(d.id); }).ok());
  return seen;
}

TEST_F(DocumentTimeTest, PastTheRetentionNothingReturnsADocumentAndTheSweepRemovesIt) {
  options_.retention_seconds = 100;
  path_ = StoreAt(dir_, "retained");
  clock_.Set(1'000);
  Open();
  constexpr Fingerprint kA = 0xabcdef;
  // 1 and 4 arrive past the retention (before 900): taken, never returned.
  const std::vector<NewDocument> docs{{1, kA, "", {}, 800},
                                      {2, kA ^ 1, "", {}, 950},
                                      {3, kA ^ 2, "", {}, {}},
                                      {4, kA ^ 4, "", {}, 500},
                                      {6, ~kA.low(), "", {}, 990}};
  const Status inserted = store_->InsertBatch(docs);
  ASSERT_TRUE(inserted.ok()) << inserted.ToString();
  const Seen at_1000{{2, 3}, {{2, 3}}, {{2, 3}}, {2, 3, 6}};
  EXPECT_EQ(SeenIn(*store_, kA), at_1000);
  for (const DocumentId gone : {1, 4}) {
    EXPECT_TRUE(store_->Get(gone).status().IsNotFound()) << gone;
  }

  // Document 2 passes the retention at 1,051; a check-and-insert no longer sees it.
  clock_.Set(1'060);
  Result<CheckResult> checked = store_->CheckAndInsert(5, kA ^ 8);
  ASSERT_TRUE(checked.ok()) << checked.status().ToString();
  ASSERT_EQ(checked->matches.size(), 1u);
  EXPECT_EQ(checked->matches[0].id, 3u);
  const Seen at_1060{{3, 5}, {{3, 5}}, {{3, 5}}, {3, 5, 6}};
  EXPECT_EQ(SeenIn(*store_, kA), at_1060);

  // The sweep removes the expired ones in the background; the answers stay.
  for (int i = 0; i < 200; ++i) {
    Result<StoreStats> stats = store_->Stats();
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    if (stats->documents == 3) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  Result<StoreStats> stats = store_->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->documents, 3u);
  EXPECT_EQ(stats->expired_documents, 0u);
  EXPECT_EQ(stats->retention_seconds, 100);
  EXPECT_EQ(stats->oldest_time, 990);
  EXPECT_EQ(stats->newest_time, 1'060);
  EXPECT_EQ(SeenIn(*store_, kA), at_1060);
  EXPECT_TRUE(store_->Verify().ok());
  ASSERT_TRUE(store_->Flush().ok());
  Open();
  EXPECT_EQ(SeenIn(*store_, kA), at_1060);
  EXPECT_TRUE(store_->Verify().ok());

  // The retention is recorded: another one is refused.
  options_.retention_seconds = 50;
  store_.reset();
  EXPECT_TRUE(Store::Open(path_, options_).status().IsInvalidArgument());
}

TEST_F(DocumentTimeTest, ExpireRemovesExactlyTheOlderDocuments) {
  const std::vector<NewDocument> docs{
      {1, 0x10, "", {}, 10}, {2, 0x20, "", {}, 20}, {3, 0x30, "", {}, 30}};
  ASSERT_TRUE(store_->InsertBatch(docs).ok());
  ASSERT_TRUE(store_->Insert({1, 0x11, "", {}, 40}).ok());  // fetched again
  {
    // Replaced by a bulk load, which leaves the key of its old time behind.
    Result<std::unique_ptr<BulkLoader>> loader = store_->NewBulkLoader();
    ASSERT_TRUE(loader.ok());
    ASSERT_TRUE((*loader)->Add({2, 0x20, "", {}, 50}).ok());
    ASSERT_TRUE((*loader)->Finish().ok());
  }
  Result<StoreStats> stats = store_->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->oldest_time, 30);
  EXPECT_EQ(stats->newest_time, 50);
  EXPECT_EQ(stats->expired_documents, 0u);  // no retention
  Result<std::uint64_t> expired = store_->Expire(35);
  ASSERT_TRUE(expired.ok()) << expired.status().ToString();
  EXPECT_EQ(*expired, 1u);
  EXPECT_EQ(Times(), (std::map<DocumentId, DocumentTime>{{1, 40}, {2, 50}}));
  EXPECT_EQ(*store_->Expire(35), 0u);
  EXPECT_TRUE(store_->Verify().ok());
  EXPECT_EQ(*store_->Expire(51), 2u);
  EXPECT_EQ(store_->Stats()->documents, 0u);
  EXPECT_FALSE(store_->Stats()->oldest_time.has_value());
  Result<std::vector<Match>> none = store_->Query(0x11, 3);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
  EXPECT_TRUE(store_->Expire(-1).status().IsInvalidArgument());
  EXPECT_TRUE(store_->Verify().ok());
}

#else

TEST_F(DocumentTimeTest, AStoreInRedisHasNoRetention) {
  options_.retention_seconds = 100;
  const Status s = Store::Open(StoreAt(dir_, "retained"), options_).status();
  EXPECT_TRUE(s.IsNotSupported()) << s.ToString();
  EXPECT_TRUE(store_->Expire(5).status().IsNotSupported());
}

#endif

}  // namespace
}  // namespace fpstore
