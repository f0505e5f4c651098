// Behaviours of RocksDB 7.8 (Debian's build, which keeps its assertions) that fpstore works
// around, each pinned against plain RocksDB, without fpstore's code. Each test asserts the
// behaviour as it is today, so that an upgrade of RocksDB that changes it fails the test; the
// test's comment names the work-around that may then be retired.

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <rocksdb/listener.h>
#include <rocksdb/metadata.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_writer.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "corrupt_file.h"
#include "temp_dir.h"

namespace fpstore {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

std::string KeyOf(int i) {
  char key[16];
  std::snprintf(key, sizeof key, "key%04d", i);
  return key;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool IsTable(const std::string& path) { return EndsWith(path, ".sst"); }
bool IsManifest(const std::string& path) { return path.find("/MANIFEST-") != std::string::npos; }
bool IsInfoLog(const std::string& path) { return EndsWith(path, "/LOG"); }

// The files in `dir` whose names end in `suffix`, by name.
std::vector<fs::path> FilesIn(const std::string& dir, const std::string& suffix) {
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (EndsWith(e.path().filename().string(), suffix)) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A DB and its families' handles, closed when it dies.
struct OpenDb {
  OpenDb() = default;
  OpenDb(const OpenDb&) = delete;
  OpenDb& operator=(const OpenDb&) = delete;
  ~OpenDb() { Close().PermitUncheckedError(); }

  // Closes the DB; Close's status.
  rocksdb::Status Close() {
    if (!db) return rocksdb::Status::OK();
    for (rocksdb::ColumnFamilyHandle* h : handles) {
      db->DestroyColumnFamilyHandle(h).PermitUncheckedError();
    }
    handles.clear();
    const rocksdb::Status s = db->Close();
    db.reset();
    return s;
  }

  std::unique_ptr<rocksdb::DB> db;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
};

// Opens the DB at `path`, its default family alone, into `out` (closing what `out` held).
rocksdb::Status Open(const rocksdb::Options& options, const std::string& path, OpenDb& out) {
  out.Close().PermitUncheckedError();
  rocksdb::DB* raw = nullptr;
  const rocksdb::Status s = rocksdb::DB::Open(options, path, &raw);
  out.db.reset(raw);
  return s;
}

// Whether `key` is in the default family of `db`.
bool Has(rocksdb::DB& db, const std::string& key) {
  std::string value;
  return db.Get(rocksdb::ReadOptions(), key, &value).ok();
}

// An SST at `path` holding key 0 .. 9, to ingest.
void WriteExternalTable(const rocksdb::Options& options, const std::string& path) {
  rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), options);
  ASSERT_TRUE(writer.Open(path).ok());
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(writer.Put(KeyOf(i), "v").ok());
  ASSERT_TRUE(writer.Finish().ok());
}

// An ingestion as fpstore's: the file is moved (hard-linked) into the DB.
rocksdb::IngestExternalFileOptions MoveFiles() {
  rocksdb::IngestExternalFileOptions ingest;
  ingest.move_files = true;
  return ingest;
}

// Keeps RocksDB from resuming a handle by itself after a hard background error, as fpstore's
// listener does (lib/store/background_errors.cc), and counts the recoveries it turned down.
class NoAutoRecovery final : public rocksdb::EventListener {
 public:
  void OnErrorRecoveryBegin(rocksdb::BackgroundErrorReason, rocksdb::Status error,
                            bool* auto_recovery) override {
    if (error.severity() >= rocksdb::Status::Severity::kHardError) {
      *auto_recovery = false;
      ++turned_down;
    }
  }

  std::atomic<int> turned_down{0};
};

// A file system that fails chosen writes with NoSpace, not retryable, as a full disk does: the
// fault set is asked about each creation, append and sync of a file (it may also block, to hold
// the write back). RocksDB's own info log goes through its files too: RocksDB's default
// FileSystem::NewLogger opens LOG on the file system it is called on, which a wrapper's
// forwarding would otherwise skip.
class FaultyFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  enum class Op { kCreate, kAppend, kSync };
  // Whether operation `op` on the file at `path` fails.
  using Fault = std::function<bool(Op op, const std::string& path)>;

  FaultyFileSystem() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  const char* Name() const override { return "FaultyFileSystem"; }

