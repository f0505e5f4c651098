#include "read/read_pool.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <system_error>
#include <utility>

namespace fpstore::internal {

namespace {

constexpr std::chrono::nanoseconds kDefaultSlowProbeTime = std::chrono::microseconds(50);
std::atomic<std::chrono::nanoseconds::rep> slow_probe_nanos{kDefaultSlowProbeTime.count()};

// Whether the calling thread read from the device since it last asked;
// true the first time, and where the kernel keeps no count.
bool ReadFromDeviceSinceLastAsked() {
  static const bool kernel_counts_reads = ::access("/proc/self/io", R_OK) == 0;
  thread_local long last_blocks_read = -1;
  rusage usage;
  if (!kernel_counts_reads || getrusage(RUSAGE_THREAD, &usage) != 0) return true;
  return std::exchange(last_blocks_read, usage.ru_inblock) != usage.ru_inblock;
}

}  // namespace

bool ProbesWaitedOnDevice(std::chrono::nanoseconds took, std::size_t queries) {
  const std::chrono::nanoseconds slow(slow_probe_nanos.load(std::memory_order_relaxed));
  if (slow.count() == 0) return true;  // tests: every probe counts as slow
  return took >= slow * static_cast<std::int64_t>(queries) && ReadFromDeviceSinceLastAsked();
}

void SetSlowProbeTimeForTesting(std::chrono::nanoseconds time) {
  slow_probe_nanos.store((time.count() < 0 ? kDefaultSlowProbeTime : time).count(),
                         std::memory_order_relaxed);
}

ReadPool::~ReadPool() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  work_cv_.NotifyAll();
  for (std::thread& t : threads) t.join();
}

std::size_t ReadPool::TakeTask(Job& job) {
  const std::size_t i = job.next++;
  if (job.next == job.count) jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &job));
  return i;
}

void ReadPool::Run(std::size_t count, const std::function<void(std::size_t)>& task) {
  if (count == 0) return;
  Job job{&task, count};
  MutexLock lock(mu_);
  try {
    while (static_cast<int>(threads_.size()) < thread_count_) {
      threads_.emplace_back([this] { WorkerLoop(); });
    }
  } catch (const std::system_error&) {
    // Refused threads: the caller runs what the pool cannot.
  }
  jobs_.push_back(&job);
  work_cv_.NotifyAll();
  while (job.next < job.count) {
    const std::size_t i = TakeTask(job);
    mu_.Unlock();
    task(i);
    mu_.Lock();
    ++job.done;
  }
  while (job.done != job.count) done_cv_.Wait(mu_);
}

void ReadPool::WorkerLoop() {
  MutexLock lock(mu_);
  while (true) {
    while (!stopping_ && jobs_.empty()) work_cv_.Wait(mu_);
    if (stopping_) return;
    Job& job = *jobs_.front();
    const std::size_t i = TakeTask(job);
    mu_.Unlock();
    (*job.task)(i);
    mu_.Lock();
    // The caller may return, and its job go, as soon as this is counted.
    if (++job.done == job.count) done_cv_.NotifyAll();
  }
}

}  // namespace fpstore::internal
