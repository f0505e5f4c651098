// Hooks that let tests reach into the store's background work. Each is process-wide, inert unless a
// test sets it, and not part of the library's API.

#ifndef FPSTORE_LIB_STORE_TEST_HOOKS_H_
#define FPSTORE_LIB_STORE_TEST_HOOKS_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "fpstore/status.h"

namespace rocksdb {
class Env;
}  // namespace rocksdb

namespace fpstore::internal {

// Called by every merge once it has set the staging index aside, before it writes its files,
// holding only the merge lock (the hook must not Flush). A non-OK status fails the merge.
void SetDuringMergeForTesting(std::function<Status()> hook);
Status DuringMerge();

// Called by a merge that ingests beside queries right after its files went in, before it retires
// its staging index: the tables and the index both hold the merged documents.
void SetAfterIngestionForTesting(std::function<void()> hook);
void AfterIngestion();

// Called by a lone-bits rewrite once it has found the crowded fingerprints, right before it writes
// them, holding no lock that merges or writers take; `closing` is the flag Close sets.
void SetBeforeLoneBitsRewriteForTesting(std::function<void(const std::atomic<bool>&)> hook);
void BeforeLoneBitsRewrite(const std::atomic<bool>& closing);

// Called by Verify once it has taken its snapshot, before it reads anything, holding no lock.
void SetAfterVerifySnapshotForTesting(std::function<void()> hook);
void AfterVerifySnapshot();

// Called by Staging::MakeRoom right before it makes the staging index's room; it may throw
// std::bad_alloc, as making the room can.
void SetBeforeStagingRoomForTesting(std::function<void()> hook);
void BeforeStagingRoom();

// Recent fingerprints that trigger a background lone-bits rewrite: the larger of half the recent
// prefixes' limit and an eighth of the store's `documents` (a rewrite reads the whole store). 0
// restores the default; UINT64_MAX turns rewrites off.
std::uint64_t LoneBitsRewriteThreshold(std::uint64_t documents);
void SetLoneBitsRewriteThresholdForTesting(std::uint64_t threshold);

// Recent fingerprints a store's RecentPrefixes hold before they fill; 0 restores the default, for
// stores opened after.
std::uint64_t RecentPrefixesLimit();
void SetRecentPrefixesLimitForTesting(std::uint64_t limit);

// A bulk load writes the halves of its last table side by side when it holds more than this many
// ops in memory; 0 restores the default.
std::size_t SplitLastTableAbove();
void SetSplitLastTableAboveForTesting(std::size_t ops);

// The interval after a reopen (reopening_store.h) before another may follow it, doubling with each
// that follows closely; negative restores the default.
std::chrono::milliseconds ReopenInterval();
void SetReopenIntervalForTesting(std::chrono::milliseconds interval);

// The RocksDB Env of stores opened after, e.g. one whose file system fails on demand; null
// restores the default.
void SetEnvForTesting(rocksdb::Env* env);
rocksdb::Env* EnvForTesting();

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_TEST_HOOKS_H_
