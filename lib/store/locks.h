// The locks that order work across the store's components. Each component
// guards its own state with locks of its own, taken last and held briefly;
// these are taken first, always in this order (a thread holding one takes
// only those below it):
//
//   1. check     CheckAndInsert's look-then-write: of two near-duplicates
//                offered at once, the second sees the first.
//   2. rewrite   one rewrite of the lone bits at a time, and no bulk load
//                meanwhile (a load into an empty store writes bits of its
//                own, which the rewrite would overwrite).
//   3. merge     one merge or bulk load at a time (MergeTurn).
//   4. writers   shared by every write; held alone while a bulk load
//                matches its documents and ingests them, and while a merge
//                ingests, so that the stored versions they read stay
//                current.
//   5. readers   shared by every read and write; held alone while a bulk
//                load ingests (RocksDB installs ingested files family by
//                family) and while a merge sets the staging index aside or
//                retires it, so that a reader sees every family, and one
//                set of staging indexes, in one state.
//   6. ids       a writer's documents (id_locks.h).
//
// then component locks: Staging's (staging.h), the staging index's, the
// member filters' (table_filters.h), the log sync's, the read pool's.

#ifndef FPSTORE_LIB_STORE_LOCKS_H_
#define FPSTORE_LIB_STORE_LOCKS_H_

#include <atomic>

#include "util/mutex.h"

namespace fpstore::internal {

// The merge lock. Callers that take it ahead (a bulk load, a rewrite of
// the lone bits, Flush) get it before the background merger, which under a
// steady stream of inserts takes it back to back and would starve them.
class CAPABILITY("merge turn") MergeTurn {
 public:
  void LockAhead() ACQUIRE() {
    waiters_.fetch_add(1);
    mu_.Lock();
    waiters_.fetch_sub(1);
    waiters_.notify_all();
  }
  // For the background merger: after every caller waiting ahead.
  void LockBehind() ACQUIRE() {
    for (int waiters; (waiters = waiters_.load()) != 0;) waiters_.wait(waiters);
    mu_.Lock();
  }
  void Unlock() RELEASE() { mu_.Unlock(); }

 private:
  Mutex mu_;
  std::atomic<int> waiters_{0};
};

class SCOPED_CAPABILITY MergeTurnLock {
 public:
  enum Place { kAhead, kBehind };
  MergeTurnLock(MergeTurn& turn, Place place) ACQUIRE(turn) : turn_(turn) {
    if (place == kAhead) {
      turn_.LockAhead();
    } else {
      turn_.LockBehind();
    }
  }
  ~MergeTurnLock() RELEASE() { turn_.Unlock(); }
  MergeTurnLock(const MergeTurnLock&) = delete;
  MergeTurnLock& operator=(const MergeTurnLock&) = delete;

 private:
  MergeTurn& turn_;
};

struct StoreLocks {
  Mutex check ACQUIRED_BEFORE(rewrite);
  Mutex rewrite ACQUIRED_BEFORE(merge);
  MergeTurn merge ACQUIRED_BEFORE(writers);
  SharedMutex writers ACQUIRED_BEFORE(readers);
  SharedMutex readers;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_LOCKS_H_
