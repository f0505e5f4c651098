// A write-ahead log damaged in its middle: Open refuses the store, naming what a replay would drop,
// and changes nothing; with drop_damaged_log it opens the store as it was before the damage, keeps
// the damaged log in lost/ and says what it dropped. A log cut short at its end, as a crash leaves
// it, opens as before.

#include "faults/damaged_log.h"

#include <gtest/gtest.h>
#include <rocksdb/comparator.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "corrupt_file.h"
#include "crashed_store.h"
#include "dir_snapshot.h"
#include "fpstore/store.h"
#include "temp_dir.h"
#include "util/big_endian.h"

namespace fpstore {
namespace {

namespace fs = std::filesystem;
using testing::ChangedFiles;
using testing::FileMap;
using testing::SnapshotFiles;
using testing::TempDir;

using testing::CrashFingerprintOf;
using testing::InsertThenCrash;
using testing::TheLog;

std::set<DocumentId> StoredIds(Store& store, int inserted) {
  std::set<DocumentId> ids;
  for (int i = 0; i < inserted; ++i) {
    Result<Document> doc = store.Get(i);
    EXPECT_TRUE(doc.ok() || doc.status().IsNotFound()) << doc.status().ToString();
    if (doc.ok()) ids.insert(i);
  }
  return ids;
}

// "the N intact log records after them" in a description of what is dropped.
int RecordsNamed(const std::string& text) {
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("the (\\d+) intact log records? after them")))
    return -1;
  return std::stoi(m[1]);
}

class DamagedLogTest : public ::testing::TestWithParam<std::size_t> {};

TEST_P(DamagedLogTest, IsRefusedThenDroppedOnRequest) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  constexpr int kInserted = 40;
  InsertThenCrash(path, kInserted, GetParam());
  const std::string log = TheLog(path);
  ASSERT_TRUE(testing::FlipBytes(log, fs::file_size(log) / 2, 16));
  const FileMap before = SnapshotFiles(path);

  // Refused, by a writer and by a reader, naming the log and what it would drop.
  for (const bool read_only : {false, true}) {
    StoreOptions options;
    options.read_only = read_only;
    const Status s = Store::Open(path, options).status();
    ASSERT_TRUE(s.IsCorruption()) << s.ToString();
    EXPECT_NE(s.message().find(log + " is damaged at bytes "), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("drop_damaged_log"), std::string::npos) << s.ToString();
    EXPECT_GT(RecordsNamed(s.message()), 0) << s.ToString();
    EXPECT_EQ(ChangedFiles(before, SnapshotFiles(path)), "");
  }

  // A reader that asks to drop them reads the store without them, and changes nothing.
  std::string reader_saw;
  {
    StoreOptions options;
    options.read_only = true;
    options.drop_damaged_log = true;
    Result<std::unique_ptr<Store>> reader = Store::Open(path, options);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    reader_saw = (*reader)->Stats()->dropped_at_open;
    EXPECT_NE(reader_saw.find("read-only"), std::string::npos) << reader_saw;
  }
  EXPECT_EQ(ChangedFiles(before, SnapshotFiles(path)), "");

  // A writer that asks drops them, keeps the damaged log, and says what it dropped: every
  // inserted document is either still stored or among those it names.
  StoreOptions options;
  options.drop_damaged_log = true;
  Result<std::unique_ptr<Store>> store = Store::Open(path, options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::string dropped = (*store)->Stats()->dropped_at_open;
  EXPECT_NE(dropped.find(log + " is damaged at bytes "), std::string::npos) << dropped;
  EXPECT_NE(dropped.find((fs::path(path) / "lost").string()), std::string::npos) << dropped;
  EXPECT_TRUE(fs::exists(fs::path(path) / "lost" / fs::path(log).filename()));
  const std::set<DocumentId> kept = StoredIds(**store, kInserted);
  // One synced insert is one log record, and the inserts reached the log in id order: the store
  // keeps a first run of them, the damaged bytes held one or two, and the rest are named.
  const int named = RecordsNamed(dropped);
  const int kept_count = static_cast<int>(kept.size());
  EXPECT_EQ(kept_count, kept.empty() ? 0 : static_cast<int>(*kept.rbegin()) + 1) << "a gap";
  EXPECT_GE(kept_count + named, kInserted - 2) << dropped;
  EXPECT_LT(kept_count + named, kInserted) << dropped;
  EXPECT_NE(
      dropped.find("inserts or replacements of documents " + std::to_string(kInserted - named)),
      std::string::npos)
      << dropped;
  EXPECT_TRUE((*store)->Verify().ok());
  std::string log_text;
  std::getline(std::ifstream(path + "/LOG"), log_text, '\0');
  EXPECT_NE(log_text.find(log + " is damaged at bytes "), std::string::npos);

  // It works on: an insert, and a reopen without the option.
  ASSERT_TRUE((*store)->Insert(1000, CrashFingerprintOf(1000)).ok());
  ASSERT_TRUE((*store)->Close().ok());
  store = Store::Open(path, StoreOptions{});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->Stats()->dropped_at_open, "");
  EXPECT_EQ(StoredIds(**store, kInserted), kept);
  EXPECT_TRUE((*store)->Get(1000).ok());
}

