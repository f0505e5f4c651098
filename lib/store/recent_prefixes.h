// Which table prefixes fingerprints took after a store's lone bits were
// written (docs/design.md, "Hits that skip tables").
//
// A bulk load into an empty store marks, for each fingerprint, the tables
// where no other fingerprint shares its prefix ("lone" bits). A query that has found a fingerprint
// F may then skip every such table in which it shares F's prefix: the only candidate there is F,
// found already. Fingerprints that enter the tables later (merges, later bulk loads) do not clear
// the bits of those whose prefixes they join; their prefixes go here instead, and a lone bit counts
// only for a prefix this set does not hold.
//
// A Bloom filter over (table, prefix), in segments that double in size as
// it grows: a false positive only costs a probe the query would have made
// anyway. The fingerprints themselves are kept in the store's `recent`
// family, from which it is rebuilt on open. Past a limit it stops growing
// and holds every prefix (queries then use no lone bits), until the bits
// are written anew and it is cleared.
//
// A rewrite of the bits runs while merges go on: it seals the fingerprints
// added before it read the tables, and those added after stay when it
// drops the sealed ones. Each side has the limit to itself, and both
// together the segments of two sides (seals without drops, after rewrites
// that failed, add to the sealed side): memory for twice the limit.
//
// Thread safety: Add (one writer at a time) and MayHold may run
// concurrently. A reader sees an Add made before whatever orders the two
// (a merge adds before it ingests, while readers hold the store's reader
// gate).

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
  // The tables a lone bit can name: the first kMaxTables of the plan.
  static constexpr std::size_t kMaxTables = kMaxLoneBitTables;

  // The default limit: the first nine segments, which double from 8192
  // fingerprints (about 120 MiB of filter at 20 tables); one more would
  // allocate a tenth segment as large as the nine.
  static constexpr std::uint64_t kDefaultLimit = std::uint64_t{8192} * 511;

  // Holds up to `limit` fingerprints; more make it full.
  explicit RecentPrefixes(const PermutationPlan& plan, std::uint64_t limit = kDefaultLimit);
  ~RecentPrefixes();
  RecentPrefixes(const RecentPrefixes&) = delete;
  RecentPrefixes& operator=(const RecentPrefixes&) = delete;

  // Adds the prefixes `fingerprint` has in each table a lone bit can name.
  void Add(Fingerprint fingerprint);
  void Add(std::span<const Fingerprint> fingerprints);
  // Forgets every fingerprint added. REQUIRES: no concurrent Add or MayHold.
  void Clear();
  // Sets the fingerprints added so far apart, for DropSealed; later ones
  // count against the limit afresh. Sealing again adds to those sealed.
  // REQUIRES: not concurrent with Add.
  void Seal();
  // Forgets the sealed fingerprints, once the lone bits were written anew
  // (lone_bits_refresh.h). REQUIRES: no concurrent Add or MayHold.
  void DropSealed();
  // Fingerprints added since the last Clear or DropSealed.
  std::uint64_t size() const {
    return sealed_.load(std::memory_order_relaxed) + added_.load(std::memory_order_relaxed);
  }
  // More than the limit were added, before or after the seal: MayHold
  // holds everything.
  bool full() const {
    return full_.load(std::memory_order_acquire) || sealed_full_.load(std::memory_order_acquire);
  }
  // False only if no fingerprint added has `prefix` (a permuted fingerprint
  // masked by the table's prefix mask) in table t.
  bool MayHold(std::size_t t, Fingerprint prefix) const;

 private:
  struct Segment;

  // Whether the segments left can take that many more fingerprints (many
  // seals, each starting from a small segment, could use them up).
  bool HasRoomFor(std::uint64_t fingerprints) const;
  // The segment the next fingerprint goes into, counted as added.
  // REQUIRES: HasRoomFor(1).
  Segment& Reserve();
  // Where (table t, prefix) goes in a segment.
  std::uint64_t KeyHash(std::size_t t, Fingerprint prefix) const;

  const PermutationPlan& plan_;
  const std::size_t tables_;
  std::array<std::uint64_t, kMaxTables> salts_{};  // per table, for KeyHash
  // Segments in order of creation; from the first and from the seal on,
  // each holds up to twice the fingerprints of the one before. Published
  // with release, read with acquire.
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
