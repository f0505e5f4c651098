#include "quality/truth.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

namespace fpstore::quality {
namespace {

constexpr double kRounding = 1e-9;

// Each set's shingles replaced by their ranks in the global order (ascending
// document frequency, ties by hash), ascending: the rarest first. Ranks are
// a bijection of the distinct hashes, so Jaccard over ranks is Jaccard over
// hashes.
std::vector<std::vector<std::uint32_t>> RankedSets(const std::vector<ShingleSet>& sets,
                                                   int threads) {
  std::vector<std::uint64_t> all;
  std::size_t total = 0;
  for (const ShingleSet& s : sets) total += s.hashes.size();
  all.reserve(total);
  for (const ShingleSet& s : sets) all.insert(all.end(), s.hashes.begin(), s.hashes.end());
  std::sort(all.begin(), all.end());
  std::vector<std::uint64_t> distinct;
  std::vector<std::uint32_t> frequency;
  for (std::size_t i = 0; i < all.size();) {
    std::size_t j = i;
    while (j < all.size() && all[j] == all[i]) ++j;
    distinct.push_back(all[i]);
    frequency.push_back(static_cast<std::uint32_t>(j - i));
    i = j;
  }
  std::vector<std::uint64_t>().swap(all);

  std::vector<std::uint32_t> order(distinct.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return frequency[a] < frequency[b]; });
  std::vector<std::uint32_t> rank(distinct.size());
  for (std::size_t r = 0; r < order.size(); ++r) rank[order[r]] = static_cast<std::uint32_t>(r);

  std::vector<std::vector<std::uint32_t>> ranked(sets.size());
  ParallelFor(sets.size(), threads, [&](std::size_t i, int) {
    std::vector<std::uint32_t>& out = ranked[i];
    out.reserve(sets[i].hashes.size());
    auto from = distinct.begin();
    for (const std::uint64_t h : sets[i].hashes) {  // ascending, so the search moves on
      from = std::lower_bound(from, distinct.end(), h);
      out.push_back(rank[static_cast<std::size_t>(from - distinct.begin())]);
    }
    std::sort(out.begin(), out.end());
  });
  return ranked;
}

// |A| - ceil(t |A|) + 1: the prefix that a set within t of another shares a
// shingle in. Rounding t |A| down (by kRounding) only lengthens it.
std::size_t PrefixLength(std::size_t size, double t) {
  if (size == 0) return 0;
  const auto needed =
      static_cast<std::size_t>(std::ceil(t * static_cast<double>(size) - kRounding));
  return std::clamp<std::size_t>(size - std::min(size, needed) + 1, 1, size);
}

// (rank, set) for every shingle in every set's prefix, sorted.
std::vector<std::pair<std::uint32_t, std::uint32_t>> PrefixIndex(
    const std::vector<std::vector<std::uint32_t>>& ranked, double t) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> index;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const std::size_t prefix = PrefixLength(ranked[i].size(), t);
    for (std::size_t p = 0; p < prefix; ++p) {
      index.emplace_back(ranked[i][p], static_cast<std::uint32_t>(i));
    }
  }
  std::sort(index.begin(), index.end());
  return index;
}

// |A ∩ B| >= t |A ∪ B|, with the rounding PrefixLength allows for.
bool AtLeast(std::size_t common, std::size_t all, double t) {
  return static_cast<double>(common) + kRounding >= t * static_cast<double>(all);
}

// |A ∩ B| of two ascending sequences without repeats.
std::size_t Common(const std::vector<std::uint32_t>& a, const std::vector<std::uint32_t>& b) {
  std::size_t i = 0, j = 0, common = 0;
  while (i < a.size() && j < b.size()) {
    if (a[i] < b[j]) {
      ++i;
    } else if (b[j] < a[i]) {
      ++j;
    } else {
      ++common, ++i, ++j;
    }
  }
  return common;
}

}  // namespace

TruthResult ExactJaccardPairs(const std::vector<ShingleSet>& sets, double min_jaccard,
                              int threads) {
  const std::vector<std::vector<std::uint32_t>> ranked = RankedSets(sets, threads);
  const auto index = PrefixIndex(ranked, min_jaccard);
  std::vector<std::vector<PairKey>> found(static_cast<std::size_t>(threads));
  std::vector<std::uint64_t> candidates(static_cast<std::size_t>(threads), 0);
  std::vector<std::vector<std::uint32_t>> last_probe(
      static_cast<std::size_t>(threads),
      std::vector<std::uint32_t>(sets.size(), std::numeric_limits<std::uint32_t>::max()));

  ParallelFor(sets.size(), threads, [&](std::size_t i, int thread) {
    const auto a = static_cast<std::uint32_t>(i);
    const std::vector<std::uint32_t>& set = ranked[a];
    std::vector<std::uint32_t>& seen = last_probe[static_cast<std::size_t>(thread)];
    const std::size_t prefix = PrefixLength(set.size(), min_jaccard);
    for (std::size_t p = 0; p < prefix; ++p) {
      auto it = std::lower_bound(index.begin(), index.end(), std::make_pair(set[p], 0u));
      for (; it != index.end() && it->first == set[p] && it->second < a; ++it) {
        const std::uint32_t b = it->second;
        const std::size_t small = std::min(set.size(), ranked[b].size());
        const std::size_t large = std::max(set.size(), ranked[b].size());
        if (seen[b] == a || !AtLeast(small, large, min_jaccard)) continue;  // J <= small / large
        seen[b] = a;
        ++candidates[static_cast<std::size_t>(thread)];
        const std::size_t common = Common(set, ranked[b]);
        if (AtLeast(common, set.size() + ranked[b].size() - common, min_jaccard)) {
          found[static_cast<std::size_t>(thread)].push_back(MakePair(a, b));
        }
      }
    }
  });

  TruthResult result;
  for (int t = 0; t < threads; ++t) {
    const auto& part = found[static_cast<std::size_t>(t)];
    result.pairs.insert(result.pairs.end(), part.begin(), part.end());
    result.candidates += candidates[static_cast<std::size_t>(t)];
  }
  SortUnique(&result.pairs);
  return result;
}

}  // namespace fpstore::quality