// Records in one block, and over many.
INSTANTIATE_TEST_SUITE_P(MetadataBytes, DamagedLogTest, ::testing::Values(16, 4000));

TEST(DamagedLogTest, LogCutShortAtItsEndOpens) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  constexpr int kInserted = 40;
  InsertThenCrash(path, kInserted, 100);
  const std::string log = TheLog(path);
  fs::resize_file(log, fs::file_size(log) - 50);  // the last insert is cut short
  Result<std::unique_ptr<Store>> store = Store::Open(path, StoreOptions{});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->Stats()->dropped_at_open, "");
  std::set<DocumentId> expected;
  for (int i = 0; i + 1 < kInserted; ++i) expected.insert(i);
  EXPECT_EQ(StoredIds(**store, kInserted), expected);
  EXPECT_TRUE((*store)->Verify().ok());
}

// The log records of `log`, each as [begin, end): one physical record each, as RocksDB writes a
// batch shorter than a block, with a block's last few bytes skipped.
std::vector<std::pair<std::uintmax_t, std::uintmax_t>> RecordsOf(const std::string& log) {
  std::ifstream in(log, std::ios::binary);
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::pair<std::uintmax_t, std::uintmax_t>> records;
  std::size_t pos = 0;
  while (pos + 7 <= data.size()) {
    if (32768 - pos % 32768 < 7) {
      pos += 32768 - pos % 32768;
      continue;
    }
    const std::size_t length =
        static_cast<unsigned char>(data[pos + 4]) |
        (static_cast<std::size_t>(static_cast<unsigned char>(data[pos + 5])) << 8);
    records.emplace_back(pos, pos + 7 + length);
    pos += 7 + length;
  }
  return records;
}

