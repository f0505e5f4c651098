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

#ifndef FPSTORE_LIB_READ_POOL_H_
#define FPSTORE_LIB_READ_POOL_H_

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

// How long one table's probes of a query may take before the query's other
// tables go to the ReadPool: several times a probe that reads its block from
// memory (10-20 µs), about half of one that waits on the device.
std::chrono::nanoseconds SlowProbeTime();
// Tests set it to zero to send every query's tables after the first to the
// pool, device or not; a negative time restores the default.
void SetSlowProbeTimeForTesting(std::chrono::nanoseconds time);

// Whether the calling thread read from the device since it last asked,
// including anything else it did meanwhile: Linux counts the blocks each
// thread's own reads fetched (getrusage, RUSAGE_THREAD). True the first
// time, and always where the kernel keeps no such count (no
// /proc/self/io); a file system that reads without the block layer (NFS,
// FUSE) counts nothing, and its cold queries stay on their threads.
//
// Why: a slow probe alone does not tell. On this virtual machine about 3%
// of warm hits had a probe of 50-300 µs from memory (preempted, or first
// touches of new heap pages), against 72-100 µs for one from the device.
// Handing those off woke the pool for nothing, and more so when the CPU
// was busy: with this check, 50,000 warm hits on two threads at 10M made
// 5-6k voluntary context switches instead of 17-20k (once 590k). One
// getrusage call, about 1 µs, made only after a slow probe.
bool ReadFromDeviceSinceLastAsked();

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_READ_POOL_H_
