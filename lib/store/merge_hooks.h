// A hook for tests of what writers and queries meet while a merge runs.

#ifndef FPSTORE_LIB_STORE_MERGE_HOOKS_H_
#define FPSTORE_LIB_STORE_MERGE_HOOKS_H_

#include <functional>

#include "fpstore/status.h"

namespace fpstore::internal {

// Has every merge call `hook` on its thread once it has frozen the staging
// index it moves (a fresh one takes inserts), before it writes the tables'
// files, holding only the store's merge lock (the hook must not Flush).
// A status other than OK fails the merge as a failure to write its files
// would. Empty: nothing.
void SetDuringMergeForTesting(std::function<Status()> hook);

// Has every merge that ingests beside queries call `hook` on its thread
// right after its files went in, before it retires its staging index: the
// tables hold the merged documents, and the index still does. Queries may
// run in it, and writes of other ids than the merged ones. Empty: nothing.
void SetAfterIngestionForTesting(std::function<void()> hook);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_MERGE_HOOKS_H_