std::string ReadAll(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// The path of the list of dropped documents that `dropped` (StoreStats::dropped_at_open) names.
std::string ListNamedIn(const std::string& dropped) {
  std::smatch m;
  if (!std::regex_search(dropped, m, std::regex("listed in (\\S+\\.tsv)"))) return "";
  return m[1];
}

std::set<DocumentId> Range(DocumentId begin, DocumentId end) {
  std::set<DocumentId> ids;
  for (DocumentId id = begin; id < end; ++id) ids.insert(id);
  return ids;
}

// The last record of a log whose writer synced each write before acknowledging it, damaged while
// the writer was idle: the record is whole, its checksum fails. A crash does not leave that, so
// the open is refused, naming the record's bytes and the document it reads as holding; with
// drop_damaged_log it opens without it and lists the document in lost/.
class DamagedLastRecordTest : public ::testing::TestWithParam<std::pair<int, std::size_t>> {};

TEST_P(DamagedLastRecordTest, IsRefusedThenDroppedOnRequest) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  const int kInserted = GetParam().first;
  InsertThenCrash(path, kInserted, GetParam().second);
  const std::string log = TheLog(path);
  const std::uintmax_t size = fs::file_size(log);
  const auto last = RecordsOf(log).back();
  ASSERT_EQ(last.second, size);
  ASSERT_TRUE(testing::FlipBytes(log, size - 40, 8));
  const FileMap before = SnapshotFiles(path);

  const std::string damage = log + " is damaged at bytes " + std::to_string(last.first) + " to " +
                             std::to_string(size) + ", its last log record, whole";
  for (const bool read_only : {false, true}) {
    StoreOptions options;
    options.read_only = read_only;
    const Status s = Store::Open(path, options).status();
    ASSERT_TRUE(s.IsCorruption()) << s.ToString();
    EXPECT_NE(s.message().find(damage), std::string::npos) << s.ToString();
    EXPECT_NE(s.message().find("read as, unverified: inserts or replacements of document " +
                               std::to_string(kInserted - 1) + ";"),
              std::string::npos)
        << s.ToString();
    EXPECT_NE(s.message().find("drop_damaged_log"), std::string::npos) << s.ToString();
    EXPECT_EQ(ChangedFiles(before, SnapshotFiles(path)), "");
  }
  {
    StoreOptions options;
    options.read_only = true;
    options.drop_damaged_log = true;
    Result<std::unique_ptr<Store>> reader = Store::Open(path, options);
    ASSERT_TRUE(reader.ok()) << reader.status().ToString();
    const std::string said = (*reader)->Stats()->dropped_at_open;
    EXPECT_NE(said.find(damage), std::string::npos) << said;
    EXPECT_NE(said.find("writes no list"), std::string::npos) << said;
    EXPECT_EQ(StoredIds(**reader, kInserted), Range(0, kInserted - 1));
  }
  EXPECT_EQ(ChangedFiles(before, SnapshotFiles(path)), "");

  StoreOptions options;
  options.drop_damaged_log = true;
  Result<std::unique_ptr<Store>> store = Store::Open(path, options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::string dropped = (*store)->Stats()->dropped_at_open;
  EXPECT_NE(dropped.find(damage), std::string::npos) << dropped;
  EXPECT_TRUE(fs::exists(fs::path(path) / "lost" / fs::path(log).filename()));
  const std::string list = ListNamedIn(dropped);
  ASSERT_NE(list, "") << dropped;
  EXPECT_EQ(fs::path(list).parent_path(), fs::path(path) / "lost");
  EXPECT_EQ(ReadAll(list),
            "document\tchange\tread_from\n" + std::to_string(kInserted - 1) + "\twrite\tdamaged\n");
  EXPECT_EQ(StoredIds(**store, kInserted), Range(0, kInserted - 1));
  EXPECT_TRUE((*store)->Verify().ok());
  ASSERT_TRUE((*store)->Close().ok());
  store = Store::Open(path, StoreOptions{});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  EXPECT_EQ((*store)->Stats()->dropped_at_open, "");
}

// The record in one block; and the second fragment of a batch that the block's end cut in two.
INSTANTIATE_TEST_SUITE_P(InsertsAndMetadataBytes, DamagedLastRecordTest,
                         ::testing::Values(std::pair<int, std::size_t>{40, 100},
                                           std::pair<int, std::size_t>{8, 4000}));

// A damaged length in the last record's header makes it look cut short, but its checksum holds
// over the bytes the log has: a whole record, damaged.
TEST(DamagedLogTest, DamagedLengthOfTheLastRecordIsRefused) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  InsertThenCrash(path, 40, 100);
  const std::string log = TheLog(path);
  ASSERT_TRUE(
      testing::FlipBytes(log, RecordsOf(log).back().first + 5, 1));  // the length's high byte
  const Status s = Store::Open(path, StoreOptions{}).status();
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_NE(s.message().find("inserts or replacements of document 39"), std::string::npos)
      << s.ToString();
}

// What a crash leaves of a last record: its bytes up to a point, and from a 512-byte sector on
// either nothing (the log shorter than the record) or zeros (a file system that kept the log's
// new length but not all of its data). Either opens without the record and without a word. Zeros
// over a sector of a record are what a torn write leaves, so a record that damage zeroed there
// opens the same way: fpstore cannot tell the two apart.
TEST(DamagedLogTest, TornLastRecordOpensSilently) {
  for (const bool zeros : {false, true}) {
    TempDir dir;
    const std::string path = dir.path() + "/db";
    constexpr int kInserted = 40;
    InsertThenCrash(path, kInserted, 600);  // records longer than a sector: the last spans two
    const std::string log = TheLog(path);
    const auto last = RecordsOf(log).back();
    const std::uintmax_t sector = (last.first / 512 + 1) * 512;
    ASSERT_LT(sector, last.second) << "the last record lies in one sector";
    fs::resize_file(log, sector);
    if (zeros) fs::resize_file(log, last.second);
    for (const bool read_only : {false, true}) {
      StoreOptions options;
      options.read_only = read_only;
      Result<std::unique_ptr<Store>> store = Store::Open(path, options);
      ASSERT_TRUE(store.ok()) << store.status().ToString();
      EXPECT_EQ((*store)->Stats()->dropped_at_open, "");
      EXPECT_EQ(StoredIds(**store, kInserted), Range(0, kInserted - 1));
    }
  }
}

