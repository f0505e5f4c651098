// Read-only handles opened while the writer compacts: RocksDB deletes the
// files a compaction replaced, and a read-only open that had just read the
// manifest used to fail naming one of them. Each open must now succeed and
// see the whole store.

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "fpstore/store.h"
#include "temp_dir.h"

namespace fpstore {
namespace {

using testing::TempDir;

TEST(ReadersBesideWriterTest, ReadOnlyOpensSucceedWhileTheWriterCompacts) {
  TempDir dir;
  const std::string path = dir.Sub("store");
  std::unique_ptr<Store> writer = *Store::Open(path);
  constexpr DocumentId kDocuments = 20'000;
  {
    std::unique_ptr<BulkLoader> loader = *writer->NewBulkLoader();
    for (DocumentId id = 1; id <= kDocuments; ++id) {
      ASSERT_TRUE(loader->Add(id, id * 0x9e3779b97f4a7c15ULL).ok());
    }
    ASSERT_TRUE(loader->Finish().ok());
  }
  std::atomic<bool> stop{false};
  std::atomic<int> compactions{0};
  std::thread compactor([&] {
    DocumentId next = kDocuments + 1;
    while (!stop) {
      // A few inserts so that each compaction has new files to replace.
      for (int i = 0; i < 50; ++i, ++next) (void)writer->Insert(next, next * 31);
      if (!writer->Compact().ok()) break;
      ++compactions;
    }
  });
  StoreOptions read_only;
  read_only.read_only = true;
  int opens = 0;
  for (; opens < 20 || compactions < 3; ++opens) {
    Result<std::unique_ptr<Store>> reader = Store::Open(path, read_only);
    ASSERT_TRUE(reader.ok()) << "open " << opens << ": " << reader.status().ToString();
    Result<StoreStats> stats = (*reader)->Stats();
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    EXPECT_GE(stats->documents, kDocuments);
    ASSERT_TRUE((*reader)->Get(kDocuments / 2).ok());
    if (opens > 2000) break;  // the compactor is stuck: its check below says so
  }
  stop = true;
  compactor.join();
  EXPECT_GE(compactions, 3) << "the writer must have compacted beside the readers";
  EXPECT_TRUE(writer->Close().ok());
}

}  // namespace
}  // namespace fpstore
