// Stores in bad states, and bad calls: each must give a clear error of the
// documented kind, never a crash, and a refused Open must change nothing on
// disk.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <rocksdb/db.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "brute_force.h"
#include "corrupt_file.h"
#include "dir_snapshot.h"
#include "format/families.h"
#include "fpstore/store.h"
#include "open/store_impl.h"
#include "raw_store.h"
#include "store_checks.h"
#include "temp_dir.h"

namespace fpstore {
namespace {

namespace fs = std::filesystem;
using testing::ChangedFiles;
using testing::FileMap;
using testing::Random;
using testing::SnapshotFiles;
using testing::SnapshotNames;
using testing::TempDir;

StoreOptions SmallOptions() {
  StoreOptions options;
  options.durability = Durability::kNoSync;
  options.block_cache_bytes = 8 << 20;
  options.write_buffer_bytes = 8 << 20;
  return options;
}

Result<std::unique_ptr<Store>> OpenWith(const std::string& path, StoreOptions options) {
  options.block_cache_bytes = 8 << 20;
  options.write_buffer_bytes = 8 << 20;
  return Store::Open(path, options);
}

// What documents 0 .. n - 1 of a test store hold.
Fingerprint FingerprintOf(DocumentId id) { return Random(id).Next(); }
std::string MetadataOf(DocumentId id) { return "doc " + std::to_string(id); }

// Creates a store holding documents 0 .. n - 1 and closes it; with
// `compact`, the documents are in SST files, else only in the WAL.
void CreateStore(const std::string& path, int n, bool compact = false) {
  Result<std::unique_ptr<Store>> store = Store::Open(path, SmallOptions());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  std::vector<NewDocument> docs;
  std::vector<std::string> metadata;
  for (int i = 0; i < n; ++i) metadata.push_back(MetadataOf(i));
  for (int i = 0; i < n; ++i) docs.push_back({DocumentId(i), FingerprintOf(i), metadata[i]});
  ASSERT_TRUE((*store)->InsertBatch(docs).ok());
  if (compact) {
    ASSERT_TRUE((*store)->Compact().ok());
  }
  ASSERT_TRUE((*store)->Close().ok());
}

bool Contains(const Status& s, const std::string& text) {
  return s.message().find(text) != std::string::npos;
}

// Sets a metadata record of a closed store, as another build of fpstore
// might have written it.
void SetMetadataRecord(const std::string& path, const std::string& key, const std::string& value) {
  testing::EditWithRocksDb(path, [&](rocksdb::DB& db, const auto& family) {
    rocksdb::WriteOptions sync;
    sync.sync = true;
    EXPECT_TRUE(db.Put(sync, family("default"), key, value).ok());
  });
}

// The largest live SST file of column family `family` of a closed store.
std::string LargestSstOf(const std::string& path, const std::string& family) {
  std::vector<std::string> names;
  EXPECT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const std::string& name : names) families.push_back({name, {}});
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  EXPECT_TRUE(
      rocksdb::DB::OpenForReadOnly(rocksdb::DBOptions(), path, families, &handles, &raw).ok());
  if (raw == nullptr) return "";
  std::unique_ptr<rocksdb::DB> db(raw);
  std::vector<rocksdb::LiveFileMetaData> files;
  db->GetLiveFilesMetaData(&files);
  std::string largest;
  std::uint64_t largest_size = 0;
  for (const rocksdb::LiveFileMetaData& f : files) {
    if (f.column_family_name == family && f.size > largest_size) {
      largest = f.db_path + f.name;
      largest_size = f.size;
    }
  }
  for (rocksdb::ColumnFamilyHandle* h : handles) EXPECT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  EXPECT_TRUE(db->Close().ok());
  return largest;
}

// Every write must be refused with NotSupported by a read-only store.
void ExpectWritesNotSupported(Store& store) {
  const NewDocument doc{7, 7, "x"};
  EXPECT_TRUE(store.Insert(7, 7).IsNotSupported());
  EXPECT_TRUE(store.InsertBatch(std::span(&doc, 1)).status().IsNotSupported());
  EXPECT_TRUE(store.Remove(0).IsNotSupported());
  EXPECT_TRUE(store.CheckAndInsert(7, 7).status().IsNotSupported());
  EXPECT_TRUE(store.Compact().IsNotSupported());
}

// ---- Two writers ----

// A child process that holds a store open for writing until released.
class WriterProcess {
 public:
  // Forks a child that opens `path`, inserts document 1000 and reports.
  explicit WriterProcess(const std::string& path) {
    int ready[2], release[2];
    if (pipe(ready) != 0 || pipe(release) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(ready[0]);
      close(release[1]);
      Result<std::unique_ptr<Store>> store = Store::Open(path, SmallOptions());
      const char state = store.ok() && (*store)->Insert(1000, 1000, "child").ok() ? 'R' : 'E';
      char c;
      if (write(ready[1], &state, 1) != 1) _exit(1);
      if (read(release[0], &c, 1) < 0) _exit(1);  // until released or the parent is gone
      _exit(state == 'R' ? 0 : 1);                // the kernel drops the lock
    }
    close(ready[1]);
    close(release[0]);
    ready_fd_ = ready[0];
    release_fd_ = release[1];
  }

