// Rewriting table 0's lone bits during a compaction (docs/design.md, "Hits
// that skip tables"), so that documents inserted after a bulk load get bits
// too and the recent prefixes, which grow with every merge, can be cleared.
//
// Store::Compact finds, with merges held off, which fingerprints share a
// prefix with another in each table (CrowdedTables), hands them to the
// LoneBitsRewriter installed on table 0's family, and compacts table 0:
// every value the compaction writes gets the fingerprint's bits anew.

#ifndef FPSTORE_LIB_LONE_BITS_REFRESH_H_
#define FPSTORE_LIB_LONE_BITS_REFRESH_H_

#include <rocksdb/compaction_filter.h>

#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "fpstore/permutation.h"
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

 private:
  LoneBits all_;
  // (table-0 permuted fingerprint, crowded tables), sorted: a compaction
  // of table 0 looks keys up in that order, so one lookup's path through
  // the vector is mostly in the cache for the next.
  std::vector<std::pair<Fingerprint, LoneBits>> crowded_;
};

// Gives each table-0 entry that a compaction writes the lone bits of
// `crowded`, between Start and Stop; a compaction that began before Start
// leaves values as they are. Thread-safe.
class LoneBitsRewriter : public rocksdb::CompactionFilterFactory {
 public:
  explicit LoneBitsRewriter(const PermutationPlan& plan);

  // REQUIRES: no fingerprint enters the tables until Stop.
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

// Runs `hook` in LoneBitsRewriter::Start, before it takes effect: for tests
// of what may write to the store meanwhile. Empty: nothing. It runs on
// Compact's thread, merges held off: a hook that waits for a merge (or for
// room in a full staging index) waits forever.
void SetBeforeLoneBitsRewriteForTesting(std::function<void()> hook);

// While set, LoneBitsRewriter::Start takes no effect: compactions keep
// table 0's values, for tests of a Compact whose read-back finds stale bits.
void SetSkipLoneBitsRewriteForTesting(bool skip);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_LONE_BITS_REFRESH_H_
