// Writers that share one fsync of the write-ahead log (the durability
// option kGroupCommit).
//
// A writer appends its batch without syncing, then calls WaitDurable with
// the ticket Written() gave it. The first waiter becomes the leader and
// syncs everything written so far; writers that finish while that sync runs
// wait for the next one, which a single leader again does for all of them.
// Under load the cost is about one fsync per group instead of one per write.
//
// Thread safety: all methods may be called concurrently.

#ifndef FPSTORE_LIB_STORE_LOG_SYNC_H_
#define FPSTORE_LIB_STORE_LOG_SYNC_H_

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

#include "fpstore/status.h"

namespace fpstore::internal {

class LogSync {
 public:
  // `sync` makes everything written before the call durable.
  explicit LogSync(std::function<Status()> sync) : sync_(std::move(sync)) {}

  // Records that one more write has reached the log; returns its ticket.
  // REQUIRES: the write has completed.
  std::uint64_t Written();

  // Returns once the write with `ticket` is durable. A failed sync is
  // sticky: after it, every wait returns the failure, because data the
  // kernel failed to write back cannot be trusted to be on disk.
  Status WaitDurable(std::uint64_t ticket);

 private:
  std::function<Status()> sync_;
  std::mutex mu_;
  std::condition_variable synced_cv_;
  std::uint64_t written_ = 0;  // tickets handed out
  std::uint64_t durable_ = 0;  // every ticket <= durable_ is synced
  bool syncing_ = false;
  Status error_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_LOG_SYNC_H_