  ~WriterProcess() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (ready_fd_ >= 0) close(ready_fd_);
    if (release_fd_ >= 0) close(release_fd_);
  }

  // True once the child holds the store with its document in it.
  bool WaitReady() {
    pollfd p{ready_fd_, POLLIN, 0};
    char c = 0;
    return poll(&p, 1, 60'000) == 1 && read(ready_fd_, &c, 1) == 1 && c == 'R';
  }

  // Lets the child exit; true if it exited cleanly.
  bool Release() {
    const char c = 'x';
    if (write(release_fd_, &c, 1) != 1) return false;
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }

 private:
  pid_t pid_ = -1;
  int ready_fd_ = -1;
  int release_fd_ = -1;
};

TEST(StoreBadStateTest, SecondWriterInAnotherProcessIsBusy) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  ASSERT_NO_FATAL_FAILURE(CreateStore(path, 100));
  WriterProcess writer(path);
  ASSERT_TRUE(writer.WaitReady());

  // Refused before RocksDB would rotate the writer's info log.
  const FileMap before = SnapshotNames(path);
  Result<std::unique_ptr<Store>> second = OpenWith(path, {});
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(second.status().IsBusy()) << second.status().ToString();
  EXPECT_TRUE(Contains(second.status(), "in use by another process")) << second.status().ToString();
  EXPECT_EQ(ChangedFiles(before, SnapshotNames(path)), "");

  // A reader beside the writer sees what the writer had written.
  StoreOptions read_only;
  read_only.read_only = true;
  Result<std::unique_ptr<Store>> reader = OpenWith(path, read_only);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  Result<Document> doc = (*reader)->Get(1000);
  ASSERT_TRUE(doc.ok()) << doc.status().ToString();
  EXPECT_EQ(doc->metadata, "child");
  ExpectWritesNotSupported(**reader);
  ASSERT_TRUE((*reader)->Close().ok());

  ASSERT_TRUE(writer.Release());
  Result<std::unique_ptr<Store>> after = OpenWith(path, {});
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_TRUE((*after)->Get(1000).ok());
}

TEST(StoreBadStateTest, SecondWriterInThisProcessIsBusy) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  ASSERT_NO_FATAL_FAILURE(CreateStore(path, 100));
  Result<std::unique_ptr<Store>> first = OpenWith(path, {});
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE((*first)->Insert(1000, 1000, "first").ok());

  const FileMap before = SnapshotNames(path);
  for (const std::string& same : {path, path + "/", dir.path() + "/./store"}) {
    Result<std::unique_ptr<Store>> second = OpenWith(same, {});
    ASSERT_FALSE(second.ok());
    EXPECT_TRUE(second.status().IsBusy()) << second.status().ToString();
    EXPECT_TRUE(Contains(second.status(), "in use")) << second.status().ToString();
  }
  EXPECT_EQ(ChangedFiles(before, SnapshotNames(path)), "");

  StoreOptions read_only;
  read_only.read_only = true;
  Result<std::unique_ptr<Store>> reader = OpenWith(path, read_only);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_TRUE((*reader)->Get(1000).ok());
  Result<std::vector<Match>> matches = (*reader)->Query(FingerprintOf(5), 0);
  ASSERT_TRUE(matches.ok()) << matches.status().ToString();
  ASSERT_EQ(matches->size(), 1u);
  EXPECT_EQ((*matches)[0].id, 5u);
  ExpectWritesNotSupported(**reader);
  EXPECT_TRUE((*reader)->Verify().ok());
  // The writer is unaffected by the failed opens and the reader; once it
  // is closed, the store is free again.
  EXPECT_TRUE((*first)->Insert(1001, 1001).ok());
  EXPECT_TRUE((*first)->Verify().ok());
  ASSERT_TRUE((*first)->Close().ok());
  Result<std::unique_ptr<Store>> next = OpenWith(path, {});
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_TRUE((*next)->Get(1001).ok());
}

