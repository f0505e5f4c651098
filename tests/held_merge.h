// Holds the store's next merge in its DuringMerge hook (lib/merge_hooks.h)
// until released, so that a test can write and query while it runs.

#ifndef FPSTORE_TESTS_HELD_MERGE_H_
#define FPSTORE_TESTS_HELD_MERGE_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "merge_hooks.h"

namespace fpstore::testing {

class HeldMerge {
 public:
  HeldMerge() {
    internal::SetDuringMergeForTesting([this] {
      std::unique_lock lock(mu_);
      ++inside_;
      merging_ = true;
      cv_.notify_all();
      cv_.wait(lock, [this] { return released_; });
      --inside_;
      cv_.notify_all();
      return Status::OK();
    });
  }
  HeldMerge(const HeldMerge&) = delete;
  HeldMerge& operator=(const HeldMerge&) = delete;
  // Releases the merge, and waits until no merge is left in the hook,
  // which uses this object.
  ~HeldMerge() {
    Release();
    internal::SetDuringMergeForTesting({});
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return inside_ == 0; });
  }

  // Whether a merge reached the hook within a minute.
  bool WaitUntilMerging() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(60), [this] { return merging_; });
  }

  // Lets the held merge, and any later one, go on.
  void Release() {
    {
      std::lock_guard lock(mu_);
      released_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool merging_ = false;
  bool released_ = false;
  int inside_ = 0;
};

}  // namespace fpstore::testing

#endif  // FPSTORE_TESTS_HELD_MERGE_H_
