// Rewriting table 0's lone bits during a compaction (docs/design.md, "Hits
// that skip tables"), so that documents inserted after a bulk load get bits
// too and the recent prefixes, which grow with every merge, can be cleared.
//
// The store finds, at a snapshot, which fingerprints share a prefix with
// another in each table (CrowdedTables). In formats 5 to 8 it hands them
// to the LoneBitsRewriter installed on table 0's family, and compacts
// table 0: every value the compaction writes gets the fingerprint's bits
// anew. From format 9 they replace the crowded family's entries in one
// ingested file. Merges go on meanwhile (store_lone_bits.cc).

#ifndef FPSTORE_LIB_LONE_BITS_REFRESH_H_
#define FPSTORE_LIB_LONE_BITS_REFRESH_H_

#include <rocksdb/compaction_filter.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "fpstore/permutation.h"
#include "fpstore/status.h"
#include "key_codec.h"

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

// Gives each table-0 entry that a compaction writes the lone bits of
// `crowded`, between Start and Stop; a compaction that began before Start
// leaves values as they are. Fingerprints that entered the tables after
// `crowded` was read are alone everywhere to it, and their neighbours'
// bits ignore them: the store keeps their prefixes recent until a later
// rewrite, so that queries trust neither. Thread-safe.
class LoneBitsRewriter : public rocksdb::CompactionFilterFactory {
 public:
  explicit LoneBitsRewriter(const PermutationPlan& plan);

  void Start(std::shared_ptr<const CrowdedTables> crowded);
  void Stop();

  // The value table-0 key `key` should have, or false for a malformed key.
  bool ValueFor(const CrowdedTables& crowded, rocksdb::Slice key, std::string* value) const;

  std::unique_ptr<rocksdb::CompactionFilter> CreateCompactionFilter(
      const rocksdb::CompactionFilter::Context& context) override;
  const char* Name() const override { return "fpstore.LoneBitsRewriter"; }

 private:
  const std::size_t tables_;
  const TableKeyCodec codec0_;
  std::mutex mu_;
  std::shared_ptr<const CrowdedTables> crowded_;  // null outside Start/Stop
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
// before it writes their bits (starts the rewriter, or writes the crowded
// family), with no lock held that merges or writers take; `closing` is the
// store's flag that Close sets.
void BeforeLoneBitsRewrite(const std::atomic<bool>& closing);

// While set, LoneBitsRewriter::Start takes no effect: compactions keep
// table 0's values, for tests of a Compact whose read-back finds stale bits.
void SetSkipLoneBitsRewriteForTesting(bool skip);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_LONE_BITS_REFRESH_H_
