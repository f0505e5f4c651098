#include "plan/pair_finder.h"

#include <algorithm>
#include <array>
#include <utility>

#include "plan/run_pairs.h"
#include "plan/table_entry.h"

namespace fpstore::internal {

namespace {

// Sorts `keys` by their top 32 bits: a stable LSD radix sort in passes of 11,
// 11 and 10 bits, whose 2,048 destinations stay in the cache.
void SortByTop32Bits(std::vector<std::uint64_t>& keys, std::vector<std::uint64_t>& scratch) {
  constexpr int kShifts[] = {32, 43, 54};
  constexpr std::uint64_t kDigits = 2048;
  std::array<std::array<std::size_t, kDigits>, 3> counts{};
  for (std::uint64_t key : keys) {
    for (int pass = 0; pass < 3; ++pass) ++counts[pass][(key >> kShifts[pass]) & (kDigits - 1)];
  }
  scratch.resize(keys.size());
  for (int pass = 0; pass < 3; ++pass) {
    std::array<std::size_t, kDigits>& next = counts[pass];
    std::size_t start = 0;
    for (std::size_t& n : next) start += std::exchange(n, start);
    for (std::uint64_t key : keys) scratch[next[(key >> kShifts[pass]) & (kDigits - 1)]++] = key;
    keys.swap(scratch);
  }
}

}  // namespace

std::vector<std::uint64_t> NarrowFingerprints(std::span<const IdFingerprint> docs,
                                              const PermutationPlan& plan) {
  std::vector<std::uint64_t> narrow;
  if (plan.bits() != 64) return narrow;
  narrow.reserve(docs.size());
  for (const IdFingerprint& d : docs) narrow.push_back(d.fingerprint.low());
  return narrow;
}

void InMemoryTables::ForEachRun(std::span<const IdFingerprint> docs, const PermutationPlan& plan,
                                std::size_t t,
                                const std::function<void(std::span<const TableEntry>)>& visit_run,
                                std::span<const std::uint64_t> narrow) {
  const TablePermutation& perm = plan.table(t);
  // Key: the permuted fingerprint's top 32 bits over the document's index. Keys
  // sharing the prefix's first min(p, 32) bits are nearly always alone, so
  // entries are built and sorted only for the rare groups of two or more.
  keys_.resize(docs.size());
  if (!narrow.empty()) {  // one word's moves: the loop every scan spends most of its time in
    for (std::size_t i = 0; i < docs.size(); ++i) {
      keys_[i] = (perm.Apply64(narrow[i]) >> 32 << 32) | i;
    }
  } else if (plan.bits() == 64) {
    for (std::size_t i = 0; i < docs.size(); ++i) {
      keys_[i] = (perm.Apply64(docs[i].fingerprint.low()) >> 32 << 32) | i;
    }
  } else {
    for (std::size_t i = 0; i < docs.size(); ++i) {
      keys_[i] = (Permute(perm, docs[i].fingerprint).high() >> 32 << 32) | i;
    }
  }
  SortByTop32Bits(keys_, scratch_);
  const int group_shift = 64 - std::min(perm.prefix_bits(), 32);
  const Word mask = PrefixMask(perm);
  for (std::size_t begin = 0; begin < keys_.size();) {
    std::size_t end = begin + 1;
    while (end < keys_.size() && keys_[end] >> group_shift == keys_[begin] >> group_shift) ++end;
    if (end - begin > 1) {
      run_.clear();
      for (std::size_t i = begin; i < end; ++i) {
        const IdFingerprint& doc = docs[keys_[i] & 0xffffffff];
        run_.push_back({Permute(perm, doc.fingerprint), doc.id});
      }
      std::sort(run_.begin(), run_.end());
      // A prefix longer than 32 bits splits the group further.
      const std::span<const TableEntry> group(run_);
      for (std::size_t b = 0; b < group.size();) {
        std::size_t e = b + 1;
        while (e < group.size() && (group[e].permuted & mask) == (group[b].permuted & mask)) ++e;
        if (e - b > 1) visit_run(group.subspan(b, e - b));
        b = e;
      }
    }
    begin = end;
  }
}

std::vector<NearPair> FindAllPairsInMemory(std::span<const IdFingerprint> docs,
                                           const PermutationPlan& plan, int k) {
  std::vector<NearPair> pairs;
  InMemoryTables tables;
  const std::vector<std::uint64_t> narrow = NarrowFingerprints(docs, plan);
  for (std::size_t t = 0; t < plan.table_count(); ++t) {
    tables.ForEachRun(
        docs, plan, t,
        [&](std::span<const TableEntry> run) {
          ForEachPairInRun(run, plan, t, k, [&](const NearPair& p) { pairs.push_back(p); });
        },
        narrow);
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

}  // namespace fpstore::internal
