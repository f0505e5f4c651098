// Test and benchmark helpers: brute-force answers to check every search
// against, and seeded random corpora with planted near-duplicates.
//
// Everything here is deterministic: a seed gives the same corpus with every
// compiler and standard library.

#ifndef FPSTORE_TESTS_BRUTE_FORCE_H_
#define FPSTORE_TESTS_BRUTE_FORCE_H_

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "fpstore/simhash.h"
#include "plan/pair_finder.h"

namespace fpstore::testing {

// The seed for a randomized test: FPSTORE_TEST_SEED if set, so that more
// seeds can be tried from the shell, else `fixed`. Tests print it on failure.
inline std::uint64_t TestSeed(std::uint64_t fixed) {
  const char* env = std::getenv("FPSTORE_TEST_SEED");
  return env != nullptr && *env != '\0' ? std::strtoull(env, nullptr, 0) : fixed;
}

// Random numbers from a seed. The engine's output is fixed by the standard
// but the std distributions and std::shuffle are not, so they are not used.
class Random {
 public:
  explicit Random(std::uint64_t seed) : engine_(seed) {}

  std::uint64_t Next() { return engine_(); }
  // A random fingerprint of `bits` bits, 64 or 128 (for 64, Next()).
  Fingerprint Next(int bits) {
    if (bits == 64) return Next();
    const std::uint64_t high = Next();
    return {high, Next()};
  }

  // Uniform in [0, n), up to a bias of n / 2^64.
  // REQUIRES: n > 0
  std::uint64_t Uniform(std::uint64_t n) { return engine_() % n; }

  // A fingerprint with exactly `count` distinct random bits set.
  // REQUIRES: 0 <= count <= 64
  std::uint64_t Bits(int count) {
    std::array<int, 64> positions;
    for (int i = 0; i < 64; ++i) positions[i] = i;
    std::uint64_t mask = 0;
    for (int i = 0; i < count; ++i) {
      std::swap(positions[i], positions[i + Uniform(64 - i)]);
      mask |= std::uint64_t{1} << positions[i];
    }
    return mask;
  }

  // Bits(count) within `bits` bits, 64 or 128 (for 64, Bits(count)).
  // REQUIRES: 0 <= count <= bits
  Fingerprint Bits(int count, int bits) {
    if (bits == 64) return Bits(count);
    std::array<int, 128> positions;
    for (int i = 0; i < 128; ++i) positions[i] = i;
    Fingerprint mask;
    for (int i = 0; i < count; ++i) {
      std::swap(positions[i], positions[i + Uniform(128 - i)]);
      mask |= Fingerprint(1) << positions[i];
    }
    return mask;
  }

  template <typename T>
  void Shuffle(std::vector<T>& v) {
    for (std::size_t i = v.size(); i > 1; --i) {
      std::swap(v[i - 1], v[Uniform(i)]);
    }
  }

 private:
  std::mt19937_64 engine_;
};

// `count` near-duplicates, each a copy of an earlier document with exactly
// `distance` distinct bits flipped (distance 0 copies it unchanged).
struct Plant {
  int distance;
  int count;
};

// `n` uniformly random fingerprints of `bits` bits (64 or 128), then the
// plants in order, each copying a document chosen uniformly among those made
// so far, so plants may copy plants and form clusters. The result is shuffled
// and docs[i].id == i: a copy's id may be above or below its original's.
inline std::vector<internal::IdFingerprint> MakeCorpus(std::uint64_t seed, std::size_t n,
                                                       const std::vector<Plant>& plants,
                                                       int bits = 64) {
  Random rnd(seed);
  std::vector<Fingerprint> fps;
  for (std::size_t i = 0; i < n; ++i) fps.push_back(rnd.Next(bits));
  for (const Plant& plant : plants) {
    for (int i = 0; i < plant.count; ++i) {
      // With n == 0 the first plant has nothing to copy, so it starts fresh.
      const Fingerprint original = fps.empty() ? rnd.Next(bits) : fps[rnd.Uniform(fps.size())];
      fps.push_back(original ^ rnd.Bits(plant.distance, bits));
    }
  }
  rnd.Shuffle(fps);
  std::vector<internal::IdFingerprint> docs;
  for (std::size_t i = 0; i < fps.size(); ++i) docs.push_back({i, fps[i]});
  return docs;
}

// Every pair of distinct documents within k, as FindAllPairsInMemory.
inline std::vector<NearPair> BruteForcePairs(std::span<const internal::IdFingerprint> docs, int k) {
  std::vector<NearPair> pairs;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    for (std::size_t j = i + 1; j < docs.size(); ++j) {
      const int d = HammingDistance(docs[i].fingerprint, docs[j].fingerprint);
      if (d > k) continue;
      pairs.push_back(
          {std::min(docs[i].id, docs[j].id), std::max(docs[i].id, docs[j].id), d, std::nullopt});
    }
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

// A document within distance of a query.
struct IdDistance {
  std::uint64_t id;
  int distance;

  friend bool operator==(const IdDistance&, const IdDistance&) = default;
  friend auto operator<=>(const IdDistance&, const IdDistance&) = default;
};

// Every document within k of `query`, sorted by id.
inline std::vector<IdDistance> BruteForceQuery(std::span<const internal::IdFingerprint> docs,
                                               Fingerprint query, int k) {
  std::vector<IdDistance> matches;
  for (const internal::IdFingerprint& doc : docs) {
    const int d = HammingDistance(doc.fingerprint, query);
    if (d <= k) matches.push_back({doc.id, d});
  }
  std::sort(matches.begin(), matches.end());
  return matches;
}

// 64-bit values as the Fingerprints the store's calls take.
inline std::vector<Fingerprint> Fingerprints(std::span<const std::uint64_t> values) {
  return {values.begin(), values.end()};
}

inline std::string Describe(const NearPair& p) {
  std::ostringstream out;
  out << "(" << p.first << ", " << p.second << ") at " << p.distance;
  return out.str();
}

inline std::string Describe(const IdDistance& m) {
  std::ostringstream out;
  out << m.id << " at " << m.distance;
  return out.str();
}

// What differs between two sorted vectors, for failure messages that stay
// short when large results disagree:
//   EXPECT_TRUE(found == expected) << SortedDifference(expected, found);
template <typename T>
std::string SortedDifference(const std::vector<T>& expected, const std::vector<T>& actual) {
  std::ostringstream out;
  out << "expected " << expected.size() << ", got " << actual.size();
  auto list = [&out](const char* label, const std::vector<T>& items) {
    constexpr std::size_t kMaxShown = 10;
    if (items.empty()) return;
    out << "; " << items.size() << " " << label << ":";
    for (std::size_t i = 0; i < items.size() && i < kMaxShown; ++i) {
      out << (i == 0 ? " " : ", ") << Describe(items[i]);
    }
    if (items.size() > kMaxShown) out << " ...";
  };
  std::vector<T> missing;
  std::set_difference(expected.begin(), expected.end(), actual.begin(), actual.end(),
                      std::back_inserter(missing));
  list("missing", missing);
  std::vector<T> extra;
  std::set_difference(actual.begin(), actual.end(), expected.begin(), expected.end(),
                      std::back_inserter(extra));
  list("unexpected", extra);
  return out.str();
}

}  // namespace fpstore::testing

#endif  // FPSTORE_TESTS_BRUTE_FORCE_H_