  void SetFault(Fault fault) {
    std::lock_guard<std::mutex> lock(mu_);
    fault_ = std::make_shared<Fault>(std::move(fault));
  }
  void ClearFault() {
    std::lock_guard<std::mutex> lock(mu_);
    fault_.reset();
  }
  // Operations failed so far.
  int failed() const { return failed_; }
  // The last file linked into a directory (an ingestion's, with move_files); "" if none.
  std::string linked() const {
    std::lock_guard<std::mutex> lock(mu_);
    return linked_;
  }

  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* file,
                                    rocksdb::IODebugContext* dbg) override {
    if (rocksdb::IOStatus s = Check(Op::kCreate, name); !s.ok()) return s;
    return Wrap(name, target()->NewWritableFile(name, options, file, dbg), file);
  }
  rocksdb::IOStatus ReopenWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                       std::unique_ptr<rocksdb::FSWritableFile>* file,
                                       rocksdb::IODebugContext* dbg) override {
    if (rocksdb::IOStatus s = Check(Op::kCreate, name); !s.ok()) return s;
    return Wrap(name, target()->ReopenWritableFile(name, options, file, dbg), file);
  }
  rocksdb::IOStatus LinkFile(const std::string& from, const std::string& to,
                             const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* dbg) override {
    rocksdb::IOStatus s = target()->LinkFile(from, to, options, dbg);
    if (s.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      linked_ = to;
    }
    return s;
  }
  rocksdb::IOStatus NewLogger(const std::string& name, const rocksdb::IOOptions& options,
                              std::shared_ptr<rocksdb::Logger>* logger,
                              rocksdb::IODebugContext* dbg) override {
    return rocksdb::FileSystem::NewLogger(name, options, logger, dbg);
  }

 private:
  class File final : public rocksdb::FSWritableFileOwnerWrapper {
   public:
    File(std::string path, std::unique_ptr<rocksdb::FSWritableFile> file, FaultyFileSystem& fs)
        : FSWritableFileOwnerWrapper(std::move(file)), path_(std::move(path)), fs_(fs) {}
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                             rocksdb::IODebugContext* dbg) override {
      if (rocksdb::IOStatus s = fs_.Check(Op::kAppend, path_); !s.ok()) return s;
      return FSWritableFileOwnerWrapper::Append(data, options, dbg);
    }
    rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                             const rocksdb::DataVerificationInfo& info,
                             rocksdb::IODebugContext* dbg) override {
      if (rocksdb::IOStatus s = fs_.Check(Op::kAppend, path_); !s.ok()) return s;
      return FSWritableFileOwnerWrapper::Append(data, options, info, dbg);
    }
    rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                       const rocksdb::IOOptions& options,
                                       rocksdb::IODebugContext* dbg) override {
      if (rocksdb::IOStatus s = fs_.Check(Op::kAppend, path_); !s.ok()) return s;
      return FSWritableFileOwnerWrapper::PositionedAppend(data, offset, options, dbg);
    }
    rocksdb::IOStatus PositionedAppend(const rocksdb::Slice& data, uint64_t offset,
                                       const rocksdb::IOOptions& options,
                                       const rocksdb::DataVerificationInfo& info,
                                       rocksdb::IODebugContext* dbg) override {
      if (rocksdb::IOStatus s = fs_.Check(Op::kAppend, path_); !s.ok()) return s;
      return FSWritableFileOwnerWrapper::PositionedAppend(data, offset, options, info, dbg);
    }
    rocksdb::IOStatus Sync(const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
      if (rocksdb::IOStatus s = fs_.Check(Op::kSync, path_); !s.ok()) return s;
      return FSWritableFileOwnerWrapper::Sync(options, dbg);
    }
    rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options,
                            rocksdb::IODebugContext* dbg) override {
      if (rocksdb::IOStatus s = fs_.Check(Op::kSync, path_); !s.ok()) return s;
      return FSWritableFileOwnerWrapper::Fsync(options, dbg);
    }
    rocksdb::IOStatus RangeSync(uint64_t offset, uint64_t nbytes, const rocksdb::IOOptions& options,
                                rocksdb::IODebugContext* dbg) override {
      if (rocksdb::IOStatus s = fs_.Check(Op::kSync, path_); !s.ok()) return s;
      return FSWritableFileOwnerWrapper::RangeSync(offset, nbytes, options, dbg);
    }

   private:
    const std::string path_;
    FaultyFileSystem& fs_;
  };

  rocksdb::IOStatus Check(Op op, const std::string& path) {
    std::shared_ptr<Fault> fault;
    {
      std::lock_guard<std::mutex> lock(mu_);
      fault = fault_;
    }
    // Asked without the lock: a fault that blocks holds back this write alone.
    if (!fault || !(*fault)(op, path)) return rocksdb::IOStatus::OK();
    ++failed_;
    rocksdb::IOStatus s = rocksdb::IOStatus::NoSpace("the test's disk is full");
    s.SetRetryable(false);
    return s;
  }

  rocksdb::IOStatus Wrap(const std::string& path, rocksdb::IOStatus s,
                         std::unique_ptr<rocksdb::FSWritableFile>* file) {
    if (s.ok()) *file = std::make_unique<File>(path, std::move(*file), *this);
    return s;
  }

  mutable std::mutex mu_;
  std::shared_ptr<Fault> fault_;
  std::string linked_;
  std::atomic<int> failed_{0};
};

