// Hooks that let tests reach into the store's background work: what a
// merge meets, when a rewrite of the lone bits starts, thresholds small
// enough for a test's store. Every hook is process-wide, empty (or the
// default) unless a test sets it, and not part of the library's API.

#ifndef FPSTORE_LIB_STORE_TEST_HOOKS_H_
#define FPSTORE_LIB_STORE_TEST_HOOKS_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>

#include "fpstore/status.h"

namespace fpstore::internal {

// Every merge calls this on its thread once it has set the staging index
// aside (a fresh one takes inserts), before it writes its files, holding
// only the merge lock (the hook must not Flush). A status other than OK
// fails the merge as a failure to write its files would.
void SetDuringMergeForTesting(std::function<Status()> hook);
Status DuringMerge();

// Every merge that ingests beside queries calls this right after its files
// went in, before it retires its staging index: the tables hold the merged
// documents, and the index still does.
void SetAfterIngestionForTesting(std::function<void()> hook);
void AfterIngestion();

// A rewrite of the lone bits calls this on its thread once it has found
// the crowded fingerprints, right before it writes them, holding no lock
// that merges or writers take; `closing` is the store's flag that Close
// sets.
void SetBeforeLoneBitsRewriteForTesting(std::function<void(const std::atomic<bool>&)> hook);
void BeforeLoneBitsRewrite(const std::atomic<bool>& closing);

// How many recent fingerprints make a store rewrite its lone bits in the
// background: half the recent prefixes' limit, or an eighth of the store's
// `documents` (a rewrite reads the whole store), whichever is more. Tests
// set it; 0 restores the default, UINT64_MAX turns the rewrites off.
std::uint64_t LoneBitsRewriteThreshold(std::uint64_t documents);
void SetLoneBitsRewriteThresholdForTesting(std::uint64_t threshold);

// How many recent fingerprints a store's RecentPrefixes hold before they
// fill; 0 restores the default, for stores opened after.
std::uint64_t RecentPrefixesLimit();
void SetRecentPrefixesLimitForTesting(std::uint64_t limit);

// The last table of a bulk load writes its halves side by side when it
// has more than this many ops in memory; 0 restores the default, 1 Mi.
std::size_t SplitLastTableAbove();
void SetSplitLastTableAboveForTesting(std::size_t ops);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_TEST_HOOKS_H_
