// Every document's time: given with it or taken from the store's clock, reported by Get, queries,
// CheckAndInsert and scans, replaced by a re-insert, kept through merges, bulk loads and
// reopening; bad times refused whole. Built for both backends (store_location.h).

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <memory>
#include <string>
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
  Open();
  EXPECT_EQ(Times(), expected);
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

}  // namespace
}  // namespace fpstore
