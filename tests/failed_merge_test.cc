// A merge that fails (its files cannot be written or ingested: a full disk,
// say) must leave the store as it was: what it was merging stays staged and
// found, writes fail with its error until the handle opens the store again
// (lib/store/reopening_store.h), a bulk load cannot add to the store
// meanwhile, and once merges work the reopened store merges it all. The failure is injected
// through the merge hook (lib/store/test_hooks.h), at the point where a merge
// has frozen its staging index and not yet written anything.

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "brute_force.h"
#include "fpstore/bulk_loader.h"
#include "fpstore/store.h"
#include "store_checks.h"
#include "temp_dir.h"
#include "util/test_hooks.h"

namespace fpstore {
namespace {

using internal::IdFingerprint;
using Model = testing::DocumentModel;
using testing::DocsOf;
using testing::ExpectMatchesBruteForce;
using testing::MakeCorpus;
using testing::MetadataFor;
using testing::MustOpen;
using testing::Plant;
using testing::Random;
using testing::TempDir;
using testing::TestSeed;

constexpr char kInjected[] = "injected merge failure";

// Fails every merge while it lives.
class FailingMerges {
 public:
  FailingMerges() {
    internal::SetDuringMergeForTesting([] { return Status::IOError(kInjected); });
  }
  ~FailingMerges() { internal::SetDuringMergeForTesting({}); }
  FailingMerges(const FailingMerges&) = delete;
  FailingMerges& operator=(const FailingMerges&) = delete;
};

void ExpectFailedWithInjected(const Status& s, const std::string& what) {
  EXPECT_FALSE(s.ok()) << what << " after a failed merge succeeded";
  EXPECT_NE(s.ToString().find(kInjected), std::string::npos)
      << what << " failed with another error: " << s.ToString();
}

// Every write path refuses, with the merge's error, and changes nothing.
// `present` is a stored document's id.
void ExpectWritesRefused(Store& store, DocumentId present) {
  ExpectFailedWithInjected(store.Insert(900001, 1, MetadataFor(900001)), "Insert");
  const std::string metadata = MetadataFor(900002);
  const std::vector<NewDocument> batch{{900002, 2, metadata}};
  ExpectFailedWithInjected(store.InsertBatch(batch).status(), "InsertBatch");
  ExpectFailedWithInjected(store.CheckAndInsert(900003, 3, MetadataFor(900003)).status(),
                           "CheckAndInsert");
  ExpectFailedWithInjected(store.Remove(present), "Remove");
  ExpectFailedWithInjected(store.Flush(), "Flush");
  // A bulk load may be begun, but its documents must not reach the store.
  Result<std::unique_ptr<BulkLoader>> loader = store.NewBulkLoader({});
  if (loader.ok()) {
    ASSERT_TRUE((*loader)->Add(900004, 4, MetadataFor(900004)).ok());
    ExpectFailedWithInjected((*loader)->Finish().status(), "a bulk load's Finish");
  } else {
    ExpectFailedWithInjected(loader.status(), "NewBulkLoader");
  }
  for (DocumentId id = 900001; id <= 900004; ++id) {
    EXPECT_TRUE(store.Get(id).status().IsNotFound()) << "refused document " << id << " stored";
  }
  EXPECT_TRUE(store.Get(present).ok()) << "refused removal of " << present << " took effect";
}

class FailedMergeTest : public ::testing::Test {
 protected:
  // A store whose tables hold a planted corpus, merged. A handle that reopens its store waits an
  // hour before it reopens it again, unless a test says otherwise.
  void SetUp() override {
    internal::SetReopenIntervalForTesting(std::chrono::hours(1));
    store_ = MustOpen(dir_.Sub("store"));
    ASSERT_NE(store_, nullptr);
    const std::vector<IdFingerprint> docs = MakeCorpus(
        seed_, 300, {Plant{0, 10}, Plant{1, 10}, Plant{2, 10}, Plant{3, 10}, Plant{4, 10}});
    std::vector<std::string> metadata;  // NewDocument views it
    for (const IdFingerprint& d : docs) metadata.push_back(MetadataFor(d.id));
    std::vector<NewDocument> batch;
    for (std::size_t i = 0; i < docs.size(); ++i) {
      batch.push_back({docs[i].id, docs[i].fingerprint, metadata[i]});
      model_[docs[i].id] = docs[i].fingerprint.low();
    }
    ASSERT_TRUE(store_->InsertBatch(batch).ok());
    ASSERT_TRUE(store_->Flush().ok());
  }

  // Stages new documents, replacements of merged ones (near and far) and
  // removals.
  void StageChanges() {
    Random rnd(seed_ + 1);
    std::vector<DocumentId> ids;
    for (const auto& [id, fp] : model_) ids.push_back(id);
    for (DocumentId id : ids) {
      if (id % 5 == 0) {
        const Fingerprint fp = id % 10 == 0 ? model_[id] ^ rnd.Bits(2) : rnd.Next();
        ASSERT_TRUE(store_->Insert(id, fp, MetadataFor(id)).ok());
        model_[id] = fp.low();
      } else if (id % 7 == 0) {
        ASSERT_TRUE(store_->Remove(id).ok());
        model_.erase(id);
      }
    }
    for (DocumentId id = 10000; id < 10050; ++id) {
      const Fingerprint fp = rnd.Next();
      ASSERT_TRUE(store_->Insert(id, fp, MetadataFor(id)).ok());
      model_[id] = fp.low();
    }
  }

