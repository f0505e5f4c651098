// Threads that wait on the device side by side for one query
// (docs/design.md, "Waiting on the device side by side"). From memory a
// query reads its tables one after another on its own thread; from the
// device each read waits, and a disk serves several reads at once far
// faster than one at a time. So once a query sees a table's probes wait on
// the device, it hands its other tables to this pool.

#ifndef FPSTORE_LIB_STORE_READ_POOL_H_
#define FPSTORE_LIB_STORE_READ_POOL_H_

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace fpstore::internal {

// Threads a query may wait on the device with.
inline constexpr int kReadThreads = 8;

class ReadPool {
 public:
  // Threads start on the first Run: a store that never waits on the device
  // never has them.
  explicit ReadPool(int threads) : thread_count_(threads) {}
  ReadPool(const ReadPool&) = delete;
  ReadPool& operator=(const ReadPool&) = delete;
  ~ReadPool();

  // Calls task(i) once for each i in [0, count), on the pool's threads and
  // the caller's, and returns when every call has returned. Several callers
  // may run at once; each helps with its own tasks until none is left to
  // start. `task` must not throw.
  void Run(std::size_t count, const std::function<void(std::size_t)>& task);

 private:
  struct Job {
    const std::function<void(std::size_t)>* task;
    std::size_t count;
    std::size_t next = 0;  // the first task not started
    std::size_t done = 0;
  };

  // Takes job's next task; the job leaves the queue with its last one.
  // REQUIRES: mu_ held, job.next < job.count.
  std::size_t TakeTask(Job& job);
  void WorkerLoop();

  const int thread_count_;
  std::mutex mu_;                    // guards what follows
  std::condition_variable work_cv_;  // a job waits, or the pool stops
  std::condition_variable done_cv_;  // a job's last task returned
  std::deque<Job*> jobs_;            // jobs with tasks not started
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// Whether one table's probes for `queries` fingerprints, which took `took`,
// waited on the device: they took longer than several probes from memory,
// and the calling thread read blocks from the device since it last asked
// (getrusage's count of its reads, asked only after a slow probe). Time
// alone does not tell: a warm probe is now and then as slow (preempted),
// and handing it off would wake the pool for nothing. Where Linux keeps no
// such count, time alone decides; a file system that reads without the
// block layer (NFS, FUSE) counts nothing, and its queries stay on their
// threads.
bool ProbesWaitedOnDevice(std::chrono::nanoseconds took, std::size_t queries);
// Tests set the slow time to zero to send every query's tables after the
// first hit to the pool; a negative time restores the default.
void SetSlowProbeTimeForTesting(std::chrono::nanoseconds time);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_READ_POOL_H_
