// A full disk: writes fail with an error the caller can handle (RocksDB's
// own info log used to abort the process on its next line), every
// acknowledged write survives, and the store works again once there is
// room. The disk is a file system wrapper that refuses writes on demand.

#include <gtest/gtest.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "faults/info_log.h"
#include "fpstore/store.h"
#include "temp_dir.h"
#include "util/test_hooks.h"

namespace fpstore {
namespace {

using testing::TempDir;

// Every write to a file fails with NoSpace while `full`.
class FillableFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  FillableFileSystem() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  const char* Name() const override { return "FillableFileSystem"; }

  std::atomic<bool> full{false};

  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* file,
                                    rocksdb::IODebugContext* dbg) override {
    if (full) return NoSpace();
    return Wrap(target()->NewWritableFile(name, options, file, dbg), file);
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                       std::unique_ptr<rocksdb::FSWritableFile>* file,
                                       rocksdb::IODebugContext* dbg) override {
    if (full) return NoSpace();
    return Wrap(target()->ReopenWritableFile(name, options, file, dbg), file);
  }

 private:
  class File;
  // `file`, opened with `s`, behind a wrapper that fails while the disk is full.
  rocksdb::IOStatus Wrap(rocksdb::IOStatus s, std::unique_ptr<rocksdb::FSWritableFile>* file);

  static rocksdb::IOStatus NoSpace() {
    rocksdb::IOStatus s = rocksdb::IOStatus::NoSpace("the test's disk is full");
    s.SetRetryable(false);
    return s;
  }

  class File final : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    File(std::unique_ptr<rocksdb::FSWritableFile> file, const FillableFileSystem& fs)
        : FSWritableFileOwnerWrapper(std::move(file)), fs_(fs) {}
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* dbg) override {
      if (fs_.full) return NoSpace();
      return FSWritableFileOwnerWrapper::Append(data, options, dbg);
    }
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                             const rocksdb::DataVerificationInfo& info,
                             rocksdb::IODebugContext* dbg) override {
      if (fs_.full) return NoSpace();
      return FSWritableFileOwnerWrapper::Append(data, options, info, dbg);
    }
    rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                       const rocksdb::IOOptions& options,
                                       rocksdb::IODebugContext* dbg) override {
      if (fs_.full) return NoSpace();
      return FSWritableFileOwnerWrapper::PositionedAppend(data, offset, options, dbg);
    }
    rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                       const rocksdb::IOOptions& options,
                                       const rocksdb::DataVerificationInfo& info,
                                       rocksdb::IODebugContext* dbg) override {
      if (fs_.full) return NoSpace();
      return FSWritableFileOwnerWrapper::PositionedAppend(data, offset, options, info, dbg);
    }

   private:
    const FillableFileSystem& fs_;
  };
};

rocksdb::IOStatus FillableFileSystem::Wrap(rocksdb::IOStatus s,
                                           std::unique_ptr<rocksdb::FSWritableFile>* file) {
  if (s.ok()) *file = std::make_unique<File>(std::move(*file), *this);
  return s;
}

class FullDiskTest : public ::testing::Test {
 protected:
  void SetUp() override { internal::SetEnvForTesting(env_.get()); }
  void TearDown() override { internal::SetEnvForTesting(nullptr); }

  std::vector<NewDocument> Batch(DocumentId first, std::size_t n) {
    std::vector<NewDocument> docs;
    for (std::size_t i = 0; i < n; ++i) {
      const DocumentId id = first + i;
      docs.push_back({id, id * 0x9e3779b97f4a7c15ULL, "meta"});
    }
    return docs;
  }

  std::shared_ptr<FillableFileSystem> fs_ = std::make_shared<FillableFileSystem>();
  std::unique_ptr<rocksdb::Env> env_ = rocksdb::NewCompositeEnv(fs_);
  TempDir dir_;
};

