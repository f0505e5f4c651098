// Pairs within k inside one run of a permutation table (entries sharing its
// prefix, sorted by permuted fingerprint), for the store's scans and the
// in-memory reference. Entries with one fingerprint are copies; sets of copies
// are compared with each other, never their members, so a run of copies costs
// one comparison. Only FindAll, wanting every pair, enumerates them.

#ifndef FPSTORE_LIB_PLAN_RUN_PAIRS_H_
#define FPSTORE_LIB_PLAN_RUN_PAIRS_H_

#include <algorithm>
#include <cstddef>
#include <span>
#include <vector>

#include "fpstore/document.h"
#include "fpstore/permutation.h"
#include "plan/table_entry.h"

namespace fpstore::internal {

// Calls on_copies(copies) for each set of two or more copies in `run` when `t`
// is table 0 (copies share every prefix), and on_linked(a, b, distance) for
// each two sets within k whose first shared table is `t`: every pair within k
// is covered in exactly one table. REQUIRES: `run` is sorted by permuted
// fingerprint and shares table t's prefix.
template <typename OnCopies, typename OnLinked>
void ForEachLinkedCopies(std::span<const TableEntry> run, const PermutationPlan& plan,
                         std::size_t t, int k, OnCopies&& on_copies, OnLinked&& on_linked) {
  const TablePermutation& perm = plan.table(t);
  std::vector<std::span<const TableEntry>> sets;
  for (std::size_t begin = 0; begin < run.size();) {
    std::size_t end = begin + 1;
    while (end < run.size() && run[end].permuted == run[begin].permuted) ++end;
    sets.push_back(run.subspan(begin, end - begin));
    begin = end;
  }
  for (std::size_t i = 0; i < sets.size(); ++i) {
    if (t == 0 && sets[i].size() > 1) on_copies(sets[i]);
    const Word a = sets[i][0].permuted;
    for (std::size_t j = i + 1; j < sets.size(); ++j) {
      const Word b = sets[j][0].permuted;
      // A bit permutation keeps Hamming distances.
      const int d = HammingDistance(a, b);
      if (d <= k &&
          plan.FirstSharedTable(Unpermute(perm, a), Unpermute(perm, b)) == static_cast<int>(t)) {
        on_linked(sets[i], sets[j], d);
      }
    }
  }
}

// Calls emit(NearPair) for every pair of documents within k in `run`, each
// pair in exactly one table, first < second.
template <typename Emit>
void ForEachPairInRun(std::span<const TableEntry> run, const PermutationPlan& plan, std::size_t t,
                      int k, Emit&& emit) {
  auto pair = [&](DocumentId x, DocumentId y, int d) {
    emit(NearPair{std::min(x, y), std::max(x, y), d, std::nullopt});
  };
  ForEachLinkedCopies(
      run, plan, t, k,
      [&](std::span<const TableEntry> copies) {
        for (std::size_t i = 0; i < copies.size(); ++i) {
          for (std::size_t j = i + 1; j < copies.size(); ++j) pair(copies[i].id, copies[j].id, 0);
        }
      },
      [&](std::span<const TableEntry> a, std::span<const TableEntry> b, int d) {
        for (const TableEntry& x : a) {
          for (const TableEntry& y : b) pair(x.id, y.id, d);
        }
      });
}

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_PLAN_RUN_PAIRS_H_
