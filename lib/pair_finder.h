// The in-memory reference for "every pair within k": the permutation tables
// of a plan held as sorted vectors. The store's FindAll is tested against it
// and the benchmark measures the store against it.

#ifndef FPSTORE_LIB_PAIR_FINDER_H_
#define FPSTORE_LIB_PAIR_FINDER_H_

#include <cstdint>
#include <span>
#include <vector>

#include "fpstore/document.h"
#include "fpstore/permutation.h"
#include "fpstore/simhash.h"

namespace fpstore::internal {

struct IdFingerprint {
  std::uint64_t id;
  Fingerprint fingerprint;
};

// Every pair of distinct documents at Hamming distance <= k, each once,
// sorted by (first, second). Identical fingerprints of different ids are a
// pair at distance 0. Ids must be distinct.
// REQUIRES: 0 <= k <= plan.distance()
std::vector<NearPair> FindAllPairsInMemory(std::span<const IdFingerprint> docs,
                                           const PermutationPlan& plan, int k);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_PAIR_FINDER_H_
