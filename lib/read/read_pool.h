// Threads that wait on the device side by side for one query (docs/design.md, "Waiting on the
// device side by side"): once a table's probes wait on the device, which serves several reads at
// once far better than one at a time, a query hands its other tables to this pool.

#ifndef FPSTORE_LIB_READ_READ_POOL_H_
#define FPSTORE_LIB_READ_READ_POOL_H_

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "util/mutex.h"

namespace fpstore::internal {

// Threads a query may wait on the device with.
inline constexpr int kReadThreads = 8;

class ReadPool {
 public:
  // Threads start on the first Run: a store that never waits on the device never has them.
  explicit ReadPool(int threads) : thread_count_(threads) {}
  ReadPool(const ReadPool&) = delete;
  ReadPool& operator=(const ReadPool&) = delete;
  ~ReadPool();

  // Calls task(i) once for each i in [0, count), on the pool's threads and the caller's, and
  // returns when every call has returned. Several callers may run at once; each helps with its own
  // tasks until none is left to start. `task` must not throw.
  void Run(std::size_t count, const std::function<void(std::size_t)>& task) EXCLUDES(mu_);

 private:
  struct Job {
    const std::function<void(std::size_t)>* task;
    std::size_t count;
    std::size_t next = 0;  // the first task not started
    std::size_t done = 0;
  };

  // Takes job's next task; the job leaves the queue with its last one.
  // REQUIRES: job.next < job.count.
  std::size_t TakeTask(Job& job) REQUIRES(mu_);
  void WorkerLoop() EXCLUDES(mu_);

  const int thread_count_;
  Mutex mu_;  // also guards the Jobs' next and done
  CondVar work_cv_;                               // a job waits, or the pool stops
  CondVar done_cv_;                               // a job's last task returned
  std::deque<Job*> jobs_ GUARDED_BY(mu_);         // jobs with tasks not started
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ GUARDED_BY(mu_);
};

// Whether one table's probes for `queries` fingerprints, which took `took`, waited on the device:
// slower than several probes from memory, with the thread having read blocks from the device since
// it last asked (getrusage, asked only after a slow probe). Time alone does not tell: a preempted
// warm probe can be as slow. Where Linux keeps no such count, time alone decides; a file system
// bypassing the block layer (NFS, FUSE) counts nothing, so its queries stay on their threads.
bool ProbesWaitedOnDevice(std::chrono::nanoseconds took, std::size_t queries);
// Tests: 0 sends each query's tables after its first hit to the pool; < 0 restores the default.
void SetSlowProbeTimeForTesting(std::chrono::nanoseconds time);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_READ_READ_POOL_H_