// A DB's directory under a TempDir, and options that reach it through a FaultyFileSystem.
class RocksDbBehaviour : public ::testing::Test {
 protected:
  static constexpr int kWrites = 100;

  RocksDbBehaviour() {
    options_.create_if_missing = true;
    options_.env = env_.get();
  }

  // Writes key 0 .. kWrites - 1, each synced and one log record, with kPointInTimeRecovery; they
  // stay in one log alone (avoid_flush_during_shutdown keeps Close from flushing them, as a crash
  // would), which goes into `log`.
  void WriteIntoOneLog(fs::path& log) {
    options_.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
    options_.avoid_flush_during_shutdown = true;
    OpenDb db;
    ASSERT_TRUE(Open(options_, path_, db).ok());
    rocksdb::WriteOptions sync;
    sync.sync = true;
    for (int i = 0; i < kWrites; ++i) {
      const std::string value(100, static_cast<char>('a' + i % 26));
      ASSERT_TRUE(db.db->Put(sync, KeyOf(i), value).ok());
    }
    ASSERT_TRUE(db.Close().ok());
    ASSERT_TRUE(FilesIn(path_, ".sst").empty()) << "the writes were flushed";
    log.clear();
    for (const fs::path& file : FilesIn(path_, ".log")) {
      if (fs::file_size(file) == 0) continue;
      ASSERT_TRUE(log.empty()) << "more than one log holds the writes";
      log = file;
    }
    ASSERT_FALSE(log.empty());
  }

  // Reopens the DB, Open's status in `status`; which of key 0 .. kWrites - 1 it holds, in order.
  std::vector<int> KeysAfterReopen(rocksdb::Status& status) {
    std::vector<int> found;
    OpenDb db;
    status = Open(options_, path_, db);
    if (!status.ok()) return found;
    for (int i = 0; i < kWrites; ++i) {
      if (Has(*db.db, KeyOf(i))) found.push_back(i);
    }
    return found;
  }

  // Opens the DB into `db`, RocksDB's recovery from hard errors turned off as fpstore turns it off,
  // writes key "a", then stops the DB with a hard error: a flush that fails on a full disk. The
  // disk has room again after.
  void StopWithAHardError(OpenDb& db) {
    options_.listeners.push_back(recovery_);
    ASSERT_TRUE(Open(options_, path_, db).ok());
    ASSERT_TRUE(db.db->Put(rocksdb::WriteOptions(), "a", "v").ok());
    fs_->SetFault([](FaultyFileSystem::Op op, const std::string& file) {
      return op != FaultyFileSystem::Op::kCreate && IsTable(file);
    });
    const rocksdb::Status flushed = db.db->Flush(rocksdb::FlushOptions());
    fs_->ClearFault();
    ASSERT_TRUE(flushed.IsIOError()) << flushed.ToString();
    EXPECT_TRUE(flushed.IsNoSpace()) << flushed.ToString();
    EXPECT_EQ(flushed.severity(), rocksdb::Status::Severity::kHardError);
    EXPECT_EQ(recovery_->turned_down, 1);
  }

  TempDir dir_;
  const std::string path_ = dir_.Sub("db");
  const std::shared_ptr<FaultyFileSystem> fs_ = std::make_shared<FaultyFileSystem>();
  const std::unique_ptr<rocksdb::Env> env_ = rocksdb::NewCompositeEnv(fs_);
  const std::shared_ptr<NoAutoRecovery> recovery_ = std::make_shared<NoAutoRecovery>();
  rocksdb::Options options_;
};

