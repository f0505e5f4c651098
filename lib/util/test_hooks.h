// Hooks that let tests reach into the store's background work. Each is process-wide, inert unless a
// test sets it, and not part of the library's API.

#ifndef FPSTORE_LIB_UTIL_TEST_HOOKS_H_
#define FPSTORE_LIB_UTIL_TEST_HOOKS_H_

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

// Called by Staging::MakeRoom right before it makes the staging index's room; it may throw
// std::bad_alloc, as making the room can.
void SetBeforeStagingRoomForTesting(std::function<void()> hook);
void BeforeStagingRoom();

// The interval after a reopen (reopening_store.h) before another may follow it, doubling with each
// that follows closely; negative restores the default.
std::chrono::milliseconds ReopenInterval();
void SetReopenIntervalForTesting(std::chrono::milliseconds interval);

// The RocksDB Env of stores opened after, e.g. one whose file system fails on demand; null
// restores the default.
void SetEnvForTesting(rocksdb::Env* env);
rocksdb::Env* EnvForTesting();

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_UTIL_TEST_HOOKS_H_
