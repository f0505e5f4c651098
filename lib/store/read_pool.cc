#include "store/read_pool.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
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
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

std::size_t ReadPool::TakeTask(Job& job) {
  const std::size_t i = job.next++;
  if (job.next == job.count) jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &job));
  return i;
}

void ReadPool::Run(std::size_t count, const std::function<void(std::size_t)>& task) {
  if (count == 0) return;
  Job job{&task, count};
  std::unique_lock lock(mu_);
  try {
    while (static_cast<int>(threads_.size()) < thread_count_) {
      threads_.emplace_back([this] { WorkerLoop(); });
    }
  } catch (const std::system_error&) {
    // Refused threads: the caller runs what the pool cannot.
  }
  jobs_.push_back(&job);
  work_cv_.notify_all();
  while (job.next < job.count) {
    const std::size_t i = TakeTask(job);
    lock.unlock();
    task(i);
    lock.lock();
    ++job.done;
  }
  done_cv_.wait(lock, [&] { return job.done == job.count; });
}

void ReadPool::WorkerLoop() {
  std::unique_lock lock(mu_);
  while (true) {
    work_cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
    if (stopping_) return;
    Job& job = *jobs_.front();
    const std::size_t i = TakeTask(job);
    lock.unlock();
    (*job.task)(i);
    lock.lock();
    // The caller may return, and its job go, as soon as this is counted.
    if (++job.done == job.count) done_cv_.notify_all();
  }
}

}  // namespace fpstore::internal
