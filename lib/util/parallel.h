// Work spread over threads: tasks taken in turn, the first error stopping
// the rest, and progress counted across them; and how whole-store scans
// read.

#ifndef FPSTORE_LIB_UTIL_PARALLEL_H_
#define FPSTORE_LIB_UTIL_PARALLEL_H_

#include <rocksdb/db.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "fpstore/status.h"

namespace fpstore::internal {

// Counts work done across threads and reports it to `report` (if set) now
// and then, one call at a time.
class ProgressMeter {
 public:
  using Report = std::function<void(std::uint64_t done, std::uint64_t total)>;
  ProgressMeter(const Report& report, std::uint64_t total) : report_(report), total_(total) {}

  void Add(std::uint64_t n) {
    const std::uint64_t before = done_.fetch_add(n);
    if (report_ && (before >> 16) != ((before + n) >> 16)) Call(before + n);
  }
  void Finish() {
    if (report_) Call(done_.load());
  }

 private:
  void Call(std::uint64_t done) {
    std::lock_guard lock(mu_);
    report_(done, std::max(done, total_));
  }

  const Report& report_;
  const std::uint64_t total_;
  std::atomic<std::uint64_t> done_{0};
  std::mutex mu_;
};

// The threads `tasks` tasks take: `threads`, 0 meaning one per core, and no
// more than there are tasks.
inline int ThreadsFor(int threads, std::size_t tasks) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return static_cast<int>(std::clamp<std::size_t>(tasks, 1, threads));
}

// Runs work(task, worker) for every task on ThreadsFor(threads, tasks)
// threads, worker being the thread's number from 0; the first error wins
// and stops the others from starting new tasks.
inline Status ForEachInParallel(std::size_t tasks, int threads,
                                const std::function<Status(std::size_t, int)>& work) {
  threads = ThreadsFor(threads, tasks);
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  Status first_error;
  auto worker = [&](int w) {
    for (std::size_t t; (t = next.fetch_add(1)) < tasks;) {
      Status s = work(t, w);
      if (!s.ok()) {
        std::lock_guard lock(mu);
        if (first_error.ok()) first_error = s;
        next = tasks;
      }
    }
  };
  std::vector<std::jthread> pool;
  for (int w = 1; w < threads; ++w) pool.emplace_back(worker, w);
  worker(0);
  pool.clear();
  return first_error;
}

// A whole-store scan's reads: in key order, with readahead, and without
// evicting the queries' working set from the block cache.
inline rocksdb::ReadOptions ScanReadOptions(const rocksdb::Snapshot* snapshot) {
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  ro.fill_cache = false;
  ro.readahead_size = 4 << 20;
  return ro;
}

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_UTIL_PARALLEL_H_
