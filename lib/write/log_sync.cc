#include "write/log_sync.h"

namespace fpstore::internal {

std::uint64_t LogSync::Written() {
  MutexLock lock(mu_);
  return ++written_;
}

Status LogSync::WaitDurable(std::uint64_t ticket) {
  MutexLock lock(mu_);
  while (error_.ok() && durable_ < ticket) {
    if (syncing_) {
      synced_cv_.Wait(mu_);
      continue;
    }
    syncing_ = true;
    const std::uint64_t target = written_;
    mu_.Unlock();
    Status s = sync_();
    mu_.Lock();
    syncing_ = false;
    if (s.ok()) {
      durable_ = target;
    } else {
      error_ = s.WithContext("syncing the write-ahead log");
    }
    synced_cv_.NotifyAll();
  }
  return error_;
}

}  // namespace fpstore::internal