// Every document a recovery drops is listed in lost/, with what was dropped of it, however many
// the message names.
TEST(DamagedLogTest, EveryDroppedDocumentIsListedInLost) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  constexpr int kInserted = 60;
  InsertThenCrash(path, kInserted, 16);
  const std::string log = TheLog(path);
  const auto records = RecordsOf(log);
  ASSERT_EQ(records.size(), std::size_t{kInserted} + 1);  // the metadata's record, then each insert
  const auto damaged = records[30];                       // document 29's
  ASSERT_TRUE(testing::FlipBytes(log, damaged.second - 20, 8));

  StoreOptions options;
  options.drop_damaged_log = true;
  Result<std::unique_ptr<Store>> store = Store::Open(path, options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  const std::string dropped = (*store)->Stats()->dropped_at_open;
  EXPECT_EQ(RecordsNamed(dropped), 30) << dropped;
  EXPECT_NE(dropped.find("and 22 more"), std::string::npos) << dropped;
  const std::string list = ListNamedIn(dropped);
  ASSERT_NE(list, "") << dropped;
  std::string expected = "document\tchange\tread_from\n29\twrite\tdamaged\n";
  for (int id = 30; id < kInserted; ++id) expected += std::to_string(id) + "\twrite\tintact\n";
  EXPECT_EQ(ReadAll(list), expected);
  EXPECT_EQ(StoredIds(**store, kInserted), Range(0, 29));
  std::string log_text;
  std::getline(std::ifstream(path + "/LOG"), log_text, '\0');
  EXPECT_NE(log_text.find(list), std::string::npos);
}

// Merges during the inserts write files after the damage that depend on the damaged writes:
// RocksDB cannot stop its replay at the damage, so no open can drop them alone. The open is
// refused, naming the damage and what it holds, with drop_damaged_log too, and changes nothing.
TEST(DamagedLogTest, DamageThatLaterFilesDependOnIsRefusedEvenWhenDropping) {
  TempDir dir;
  const std::string path = dir.path() + "/db";
  constexpr int kInserted = 40;
  InsertThenCrash(path, kInserted, 100, /*staged_documents=*/8);
  const std::string log = testing::LargestLog(path);
  ASSERT_TRUE(testing::FlipBytes(log, fs::file_size(log) / 2, 16));
  const FileMap before = SnapshotFiles(path);
  for (const bool drop : {false, true}) {
    StoreOptions options;
    options.drop_damaged_log = drop;
    const Status s = Store::Open(path, options).status();
    ASSERT_TRUE(s.IsCorruption()) << s.ToString();
    EXPECT_NE(s.message().find(log + " is damaged at bytes "), std::string::npos) << s.ToString();
    EXPECT_GT(RecordsNamed(s.message()), 0) << s.ToString();
    EXPECT_NE(s.message().find("cannot be opened without them"), std::string::npos) << s.ToString();
    EXPECT_EQ(ChangedFiles(before, SnapshotFiles(path)), "");
  }
}

// A log whose writes are all in the tables already (one a crash left behind after a flush) is not
// replayed: damage in it, in its middle or in its last record, drops nothing.
TEST(DamagedLogTest, DamageInAnObsoleteLogDropsNothing) {
  for (const bool last_record : {false, true}) {
    TempDir dir;
    const std::string path = dir.path() + "/db";
    constexpr int kInserted = 40;
    InsertThenCrash(path, kInserted, 100);
    const std::string log = TheLog(path);
    const std::string copy = dir.path() + "/log.copy";
    fs::copy_file(log, copy);
    {
      Result<std::unique_ptr<Store>> store = Store::Open(path, StoreOptions{});
      ASSERT_TRUE(store.ok()) << store.status().ToString();
      ASSERT_TRUE((*store)->Close().ok());  // the log's writes are flushed, the log deleted
    }
    ASSERT_FALSE(fs::exists(log));
    fs::copy_file(copy, log);
    ASSERT_TRUE(testing::FlipBytes(
        log, last_record ? fs::file_size(log) - 40 : fs::file_size(log) / 2, last_record ? 8 : 16));
    Result<std::unique_ptr<Store>> store = Store::Open(path, StoreOptions{});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    EXPECT_EQ((*store)->Stats()->dropped_at_open, "");
    EXPECT_EQ(StoredIds(**store, kInserted).size(), std::size_t{kInserted});
  }
}