TEST_F(FullDiskTest, WritesFailWithAnErrorAndAcknowledgedOnesSurvive) {
  const std::string path = dir_.Sub("store");
  StoreOptions options;
  options.staged_documents = 256;  // merges, flushes and their files meet the full disk too
  std::unique_ptr<Store> store = *Store::Open(path, options);
  DocumentId next = 1;
  for (int b = 0; b < 10; ++b, next += 100) ASSERT_TRUE(store->InsertBatch(Batch(next, 100)).ok());
  const DocumentId acknowledged = next - 1;

  fs_->full = true;
  // Each write is refused with an error, not an abort of the process.
  const Status insert = store->InsertBatch(Batch(next, 100)).status();
  ASSERT_FALSE(insert.ok());
  EXPECT_NE(insert.ToString().find("No space"), std::string::npos) << insert.ToString();
  EXPECT_FALSE(store->Insert(next + 500, 42).ok());
  EXPECT_FALSE(store->CheckAndInsert(next + 501, 43).ok());
  EXPECT_FALSE(store->Flush().ok());
  // Reads still answer.
  ASSERT_TRUE(store->Get(1).ok());
  (void)store->Close();  // may report the error
  store.reset();

  // Room again: the store opens with every acknowledged insert, verifies,
  // and takes writes.
  fs_->full = false;
  store = *Store::Open(path, options);
  for (DocumentId id = 1; id <= acknowledged; ++id) ASSERT_TRUE(store->Get(id).ok()) << id;
  EXPECT_TRUE(store->Verify().ok());
  EXPECT_TRUE(store->InsertBatch(Batch(next, 100)).ok());
  EXPECT_TRUE(store->Flush().ok());
  EXPECT_EQ(store->Stats()->documents, acknowledged + 100);
  EXPECT_TRUE(store->Close().ok());
}

// Writes that fail until `deadline` passes or one succeeds; the last one's status.
Status RetryUntil(const std::function<Status()>& write, std::chrono::seconds deadline) {
  const auto until = std::chrono::steady_clock::now() + deadline;
  Status s = write();
  while (!s.ok() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    s = write();
  }
  return s;
}

