// The sweep of a store with a retention, on either backend (docs/design.md, "Retention and
// expiry"): a thread of its own that, every period, removes documents past the retention through
// the store's expiry, until it is stopped. It holds no lock of the store's: the expiry takes the
// write locks as any write does.
//
// Thread safety: thread-safe.

#ifndef FPSTORE_LIB_UTIL_SWEEPER_H_
#define FPSTORE_LIB_UTIL_SWEEPER_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "fpstore/status.h"
#include "util/mutex.h"

namespace fpstore::internal {

class Sweeper {
 public:
  // `sweep` removes what is due, returning early once `stopping` is set; a failed sweep is tried
  // again a period later (the writes that fail with it report it).
  using Sweep = std::function<Status(const std::atomic<bool>& stopping)>;
  Sweeper(Sweep sweep, std::chrono::milliseconds period)
      : sweep_(std::move(sweep)), period_(period) {}
  ~Sweeper() { Stop(); }
  Sweeper(const Sweeper&) = delete;
  Sweeper& operator=(const Sweeper&) = delete;

  void Start();
  // Returns once a running sweep has returned.
  void Stop();

 private:
  void Loop();

  const Sweep sweep_;
  const std::chrono::milliseconds period_;
  std::atomic<bool> stopping_{false};
  Mutex mu_;
  CondVar wake_;  // Stop's signal
  std::thread thread_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_UTIL_SWEEPER_H_