// ---- Damaged data ----

// Flips bytes in the middle of the largest SST file of a family: inside a
// data block, so the store still opens and the damage shows where it is read.
TEST(StoreBadStateTest, CorruptedSstIsReportedNotFatal) {
  constexpr int kDocs = 3000;
  for (const std::string family : {"table-000", "table-007", "documents"}) {
    SCOPED_TRACE(family);
    TempDir dir;
    const std::string path = dir.Sub("store");
    ASSERT_NO_FATAL_FAILURE(CreateStore(path, kDocs, /*compact=*/true));
    const std::string sst = LargestSstOf(path, family);
    ASSERT_FALSE(sst.empty());
    ASSERT_TRUE(fpstore::testing::FlipBytesInTheMiddle(sst));

    Result<std::unique_ptr<Store>> store = OpenWith(path, {});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    Status verify = (*store)->Verify();
    EXPECT_TRUE(verify.IsCorruption()) << verify.ToString();

    // Reads that touch the damage fail with Corruption; the others answer
    // in full. Nothing is silently left out. A hit skips the tables where
    // it is alone (lone bits), so table 7 is read by queries one bit away
    // from a document, outside table 7's prefix: there they share its
    // prefix, and they match nothing.
    Fingerprint beside = 0;
    if (family == "table-007") {
      const TablePermutation& perm = (*store)->plan().table(7);
      for (int b = 0; b < 64 && beside == 0; ++b) {
        const Fingerprint bit = Fingerprint{1} << b;
        if ((perm.Apply(bit) & perm.prefix_mask()) == 0) beside = bit;
      }
      ASSERT_NE(beside, 0u);
    }
    int failed_queries = 0, failed_gets = 0;
    for (int i = 0; i < kDocs; ++i) {
      Result<std::vector<Match>> matches = (*store)->Query(FingerprintOf(i) ^ beside, 0);
      if (matches.ok()) {
        const bool found = std::any_of(matches->begin(), matches->end(),
                                       [&](const Match& m) { return m.id == DocumentId(i); });
        EXPECT_EQ(found, beside == 0)
            << "document " << i << (found ? " found" : " missing from an answer given as whole");
      } else {
        EXPECT_TRUE(matches.status().IsCorruption()) << matches.status().ToString();
        ++failed_queries;
      }
      Result<Document> doc = (*store)->Get(i);
      if (doc.ok()) {
        EXPECT_EQ(doc->fingerprint, FingerprintOf(i));
      } else {
        EXPECT_TRUE(doc.status().IsCorruption()) << doc.status().ToString();
        ++failed_gets;
      }
    }
    EXPECT_GT(failed_queries, 0);
    if (family == "documents") {
      EXPECT_GT(failed_gets, 0);
    }

    // FindAll and Clusters read the tables only: in memory table 0, which
    // holds every document, streamed each table.
    ScanOptions streamed;
    streamed.memory_bytes = 0;
    for (const ScanOptions& scan : {ScanOptions(), streamed}) {
      const bool reads_damage =
          family == "table-000" || (family == "table-007" && scan.memory_bytes == 0);
      SCOPED_TRACE(scan.memory_bytes == 0 ? "streamed" : "in memory");
      Status find_all = (*store)->FindAll(
          3, [](const NearPair&) {}, scan);
      Status clusters = (*store)->Clusters(
          3, [](std::span<const DocumentId>) {}, scan);
      if (reads_damage) {
        EXPECT_TRUE(find_all.IsCorruption()) << find_all.ToString();
        EXPECT_TRUE(clusters.IsCorruption()) << clusters.ToString();
      } else {
        EXPECT_TRUE(find_all.ok()) << find_all.ToString();
        EXPECT_TRUE(clusters.ok()) << clusters.ToString();
      }
    }
  }
}

// ---- Paths that do not hold a store ----