  void TearDown() override { internal::SetReopenIntervalForTesting(std::chrono::milliseconds(-1)); }

  void Reopen(StoreOptions options = {}) {
    ASSERT_TRUE(store_->Close().ok());
    store_.reset();
    store_ = MustOpen(dir_.Sub("store"), options);
    ASSERT_NE(store_, nullptr);
  }

  std::uint64_t Staged() const {
    Result<StoreStats> stats = store_->Stats();
    EXPECT_TRUE(stats.ok()) << stats.status().ToString();
    return stats.ok() ? stats->staged_documents : 0;
  }

  TempDir dir_;
  const std::uint64_t seed_ = TestSeed(1201);
  std::unique_ptr<Store> store_;
  Model model_;
};

TEST_F(FailedMergeTest, FlushThatFailsLeavesTheStagedDocumentsFound) {
  ASSERT_NO_FATAL_FAILURE(StageChanges());
  const std::uint64_t staged = Staged();
  ASSERT_GT(staged, 0u);
  {
    FailingMerges failing;
    ExpectFailedWithInjected(store_->Flush(), "Flush");
    EXPECT_EQ(Staged(), staged);
    ASSERT_NO_FATAL_FAILURE(ExpectMatchesBruteForce(*store_, DocsOf(model_), seed_, "failed"));
    // The next write opens the store again, whose merge fails as well; then writes are refused
    // until another reopen is due (an hour here).
    ExpectFailedWithInjected(store_->Flush(), "Flush after the reopen");
    EXPECT_EQ(Staged(), staged) << "staged documents lost with the reopen";
    ASSERT_NO_FATAL_FAILURE(ExpectWritesRefused(*store_, model_.begin()->first));
    EXPECT_EQ(Staged(), staged);
    ASSERT_NO_FATAL_FAILURE(
        ExpectMatchesBruteForce(*store_, DocsOf(model_), seed_, "failed, writes refused"));
  }
  // The error stays with the handle until the next reopen is due, though merges would succeed now.
  ExpectFailedWithInjected(store_->Flush(), "Flush with the failure gone");

  // Due: the same handle opens the store again and merges what was staged.
  internal::SetReopenIntervalForTesting(std::chrono::milliseconds(0));
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_EQ(Staged(), 0u);
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesBruteForce(*store_, DocsOf(model_), seed_, "merged"));
  ASSERT_TRUE(store_->Insert(20000, 20000, MetadataFor(20000)).ok());
  model_[20000] = 20000;
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesBruteForce(*store_, DocsOf(model_), seed_, "written"));
  ASSERT_NO_FATAL_FAILURE(Reopen());
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesBruteForce(*store_, DocsOf(model_), seed_, "reopened"));
}

// The background merger fails: writers learn of it at their next write,
// which opens the store again; once merges work, it merges what it held.
TEST_F(FailedMergeTest, BackgroundMergeThatFailsStopsWritesUntilTheStoreReopens) {
  StoreOptions options;
  options.staged_documents = 64;
  ASSERT_NO_FATAL_FAILURE(Reopen(options));
  Random rnd(seed_ + 2);
  {
    FailingMerges failing;
    Status failed;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (DocumentId id = 30000; failed.ok() && std::chrono::steady_clock::now() < deadline; ++id) {
      const Fingerprint fp = rnd.Next();
      failed = store_->Insert(id, fp, MetadataFor(id));
      if (failed.ok()) model_[id] = fp.low();
    }
    ExpectFailedWithInjected(failed, "an insert once the background merge failed");
    // The insert may have met the failure before any reopen: this Flush then reopens the store,
    // whose merge fails as well. Either way, writes are refused from here on.
    ExpectFailedWithInjected(store_->Flush(), "Flush once the background merge failed");
    const std::uint64_t staged = Staged();
    ASSERT_GT(staged, 0u);
    ASSERT_NO_FATAL_FAILURE(ExpectMatchesBruteForce(*store_, DocsOf(model_), seed_, "failed"));
    ASSERT_NO_FATAL_FAILURE(ExpectWritesRefused(*store_, model_.begin()->first));
    EXPECT_EQ(Staged(), staged);
    ASSERT_NO_FATAL_FAILURE(
        ExpectMatchesBruteForce(*store_, DocsOf(model_), seed_, "failed, writes refused"));
  }
  internal::SetReopenIntervalForTesting(std::chrono::milliseconds(0));
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_EQ(Staged(), 0u);
  ASSERT_NO_FATAL_FAILURE(ExpectMatchesBruteForce(*store_, DocsOf(model_), seed_, "merged"));
}

}  // namespace
}  // namespace fpstore
