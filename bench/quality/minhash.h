// The MinHash-LSH baseline of fpstore-quality (Broder 1997; Indyk and
// Motwani 1998): a textbook near-duplicate finder over the same shingle sets
// as the truth.

#ifndef FPSTORE_BENCH_QUALITY_MINHASH_H_
#define FPSTORE_BENCH_QUALITY_MINHASH_H_

#include <cstdint>
#include <vector>

#include "quality/common.h"
#include "quality/corpus.h"

namespace fpstore::quality {

struct MinHashOptions {
  // b bands of r rows: bands * rows minhash values per document. Two
  // documents of Jaccard J become candidates with probability
  // 1 - (1 - J^r)^b; the default 16 x 8 makes that 0.9999 at J = 0.9 and
  // 0.5 near J = 0.67, so that banding loses almost nothing above the
  // threshold and confirmation decides.
  int bands = 16;
  int rows = 8;
  // A candidate is reported when the fraction of equal minhash values
  // (its estimated Jaccard) is at least this.
  double threshold = 0.9;
  std::uint64_t seed = 1;
};

struct MinHashResult {
  std::vector<PairKey> pairs;    // sorted
  std::uint64_t candidates = 0;  // distinct pairs sharing a band
};

// Minhash value i of a set is the least Mix(h ^ seed_i) over its shingle
// hashes h, where Mix is SplitMix64's finaliser (a bijection with full
// avalanche) and seed_i the i-th output of SplitMix64 from options.seed.
// Each band's r values are hashed with XXH3-64 into a bucket; the pairs of
// each bucket are the candidates. Sets without shingles pair with nothing.
MinHashResult MinHashLsh(const std::vector<ShingleSet>& sets, const MinHashOptions& options,
                         int threads);

}  // namespace fpstore::quality

#endif  // FPSTORE_BENCH_QUALITY_MINHASH_H_