// Death tests run their statement in a child process that runs the test again from its start
// ("threadsafe" style: a fork alone would lack RocksDB's background threads), and dies before it
// could remove a TempDir of its own. So the statement works in a directory named after the test's
// process, the child's parent, which the test removes once the child has died.
class RocksDbBehaviourDeathTest : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(DirOfTestProcess(getpid()), ec);
  }

  // The statement's directory (call it in the statement alone): made afresh.
  static std::string ChildDir() {
    const fs::path dir = DirOfTestProcess(getppid());
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(dir, ec);
    return dir.string();
  }

  // Ends the child with a message if `s` is not OK: the death test then fails, showing it.
  static void Must(const rocksdb::Status& s, const char* what) {
    if (s.ok()) return;
    std::fprintf(stderr, "setup failed: %s: %s\n", what, s.ToString().c_str());
    std::_Exit(3);
  }

 private:
  static fs::path DirOfTestProcess(pid_t test_process) {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    return fs::temp_directory_path() /
           ("fpstore-rocksdb-behaviour-" + std::to_string(test_process) + "-" + test->name());
  }
};

// Each writable open that writes nothing leaves its new, empty log behind for good: RocksDB
// moves a family's oldest needed log on only when the family's memtable is switched, and an open
// that replays an empty log switches none. Covered by RemoveEmptyOldLogs in lib/store/open.cc,
// which removes the empty logs older than the current one after each writable open. If this test
// fails, the behaviour changed: re-check whether RemoveEmptyOldLogs (lib/store/open.cc) is still
// needed.
TEST_F(RocksDbBehaviour, EachWritableOpenWithoutWritesLeavesAnEmptyLog) {
  OpenDb db;
  ASSERT_TRUE(Open(options_, path_, db).ok());
  ASSERT_TRUE(db.Close().ok());
  const std::size_t created = FilesIn(path_, ".log").size();
  constexpr int kOpens = 4;
  for (int i = 1; i <= kOpens; ++i) {
    ASSERT_TRUE(Open(options_, path_, db).ok());
    ASSERT_TRUE(db.Close().ok());
    EXPECT_EQ(FilesIn(path_, ".log").size(), created + i) << "after open " << i;
  }
  for (const fs::path& log : FilesIn(path_, ".log")) EXPECT_EQ(fs::file_size(log), 0u) << log;
}

// With kPointInTimeRecovery, damage in the middle of a log (bytes flipped inside an early
// record, intact records after it) stops the replay there: Open succeeds and reports nothing, and
// every write after the damage is gone. Covered by fpstore's check of the logs before RocksDB
// opens a store, lib/store/damaged_log.{h,cc} (docs/reliability.md, "A damaged log"), which
// refuses such an open unless asked to drop those writes. If this test fails, the behaviour
// changed: re-check whether the damaged-log check (lib/store/damaged_log.{h,cc}) is still needed.
TEST_F(RocksDbBehaviour, PointInTimeRecoveryDropsWritesAfterMidLogDamageSilently) {
  fs::path log;
  ASSERT_NO_FATAL_FAILURE(WriteIntoOneLog(log));
  ASSERT_TRUE(testing::FlipBytes(log, fs::file_size(log) / 2, 16));
  rocksdb::Status s;
  const std::vector<int> found = KeysAfterReopen(s);
  ASSERT_TRUE(s.ok()) << s.ToString();
  // The writes before the damage are kept, with no gap; those after it are gone, though intact.
  ASSERT_FALSE(found.empty());
  EXPECT_EQ(found.back() + 1, static_cast<int>(found.size())) << "a gap";
  EXPECT_GT(found.size(), std::size_t{kWrites / 2 - 5});
  EXPECT_LE(found.size(), std::size_t{kWrites / 2});
}

// Damage inside the last record of a log is dropped as silently as a last record a crash cut
// short: Open succeeds and reports nothing, and the last write is gone. Unlike a torn tail, that
// write was synced and acknowledged before the damage, so fpstore's check of the logs
// (lib/store/damaged_log.{h,cc}) must report this case itself. If this test fails, the behaviour
// changed: re-check whether the damaged-log check (lib/store/damaged_log.{h,cc}) still needs to
// report damage in a log's last record.
TEST_F(RocksDbBehaviour, PointInTimeRecoveryDropsADamagedLastRecordSilently) {
  fs::path log;
  ASSERT_NO_FATAL_FAILURE(WriteIntoOneLog(log));
  ASSERT_TRUE(
      testing::FlipBytes(log, fs::file_size(log) - 20, 4));  // inside the last write's value
  rocksdb::Status s;
  const std::vector<int> found = KeysAfterReopen(s);
  ASSERT_TRUE(s.ok()) << s.ToString();
  ASSERT_EQ(found.size(), std::size_t{kWrites - 1});
  EXPECT_EQ(found.back(), kWrites - 2);
}

