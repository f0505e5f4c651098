// Store-wide locks, always taken in this order (a thread holding one takes only those below it):
//
//   1. check    CheckAndInsert's look-then-write: of two near-duplicates offered at once, the
//               second sees the first.
//   2. rewrite  one lone-bits rewrite at a time, and no bulk load meanwhile (a load into an empty
//               store writes bits of its own, which the rewrite would overwrite); none ends while
//               Verify takes its snapshot and pins the recent family at it.
//   3. merge    one merge or bulk load at a time (MergeTurn).
//   4. writers  shared by every write; exclusive while a bulk load matches and ingests its
//               documents and while a merge ingests, so the stored versions they read stay current.
//   5. readers  shared by every read and write; exclusive while a bulk load ingests (RocksDB
//               installs files family by family) and while a merge sets aside or retires a staging
//               index, so a reader sees every family and the staging indexes in one state.
//   6. ids      a writer's documents (id_locks.h).
//
// Then the components' own locks, taken last and held briefly: Staging's, the staging index's, the
// member filters' (table_filters.h), the log sync's, the read pool's.

#ifndef FPSTORE_LIB_STORE_LOCKS_H_
#define FPSTORE_LIB_STORE_LOCKS_H_

#include <atomic>

#include "util/mutex.h"

namespace fpstore::internal {

// The merge lock. LockAhead callers (a bulk load, a lone-bits rewrite, Flush) go before the
// background merger, which under steady inserts retakes it back to back and would starve them.
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