void WriteFile(const fs::path& file, const std::string& contents) {
  std::ofstream out(file, std::ios::binary);
  out << contents;
}

std::string RandomBytes(std::uint64_t seed, std::size_t n) {
  Random rnd(seed);
  std::string bytes(n, '\0');
  for (char& b : bytes) b = static_cast<char>(rnd.Next());
  return bytes;
}

// Open with default, read-only and no-create options must all refuse `path`
// as `expect` says and leave it as it was.
void ExpectRefusedUnchanged(const std::string& path, Status::Code expect) {
  const FileMap before = SnapshotFiles(path);
  StoreOptions read_only, no_create;
  read_only.read_only = true;
  no_create.create_if_missing = false;
  for (const StoreOptions& options : {StoreOptions{}, read_only, no_create}) {
    Result<std::unique_ptr<Store>> store = OpenWith(path, options);
    ASSERT_FALSE(store.ok());
    EXPECT_EQ(store.status().code(), expect) << store.status().ToString();
    EXPECT_TRUE(Contains(store.status(), path)) << store.status().ToString();
  }
  EXPECT_EQ(ChangedFiles(before, SnapshotFiles(path)), "");
}

TEST(StoreBadStateTest, DirectoryThatIsNotAStoreIsRefused) {
  TempDir dir;
  fs::create_directories(dir.Sub("data/sub"));
  WriteFile(dir.Sub("data/notes.txt"), RandomBytes(1, 1000));
  WriteFile(dir.Sub("data/sub/blob.bin"), RandomBytes(2, 5000));
  ExpectRefusedUnchanged(dir.Sub("data"), Status::Code::kInvalidArgument);
}

TEST(StoreBadStateTest, PlainFileIsRefused) {
  TempDir dir;
  WriteFile(dir.Sub("file"), RandomBytes(3, 1000));
  ExpectRefusedUnchanged(dir.Sub("file"), Status::Code::kInvalidArgument);
}

TEST(StoreBadStateTest, MissingStoreWithoutCreateIsNotFound) {
  TempDir dir;
  StoreOptions read_only, no_create;
  read_only.read_only = true;
  no_create.create_if_missing = false;
  fs::create_directory(dir.Sub("empty"));
  for (const StoreOptions& options : {read_only, no_create}) {
    Result<std::unique_ptr<Store>> missing = OpenWith(dir.Sub("missing"), options);
    EXPECT_TRUE(missing.status().IsNotFound()) << missing.status().ToString();
    EXPECT_FALSE(fs::exists(dir.Sub("missing")));
    Result<std::unique_ptr<Store>> empty = OpenWith(dir.Sub("empty"), options);
    EXPECT_TRUE(empty.status().IsNotFound()) << empty.status().ToString();
    EXPECT_TRUE(fs::is_empty(dir.Sub("empty")));
  }
}

// A file system error must not read as "in use" because a path happens to
// contain "lock" (as in "blocks").
TEST(StoreBadStateTest, FileSystemErrorIsNotBusy) {
  TempDir dir;
  fs::create_directory(dir.Sub("blocks"));
  WriteFile(dir.Sub("blocks/file"), "not a directory");
  Result<std::unique_ptr<Store>> store = OpenWith(dir.Sub("blocks/file/store"), {});
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(store.status().IsIOError()) << store.status().ToString();
}

// ---- Stores this build must not open ----

TEST(StoreBadStateTest, NewerFormatVersionIsNotSupported) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  ASSERT_NO_FATAL_FAILURE(CreateStore(path, 100));
  ASSERT_NO_FATAL_FAILURE(SetMetadataRecord(path, "fpstore.format_version", "99"));
  const FileMap before = SnapshotFiles(path);
  StoreOptions read_only;
  read_only.read_only = true;
  for (const StoreOptions& options : {StoreOptions{}, read_only}) {
    Result<std::unique_ptr<Store>> store = OpenWith(path, options);
    ASSERT_FALSE(store.ok());
    EXPECT_TRUE(store.status().IsNotSupported()) << store.status().ToString();
    EXPECT_TRUE(Contains(store.status(), "99")) << store.status().ToString();
  }
  EXPECT_EQ(ChangedFiles(before, SnapshotFiles(path)), "");

  // Back at its own version it opens, whole: the refusal left it as it was.
  ASSERT_NO_FATAL_FAILURE(
      SetMetadataRecord(path, "fpstore.format_version", std::to_string(internal::kFormatVersion)));
  Result<std::unique_ptr<Store>> store = OpenWith(path, {});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_TRUE((*store)->Verify().ok());
  Result<StoreStats> stats = (*store)->Stats();
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->documents, 100u);
}

