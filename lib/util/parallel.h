// Work spread over threads, progress counted across them, and scans' reads.

#ifndef FPSTORE_LIB_UTIL_PARALLEL_H_
#define FPSTORE_LIB_UTIL_PARALLEL_H_

#include <rocksdb/db.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <system_error>
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

// `threads` (0: one per core), but no more than `tasks` and at least one.
inline int ThreadsFor(int threads, std::size_t tasks) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return static_cast<int>(std::clamp<std::size_t>(tasks, 1, threads));
}

// Runs work(task, worker) for every task on ThreadsFor(threads, tasks) threads
// (worker numbered from 0), tasks taken in order; the first error wins and
// stops new tasks. An exception from `work` fails the call, not the process;
// threads the system refuses leave the work to those it gave.
inline Status ForEachInParallel(std::size_t tasks, int threads,
                                const std::function<Status(std::size_t, int)>& work) {
  threads = ThreadsFor(threads, tasks);
  std::atomic<std::size_t> next{0};
  std::mutex mu;
  Status first_error;
  auto worker = [&](int w) {
    for (std::size_t t; (t = next.fetch_add(1)) < tasks;) {
      Status s;
      try {
        s = work(t, w);
      } catch (const std::exception& e) {
        s = Status::IOError(e.what());
      }
      if (!s.ok()) {
        std::lock_guard lock(mu);
        if (first_error.ok()) first_error = s;
        next = tasks;
      }
    }
  };
  std::vector<std::jthread> pool;
  try {
    for (int w = 1; w < threads; ++w) pool.emplace_back(worker, w);
  } catch (const std::system_error&) {
  }
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