// The handle that filled the disk takes writes again once there is room, without the host
// reopening it; while the disk stays full, reads go on.
TEST_F(FullDiskTest, TheSameHandleWritesAgainOnceThereIsRoom) {
  const std::string path = dir_.Sub("store");
  StoreOptions options;
  options.staged_documents = 256;
  std::unique_ptr<Store> store = *Store::Open(path, options);
  ASSERT_TRUE(store->InsertBatch(Batch(1, 500)).ok());
  ASSERT_TRUE(store->Flush().ok());

  fs_->full = true;
  ASSERT_FALSE(store->InsertBatch(Batch(501, 100)).ok());
  // The next writes try to open the store again, which fails on the full disk: refused, with
  // reads still answered by a read-only stand-in.
  for (int i = 0; i < 3; ++i) {
    const Status refused = store->Insert(600 + i, 42);
    ASSERT_FALSE(refused.ok());
    EXPECT_TRUE(refused.IsIOError()) << refused.ToString();
  }
  for (DocumentId id = 1; id <= 500; ++id) ASSERT_TRUE(store->Get(id).ok()) << id;
  ASSERT_TRUE(store->Query(Batch(7, 1)[0].fingerprint, 0).ok());

  fs_->full = false;
  // Failed reopens are retried at growing intervals, the first after a second.
  const Status resumed = RetryUntil([&] { return store->InsertBatch(Batch(501, 100)).status(); },
                                    std::chrono::seconds(10));
  ASSERT_TRUE(resumed.ok()) << resumed.ToString();
  EXPECT_TRUE(store->CheckAndInsert(700, 43).ok());
  EXPECT_TRUE(store->Flush().ok());
  for (DocumentId id = 1; id <= 600; ++id) ASSERT_TRUE(store->Get(id).ok()) << id;
  EXPECT_TRUE(store->Verify().ok());
  EXPECT_EQ(store->Stats()->documents, 601u);
  EXPECT_TRUE(store->Close().ok());

  store = *Store::Open(path, options);
  EXPECT_EQ(store->Stats()->documents, 601u);
  EXPECT_TRUE(store->Verify().ok());
  // The LOG kept what happened: the reopens append to it instead of rotating it.
  std::ifstream in(path + "/LOG.old");
  const std::string log((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(log.find("opening the store again after"), std::string::npos);
  EXPECT_NE(log.find("the store is open again and takes writes"), std::string::npos);
}

// A reopen waits for no call that cannot end first: a write from a scan's sink, or beside a bulk
// loader still alive, is refused at once, and the store reopens later.
TEST_F(FullDiskTest, ReopensWaitForNoCallThatCannotEndFirst) {
  const std::string path = dir_.Sub("store");
  std::unique_ptr<Store> store = *Store::Open(path);
  ASSERT_TRUE(store->InsertBatch(Batch(1, 50)).ok());
  ASSERT_TRUE(store->Insert(1000, Batch(1, 1)[0].fingerprint).ok());  // a pair for FindAll
  // A bulk loader keeps the store it loads into from being replaced under it.
  std::unique_ptr<BulkLoader> loader = *store->NewBulkLoader();
  ASSERT_TRUE(loader->Add(3000, 11).ok());
  fs_->full = true;
  ASSERT_FALSE(store->Insert(2000, 7).ok());
  fs_->full = false;

  // From inside a scan on this handle, a reopen would wait for the scan: refused at once.
  int pairs = 0;
  Status from_sink;
  ASSERT_TRUE(store
                  ->FindAll(3,
                            [&](const NearPair&) {
                              ++pairs;
                              from_sink = store->Insert(2001, 8);
                            })
                  .ok());
  EXPECT_EQ(pairs, 1);
  EXPECT_FALSE(from_sink.ok());

  // Beside the loader, the reopen is not tried: it would hold every call back for as long.
  const Status beside_loader = store->Insert(2001, 8);
  EXPECT_FALSE(beside_loader.ok());
  EXPECT_NE(beside_loader.message().find("from being opened again"), std::string::npos)
      << beside_loader.ToString();
  EXPECT_FALSE(loader->Finish().ok());  // the stopped store refuses its ingestion
  loader.reset();

  const Status resumed = store->Insert(2002, 9);
  EXPECT_TRUE(resumed.ok()) << resumed.ToString();
  EXPECT_TRUE(store->Get(2002).ok());
  EXPECT_TRUE(store->Close().ok());
}

// The store's own info log drops a line it cannot write and says so with
// the next one it can, where RocksDB's aborted.
TEST(InfoLogTest, LinesThatCannotBeWrittenAreCountedNotFatal) {
  TempDir dir;
  const std::string missing = dir.Sub("not-yet/store");
  std::shared_ptr<internal::InfoLog> log = internal::InfoLog::ForWriter(missing);
  rocksdb::Log(rocksdb::InfoLogLevel::INFO_LEVEL, log, "first %d", 1);
  rocksdb::Log(rocksdb::InfoLogLevel::INFO_LEVEL, log, "second %d", 2);
  EXPECT_EQ(log->dropped(), 2u);
  EXPECT_EQ(log->GetLogFileSize(), 0u);
  // Once the directory is there, the next line says what was lost.
  std::filesystem::create_directory(dir.Sub("not-yet"));
  rocksdb::Log(rocksdb::InfoLogLevel::INFO_LEVEL, log, "third %d", 3);
  EXPECT_EQ(log->dropped(), 0u);
  std::ifstream in(missing + "/LOG");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("2 lines of this log were lost"), std::string::npos) << text;
  EXPECT_NE(text.find("third 3"), std::string::npos) << text;
  EXPECT_EQ(log->GetLogFileSize(), text.size());
  // A read-only handle's log writes nothing at all.
  std::shared_ptr<internal::InfoLog> quiet = internal::InfoLog::Discarding();
  rocksdb::Log(rocksdb::InfoLogLevel::INFO_LEVEL, quiet, "never");
  EXPECT_EQ(quiet->GetLogFileSize(), 0u);
  EXPECT_FALSE(std::filesystem::exists(dir.Sub("LOG")));
}

TEST(InfoLogTest, ReadOnlyHandlesLeaveTheWritersLogAlone) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  std::unique_ptr<Store> writer = *Store::Open(path);
  ASSERT_TRUE(writer->Insert(1, 7).ok());
  const auto before = std::filesystem::last_write_time(std::filesystem::path(path) / "LOG");
  StoreOptions read_only;
  read_only.read_only = true;
  for (int i = 0; i < 3; ++i) {
    std::unique_ptr<Store> reader = *Store::Open(path, read_only);
    ASSERT_TRUE(reader->Get(1).ok());
  }
  EXPECT_FALSE(std::filesystem::exists(std::filesystem::path(path) / "LOG.old"));
  EXPECT_EQ(std::filesystem::last_write_time(std::filesystem::path(path) / "LOG"), before);
}

}  // namespace
}  // namespace fpstore