// A store records where its groups are cut: a store whose record is
// missing or not a number of bits from 1 to 56 (no store writes more: a
// member keeps a byte at least) is refused, as it was.
TEST(StoreBadStateTest, UnreadableGroupBitsAreCorruption) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  ASSERT_NO_FATAL_FAILURE(CreateStore(path, 100));
  for (const char* bad : {"", "0", "57", "64", "65", "16x", "-3"}) {
    ASSERT_NO_FATAL_FAILURE(SetMetadataRecord(path, "fpstore.group_bits", bad));
    const FileMap before = SnapshotFiles(path);
    Result<std::unique_ptr<Store>> store = OpenWith(path, {});
    ASSERT_FALSE(store.ok()) << "\"" << bad << "\"";
    EXPECT_TRUE(store.status().IsCorruption()) << store.status().ToString();
    EXPECT_TRUE(Contains(store.status(), "group bits")) << store.status().ToString();
    EXPECT_EQ(ChangedFiles(before, SnapshotFiles(path)), "");
  }
  testing::EditWithRocksDb(path, [&](rocksdb::DB& db, const auto& family) {
    EXPECT_TRUE(db.Delete({}, family("default"), "fpstore.group_bits").ok());
  });
  Result<std::unique_ptr<Store>> missing = OpenWith(path, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(Contains(missing.status(), "missing group bits")) << missing.status().ToString();

  ASSERT_NO_FATAL_FAILURE(SetMetadataRecord(path, "fpstore.group_bits", "19"));
  Result<std::unique_ptr<Store>> store = OpenWith(path, {});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_TRUE((*store)->Verify().ok());
}

// Close flushes every family, removals' operands in the tables included,
// so that a clean close leaves nothing in the log: a reader without the
// tables' merge operator (another build, reading the format version to
// refuse the store) replays no operand it would call corrupt.
TEST(StoreBadStateTest, ClosedStoreOpensWithoutTheTablesMergeOperator) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  {
    Result<std::unique_ptr<Store>> store = OpenWith(path, SmallOptions());
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    for (int round = 0; round < 3; ++round) {
      std::vector<NewDocument> docs;
      for (int i = 0; i < 1000; ++i) {
        const DocumentId id = 1000 * round + i;
        docs.push_back({id, FingerprintOf(id), ""});
      }
      ASSERT_TRUE((*store)->InsertBatch(docs).ok());
      ASSERT_TRUE((*store)->Flush().ok());
    }
    for (int i = 0; i < 199; ++i) ASSERT_TRUE((*store)->Remove(DocumentId(7 * i)).ok());
    ASSERT_TRUE((*store)->Close().ok());
  }
  std::vector<std::string> names;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
  // Without a plan, the inspection options have no operator for the tables.
  internal::RocksConfig config = internal::MakeInspectionConfig(names);
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  const rocksdb::Status s =
      rocksdb::DB::OpenForReadOnly(config.db, path, config.families, &handles, &raw);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::string version;
  EXPECT_TRUE(raw->Get({}, handles[0], "fpstore.format_version", &version).ok());
  EXPECT_EQ(version, std::to_string(internal::kFormatVersion));
  for (rocksdb::ColumnFamilyHandle* h : handles)
    ASSERT_TRUE(raw->DestroyColumnFamilyHandle(h).ok());
  delete raw;
}

// Development builds wrote other formats: a store of any version but this
// build's is refused, unchanged, with what to do about it.
TEST(StoreBadStateTest, OtherFormatVersionsAreNotSupported) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  ASSERT_NO_FATAL_FAILURE(CreateStore(path, 10));
  const int current = internal::kFormatVersion;
  for (const std::string& version :
       {std::string("1"), std::to_string(current - 1), std::to_string(current + 1)}) {
    ASSERT_NO_FATAL_FAILURE(SetMetadataRecord(path, "fpstore.format_version", version));
    const FileMap before = SnapshotFiles(path);
    Result<std::unique_ptr<Store>> store = OpenWith(path, {});
    ASSERT_FALSE(store.ok());
    EXPECT_TRUE(store.status().IsNotSupported()) << store.status().ToString();
    EXPECT_TRUE(Contains(store.status(), std::string("format version ") + version))
        << store.status().ToString();
    EXPECT_TRUE(Contains(store.status(), "fpstore-admin dump")) << store.status().ToString();
    EXPECT_TRUE(Contains(store.status(), "fpstore-load")) << store.status().ToString();
    EXPECT_EQ(ChangedFiles(before, SnapshotFiles(path)), "");
  }
}

