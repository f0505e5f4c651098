// Rewriting the lone bits (docs/design.md, "Hits that skip tables"), so
// that documents inserted after a bulk load get bits too and the recent
// prefixes, which grow with every merge, can be cleared.
//
// The store finds, at a snapshot, which fingerprints share a prefix with
// another in each table (CrowdedTables), and they replace the crowded
// family's entries in one ingested file. Merges go on meanwhile
// (store_lone_bits.cc).

#ifndef FPSTORE_LIB_STORE_CROWDED_TABLES_H_
#define FPSTORE_LIB_STORE_CROWDED_TABLES_H_

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "format/records.h"
#include "fpstore/permutation.h"
#include "fpstore/status.h"

namespace fpstore::internal {

// For each fingerprint, the tables where another fingerprint shares its
// prefix; every other fingerprint is alone everywhere.
class CrowdedTables {
 public:
  // crowded[t]: fingerprints with company in table t, in any order, with
  // repeats. REQUIRES: crowded.size() <= min(table count, 32).
  CrowdedTables(const PermutationPlan& plan, std::vector<std::vector<Fingerprint>> crowded);

  // The lone bits of a fingerprint, given permuted as in table 0.
  LoneBits BitsOf(Fingerprint permuted0) const;
  // Fingerprints crowded in some table.
  std::size_t size() const { return crowded_.size(); }
  // Calls visit(permuted as in table 0, lone bits) for each crowded
  // fingerprint, ascending, until it fails.
  template <typename Visit>
  Status ForEach(Visit&& visit) const {
    for (const auto& [permuted0, crowded] : crowded_) {
      if (Status s = visit(permuted0, all_ & ~crowded); !s.ok()) return s;
    }
    return Status::OK();
  }

 private:
  LoneBits all_;
  // (table-0 permuted fingerprint, crowded tables), sorted: a compaction
  // of table 0 looks keys up in that order, so one lookup's path through
  // the vector is mostly in the cache for the next.
  std::vector<std::pair<Fingerprint, LoneBits>> crowded_;
};

// How many recent fingerprints make a store rewrite its lone bits in the
// background: half the recent prefixes' limit (RecentPrefixesLimit), or an
// eighth of the store's `documents` (a rewrite reads the whole store),
// whichever is more; or what tests set.
std::uint64_t LoneBitsRefreshThreshold(std::uint64_t documents);
// 0 restores the default; UINT64_MAX turns the background rewrite off.
void SetLoneBitsRefreshThresholdForTesting(std::uint64_t threshold);

// Has BeforeLoneBitsRewrite run `hook`: for tests of what may write to the
// store meanwhile, or of Close. Empty: nothing.
void SetBeforeLoneBitsRewriteForTesting(std::function<void(const std::atomic<bool>&)> hook);
// Called by a rewrite of the lone bits on its thread (Compact's, or the
// store's refresher) once it has found the crowded fingerprints, right
// before it writes their bits to the crowded family, with no lock held that merges or writers take;
// `closing` is the store's flag that Close sets.
void BeforeLoneBitsRewrite(const std::atomic<bool>& closing);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_CROWDED_TABLES_H_
