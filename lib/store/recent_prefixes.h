// The prefixes, per table, of the fingerprints that entered the tables since the lone bits were
// written (skip_hints.h; docs/design.md, "Hits that skip tables"): a lone bit counts only for a
// prefix not held here.
//
// A Bloom filter over (table, prefix), in segments that double as it grows: a false positive only
// costs a probe the query would have made anyway. Rebuilt on open from the `recent` family. Past a
// limit it holds every prefix (no lone bit is used) until the bits are rewritten and it is cleared.
//
// A rewrite of the bits runs beside merges: it seals the fingerprints added before it read the
// tables and drops them when done. Each side of the seal has the limit to itself (seals without
// drops, after failed rewrites, add to the sealed side): memory for twice the limit.
//
// Thread safety: Add (one writer at a time) and MayHold may run concurrently. A reader sees an Add
// made before whatever orders the two (a merge adds before it ingests, while readers hold the
// store's reader gate).

#ifndef FPSTORE_LIB_STORE_RECENT_PREFIXES_H_
#define FPSTORE_LIB_STORE_RECENT_PREFIXES_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <span>

#include "format/records.h"
#include "fpstore/permutation.h"

namespace fpstore::internal {

class RecentPrefixes {
 public:
  // What the first nine segments hold, doubling from 8192 fingerprints; one more would allocate a
  // tenth segment as large as the nine together.
  static constexpr std::uint64_t kDefaultLimit = std::uint64_t{8192} * 511;

  // Holds up to `limit` fingerprints; more make it full.
  explicit RecentPrefixes(const PermutationPlan& plan, std::uint64_t limit = kDefaultLimit);
  ~RecentPrefixes();
  RecentPrefixes(const RecentPrefixes&) = delete;
  RecentPrefixes& operator=(const RecentPrefixes&) = delete;

  // Adds the prefixes the fingerprints have in each table a lone bit can name.
  void Add(std::span<const Fingerprint> fingerprints);
  // Forgets every fingerprint added. REQUIRES: no concurrent Add or MayHold.
  void Clear();
  // Sets the fingerprints added so far apart for DropSealed; later ones count against the limit
  // afresh. Sealing again adds to those sealed. REQUIRES: not concurrent with Add.
  void Seal();
  // Forgets the sealed fingerprints once the lone bits were written anew (skip_hints.h).
  // REQUIRES: no concurrent Add or MayHold.
  void DropSealed();
  // Fingerprints added since the last Clear or DropSealed.
  std::uint64_t size() const {
    return sealed_.load(std::memory_order_relaxed) + added_.load(std::memory_order_relaxed);
  }
  // More than the limit were added on either side of the seal: MayHold holds everything.
  bool full() const {
    return full_.load(std::memory_order_acquire) || sealed_full_.load(std::memory_order_acquire);
  }
  // False only if no fingerprint added has `prefix` (permuted, masked to the prefix) in table t.
  bool MayHold(std::size_t t, Fingerprint prefix) const;

 private:
  struct Segment;

  // Whether the segments left take that many more (repeated seals, restarting small, use them up).
  bool HasRoomFor(std::uint64_t fingerprints) const;
  // The segment the next fingerprint goes into, counted as added. REQUIRES: HasRoomFor(1).
  Segment& Reserve();
  // Where (table t, prefix) goes in a segment.
  std::uint64_t KeyHash(std::size_t t, Fingerprint prefix) const;

  const PermutationPlan& plan_;
  const std::size_t tables_;
  std::array<std::uint64_t, kMaxLoneBitTables> salts_{};  // per table, for KeyHash
  // Segments in order of creation; from the first and from the seal on, each holds up to twice the
  // fingerprints of the one before. Published with release, read with acquire.
  static constexpr std::size_t kMaxSegments = 48;
  std::array<std::atomic<Segment*>, kMaxSegments> segments_{};
  std::atomic<std::size_t> segment_count_{0};
  const std::uint64_t limit_;
  const std::size_t max_segments_;  // <= kMaxSegments
  // Since the seal: fingerprints added, and whether past the limit.
  std::atomic<std::uint64_t> added_{0};
  std::atomic<bool> full_{false};
  // Before it, in segments_[0 .. first_unsealed_).
  std::atomic<std::uint64_t> sealed_{0};
  std::atomic<bool> sealed_full_{false};
  std::size_t first_unsealed_ = 0;
  std::uint64_t room_ = 0;  // fingerprints the newest segment takes still
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_RECENT_PREFIXES_H_