// A store recording 128-bit fingerprints is refused, unchanged: this build's
// stores hold 64-bit ones.
// A 64-bit store whose fingerprint record says 128 bits, or whose plan
// record does, would read its records and tables at the wrong width.
TEST(StoreBadStateTest, RecordsThatDisagreeOnTheWidthAreCorrupt) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  ASSERT_NO_FATAL_FAILURE(CreateStore(path, 10));
  FingerprintOptions wide;
  wide.bits = 128;
  ASSERT_NO_FATAL_FAILURE(SetMetadataRecord(path, "fpstore.fingerprint", wide.ToString()));
  const FileMap before = SnapshotFiles(path);
  Result<std::unique_ptr<Store>> store = OpenWith(path, {});
  ASSERT_FALSE(store.ok());
  EXPECT_TRUE(store.status().IsCorruption()) << store.status().ToString();
  EXPECT_TRUE(Contains(store.status(),
                       "the plan record is of 64-bit fingerprints, the "
                       "fingerprint options record of 128"))
      << store.status().ToString();
  EXPECT_EQ(ChangedFiles(before, SnapshotFiles(path)), "");
  ASSERT_NO_FATAL_FAILURE(
      SetMetadataRecord(path, "fpstore.fingerprint", FingerprintOptions{}.ToString()));
  for (const std::string plan : {"blocks=6 distance=3 bits=128", "blocks=6 distance=3 bits=64"}) {
    ASSERT_NO_FATAL_FAILURE(SetMetadataRecord(path, "fpstore.plan", plan));
    store = OpenWith(path, {});
    ASSERT_FALSE(store.ok()) << plan;
    EXPECT_TRUE(store.status().IsCorruption()) << store.status().ToString();
  }
}

TEST(StoreBadStateTest, DifferentPlanOrFingerprintOptionsAreRefused) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  ASSERT_NO_FATAL_FAILURE(CreateStore(path, 100));  // the defaults: blocks 6, distance 3, window 1
  const FileMap before = SnapshotFiles(path);
  struct Case {
    StoreOptions options;
    std::string recorded, asked;
  };
  std::vector<Case> cases(5);
  cases[4].options.bits = 128;
  cases[4].recorded = "bits 64";
  cases[4].asked = "128";
  cases[0].options.blocks = 5;
  cases[0].recorded = "blocks 6";
  cases[0].asked = "5";
  cases[1].options.distance = 2;
  cases[1].recorded = "distance 3";
  cases[1].asked = "2";
  cases[2].options.fingerprint = FingerprintOptions{};
  cases[2].options.fingerprint->window = 4;
  cases[2].recorded = "window=1";
  cases[2].asked = "window=4";
  cases[3].options.min_similarity = 0.5;
  cases[3].recorded = "min_similarity 0.9";
  cases[3].asked = "0.5";
  for (const Case& c : cases) {
    Result<std::unique_ptr<Store>> store = OpenWith(path, c.options);
    ASSERT_FALSE(store.ok());
    EXPECT_TRUE(store.status().IsInvalidArgument()) << store.status().ToString();
    EXPECT_TRUE(Contains(store.status(), c.recorded) && Contains(store.status(), c.asked))
        << store.status().ToString();
  }
  EXPECT_EQ(ChangedFiles(before, SnapshotFiles(path)), "");

  StoreOptions same;
  same.blocks = 6;
  same.distance = 3;
  same.fingerprint = FingerprintOptions{};
  Result<std::unique_ptr<Store>> store = OpenWith(path, same);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
}