// An ingestion whose MANIFEST sync fails after its record was appended (the append landed, the
// sync did not) fails, and RocksDB deletes the table file it linked into the DB all the same,
// though the MANIFEST names it: the next open fails, naming the file that is gone. (RocksDB's own
// recovery from the error would write a new MANIFEST without the record, but fpstore turns that
// recovery off, as the listener here does, and a crash before it leaves the same state.) Covered
// by HeldDeletions and IngestGuard, lib/store/ingest_guard.{h,cc} (docs/reliability.md, "A failed
// ingestion"), which hold back deletions of table files while an ingestion runs and keep them
// when it failed with a background error. If this test fails, the behaviour changed: re-check
// whether HeldDeletions and IngestGuard (lib/store/ingest_guard.{h,cc}) are still needed.
TEST_F(RocksDbBehaviour, FailedManifestSyncOfIngestionDeletesTheFileTheManifestNames) {
  options_.listeners.push_back(recovery_);
  const std::string external = dir_.Sub("external.sst");
  ASSERT_NO_FATAL_FAILURE(WriteExternalTable(options_, external));
  OpenDb db;
  ASSERT_TRUE(Open(options_, path_, db).ok());
  // The first MANIFEST sync after the file was linked in: the ingestion's record of it (an
  // earlier one reserves its file number).
  std::atomic<bool> failed{false};
  fs_->SetFault([&](FaultyFileSystem::Op op, const std::string& file) {
    return op == FaultyFileSystem::Op::kSync && IsManifest(file) && !fs_->linked().empty() &&
           !failed.exchange(true);
  });
  const rocksdb::Status ingested = db.db->IngestExternalFile({external}, MoveFiles());
  fs_->ClearFault();
  ASSERT_EQ(fs_->failed(), 1);
  const std::string linked = fs_->linked();
  EXPECT_TRUE(ingested.IsIOError()) << ingested.ToString();
  EXPECT_EQ(recovery_->turned_down, 1);
  EXPECT_FALSE(fs::exists(linked)) << linked;
  db.Close().PermitUncheckedError();

  const rocksdb::Status reopened = Open(options_, path_, db);
  ASSERT_FALSE(reopened.ok());
  EXPECT_TRUE(reopened.IsCorruption()) << reopened.ToString();
  EXPECT_NE(reopened.ToString().find(fs::path(linked).stem().string()), std::string::npos)
      << reopened.ToString() << " does not name " << linked;
  EXPECT_NE(reopened.ToString().find("No such file"), std::string::npos) << reopened.ToString();
}

// After a hard background error (a flush failing on a full disk), with RocksDB's own recovery
// turned off, the DB refuses every write, also once the disk has room again, until it is closed
// and opened again; the reopened DB writes, and holds what was acknowledged. Covered by
// BackgroundErrors, lib/store/background_errors.{h,cc}, which turns the recovery off and marks
// the store stopped, and ReopeningStore, lib/store/reopening_store.{h,cc}, which reopens the
// store at the next write. If this test fails, the behaviour changed: re-check whether
// BackgroundErrors (lib/store/background_errors.{h,cc}) and ReopeningStore
// (lib/store/reopening_store.{h,cc}) are still needed as they are.
TEST_F(RocksDbBehaviour, HardBackgroundErrorStopsWritesUntilTheDbIsReopened) {
  OpenDb db;
  ASSERT_NO_FATAL_FAILURE(StopWithAHardError(db));
  // The disk has room again, yet writes are refused.
  for (const char* key : {"b", "c"}) {
    const rocksdb::Status put = db.db->Put(rocksdb::WriteOptions(), key, "v");
    EXPECT_TRUE(put.IsIOError()) << put.ToString();
    EXPECT_TRUE(put.IsNoSpace()) << put.ToString();
  }
  db.Close().PermitUncheckedError();
  ASSERT_TRUE(Open(options_, path_, db).ok());
  EXPECT_TRUE(db.db->Put(rocksdb::WriteOptions(), "d", "v").ok());
  EXPECT_TRUE(db.db->Flush(rocksdb::FlushOptions()).ok());
  EXPECT_TRUE(Has(*db.db, "a"));
  EXPECT_TRUE(Has(*db.db, "d"));
}

