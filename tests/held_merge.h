// Holds the store's next merge in its DuringMerge hook (lib/store/test_hooks.h)
// until released, so that a test can write and query while it runs.

#ifndef FPSTORE_TESTS_HELD_MERGE_H_
#define FPSTORE_TESTS_HELD_MERGE_H_

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>

#include "util/test_hooks.h"

namespace fpstore::testing {

class HeldMerge {
 public:
  HeldMerge() : state_(std::make_shared<State>()) {
    // The hook shares the state: a merge may have copied the hook just
    // before it is cleared, and call it after this object is gone.
    internal::SetDuringMergeForTesting([state = state_] {
      std::unique_lock lock(state->mu);
      state->merging = true;
      state->cv.notify_all();
      state->cv.wait(lock, [&] { return state->released; });
      return Status::OK();
    });
  }
  HeldMerge(const HeldMerge&) = delete;
  HeldMerge& operator=(const HeldMerge&) = delete;
  // Releases the merge; later merges run unheld.
  ~HeldMerge() {
    Release();
    internal::SetDuringMergeForTesting({});
  }

  // Whether a merge reached the hook within a minute.
  bool WaitUntilMerging() {
    std::unique_lock lock(state_->mu);
    return state_->cv.wait_for(lock, std::chrono::seconds(60), [&] { return state_->merging; });
  }

  // Lets the held merge, and any later one, go on.
  void Release() {
    {
      std::lock_guard lock(state_->mu);
      state_->released = true;
    }
    state_->cv.notify_all();
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool merging = false;
    bool released = false;
  };
  std::shared_ptr<State> state_;
};

}  // namespace fpstore::testing

#endif  // FPSTORE_TESTS_HELD_MERGE_H_