TEST(StoreBadStateTest, ErrorIfExists) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  ASSERT_NO_FATAL_FAILURE(CreateStore(path, 10));
  const FileMap before = SnapshotFiles(path);
  StoreOptions options;
  options.error_if_exists = true;
  Result<std::unique_ptr<Store>> existing = OpenWith(path, options);
  EXPECT_TRUE(existing.status().IsInvalidArgument()) << existing.status().ToString();
  EXPECT_EQ(ChangedFiles(before, SnapshotFiles(path)), "");
  Result<std::unique_ptr<Store>> fresh = OpenWith(dir.Sub("new"), options);
  EXPECT_TRUE(fresh.ok()) << fresh.status().ToString();
}

// No staged documents at all once held every insert forever, waiting for
// room that no merge could make.
TEST(StoreBadStateTest, StagedDocumentsOutOfRangeAreRefused) {
  TempDir dir;
  for (std::size_t staged : {std::size_t{0}, StoreOptions::kMaxStagedDocuments + 1}) {
    StoreOptions options;
    options.staged_documents = staged;
    Result<std::unique_ptr<Store>> store = OpenWith(dir.Sub("store"), options);
    ASSERT_TRUE(store.status().IsInvalidArgument()) << store.status().ToString();
    EXPECT_TRUE(Contains(store.status(), "staged_documents")) << store.status().ToString();
    EXPECT_FALSE(fs::exists(dir.Sub("store")));
  }
  StoreOptions one;
  one.staged_documents = 1;
  Result<std::unique_ptr<Store>> store = OpenWith(dir.Sub("store"), one);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  for (DocumentId id = 1; id <= 3; ++id) ASSERT_TRUE((*store)->Insert(id, id * 0x9e37).ok());
  Result<std::vector<Match>> found = (*store)->Query(2 * 0x9e37, 0);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  ASSERT_EQ(found->size(), 1u);
  EXPECT_EQ((*found)[0].id, 2u);
}

// ---- Bad calls ----

TEST(StoreBadStateTest, DistanceOutsidePlanIsInvalid) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  ASSERT_NO_FATAL_FAILURE(CreateStore(path, 10));
  Result<std::unique_ptr<Store>> opened = OpenWith(path, {});
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Store& store = **opened;
  const Fingerprint fps[] = {FingerprintOf(1), FingerprintOf(2)};
  for (int k : {-1, 4, 64, -1000}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    EXPECT_TRUE(store.Query(fps[0], k).status().IsInvalidArgument());
    EXPECT_TRUE(store.QueryBatch(fps, k).status().IsInvalidArgument());
    EXPECT_TRUE(store.FindAll(k, [](const NearPair&) {}).IsInvalidArgument());
    EXPECT_TRUE(store.Clusters(k, [](std::span<const DocumentId>) {}).IsInvalidArgument());
  }
  Result<std::vector<Match>> at_plan = store.Query(fps[0], 3);
  ASSERT_TRUE(at_plan.ok());
  EXPECT_EQ(at_plan->size(), 1u);
}

TEST(StoreBadStateTest, CallsAfterCloseFail) {
  TempDir dir;
  Result<std::unique_ptr<Store>> opened = OpenWith(dir.Sub("store"), SmallOptions());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  Store& store = **opened;
  ASSERT_TRUE(store.Insert(1, 1, "one").ok());
  ASSERT_TRUE(store.Close().ok());

  const NewDocument doc{2, 2, "two"};
  const Fingerprint fp = 1;
  EXPECT_FALSE(store.Insert(2, 2).ok());
  EXPECT_FALSE(store.InsertBatch(std::span(&doc, 1)).ok());
  EXPECT_FALSE(store.Remove(1).ok());
  EXPECT_FALSE(store.Get(1).ok());
  EXPECT_FALSE(store.Query(1, 0).ok());
  EXPECT_FALSE(store.QueryBatch(std::span(&fp, 1), 0).ok());
  EXPECT_FALSE(store.CheckAndInsert(2, 2).ok());
  EXPECT_FALSE(store.FindAll(0, [](const NearPair&) {}).ok());
  EXPECT_FALSE(store.Clusters(0, [](std::span<const DocumentId>) {}).ok());
  EXPECT_FALSE(store.Compact().ok());
  EXPECT_FALSE(store.Stats().ok());
  EXPECT_FALSE(store.Verify().ok());
  EXPECT_FALSE(store.Checkpoint(dir.Sub("checkpoint")).ok());
  EXPECT_FALSE(fs::exists(dir.Sub("checkpoint")));
  // The destructor closes again: harmless.
}

}  // namespace
}  // namespace fpstore
