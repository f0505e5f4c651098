// Permutation tables in memory as sorted vectors: FindAll and Clusters use
// them when the store fits the scan's memory budget, and FindAllPairsInMemory
// is the reference the store's scans are tested and benchmarked against.

#ifndef FPSTORE_LIB_PLAN_PAIR_FINDER_H_
#define FPSTORE_LIB_PLAN_PAIR_FINDER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "fpstore/document.h"
#include "fpstore/permutation.h"
#include "fpstore/simhash.h"
#include "plan/table_entry.h"

namespace fpstore::internal {

// Finds, table by table, the runs of documents that share the table's prefix,
// sorting packed 8-byte keys (a key and a sort buffer per document, kept
// between tables). Not thread-safe: one per thread.
class InMemoryTables {
 public:
  static constexpr std::size_t kBytesPerDocument = 16;
  // The most documents a key can index.
  static constexpr std::size_t kMaxDocuments = std::size_t{1} << 32;

  // Calls visit_run(run) for every run of two or more of `docs` that share
  // table t's prefix, sorted by (permuted fingerprint, id), as the table
  // would hold them. `narrow`, for a 64-bit plan: empty, or the documents'
  // fingerprints side by side (NarrowFingerprints), which every table's
  // pass reads instead of `docs`, a third of the bytes.
  // REQUIRES: docs.size() <= kMaxDocuments.
  void ForEachRun(std::span<const IdFingerprint> docs, const PermutationPlan& plan, std::size_t t,
                  const std::function<void(std::span<const TableEntry>)>& visit_run,
                  std::span<const std::uint64_t> narrow = {});

 private:
  std::vector<std::uint64_t> keys_, scratch_;
  std::vector<TableEntry> run_;
};

// `docs`' fingerprints, 8 bytes each, for ForEachRun of a 64-bit plan; none for a 128-bit one.
std::vector<std::uint64_t> NarrowFingerprints(std::span<const IdFingerprint> docs,
                                              const PermutationPlan& plan);

// Every pair of distinct documents within Hamming distance k, each once, sorted
// by (first, second); identical fingerprints are a pair at distance 0.
// REQUIRES: distinct ids, 0 <= k <= plan.distance()
std::vector<NearPair> FindAllPairsInMemory(std::span<const IdFingerprint> docs,
                                           const PermutationPlan& plan, int k);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_PLAN_PAIR_FINDER_H_
