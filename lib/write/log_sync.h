// Group commit of the write-ahead log (durability option kGroupCommit): a writer appends without
// syncing, then calls WaitDurable with its Written() ticket. The first waiter syncs everything
// written so far; writers finishing meanwhile wait for the next sync, again one for all of them.
//
// Thread safety: all methods may be called concurrently.

#ifndef FPSTORE_LIB_WRITE_LOG_SYNC_H_
#define FPSTORE_LIB_WRITE_LOG_SYNC_H_

#include <cstdint>
#include <functional>
#include <utility>

#include "fpstore/status.h"
#include "util/mutex.h"

namespace fpstore::internal {

class LogSync {
 public:
  // `sync` makes everything written before the call durable.
  explicit LogSync(std::function<Status()> sync) : sync_(std::move(sync)) {}

  // Records that one more write has reached the log; returns its ticket.
  // REQUIRES: the write has completed.
  std::uint64_t Written() EXCLUDES(mu_);

  // Returns once the write with `ticket` is durable. A failed sync is sticky (every later wait
  // returns it): data the kernel failed to write back cannot be trusted to be on disk.
  Status WaitDurable(std::uint64_t ticket) EXCLUDES(mu_);

 private:
  std::function<Status()> sync_;
  Mutex mu_;
  CondVar synced_cv_;                          // a sync ended
  std::uint64_t written_ GUARDED_BY(mu_) = 0;  // tickets handed out
  std::uint64_t durable_ GUARDED_BY(mu_) = 0;  // every ticket <= durable_ is synced
  bool syncing_ GUARDED_BY(mu_) = false;
  Status error_ GUARDED_BY(mu_);
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_WRITE_LOG_SYNC_H_
