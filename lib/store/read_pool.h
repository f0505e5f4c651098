// Threads that wait on the device side by side for one query.
//
// A query reads a data block in every table that holds its prefix: about
// ten for a hit, twenty for a stored fingerprint. From memory those reads
// take microseconds each and a query runs them one after another on its own
// thread. From the device (a store just opened, or larger than the page
// cache) each waits about 100 µs, and one after another they made a cold
// hit's p50 1 ms and its p99 3 ms at 10M; this machine's disk served 8
// random reads at once at 3.5 times the rate of one (docs/performance.md).
// So once a query sees a table's probes wait that long on the device, it
// hands its other tables to this pool.

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
  std::mutex mu_;
  std::condition_variable work_cv_;  // a job waits, or the pool stops
  std::condition_variable done_cv_;  // a job's last task returned
  std::deque<Job*> jobs_;            // jobs with tasks not started
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

// Whether one table's probes for `queries` fingerprints, which took `took`,
// waited on the device, so that the query's other tables should go to the
// ReadPool: they took longer than several probes from memory (10-20 µs a
// fingerprint), about half of one from the device, and the calling thread
// read from the device since it last asked.
//
// Why both: time alone does not tell. On this virtual machine about 3% of
// warm hits had a probe of 50-300 µs from memory (preempted, or first
// touches of new heap pages), against 72-100 µs for one from the device.
// Handing those off woke the pool for nothing, and more so when the CPU
// was busy: with the device check, 50,000 warm hits on two threads at 10M
// made 5-6k voluntary context switches instead of 17-20k (once 590k).
// Linux counts the blocks each thread's own reads fetched (getrusage,
// RUSAGE_THREAD, about 1 µs, asked only after a slow probe); where it
// keeps no such count (no /proc/self/io) time alone decides, and a file
// system that reads without the block layer (NFS, FUSE) counts nothing,
// so its cold queries stay on their threads. The count covers whatever
// else the thread did since it last asked.
bool ProbesWaitedOnDevice(std::chrono::nanoseconds took, std::size_t queries);
// Tests set the slow time to zero to send every query's tables after the
// first hit to the pool, device or not; a negative time restores the
// default.
void SetSlowProbeTimeForTesting(std::chrono::nanoseconds time);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_READ_POOL_H_
