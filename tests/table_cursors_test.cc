// Table iterators kept between queries (lib/table_cursors.h): the write
// clock that tells a query whether its kept iterators saw one state, and
// that kept iterators do not keep files alive that a compaction replaced.
// Queries racing removals and replacements through kept iterators are
// checked in store_concurrency_test.

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "store_checks.h"
#include "table_cursors.h"
#include "temp_dir.h"

namespace fpstore {
namespace {

using internal::TableWriteClock;
using testing::ExpectMatchesBruteForce;
using testing::IdFingerprint;
using testing::MakeCorpus;
using testing::MetadataFor;
using testing::MustOpen;
using testing::TempDir;
using testing::TestSeed;

TEST(TableWriteClockTest, QuietOnlyWithNoWriteRunningOrStartedSince) {
  TableWriteClock clock;
  const TableWriteClock::Reading idle = clock.Read();
  EXPECT_TRUE(idle.quiet);
  EXPECT_TRUE(clock.QuietSince(idle));

  clock.Begin();
  const TableWriteClock::Reading running = clock.Read();
  EXPECT_FALSE(running.quiet);
  EXPECT_FALSE(clock.QuietSince(running));
  EXPECT_FALSE(clock.QuietSince(idle)) << "a write started after the reading";

  clock.End();
  EXPECT_FALSE(clock.QuietSince(idle)) << "a write ran after the reading, though it is over";
  EXPECT_TRUE(clock.QuietSince(clock.Read()));
}

int SstFiles(const std::string& dir) {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    n += entry.path().extension() == ".sst";
  }
  return n;
}

// The SST files in `dir` once their number has held for a second: files
// let go of are deleted by a background job.
int SettledSstFiles(const std::string& dir) {
  int n = SstFiles(dir);
  for (int same = 0; same < 10;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    const int now = SstFiles(dir);
    same = now == n ? same + 1 : 0;
    n = now;
  }
  return n;
}

// Idle iterators pin the files they were made on; once a compaction has
// replaced those files, the store must let them go, or an idle store would
// keep every compaction's inputs on disk until it closes.
TEST(TableCursorsTest, IdleCursorsKeepNoReplacedFiles) {
  const std::uint64_t seed = TestSeed(2026112301);
  TempDir dir;
  const std::string path = dir.Sub("store");
  const std::vector<IdFingerprint> docs = MakeCorpus(seed, 400, {{1, 40}, {3, 40}});
  std::unique_ptr<Store> store = MustOpen(path);
  ASSERT_NE(store, nullptr);
  // Two merges, so that every table holds two files a compaction joins.
  const std::size_t half = docs.size() / 2;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const IdFingerprint& d = docs[i];
    ASSERT_TRUE(store->Insert(d.id, d.fingerprint, MetadataFor(d.id)).ok());
    if (i + 1 == half || i + 1 == docs.size()) {
      ASSERT_TRUE(store->Flush().ok());
      // Leaves iterators on the files as they are now.
      ASSERT_TRUE(store->Query(d.fingerprint, 3).ok());
    }
  }
  ASSERT_TRUE(store->Compact().ok());
  const int open_files = SettledSstFiles(path);
  ExpectMatchesBruteForce(*store, docs, seed, "after compaction");
  ASSERT_TRUE(store->Close().ok());
  // Closing releases every iterator: what is left is what the store uses.
  EXPECT_EQ(open_files, SstFiles(path));
}

}  // namespace
}  // namespace fpstore
