// Store-wide locks, always taken in this order (a thread holding one takes only those below it):
//
//   1. merge    one merge or bulk load at a time (MergeTurn).
//   2. writers  shared by every write, from before it adds to the staging index until its batch is
//               written; alone while a merge sets its staging index aside and while it ingests,
//               and while a bulk load matches and ingests its documents, so that the stored
//               versions they read stay current and no writer is half-way through.
//   3. keys     a writer's document ids, and CheckAndInsert's near keys (key_locks.h).
//
// Readers take none: a query takes its snapshot with the staging indexes that go with it
// (Staging::ReadAt), and the member filters of every file it can see are published before the
// file is ingested. Then the components' own locks, taken last and held briefly: Staging's, the
// staging index's, the member filters', the log sync's, the read pool's.

#ifndef FPSTORE_LIB_WRITE_LOCKS_H_
#define FPSTORE_LIB_WRITE_LOCKS_H_

#include <atomic>

#include "util/mutex.h"

namespace fpstore::internal {

// The merge lock. LockAhead callers (a bulk load, Flush) go before the
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
  MergeTurn merge ACQUIRED_BEFORE(writers);
  SharedMutex writers;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_WRITE_LOCKS_H_