// A handle resumed after a hard error (DB::Resume, as RocksDB's own recovery resumes it) still
// counts itself stopped: its error is cleared but its "stopped" flag is not, and a flush that is
// asked to wait returns OK before it is done. The flush's table write is held back here until the
// test lets it go, so that "not done" is seen without a race. Covered by BackgroundErrors,
// lib/store/background_errors.{h,cc}, which turns RocksDB's recovery off (fpstore reopens the
// store instead, lib/store/reopening_store.{h,cc}). If this test fails, the behaviour changed:
// re-check whether BackgroundErrors (lib/store/background_errors.{h,cc}) still needs to turn
// RocksDB's recovery off.
TEST_F(RocksDbBehaviour, FlushOfADbResumedAfterAHardErrorReturnsBeforeItIsDone) {
  OpenDb db;
  ASSERT_NO_FATAL_FAILURE(StopWithAHardError(db));
  ASSERT_TRUE(db.db->Resume().ok());
  ASSERT_TRUE(db.db->Put(rocksdb::WriteOptions(), "b", "v").ok());

  std::mutex mu;
  std::condition_variable cv;
  bool let_go = false, went_on = false;
  fs_->SetFault([&](FaultyFileSystem::Op op, const std::string& file) {
    if (op != FaultyFileSystem::Op::kCreate || !IsTable(file)) return false;
    std::unique_lock<std::mutex> lock(mu);
    // The deadline only turns a Flush that waits (the behaviour changed) into a failure rather
    // than a hang.
    cv.wait_for(lock, std::chrono::seconds(10), [&] { return let_go; });
    went_on = true;
    return false;
  });
  const rocksdb::Status flushed = db.db->Flush(rocksdb::FlushOptions());
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_TRUE(flushed.ok()) << flushed.ToString();
    EXPECT_FALSE(went_on) << "Flush waited for the flush's table";
    std::vector<rocksdb::LiveFileMetaData> files;
    db.db->GetLiveFilesMetaData(&files);
    for (const rocksdb::LiveFileMetaData& f : files) {
      EXPECT_FALSE(f.smallestkey <= "b" && "b" <= f.largestkey) << f.name << " holds b";
    }
    let_go = true;
  }
  cv.notify_all();
  fs_->ClearFault();
  EXPECT_TRUE(db.Close().ok());
  ASSERT_TRUE(Open(options_, path_, db).ok());
  EXPECT_TRUE(Has(*db.db, "b"));
}

// An ingestion into a handle resumed after a hard error takes table file number 0: the handle
// still counts itself stopped, so the reservation of file numbers returns the (cleared, OK) error
// instead of a number, and the ingestion goes on with 0, which fails an assertion in Debian's
// build (and would write over a table file in a build without assertions). Covered by
// BackgroundErrors, lib/store/background_errors.{h,cc}, which turns RocksDB's recovery off, and
// IngestGuard, lib/store/ingest_guard.{h,cc}, which refuses to ingest into a stopped store. If
// this test fails, the behaviour changed: re-check whether BackgroundErrors
// (lib/store/background_errors.{h,cc}) still needs to turn RocksDB's recovery off.
TEST_F(RocksDbBehaviourDeathTest, IngestionIntoADbResumedAfterAHardErrorTakesFileNumberZero) {
  EXPECT_DEATH(
      {
        const std::string dir = ChildDir();
        auto fs = std::make_shared<FaultyFileSystem>();
        const std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
        rocksdb::Options options;
        options.create_if_missing = true;
        options.env = env.get();
        options.listeners.push_back(std::make_shared<NoAutoRecovery>());
        const std::string external = dir + "/external.sst";
        {
          rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), options);
          Must(writer.Open(external), "opening the external table");
          Must(writer.Put("k", "v"), "writing the external table");
          Must(writer.Finish(), "finishing the external table");
        }
        rocksdb::DB* db = nullptr;
        Must(rocksdb::DB::Open(options, dir + "/db", &db), "opening");
        Must(db->Put(rocksdb::WriteOptions(), "a", "v"), "writing");
        fs->SetFault([](FaultyFileSystem::Op op, const std::string& file) {
          return op != FaultyFileSystem::Op::kCreate && IsTable(file);
        });
        if (db->Flush(rocksdb::FlushOptions()).ok()) Must(rocksdb::Status::Aborted(), "flush");
        fs->ClearFault();
        Must(db->Resume(), "resuming");
        db->IngestExternalFile({external}, MoveFiles()).PermitUncheckedError();
      },
      "Assertion `number > 0' failed");
}

