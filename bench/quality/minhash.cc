#include "quality/minhash.h"

#include <xxhash.h>

#include <algorithm>
#include <limits>
#include <utility>

namespace fpstore::quality {
namespace {

std::uint64_t Mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

std::vector<std::uint64_t> Seeds(std::uint64_t seed, int count) {
  std::vector<std::uint64_t> seeds;
  for (int i = 0; i < count; ++i) seeds.push_back(Mix(seed += 0x9e3779b97f4a7c15ULL));
  return seeds;
}

// `values` minhash values per set, set after set.
std::vector<std::uint64_t> Signatures(const std::vector<ShingleSet>& sets, int values,
                                      std::uint64_t seed, int threads) {
  const std::vector<std::uint64_t> seeds = Seeds(seed, values);
  const auto width = static_cast<std::size_t>(values);
  std::vector<std::uint64_t> signatures(sets.size() * width,
                                        std::numeric_limits<std::uint64_t>::max());
  ParallelFor(sets.size(), threads, [&](std::size_t d, int) {
    std::uint64_t* out = &signatures[d * width];
    for (const std::uint64_t h : sets[d].hashes) {
      for (std::size_t i = 0; i < width; ++i) out[i] = std::min(out[i], Mix(h ^ seeds[i]));
    }
  });
  return signatures;
}

// Every pair of sets whose values agree on at least one whole band.
std::vector<PairKey> BandCandidates(const std::vector<ShingleSet>& sets,
                                    const std::vector<std::uint64_t>& signatures,
                                    const MinHashOptions& options) {
  const auto rows = static_cast<std::size_t>(options.rows);
  const std::size_t width = rows * static_cast<std::size_t>(options.bands);
  std::vector<PairKey> candidates;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> buckets;
  for (std::size_t band = 0; band < static_cast<std::size_t>(options.bands); ++band) {
    buckets.clear();
    for (std::size_t d = 0; d < sets.size(); ++d) {
      if (sets[d].hashes.empty()) continue;
      const std::uint64_t* values = &signatures[d * width + band * rows];
      buckets.emplace_back(XXH3_64bits(values, rows * sizeof(values[0])),
                           static_cast<std::uint32_t>(d));
    }
    std::sort(buckets.begin(), buckets.end());
    for (std::size_t i = 0; i < buckets.size();) {
      std::size_t j = i;
      while (j < buckets.size() && buckets[j].first == buckets[i].first) ++j;
      for (std::size_t x = i; x < j; ++x) {
        for (std::size_t y = x + 1; y < j; ++y) {
          candidates.push_back(MakePair(buckets[x].second, buckets[y].second));
        }
      }
      i = j;
    }
    SortUnique(&candidates);  // per band, so that repeats never pile up
  }
  return candidates;
}

}  // namespace

MinHashResult MinHashLsh(const std::vector<ShingleSet>& sets, const MinHashOptions& options,
                         int threads) {
  const int values = options.bands * options.rows;
  const auto width = static_cast<std::size_t>(values);
  const std::vector<std::uint64_t> signatures = Signatures(sets, values, options.seed, threads);
  const std::vector<PairKey> candidates = BandCandidates(sets, signatures, options);

  std::vector<char> confirmed(candidates.size(), 0);
  ParallelFor(candidates.size(), threads, [&](std::size_t c, int) {
    const std::uint64_t* a = &signatures[FirstOf(candidates[c]) * width];
    const std::uint64_t* b = &signatures[SecondOf(candidates[c]) * width];
    std::size_t equal = 0;
    for (std::size_t i = 0; i < width; ++i) equal += a[i] == b[i];
    confirmed[c] = static_cast<double>(equal) + 1e-9 >= options.threshold * values;
  });
  MinHashResult result;
  result.candidates = candidates.size();
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    if (confirmed[c]) result.pairs.push_back(candidates[c]);
  }
  return result;
}

}  // namespace fpstore::quality
