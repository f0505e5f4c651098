// Every document's time: given with it or taken from the store's clock, reported by Get, queries,
// CheckAndInsert and scans, replaced by a re-insert, kept through merges, bulk loads and
// reopening; bad times refused whole. Built for both backends (store_location.h).

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <iostream>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <span>
#include <sstream>
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
    // A store in Redis then has the fewest shards, which its sweep and Expire go through.
    options_.expected_documents = 1'000;
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
    const Status s = store_->InsertBatch(batch).status();
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
  const Status inserted = store_->InsertBatch(docs).status();
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

  // The sweep removes the expired ones in the background (a store in Redis sweeps a slice of its
  // shards a second); the answers stay.
  for (int i = 0; i < 600; ++i) {
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

TEST_F(DocumentTimeTest, WritesSayHowManyDocumentsArrivedPastTheRetention) {
  options_.retention_seconds = 100;
  path_ = StoreAt(dir_, "late");
  clock_.Set(1'000);
  Open();
  // Documents before 900 are past the retention. Of id 2, the last in the batch counts.
  const std::vector<NewDocument> first{{1, 0x100, "", {}, 950},
                                       {2, 0x200, "", {}, 980},
                                       {3, 0x300, "", {}, 800},
                                       {2, 0x200, "", {}, 850},
                                       {4, 0x400, "", {}, {}}};
  Result<InsertStats> stats = store_->InsertBatch(first);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->added, 4u);
  EXPECT_EQ(stats->replaced, 0u);
  EXPECT_EQ(stats->past_retention, 2u);
  EXPECT_TRUE(store_->Get(2).status().IsNotFound());
  EXPECT_TRUE(store_->Get(3).status().IsNotFound());

  const std::vector<NewDocument> second{{2, 0x200, "", {}, 990}, {5, 0x500, "", {}, 10}};
  stats = store_->InsertBatch(second);
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->added, 1u);
  EXPECT_EQ(stats->replaced, 1u);
  EXPECT_EQ(stats->past_retention, 1u);
  EXPECT_EQ(TimeOf(2), 990);

  Result<CheckResult> late = store_->CheckAndInsert({6, 0x600, "", {}, 899});
  ASSERT_TRUE(late.ok()) << late.status().ToString();
  EXPECT_TRUE(late->inserted);
  EXPECT_TRUE(late->past_retention);
  Result<CheckResult> on_time = store_->CheckAndInsert({7, 0x700, "", {}, 900});
  ASSERT_TRUE(on_time.ok()) << on_time.status().ToString();
  EXPECT_TRUE(on_time->inserted);
  EXPECT_FALSE(on_time->past_retention);

  Result<std::unique_ptr<BulkLoader>> loader = store_->NewBulkLoader();
  ASSERT_TRUE(loader.ok()) << loader.status().ToString();
  ASSERT_TRUE((*loader)->Add({8, 0x800, "", {}, 1}).ok());
  ASSERT_TRUE((*loader)->Add({9, 0x900, "", {}, {}}).ok());
  ASSERT_TRUE((*loader)->Add({1, 0x100, "", {}, 2}).ok());
  Result<BulkLoadStats> loaded = (*loader)->Finish();
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->added, 2u);
  EXPECT_EQ(loaded->replaced, 1u);
  EXPECT_EQ(loaded->past_retention, 2u);
  EXPECT_EQ(Times(),
            (std::map<DocumentId, DocumentTime>{{2, 990}, {4, 1'000}, {7, 900}, {9, 1'000}}));
}