// RocksDB's own info log (the default LOG, an EnvLogger over a WritableFileWriter) aborts the
// process on the line after a write of LOG failed: the failed write marks the writer, and its
// next append asserts (Debian's build keeps its assertions). Covered by fpstore's own info log,
// lib/platform/info_log.{h,cc}, which drops and counts the lines it cannot write. If this test
// fails, the behaviour changed: re-check whether InfoLog (lib/platform/info_log.{h,cc}) is still
// needed.
TEST_F(RocksDbBehaviourDeathTest, DefaultInfoLogAbortsOnTheLineAfterAFailedWrite) {
  EXPECT_DEATH(
      {
        const std::string dir = ChildDir();
        auto fs = std::make_shared<FaultyFileSystem>();
        const std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
        rocksdb::Options options;
        options.create_if_missing = true;
        options.env = env.get();
        rocksdb::DB* db = nullptr;
        Must(rocksdb::DB::Open(options, dir + "/db", &db), "opening");
        const std::shared_ptr<rocksdb::Logger> log = db->GetDBOptions().info_log;
        if (!log) Must(rocksdb::Status::NotFound(), "the DB's info log");
        fs->SetFault([](FaultyFileSystem::Op op, const std::string& file) {
          return op == FaultyFileSystem::Op::kAppend && IsInfoLog(file);
        });
        rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, log, "a line that fails to be written");
        log->Flush();  // the failed write
        rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, log, "the next line");
      },
      "Assertion `sync_without_flush_called_' failed");
}

// A compaction that a range deletion leaves without output (everything it covers dropped at
// the bottom level, the deletion with it) still opens an output file for the deletion; when
// writing that empty file fails, the compaction's statistics read the keys of an output that has
// none, and ExtractUserKey's assertion aborts the process. Covered by fpstore writing no range
// deletions (docs/reliability.md, "Faults one at a time"): the lone-bit rewrite writes point
// deletions, as an ingested file, and retires the recent family's entries by its epoch. If this
// test fails, the behaviour changed: re-check whether fpstore still needs to avoid range
// deletions (docs/reliability.md, "Faults one at a time").
TEST_F(RocksDbBehaviourDeathTest, FailedEmptyOutputOfARangeDeletionCompactionAborts) {
  EXPECT_DEATH(
      {
        const std::string dir = ChildDir();
        auto fs = std::make_shared<FaultyFileSystem>();
        const std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
        rocksdb::Options options;
        options.create_if_missing = true;
        options.env = env.get();
        options.disable_auto_compactions = true;
        rocksdb::DB* db = nullptr;
        Must(rocksdb::DB::Open(options, dir + "/db", &db), "opening");
        for (int i = 0; i < 100; ++i) Must(db->Put(rocksdb::WriteOptions(), KeyOf(i), "v"), "put");
        Must(db->Flush(rocksdb::FlushOptions()), "flushing the keys");
        Must(db->DeleteRange(rocksdb::WriteOptions(), db->DefaultColumnFamily(), KeyOf(0),
                             KeyOf(100)),
             "deleting the range");
        Must(db->Flush(rocksdb::FlushOptions()), "flushing the range deletion");
        fs->SetFault([](FaultyFileSystem::Op op, const std::string& file) {
          return op != FaultyFileSystem::Op::kCreate && IsTable(file);
        });
        db->CompactRange(rocksdb::CompactRangeOptions(), nullptr, nullptr).PermitUncheckedError();
      },
      "Assertion `internal_key.size\\(\\) >= kNumInternalBytes' failed");
}

// Runs a hook once, in the thread that armed it, at its first listing of a directory after it
// opened a MANIFEST to read: in a read-only open, between its reading of the MANIFEST and its
// listing of the logs to replay.
class ListingHookFileSystem final : public rocksdb::FileSystemWrapper {
 public:
  ListingHookFileSystem() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  const char* Name() const override { return "ListingHookFileSystem"; }

  void Arm(std::function<void()> hook) {
    hook_ = std::move(hook);
    thread_ = std::this_thread::get_id();
  }
  bool fired() const { return fired_; }

