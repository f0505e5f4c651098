#include "util/sweeper.h"

#include <system_error>

namespace fpstore::internal {

void Sweeper::Start() {
  if (thread_.joinable()) return;
  stopping_.store(false);
  try {
    thread_ = std::thread([this] { Loop(); });
  } catch (const std::system_error&) {
    // No thread: nothing sweeps, but queries still pass the expired documents by, and Expire
    // removes them.
  }
}

void Sweeper::Stop() {
  {
    MutexLock lock(mu_);
    stopping_.store(true);
  }
  wake_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void Sweeper::Loop() {
  while (true) {
    {
      MutexLock lock(mu_);
      if (stopping_.load()) return;
      wake_.WaitFor(mu_, period_);
      if (stopping_.load()) return;
    }
    (void)sweep_(stopping_);
  }
}

}  // namespace fpstore::internal
