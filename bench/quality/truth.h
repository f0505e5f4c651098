// The truth of fpstore-quality: every pair of documents whose shingle sets
// have a Jaccard similarity of at least a threshold, found exactly.

#ifndef FPSTORE_BENCH_QUALITY_TRUTH_H_
#define FPSTORE_BENCH_QUALITY_TRUTH_H_

#include <cstdint>
#include <vector>

#include "quality/common.h"
#include "quality/corpus.h"

namespace fpstore::quality {

struct TruthResult {
  std::vector<PairKey> pairs;    // sorted
  std::uint64_t candidates = 0;  // pairs whose exact Jaccard was computed
};

// Every pair (i, j) of `sets` with |A ∩ B| / |A ∪ B| >= min_jaccard, by
// prefix filtering (Chaudhuri et al., ICDE 2006; Bayardo et al., WWW 2007):
// order all shingles by global rarity; a pair with Jaccard >= t shares at
// least one shingle among the first |A| - ceil(t |A|) + 1 rarest of each
// set, so every pair that does is a candidate, and candidates are confirmed
// by their exact Jaccard over the sorted sets. Exact over the 64-bit
// shingle hashes: two different shingles with the same hash (a collision)
// count as one, which is ignored. Sets without shingles pair with nothing.
// A pair passes when |A ∩ B| >= t |A ∪ B| - 1e-9, which allows for the
// rounding of t |A ∪ B|. REQUIRES: 0 < t <= 1.
TruthResult ExactJaccardPairs(const std::vector<ShingleSet>& sets, double min_jaccard, int threads);

}  // namespace fpstore::quality

#endif  // FPSTORE_BENCH_QUALITY_TRUTH_H_
