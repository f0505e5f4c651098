// FindAll's and Clusters' work on one run of a permutation table (entries that share the table's
// prefix), confirmed by signatures, and the clusters the runs' links make: the same for every
// backend, which only reads the runs and the signatures its own way.

#ifndef FPSTORE_LIB_PLAN_NEAR_PAIRS_H_
#define FPSTORE_LIB_PLAN_NEAR_PAIRS_H_

#include <cstddef>
#include <functional>
#include <span>
#include <utility>
#include <vector>

#include "fpstore/document.h"
#include "fpstore/permutation.h"
#include "plan/run_signatures.h"
#include "plan/table_entry.h"

namespace fpstore::internal {

// Keeps the pairs of `pairs` that `signatures` confirm at `min_similarity`, each with its
// similarity.
void KeepConfirmed(std::vector<NearPair>& pairs, const RunSignatures& signatures,
                   double min_similarity);

// Adds to `edges` the links within k that Clusters makes of `run` in table t: copies (one
// fingerprint) join the member of their group of one signature, one link each, and the groups
// join pairwise where confirmed. `signatures` is called once, at the run's first link; a null
// answer (its read failed) leaves the run out.
void AddClusterEdges(std::span<const TableEntry> run, const PermutationPlan& plan, std::size_t t,
                     int k, double min_similarity,
                     const std::function<const RunSignatures*()>& signatures,
                     std::vector<std::pair<DocumentId, DocumentId>>& edges);

// The sets of document ids that links join, in memory that grows with the ids linked and
// not by a hash node each: links wait in a vector, and once they reach `fold_at` (at first
// `first_fold`) a union-find over the sorted ids they name turns them into one link from
// each id to its set's least id, and the next fold waits for twice as many.
class DisjointSets {
 public:
  explicit DisjointSets(std::size_t first_fold = std::size_t{1} << 22)
      : first_fold_(first_fold), fold_at_(first_fold) {}

  void Union(DocumentId a, DocumentId b);

  // Calls sink once for every set of two or more ids: ids ascending within it, sets by their
  // first id.
  void ForEachSet(const std::function<void(std::span<const DocumentId>)>& sink);

 private:
  void Fold();

  std::vector<std::pair<DocumentId, DocumentId>> links_;
  std::size_t first_fold_;
  std::size_t fold_at_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_PLAN_NEAR_PAIRS_H_
