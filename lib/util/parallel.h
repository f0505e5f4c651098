// What the whole-store scans (store_scan.cc, store_verify.cc) share:
// threads over tables, progress across them, and their read options.

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

#include "fpstore/store.h"

namespace fpstore::internal {

// Counts work done across threads and reports it now and then, serialised.
class ProgressMeter {
 public:
  ProgressMeter(const ScanOptions& scan, std::uint64_t total) : scan_(scan), total_(total) {}

  void Add(std::uint64_t n) {
    const std::uint64_t before = done_.fetch_add(n);
    if (scan_.progress && (before >> 16) != ((before + n) >> 16)) Report(before + n);
  }
  void Finish() {
    if (scan_.progress) Report(done_.load());
  }

 private:
  void Report(std::uint64_t done) {
    std::lock_guard lock(mu_);
    scan_.progress(done, std::max(done, total_));
  }

  const ScanOptions& scan_;
  const std::uint64_t total_;
  std::atomic<std::uint64_t> done_{0};
  std::mutex mu_;
};

// The threads a scan of `tasks` tasks uses: `threads`, 0 meaning one per
// core, and no more than there are tasks.
inline int ScanThreads(int threads, std::size_t tasks) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return static_cast<int>(std::clamp<std::size_t>(tasks, 1, threads));
}

// Runs work(task, worker) for every task on `threads` threads (ScanThreads),
// worker being the thread's number from 0; the first error wins and stops
// the others from starting new tasks.
inline Status ForEachInParallel(std::size_t tasks, int threads,
                                const std::function<Status(std::size_t, int)>& work) {
  threads = ScanThreads(threads, tasks);
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

inline rocksdb::ReadOptions ScanReadOptions(const rocksdb::Snapshot* snapshot) {
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  ro.total_order_seek = true;  // a full scan, not a prefix probe
  ro.fill_cache = false;       // do not evict the queries' working set
  ro.readahead_size = 4 << 20;
  return ro;
}

// Point lookups: no readahead.
inline rocksdb::ReadOptions LookupReadOptions(const rocksdb::Snapshot* snapshot) {
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  return ro;
}

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_UTIL_PARALLEL_H_
