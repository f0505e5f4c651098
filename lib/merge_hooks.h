// A hook for tests of what writers and queries meet while a merge runs.

#ifndef FPSTORE_LIB_MERGE_HOOKS_H_
#define FPSTORE_LIB_MERGE_HOOKS_H_

#include <functional>

#include "fpstore/status.h"

namespace fpstore::internal {

// Has every merge call `hook` on its thread once it has frozen the staging
// index it moves (a fresh one takes inserts), before it writes the tables'
// files, holding only the store's merge lock (the hook must not Flush).
// A status other than OK fails the merge as a failure to write its files
// would. Empty: nothing.
void SetDuringMergeForTesting(std::function<Status()> hook);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_MERGE_HOOKS_H_
