// Read-only handles opened while the writer compacts: RocksDB deletes the
// files a compaction replaced, and a read-only open that had just read the
// manifest used to fail naming one of them, and a Verify of a handle whose
// files the writer has since deleted called the store corrupt. Each open
// must now succeed and see the whole store, and each Verify pass.

#include <gtest/gtest.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fpstore/store.h"
#include "temp_dir.h"
#include "util/test_hooks.h"

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

// A reader sees one state of the store: its document count record agrees with the documents it
// reads, though the writer flushed and deleted logs while the reader opened.
TEST_F(ReadersBesideWriterTest, EachReaderSeesOneState) {
  int opens = 0;
  for (; opens < 30 || compactions_ < 3; ++opens) {
    Result<std::unique_ptr<Store>> reader = OpenReader();
    ASSERT_TRUE(reader.ok()) << "open " << opens << ": " << reader.status().ToString();
    Result<StoreStats> stats = (*reader)->Stats();
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    std::uint64_t documents = 0;
    ASSERT_TRUE((*reader)->ForEachDocument([&](const Document&) { ++documents; }).ok());
    ASSERT_EQ(stats->documents, documents) << "open " << opens;
    if (opens > 2000) break;
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

// A file system that runs a hook once, in the thread that armed it, when a directory is listed.
// RocksDB's (7.8) read-only open lists the store's directory three times, the third to find the
// logs, after it has read the manifest.
class ListingHookFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  ListingHookFileSystem() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  const char* Name() const override { return "ListingHookFileSystem"; }

  // Runs `hook` at the listing after `skip` others.
  void Arm(int skip, std::function<void()> hook) {
    skip_ = skip;
    hook_ = std::move(hook);
    thread_ = std::this_thread::get_id();
  }
  bool fired() const { return fired_; }

  rocksdb::IOStatus GetChildren(const std::string& dir, const rocksdb::IOOptions& options,
                                std::vector<std::string>* result,
                                rocksdb::IODebugContext* dbg) override {
    if (hook_ && std::this_thread::get_id() == thread_ && skip_-- == 0) {
      const std::function<void()> hook = std::move(hook_);
      hook_ = nullptr;
      fired_ = true;
      hook();
    }
    return target()->GetChildren(dir, options, result, dbg);
  }

 private:
  std::function<void()> hook_;
  std::thread::id thread_;
  int skip_ = 0;
  bool fired_ = false;
};

// The writer closes, flushing every family, and so deletes the log that held its last inserts,
// right after a reader's open has read the manifest and before it lists the logs. The reader must
// still see every insert acknowledged before it began to open.
TEST(ReaderOpenRaceTest, ALogDeletedWhileAReaderOpensIsNotMissed) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  std::unique_ptr<Store> writer = *Store::Open(path);
  constexpr DocumentId kDocuments = 500;
  for (DocumentId id = 1; id <= kDocuments; ++id) {
    ASSERT_TRUE(writer->Insert(id, id * 0x9e3779b97f4a7c15ULL).ok());
  }
  std::vector<std::filesystem::path> logs;  // those that hold the inserts
  for (const auto& e : std::filesystem::directory_iterator(path)) {
    if (e.path().extension() == ".log" && e.file_size() > 0) logs.push_back(e.path());
  }
  ASSERT_FALSE(logs.empty());
  const auto logs_left = [&] {
    return std::count_if(logs.begin(), logs.end(),
                         [](const std::filesystem::path& p) { return std::filesystem::exists(p); });
  };

  auto fs = std::make_shared<ListingHookFileSystem>();
  const std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
  internal::SetEnvForTesting(env.get());
  fs->Arm(2, [&] {                      // the third listing: the logs, after the manifest
    ASSERT_TRUE(writer->Close().ok());  // flushes every family
    for (int waited = 0; logs_left() > 0 && waited < 5000; waited += 10) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(logs_left(), 0) << "the writer kept its log";
  });
  StoreOptions read_only;
  read_only.read_only = true;
  Result<std::unique_ptr<Store>> reader = Store::Open(path, read_only);
  internal::SetEnvForTesting(nullptr);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_TRUE(fs->fired());
  Result<StoreStats> stats = (*reader)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->documents, kDocuments);
  std::uint64_t documents = 0;
  ASSERT_TRUE((*reader)->ForEachDocument([&](const Document&) { ++documents; }).ok());
  EXPECT_EQ(documents, kDocuments);
  EXPECT_TRUE((*reader)->Get(kDocuments).ok());
  EXPECT_TRUE(writer->Close().ok());
}

}  // namespace
}  // namespace fpstore
