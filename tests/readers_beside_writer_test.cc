// Read-only handles opened while the writer compacts: RocksDB deletes the
// files a compaction replaced, and a read-only open that had just read the
// manifest used to fail naming one of them, and a Verify of a handle whose
// files the writer has since deleted called the store corrupt. Each open
// must now succeed and see the whole store, and each Verify pass.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fpstore/store.h"
#include "temp_dir.h"

namespace fpstore {
namespace {

using testing::TempDir;

constexpr DocumentId kDocuments = 20'000;

// A store of kDocuments loaded documents and a writer that inserts a few and compacts in a loop.
class ReadersBesideWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.Sub("store");
    writer_ = *Store::Open(path_);
    std::unique_ptr<BulkLoader> loader = *writer_->NewBulkLoader();
    for (DocumentId id = 1; id <= kDocuments; ++id) {
      ASSERT_TRUE(loader->Add(id, id * 0x9e3779b97f4a7c15ULL).ok());
    }
    ASSERT_TRUE(loader->Finish().ok());
    compactor_ = std::thread([this] {
      DocumentId next = kDocuments + 1;
      while (!stop_) {
        // A few inserts so that each compaction has new files to replace.
        for (int i = 0; i < 50; ++i, ++next) (void)writer_->Insert(next, next * 31);
        if (!writer_->Compact().ok()) break;
        ++compactions_;
      }
    });
  }

  void TearDown() override {
    stop_ = true;
    if (compactor_.joinable()) compactor_.join();
    if (writer_) {
      EXPECT_TRUE(writer_->Close().ok());
    }
  }

  Result<std::unique_ptr<Store>> OpenReader() const {
    StoreOptions read_only;
    read_only.read_only = true;
    return Store::Open(path_, read_only);
  }

  TempDir dir_;
  std::string path_;
  std::unique_ptr<Store> writer_;
  std::atomic<bool> stop_{false};
  std::atomic<int> compactions_{0};
  std::thread compactor_;
};

TEST_F(ReadersBesideWriterTest, ReadOnlyOpensSucceedWhileTheWriterCompacts) {
  int opens = 0;
  for (; opens < 20 || compactions_ < 3; ++opens) {
    Result<std::unique_ptr<Store>> reader = OpenReader();
    ASSERT_TRUE(reader.ok()) << "open " << opens << ": " << reader.status().ToString();
    Result<StoreStats> stats = (*reader)->Stats();
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    EXPECT_GE(stats->documents, kDocuments);
    ASSERT_TRUE((*reader)->Get(kDocuments / 2).ok());
    if (opens > 2000) break;  // the compactor is stuck: its check below says so
  }
  EXPECT_GE(compactions_, 3) << "the writer must have compacted beside the readers";
}

// Each reader verifies after the writer has compacted twice since it opened: by then every file
// the reader lists is deleted from disk.
TEST_F(ReadersBesideWriterTest, VerifyOfAHandleWhoseFilesTheWriterDeletedPasses) {
  for (int round = 0; round < 3; ++round) {
    Result<std::unique_ptr<Store>> reader = OpenReader();
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    const int opened_at = compactions_;
    for (int waited = 0; compactions_ < opened_at + 2 && waited < 60'000; waited += 10) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_GE(compactions_, opened_at + 2) << "the writer stopped compacting";
    const Status verified = (*reader)->Verify();
    EXPECT_TRUE(verified.ok()) << "round " << round << ": " << verified.ToString();
    Result<StoreStats> stats = (*reader)->Stats();
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    EXPECT_GE(stats->documents, kDocuments);
  }
}

}  // namespace
}  // namespace fpstore