// A near-copy seen again keeps its original alive with refresh_matches, and only then.
TEST_F(DocumentTimeTest, CheckAndInsertRefreshesWhatItMatchedWhenAsked) {
  options_.retention_seconds = 100;
  path_ = StoreAt(dir_, "refreshed");
  clock_.Set(1'000);
  Open();
  constexpr Fingerprint kA = 0xf0f0'1234;
  constexpr Fingerprint kB = 0x0f0f'5678'0000;
  ASSERT_TRUE(store_->Insert({1, kA, "a", {}, {}}).ok());
  ASSERT_TRUE(store_->Insert({2, kB, "b", {}, {}}).ok());

  // Off: a check that matches writes nothing.
  clock_.Set(1'050);
  Result<CheckResult> seen = store_->CheckAndInsert(3, kB ^ 1, {}, InsertPolicy::kIfNoMatch);
  ASSERT_TRUE(seen.ok()) << seen.status().ToString();
  EXPECT_FALSE(seen->inserted);
  EXPECT_EQ(TimeOf(2), 1'000);

  options_.refresh_matches = true;
  Open();
  clock_.Set(1'080);
  seen = store_->CheckAndInsert(4, kA ^ 3, {}, InsertPolicy::kIfNoMatch);
  ASSERT_TRUE(seen.ok()) << seen.status().ToString();
  ASSERT_EQ(seen->matches.size(), 1u);
  EXPECT_EQ(seen->matches[0].time, 1'000);  // as it was matched
  EXPECT_FALSE(seen->inserted);
  EXPECT_EQ(TimeOf(1), 1'080);
  // A check with an earlier time takes nothing back; kAlways refreshes too.
  seen = store_->CheckAndInsert({5, kA ^ 5, "", {}, 1'010}, InsertPolicy::kAlways);
  ASSERT_TRUE(seen.ok()) << seen.status().ToString();
  EXPECT_TRUE(seen->inserted);
  EXPECT_EQ(TimeOf(1), 1'080);

  // At 1,150, 2 has passed the retention; 1, refreshed, has not; its record is whole.
  clock_.Set(1'150);
  EXPECT_TRUE(store_->Get(2).status().IsNotFound());
  Result<Document> one = store_->Get(1);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->fingerprint, kA);
  EXPECT_EQ(one->metadata, "a");
  Result<std::vector<Match>> found = store_->Query(kA, 3);
  ASSERT_TRUE(found.ok());
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].id, 1u);
  EXPECT_TRUE(store_->Verify().ok());
}

#if FPSTORE_TEST_REDIS

// The times a store in Redis keeps beside its records: Verify finds those that disagree with the
// records, Repair mends them, and an expiry goes by the records' times.
TEST_F(DocumentTimeTest, RepairMendsTheTimesOfAStoreInRedis) {
  const std::vector<NewDocument> docs{
      {1, 0x10, "", {}, 10}, {2, 0x20, "", {}, 20}, {3, 0x30, "", {}, 30}};
  ASSERT_TRUE(store_->InsertBatch(docs).ok());
  Result<std::unique_ptr<internal::redis::ClusterClient>> client =
      internal::redis::ClusterClient::Connect(testing::RedisSeed());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  auto field = [](DocumentId id) {
    std::string f(8, '\0');
    for (int i = 0; i < 8; ++i) f[i] = static_cast<char>(id >> (56 - 8 * i));
    return f;
  };
  // The times key holding each document, by a scan of the store's keys.
  const std::string name = path_.substr(path_.rfind('/') + 1);
  std::map<DocumentId, std::string> key_of;
  Status s = (*client)->ScanKeys("fps:{" + name + ":t:*}", [&](std::vector<std::string>& keys) {
    for (const std::string& key : keys) {
      for (const DocumentId id : {1, 2, 3}) {
        Result<internal::redis::Reply> score =
            (*client)->Run(internal::redis::Command{key, {"ZSCORE", key, field(id)}});
        if (!score.ok()) return score.status();
        if (score->type == internal::redis::Reply::Type::kString) key_of[id] = key;
      }
    }
    return Status::OK();
  });
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(key_of.size(), 3u);
  auto run = [&](std::vector<std::string> args) {
    const std::string key = args[1];
    Result<internal::redis::Reply> r =
        (*client)->Run(internal::redis::Command{key, std::move(args)});
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_NE(r->type, internal::redis::Reply::Type::kError) << r->str;
  };
  run({"ZREM", key_of[1], field(1)});        // a time lost
  run({"ZADD", key_of[2], "5", field(2)});   // a time that is not the record's
  run({"ZADD", key_of[1], "7", field(99)});  // a time of no stored document
  const Status verified = store_->Verify();
  EXPECT_TRUE(verified.IsCorruption()) << verified.ToString();
  EXPECT_NE(verified.ToString().find("times that disagree"), std::string::npos)
      << verified.ToString();
  // An expiry goes by the records: 2's record says 20, and it stays.
  Result<std::uint64_t> expired = store_->Expire(15);
  ASSERT_TRUE(expired.ok()) << expired.status().ToString();
  EXPECT_EQ(*expired, 0u);
  const Status repaired = store_->Repair();
  ASSERT_TRUE(repaired.ok()) << repaired.ToString();
  EXPECT_TRUE(store_->Verify().ok()) << store_->Verify().ToString();
  EXPECT_EQ(Times(), (std::map<DocumentId, DocumentTime>{{1, 10}, {2, 20}, {3, 30}}));
  expired = store_->Expire(25);
  ASSERT_TRUE(expired.ok()) << expired.status().ToString();
  EXPECT_EQ(*expired, 2u);
  EXPECT_EQ(Times(), (std::map<DocumentId, DocumentTime>{{3, 30}}));
  EXPECT_TRUE(store_->Verify().ok()) << store_->Verify().ToString();
}

// A store made by a build of another layout is refused, naming its version.
TEST_F(DocumentTimeTest, AStoreInRedisOfAnotherLayoutIsRefused) {
  Result<std::unique_ptr<internal::redis::ClusterClient>> client =
      internal::redis::ClusterClient::Connect(testing::RedisSeed());
  ASSERT_TRUE(client.ok()) << client.status().ToString();
  const std::string url = StoreAt(dir_, "older");
  const std::string key = "fps:{" + url.substr(url.rfind('/') + 1) + "}:layout";
  Result<internal::redis::Reply> made = (*client)->Run(internal::redis::Command{
      key, {"HSET", key, "format", "2", "plan", "blocks=6 distance=3", "shard_bits", "14"}});
  ASSERT_TRUE(made.ok()) << made.status().ToString();
  const Status s = Store::Open(url, options_).status();
  EXPECT_TRUE(s.IsNotSupported()) << s.ToString();
  EXPECT_NE(s.ToString().find("layout version 2"), std::string::npos) << s.ToString();
}

#endif

// ---- An expiry killed ----

// The store of the expiry killed: kExpiryDocs documents, the even ids fetched at kOldTime and the
// odd ones at kNewTime, with a retention that, by the clock of kNow, leaves the even ones behind.
// An embedded store expires much faster: it needs more documents to be killed in the middle.
constexpr DocumentId kExpiryDocs = testing::kRedisBackend ? 3000 : 24'000;
constexpr DocumentTime kOldTime = 100, kNewTime = 4'500, kNow = 5'000;
constexpr std::int64_t kRetention = 1'000;

Fingerprint ExpiryFingerprint(DocumentId id) { return 0x9e3779b97f4a7c15ull * (id + 1); }

StoreOptions ExpiryOptions(DocumentTime now) {
  StoreOptions options;
  options.retention_seconds = kRetention;
  options.expected_documents = 1'000;
  options.clock = [now] { return now; };
  return options;
}

// The expiring process: opens the store by the clock of kNow, which starts its sweep, writes a
// byte to `ack_fd`, expires what the sweep has not, writes another, and waits to be killed.
// FPSTORE_EXPIRY_CHILD holds "ack_fd url".
[[maybe_unused]] const bool kIsExpiryChild = [] {
  const char* spec = std::getenv("FPSTORE_EXPIRY_CHILD");
  if (spec == nullptr) return false;
  std::istringstream in(spec);
  int ack_fd = -1;
  std::string url;
  in >> ack_fd >> url;
  Result<std::unique_ptr<Store>> store = Store::Open(url, ExpiryOptions(kNow));
  if (!store.ok() || write(ack_fd, "o", 1) != 1) _exit(3);
  if (!(*store)->Expire(kNow - kRetention).ok() || write(ack_fd, "d", 1) != 1) _exit(3);
  while (true) pause();
}();

// Killed at any moment, an expiry (or the sweep) leaves each document whole or gone, never one
// that was not to expire; no document past the retention shows meanwhile, and Repair (in Redis)
// mends what it cut short.
TEST_F(DocumentTimeTest, AnExpiryKilledAtAnyMomentLeavesWholeDocuments) {
  const std::string url = StoreAt(dir_, "expiring");
  {
    Result<std::unique_ptr<Store>> store = Store::Open(url, ExpiryOptions(kOldTime));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    std::vector<NewDocument> batch;
    for (DocumentId id = 0; id < kExpiryDocs; ++id) {
      batch.push_back({id, ExpiryFingerprint(id), "", {}, id % 2 == 0 ? kOldTime : kNewTime});
      if (batch.size() == 500) {
        ASSERT_TRUE((*store)->InsertBatch(batch).ok());
        batch.clear();
      }
    }
  }
  std::mt19937_64 rnd(20261207);
  std::uint64_t gone_before = 0;
  for (int round = 0; round < 5; ++round) {
    const bool last = round == 4;
    SCOPED_TRACE("round " + std::to_string(round));
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    const std::string spec = std::to_string(fds[1]) + " " + url;
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      setenv("FPSTORE_EXPIRY_CHILD", spec.c_str(), 1);
      execl("/proc/self/exe", "document_time_test", static_cast<char*>(nullptr));
      _exit(3);
    }
    close(fds[1]);
    // Killed a moment after it opened; the last run goes on until it says it is done.
    std::string said;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (said.size() < (last ? 2u : 1u) && std::chrono::steady_clock::now() < deadline) {
      pollfd p{fds[0], POLLIN, 0};
      if (poll(&p, 1, 100) <= 0) continue;
      char c;
      if (read(fds[0], &c, 1) != 1) break;
      said += c;
    }
    if (!last) {
      std::this_thread::sleep_for(
          std::chrono::microseconds(rnd() % (testing::kRedisBackend ? 300'000 : 100'000)));
    }
    kill(pid, SIGKILL);
    int status = 0;
    waitpid(pid, &status, 0);
    close(fds[0]);
    ASSERT_EQ(said.substr(0, 1), "o") << "the child failed to open the store";
    if (last) {
      ASSERT_EQ(said, "od") << "the child's expiry did not finish";
    }
    std::uint64_t expired_at_now = 0;

#if FPSTORE_TEST_REDIS
    // The killed process's locks would lapse after their time to live: taken out at once.
    {
      Result<std::unique_ptr<internal::redis::ClusterClient>> client =
          internal::redis::ClusterClient::Connect(testing::RedisSeed());
      ASSERT_TRUE(client.ok()) << client.status().ToString();
      const std::string name = url.substr(url.rfind('/') + 1);
      const Status s =
          (*client)->ScanKeys("fps:{" + name + ":*}:lock*", [&](std::vector<std::string>& keys) {
            for (const std::string& key : keys) {
              Result<internal::redis::Reply> r =
                  (*client)->Run(internal::redis::Command{key, {"DEL", key}});
              if (!r.ok()) return r.status();
            }
            return Status::OK();
          });
      ASSERT_TRUE(s.ok()) << s.ToString();
    }
#endif
    // By the clock of the expiry, read-only (no sweep): nothing past the retention shows, before
    // any repair.
    {
      StoreOptions read_only = ExpiryOptions(kNow);
      read_only.read_only = true;
      Result<std::unique_ptr<Store>> store = Store::Open(url, read_only);
      ASSERT_TRUE(store.ok()) << store.status().ToString();
      std::set<DocumentId> listed;
      ASSERT_TRUE((*store)->ForEachDocument([&](const Document& d) { listed.insert(d.id); }).ok());
      EXPECT_EQ(listed.size(), kExpiryDocs / 2);
      EXPECT_TRUE(std::all_of(listed.begin(), listed.end(), [](DocumentId id) { return id % 2; }));
      for (DocumentId id = 0; id < 100; ++id) {
        Result<std::vector<Match>> found = (*store)->Query(ExpiryFingerprint(id), 0);
        ASSERT_TRUE(found.ok()) << found.status().ToString();
        EXPECT_EQ(found->size(), id % 2) << id;
      }
      expired_at_now = (*store)->Stats()->expired_documents;
    }
    // By a clock that expires nothing: every document whole, or gone if it was to expire.
    Result<std::unique_ptr<Store>> store = Store::Open(url, ExpiryOptions(kOldTime));
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    const Status repaired = (*store)->Repair();
    ASSERT_TRUE(repaired.ok()) << repaired.ToString();
    std::uint64_t gone = 0;
    for (DocumentId id = 0; id < kExpiryDocs; ++id) {
      Result<Document> doc = (*store)->Get(id);
      if (!doc.ok()) {
        ASSERT_TRUE(doc.status().IsNotFound()) << doc.status().ToString();
        ASSERT_EQ(id % 2, 0u) << "document " << id << " was not to expire";
        ++gone;
        continue;
      }
      EXPECT_EQ(doc->fingerprint, ExpiryFingerprint(id)) << id;
      EXPECT_EQ(doc->time, id % 2 == 0 ? kOldTime : kNewTime) << id;
    }
    EXPECT_GE(gone, gone_before);
    gone_before = gone;
    // In Redis a removal cut short may leave a time without its document until Repair.
    if (testing::kRedisBackend) {
      EXPECT_GE(expired_at_now, kExpiryDocs / 2 - gone);
    } else {
      EXPECT_EQ(expired_at_now, kExpiryDocs / 2 - gone);
    }
    std::cout << "round " << round << ": " << gone << " of " << kExpiryDocs / 2 << " expired\n";
    if (last) {
      EXPECT_EQ(gone, kExpiryDocs / 2);
    }
    EXPECT_EQ((*store)->Stats()->documents, kExpiryDocs - gone);
    const Status verified = (*store)->Verify();
    EXPECT_TRUE(verified.ok()) << verified.ToString();
  }
}

}  // namespace
}  // namespace fpstore
