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
#include <span>
#include <string>
#include <string_view>
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
// stops new tasks. An exception from `work` fails the call, not the process
// (its message after `context`); threads the system refuses leave the work to
// those it gave.
inline Status ForEachInParallel(std::size_t tasks, int threads,
                                const std::function<Status(std::size_t, int)>& work,
                                std::string_view context = {}) {
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
        s = Status::IOError(std::string(context) + e.what());
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

// Runs work(part, items) on `items` cut in two, side by side, as
// ForEachInParallel does. The cut is the middle, moved forward while key_of
// repeats, so that no key is on both sides; without `split`, or with no such
// cut, work(0, items) runs alone on this thread.
template <typename T, typename KeyOf, typename Work>
Status ForEachHalf(std::span<const T> items, bool split, const KeyOf& key_of, const Work& work,
                   std::string_view context) {
  std::size_t cut = items.size();
  if (split) {
    cut /= 2;
    while (cut > 0 && cut < items.size() && key_of(items[cut]) == key_of(items[cut - 1])) ++cut;
  }
  const std::span<const T> parts[2] = {items.first(cut), items.subspan(cut)};
  return ForEachInParallel(
      parts[1].empty() ? 1 : 2, 2, [&](std::size_t p, int) { return work(p, parts[p]); }, context);
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
