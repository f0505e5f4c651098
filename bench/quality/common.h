// Pieces shared by fpstore-quality's parts: pairs of documents, fatal
// errors, a parallel loop and a stopwatch.

#ifndef FPSTORE_BENCH_QUALITY_COMMON_H_
#define FPSTORE_BENCH_QUALITY_COMMON_H_

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace fpstore::quality {

// Two documents by their indices in the corpus, the smaller one in the high
// half, so that sorting keys sorts pairs.
using PairKey = std::uint64_t;

inline PairKey MakePair(std::uint32_t a, std::uint32_t b) {
  if (a > b) std::swap(a, b);
  return (PairKey{a} << 32) | b;
}
inline std::uint32_t FirstOf(PairKey pair) { return static_cast<std::uint32_t>(pair >> 32); }
inline std::uint32_t SecondOf(PairKey pair) { return static_cast<std::uint32_t>(pair); }

// Sorts and removes repeats.
inline void SortUnique(std::vector<PairKey>* pairs) {
  std::sort(pairs->begin(), pairs->end());
  pairs->erase(std::unique(pairs->begin(), pairs->end()), pairs->end());
}

// Prints "fpstore-quality: MESSAGE" and exits with status 1.
[[noreturn]] inline void Die(const std::string& message) {
  std::cerr << "fpstore-quality: " << message << "\n";
  std::exit(1);
}

// Calls fn(i, thread) for every i in [0, n) on `threads` threads (the
// calling one among them), handing out small chunks so that long documents
// do not leave a thread idle.
template <typename Fn>
void ParallelFor(std::size_t n, int threads, const Fn& fn) {
  constexpr std::size_t kChunk = 16;
  std::atomic<std::size_t> next{0};
  auto work = [&](int thread) {
    for (;;) {
      const std::size_t begin = next.fetch_add(kChunk);
      if (begin >= n) return;
      const std::size_t end = std::min(n, begin + kChunk);
      for (std::size_t i = begin; i < end; ++i) fn(i, thread);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (std::thread& t : pool) t.join();
}

class Stopwatch {
 public:
  double Seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace fpstore::quality

#endif  // FPSTORE_BENCH_QUALITY_COMMON_H_