// A document written in two of the dropped records is named once, as is one removed twice.
constexpr std::uint32_t kDocuments = 1;

// What a write batch needs of the documents family: its id.
class DocumentsFamily final : public rocksdb::ColumnFamilyHandle {
 public:
  const std::string& GetName() const override { return name_; }
  std::uint32_t GetID() const override { return kDocuments; }
  rocksdb::Status GetDescriptor(rocksdb::ColumnFamilyDescriptor*) override {
    return rocksdb::Status::NotSupported();
  }
  const rocksdb::Comparator* GetComparator() const override {
    return rocksdb::BytewiseComparator();
  }

 private:
  std::string name_ = "documents";
};

TEST(DamagedLogTest, DroppedDocumentsAreNamedOnce) {
  DocumentsFamily family;
  internal::LogDamage damage;
  damage.file = "000012.log";
  std::uint64_t sequence = 100;
  for (const DocumentId id : {7, 5, 7, 9, 5}) {
    rocksdb::WriteBatch batch;
    ASSERT_TRUE(batch.Put(&family, internal::Key8(id).view(), "d").ok());
    ASSERT_TRUE(batch.Delete(&family, internal::Key8(id + 1000).view()).ok());
    damage.dropped.push_back({12, sequence++, batch.Data()});
  }
  const internal::DroppedWrites dropped =
      internal::DroppedAfter(damage, internal::ReplayedRecords(), 0, kDocuments);
  EXPECT_EQ(dropped.records, 5u);
  EXPECT_EQ(dropped.written, (std::vector<DocumentId>{7, 5, 9}));
  EXPECT_EQ(dropped.removed, (std::vector<DocumentId>{1007, 1005, 1009}));
  EXPECT_NE(
      internal::Describe(damage, dropped)
          .find("(inserts or replacements of documents 7, 5, 9; removals of 1007, 1005, 1009)"),
      std::string::npos)
      << internal::Describe(damage, dropped);
}

// The list of dropped documents says which were written and which removed, and from what it read
// them; a second recovery of the same log writes a list of its own.
TEST(DamagedLogTest, DroppedListSaysWhatWasDroppedAndIsNeverOverwritten) {
  DocumentsFamily family;
  internal::LogDamage damage;
  damage.file = "000012.log";
  damage.log = 12;
  std::uint64_t sequence = 100;
  for (const DocumentId id : {3, 7, 5}) {
    rocksdb::WriteBatch batch;
    ASSERT_TRUE(batch.Put(&family, internal::Key8(id).view(), "d").ok());
    ASSERT_TRUE(batch.Delete(&family, internal::Key8(id + 1000).view()).ok());
    // The first as the damaged bytes read, the others intact.
    damage.dropped.push_back({12, sequence++, batch.Data(), /*intact=*/id != 3});
  }
  const internal::DroppedWrites dropped =
      internal::DroppedAfter(damage, internal::ReplayedRecords(), 0, kDocuments);
  EXPECT_EQ(dropped.records, 2u);
  EXPECT_TRUE(dropped.damaged);
  EXPECT_EQ(dropped.damaged_written, (std::vector<DocumentId>{3}));
  EXPECT_EQ(dropped.damaged_removed, (std::vector<DocumentId>{1003}));

  TempDir dir;
  const std::string lost = dir.path() + "/lost";
  const Result<std::string> first = internal::KeepDropped(lost, damage, dropped);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(*first, lost + "/dropped-000012.tsv");
  EXPECT_EQ(ReadAll(*first),
            "document\tchange\tread_from\n"
            "3\twrite\tdamaged\n1003\tremove\tdamaged\n"
            "7\twrite\tintact\n5\twrite\tintact\n1007\tremove\tintact\n1005\tremove\tintact\n");
  const Result<std::string> second = internal::KeepDropped(lost, damage, dropped);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(*second, lost + "/dropped-000012-2.tsv");
  EXPECT_EQ(ReadAll(*second), ReadAll(*first));
}

}  // namespace
}  // namespace fpstore