  rocksdb::IOStatus NewSequentialFile(const std::string& name, const rocksdb::FileOptions& options,
                                      std::unique_ptr<rocksdb::FSSequentialFile>* file,
                                      rocksdb::IODebugContext* dbg) override {
    if (hook_ && std::this_thread::get_id() == thread_ && IsManifest(name)) manifest_read_ = true;
    return target()->NewSequentialFile(name, options, file, dbg);
  }
  rocksdb::IOStatus GetChildren(const std::string& dir, const rocksdb::IOOptions& options,
                                std::vector<std::string>* result,
                                rocksdb::IODebugContext* dbg) override {
    if (hook_ && manifest_read_ && std::this_thread::get_id() == thread_) {
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
  bool manifest_read_ = false;
  bool fired_ = false;
};

// A read-only open beside a writer reads the MANIFEST, then lists the logs to replay. A writer
// that flushes its last family holding a log's writes in between deletes that log, and the open
// succeeds without those writes in that family, while a family flushed before the MANIFEST was
// read shows them: one state that never was. A later read-only open sees every write. Covered by
// OpenForReadOnly in lib/store/open.cc, which opens again when a log that was there before the
// open began was deleted during it. If this test fails, the behaviour changed: re-check whether
// OpenForReadOnly's retry (lib/store/open.cc) is still needed.
TEST_F(RocksDbBehaviour, ReadOnlyOpenMissesWritesOfALogDeletedWhileItOpens) {
  rocksdb::Options options;
  options.create_if_missing = true;
  options.create_missing_column_families = true;
  const std::vector<rocksdb::ColumnFamilyDescriptor> families = {
      {rocksdb::kDefaultColumnFamilyName, rocksdb::ColumnFamilyOptions()},
      {"other", rocksdb::ColumnFamilyOptions()}};
  OpenDb writer;
  {
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(options, path_, families, &writer.handles, &raw).ok());
    writer.db.reset(raw);
  }
  rocksdb::WriteBatch batch;  // one write to both families, in one log
  ASSERT_TRUE(batch.Put(writer.handles[0], "k", "v").ok());
  ASSERT_TRUE(batch.Put(writer.handles[1], "k", "v").ok());
  ASSERT_TRUE(writer.db->Write(rocksdb::WriteOptions(), &batch).ok());
  std::vector<fs::path> logs;  // those holding the write
  for (const fs::path& log : FilesIn(path_, ".log")) {
    if (fs::file_size(log) > 0) logs.push_back(log);
  }
  ASSERT_EQ(logs.size(), 1u);
  // The default family's table holds the write; the other family's memtable and the log alone.
  ASSERT_TRUE(writer.db->Flush(rocksdb::FlushOptions(), writer.handles[0]).ok());
  ASSERT_TRUE(fs::exists(logs[0]));

  auto fs = std::make_shared<ListingHookFileSystem>();
  const std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
  rocksdb::Options read_options;
  read_options.env = env.get();
  fs->Arm([&] {
    // The other family's flush leaves the log needed by none; Close waits for the background
    // work that deletes it.
    EXPECT_TRUE(writer.db->Flush(rocksdb::FlushOptions(), writer.handles[1]).ok());
    EXPECT_TRUE(writer.Close().ok());
    EXPECT_FALSE(fs::exists(logs[0])) << "the writer kept the log";
  });
  OpenDb reader;
  {
    rocksdb::DB* raw = nullptr;
    const rocksdb::Status s =
        rocksdb::DB::OpenForReadOnly(read_options, path_, families, &reader.handles, &raw);
    reader.db.reset(raw);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }
  ASSERT_TRUE(fs->fired());
  std::string value;
  EXPECT_TRUE(reader.db->Get(rocksdb::ReadOptions(), reader.handles[0], "k", &value).ok());
  EXPECT_TRUE(reader.db->Get(rocksdb::ReadOptions(), reader.handles[1], "k", &value).IsNotFound());
  ASSERT_TRUE(reader.Close().ok());

  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::OpenForReadOnly(options, path_, families, &reader.handles, &raw).ok());
  reader.db.reset(raw);
  EXPECT_TRUE(reader.db->Get(rocksdb::ReadOptions(), reader.handles[0], "k", &value).ok());
  EXPECT_TRUE(reader.db->Get(rocksdb::ReadOptions(), reader.handles[1], "k", &value).ok());
}

}  // namespace
}  // namespace fpstore
