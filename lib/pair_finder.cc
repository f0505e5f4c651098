#include "pair_finder.h"

#include <algorithm>
#include <cstddef>
#include <vector>

#include "key_codec.h"
#include "run_pairs.h"

namespace fpstore::internal {

std::vector<NearPair> FindAllPairsInMemory(std::span<const IdFingerprint> docs,
                                           const PermutationPlan& plan, int k) {
  std::vector<NearPair> pairs;
  std::vector<TableEntry> entries(docs.size());
  for (std::size_t t = 0; t < plan.table_count(); ++t) {
    const TablePermutation& table = plan.table(t);
    for (std::size_t i = 0; i < docs.size(); ++i) {
      entries[i] = {table.Apply(docs[i].fingerprint), docs[i].id};
    }
    std::sort(entries.begin(), entries.end(), [](const TableEntry& a, const TableEntry& b) {
      return a.permuted != b.permuted ? a.permuted < b.permuted : a.id < b.id;
    });
    // Sorted by the whole permuted value, equal prefixes form runs.
    const Fingerprint mask = table.prefix_mask();
    const std::span<const TableEntry> all(entries);
    for (std::size_t begin = 0; begin < all.size();) {
      std::size_t end = begin + 1;
      while (end < all.size() && (all[end].permuted & mask) == (all[begin].permuted & mask)) ++end;
      ForEachPairInRun(all.subspan(begin, end - begin), plan, t, k,
                       [&](const NearPair& p) { pairs.push_back(p); });
      begin = end;
    }
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

}  // namespace fpstore::internal
