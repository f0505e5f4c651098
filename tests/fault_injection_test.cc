// Faults of the file system, one at a time: the Nth write, sync, rename or file creation fails
// with ENOSPC or EIO, for N along a stream of inserts and their merges, a bulk load and an open,
// and along every write of the MANIFEST during merges and bulk loads. Each operation must end in
// an error the caller can handle (never an abort), keep every acknowledged insert, and leave a
// store that opens, verifies and takes writes once the fault has passed.

#include <gtest/gtest.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fpstore/store.h"
#include "temp_dir.h"
#include "util/test_hooks.h"

namespace fpstore {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Counts the operations that change files (or, for kIngestionManifestSync, the first sync of the
// MANIFEST after each link of a file into the store: an ingestion's record of its files); the one
// numbered `fail_at` (from 1) fails with `error`, once. 0 fails none.
class FaultyFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  FaultyFileSystem() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  const char* Name() const override { return "FaultyFileSystem"; }

  enum class Error { kNoSpace, kIo };

  enum class Target { kAny, kIngestionManifestSync };

  void Arm(long fail_at, Error error, Target target = Target::kAny) {
    count_ = 0;
    error_ = error;
    target_ = target;
    linked_ = false;
    fail_at_ = fail_at;
    failed_ = false;
  }
  bool failed() const { return failed_; }

  rocksdb::IOStatus Fault(const std::string& path, bool sync = false) const {
    if (target_ == Target::kIngestionManifestSync) {
      if (!sync || path.find("MANIFEST") == std::string::npos || !linked_.exchange(false)) {
        return rocksdb::IOStatus::OK();
      }
    }
    const long n = ++count_;
    if (n != fail_at_) return rocksdb::IOStatus::OK();
    failed_ = true;
    rocksdb::IOStatus s = error_ == Error::kNoSpace
                              ? rocksdb::IOStatus::NoSpace("the test's disk is full")
                              : rocksdb::IOStatus::IOError("the test's disk failed (EIO)");
    s.SetRetryable(false);
    return s;
  }

  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* file,
                                    rocksdb::IODebugContext* dbg) override {
    if (rocksdb::IOStatus s = Fault(name); !s.ok()) return s;
    return Wrap(name, target()->NewWritableFile(name, options, file, dbg), file);
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                       std::unique_ptr<rocksdb::FSWritableFile>* file,
                                       rocksdb::IODebugContext* dbg) override {
    if (rocksdb::IOStatus s = Fault(name); !s.ok()) return s;
    return Wrap(name, target()->ReopenWritableFile(name, options, file, dbg), file);
  }
  rocksdb::IOStatus LinkFile(const std::string& from, const std::string& to,
                             const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->LinkFile(from, to, options, dbg);
    if (s.ok()) linked_ = true;
    return s;
  }
  rocksdb::IOStatus RenameFile(const std::string& from, const std::string& to,
                               const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override {
    if (rocksdb::IOStatus s = Fault(to); !s.ok()) return s;
    return target()->RenameFile(from, to, options, dbg);
  }

 private:
  class File final : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    File(std::string path, std::unique_ptr<rocksdb::FSWritableFile> file,
         const FaultyFileSystem& fs)
        : FSWritableFileOwnerWrapper(std::move(file)), path_(std::move(path)), fs_(fs) {}
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* dbg) override {
      if (rocksdb::IOStatus s = fs_.Fault(path_); !s.ok()) return s;
      return FSWritableFileOwnerWrapper::Append(data, options, dbg);
    }
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                             const rocksdb::DataVerificationInfo& info,
                             rocksdb::IODebugContext* dbg) override {
      if (rocksdb::IOStatus s = fs_.Fault(path_); !s.ok()) return s;
      return FSWritableFileOwnerWrapper::Append(data, options, info, dbg);
    }
    rocksdb::IOStatus Sync(const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
      if (rocksdb::IOStatus s = fs_.Fault(path_, /*sync=*/true); !s.ok()) return s;
      return FSWritableFileOwnerWrapper::Sync(options, dbg);
    }
    rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options,
                            rocksdb::IODebugContext* dbg) override {
      if (rocksdb::IOStatus s = fs_.Fault(path_, /*sync=*/true); !s.ok()) return s;
      return FSWritableFileOwnerWrapper::Fsync(options, dbg);
    }

   private:
    const std::string path_;
    const FaultyFileSystem& fs_;
  };

  rocksdb::IOStatus Wrap(const std::string& path, rocksdb::IOStatus s,
                         std::unique_ptr<rocksdb::FSWritableFile>* file) {
    if (s.ok()) *file = std::make_unique<File>(path, std::move(*file), *this);
    return s;
  }

  mutable std::atomic<long> count_{0};
  std::atomic<long> fail_at_{0};
  Error error_ = Error::kNoSpace;
  Target target_ = Target::kAny;
  mutable std::atomic<bool> linked_{false};
  mutable std::atomic<bool> failed_{false};
};

