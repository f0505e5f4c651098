#include "store/log_sync.h"

namespace fpstore::internal {

std::uint64_t LogSync::Written() {
  std::lock_guard lock(mu_);
  return ++written_;
}

Status LogSync::WaitDurable(std::uint64_t ticket) {
  std::unique_lock lock(mu_);
  while (error_.ok() && durable_ < ticket) {
    if (syncing_) {
      synced_cv_.wait(lock);
      continue;
    }
    syncing_ = true;
    const std::uint64_t target = written_;
    lock.unlock();
    Status s = sync_();
    lock.lock();
    syncing_ = false;
    if (s.ok()) {
      durable_ = target;
    } else {
      error_ = s.WithContext("syncing the write-ahead log");
    }
    synced_cv_.notify_all();
  }
  return error_;
}

}  // namespace fpstore::internal