Fingerprint FingerprintOf(DocumentId id) { return id * 0x9e3779b97f4a7c15ULL; }

std::vector<NewDocument> Batch(DocumentId first, std::size_t n) {
  std::vector<NewDocument> docs;
  for (std::size_t i = 0; i < n; ++i) docs.push_back({first + i, FingerprintOf(first + i), "m"});
  return docs;
}

constexpr DocumentId kBase = 300;  // documents of the store every run starts from

StoreOptions Options() {
  StoreOptions options;
  options.staged_documents = 64;  // merges and their files meet the faults too
  return options;
}

// An error's message says what failed.
void ExpectClear(const Status& s) {
  if (s.ok()) return;
  EXPECT_TRUE(s.message().find("disk") != std::string::npos ||
              s.message().find("background error") != std::string::npos)
      << s.ToString();
}

// FPSTORE_FAULT_STEP, if set, in place of a sweep's step (1 tries every fault).
long StepFromEnvironment(long step) {
  const char* value = std::getenv("FPSTORE_FAULT_STEP");
  return value != nullptr && std::atol(value) > 0 ? std::atol(value) : step;
}

// One operation on the store at a path, under a fault: returns the ids it acknowledged.
using Operation = std::function<std::vector<DocumentId>(const std::string& path)>;

class FaultInjectionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = dir_.Sub("base");
    std::unique_ptr<Store> store = *Store::Open(base_, Options());
    ASSERT_TRUE(store->InsertBatch(Batch(1, kBase)).ok());
    ASSERT_TRUE(store->Close().ok());
  }
  void TearDown() override { internal::SetEnvForTesting(nullptr); }

  // Runs `operation` on a copy of the base store with the Nth file operation of `target` failing,
  // for N from 1 until a run meets no fault, stepping by `step`; checks each run's outcome.
  void Sweep(const Operation& operation, long step,
             FaultyFileSystem::Target target = FaultyFileSystem::Target::kAny) {
    for (const auto error : {FaultyFileSystem::Error::kNoSpace, FaultyFileSystem::Error::kIo}) {
      for (long n = 1;; n += StepFromEnvironment(step)) {
        const std::string path = dir_.Sub("run");
        fs::remove_all(path);
        fs::copy(base_, path, fs::copy_options::recursive);
        fs_->Arm(n, error, target);
        internal::SetEnvForTesting(env_.get());
        const std::vector<DocumentId> acknowledged = operation(path);
        internal::SetEnvForTesting(nullptr);
        const bool faulted = fs_->failed();
        fs_->Arm(0, error);
        Check(path, acknowledged, n);
        if (!faulted) break;  // the operation needs fewer than n file operations
      }
    }
  }

  // After the fault: the store opens, holds the base and every acknowledged document, verifies,
  // and takes writes.
  void Check(const std::string& path, const std::vector<DocumentId>& acknowledged, long n) {
    SCOPED_TRACE("fault at file operation " + std::to_string(n));
    Result<std::unique_ptr<Store>> store = Store::Open(path, Options());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    for (DocumentId id = 1; id <= kBase; ++id) ASSERT_TRUE((*store)->Get(id).ok()) << id;
    for (const DocumentId id : acknowledged) ASSERT_TRUE((*store)->Get(id).ok()) << id;
    const Status verified = (*store)->Verify();
    EXPECT_TRUE(verified.ok()) << verified.ToString();
    EXPECT_TRUE((*store)->Insert(999'999, 42).ok());
    EXPECT_TRUE((*store)->Close().ok());
  }

  TempDir dir_;
  std::string base_;
  std::shared_ptr<FaultyFileSystem> fs_ = std::make_shared<FaultyFileSystem>();
  std::unique_ptr<rocksdb::Env> env_ = rocksdb::NewCompositeEnv(fs_);
};

// Inserts, with the merges of their staged documents into the tables.
std::vector<DocumentId> InsertAndMerge(const std::string& path) {
  std::vector<DocumentId> acknowledged;
  Result<std::unique_ptr<Store>> store = Store::Open(path, Options());
  if (!store.ok()) return acknowledged;
  for (DocumentId first = 1000; first < 1400; first += 40) {
    const Status s = (*store)->InsertBatch(Batch(first, 40)).status();
    ExpectClear(s);
    if (!s.ok()) break;
    for (DocumentId id = first; id < first + 40; ++id) acknowledged.push_back(id);
  }
  (void)(*store)->Close();
  return acknowledged;
}

// Inserts that go on after the fault on the same handle, each batch tried until it is
// acknowledged: the handle opens the store again by itself (lib/store/reopening_store.h).
std::vector<DocumentId> InsertThroughTheFault(const std::string& path) {
  std::vector<DocumentId> acknowledged;
  // Reopens follow one another at once (a reopen the fault fails would wait a second).
  internal::SetReopenIntervalForTesting(std::chrono::milliseconds(0));
  Result<std::unique_ptr<Store>> store = Store::Open(path, Options());
  if (!store.ok()) return acknowledged;
  for (DocumentId first = 1000; first < 1400; first += 40) {
    Status s = (*store)->InsertBatch(Batch(first, 40)).status();
    for (int tries = 0; !s.ok() && tries < 3; ++tries) {
      ExpectClear(s);
      s = (*store)->InsertBatch(Batch(first, 40)).status();
    }
    EXPECT_TRUE(s.ok()) << "batch from " << first << ": " << s.ToString();
    if (!s.ok()) break;
    for (DocumentId id = first; id < first + 40; ++id) acknowledged.push_back(id);
  }
  Status flushed = (*store)->Flush();
  for (int tries = 0; !flushed.ok() && tries < 3; ++tries) {
    ExpectClear(flushed);
    flushed = (*store)->Flush();
  }
  EXPECT_TRUE(flushed.ok()) << flushed.ToString();
  (void)(*store)->Close();
  internal::SetReopenIntervalForTesting(std::chrono::milliseconds(-1));
  return acknowledged;
}

std::vector<DocumentId> BulkLoad(const std::string& path) {
  std::vector<DocumentId> acknowledged;
  Result<std::unique_ptr<Store>> store = Store::Open(path, Options());
  if (!store.ok()) return acknowledged;
  {
    Result<std::unique_ptr<BulkLoader>> loader = (*store)->NewBulkLoader();
    if (loader.ok()) {
      for (DocumentId id = 2000; id < 2500; ++id) {
        if (!(*loader)->Add(id, FingerprintOf(id)).ok()) break;
      }
      const Result<BulkLoadStats> finished = (*loader)->Finish();
      ExpectClear(finished.status());
      if (finished.ok()) {
        for (DocumentId id = 2000; id < 2500; ++id) acknowledged.push_back(id);
      }
    }
  }
  (void)(*store)->Close();
  return acknowledged;
}

TEST_F(FaultInjectionTest, InsertsAndMerges) { Sweep(InsertAndMerge, 13); }

TEST_F(FaultInjectionTest, InsertsThroughTheFault) { Sweep(InsertThroughTheFault, 29); }

TEST_F(FaultInjectionTest, BulkLoad) { Sweep(BulkLoad, 11); }

// A compaction rewrites the lone bits, then compacts every family.
TEST_F(FaultInjectionTest, Compaction) {
  Sweep(
      [](const std::string& path) {
        Result<std::unique_ptr<Store>> store = Store::Open(path, Options());
        if (!store.ok()) return std::vector<DocumentId>();
        ExpectClear((*store)->Compact());
        (void)(*store)->Close();
        return std::vector<DocumentId>();
      },
      7);
}

// An ingestion whose MANIFEST sync fails may have put its record there all the same: its files must
// stay (lib/store/ingest_guard.h).
TEST_F(FaultInjectionTest, ManifestWritesOfMergesAndBulkLoads) {
  Sweep(InsertAndMerge, 1, FaultyFileSystem::Target::kIngestionManifestSync);
  Sweep(BulkLoad, 1, FaultyFileSystem::Target::kIngestionManifestSync);
}

TEST_F(FaultInjectionTest, Open) {
  Sweep(
      [](const std::string& path) {
        Result<std::unique_ptr<Store>> store = Store::Open(path, Options());
        ExpectClear(store.status());
        if (store.ok()) (void)(*store)->Close();
        return std::vector<DocumentId>();
      },
      3);
}

}  // namespace
}  // namespace fpstore
