// The permutation tables of Manku, Jain and Das Sarma (WWW'07).
//
// Cut the 64 (or 128) bits of a fingerprint into m blocks (block 0 holds the
// most significant bits; sizes as equal as possible, larger blocks first, so
// 6 blocks of 64 bits are 11,11,11,11,10,10 bits). If two fingerprints differ in at most k
// bits, at most k blocks differ, so at least m-k blocks agree exactly
// (pigeonhole). A plan has one table for every choice of m-k blocks, C(m, m-k)
// tables in all. Table t's permutation moves its chosen blocks to the top, in
// their original order, followed by the other blocks in their original order.
// The chosen blocks then form the table's prefix of p bits: every pair within
// k shares the p-bit prefix in at least one table, so a range scan over equal
// prefixes in every table finds all candidates, and a popcount confirms them.
//
// Tables are numbered in lexicographic order of their chosen blocks:
// for (6, 3), table 0 leads with blocks {0,1,2}, table 1 with {0,1,3}, ...,
// table 19 with {3,4,5}.
//
// Thread safety: plans and tables are immutable after Create; any number of
// threads may use them concurrently.

#ifndef FPSTORE_PERMUTATION_H_
#define FPSTORE_PERMUTATION_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fpstore/export.h"
#include "fpstore/simhash.h"
#include "fpstore/status.h"

namespace fpstore {

// One table of a plan: a bit permutation and the length of its prefix.
class FPSTORE_EXPORT TablePermutation {
 public:
  // The fingerprint with this table's chosen blocks moved to the top (of its
  // 64 or 128 bits). A 64-bit plan reads only the low 64 bits of `fp`.
  Fingerprint Apply(Fingerprint fp) const { return Rearrange(apply_narrow_, apply_wide_, fp); }

  // The exact inverse of Apply: Invert(Apply(fp)) == fp for every fp.
  Fingerprint Invert(Fingerprint permuted) const {
    return Rearrange(invert_narrow_, invert_wide_, permuted);
  }

  // Apply and Invert of a 64-bit plan, on the word alone.
  // REQUIRES: the plan's bits() is 64.
  std::uint64_t Apply64(std::uint64_t fp) const { return Rearrange(apply_narrow_, fp); }
  std::uint64_t Invert64(std::uint64_t permuted) const {
    return Rearrange(invert_narrow_, permuted);
  }

  // p: the number of leading bits of Apply(fp) taken by the chosen blocks.
  int prefix_bits() const { return prefix_bits_; }

  // The top prefix_bits() bits of the plan's width set: Apply(a) &
  // prefix_mask() == Apply(b) & prefix_mask() iff a and b agree on every
  // chosen block.
  Fingerprint prefix_mask() const { return prefix_mask_; }

  // The chosen blocks, ascending (block 0 = most significant).
  const std::vector<int>& leading_blocks() const { return leading_blocks_; }

 private:
  friend class PermutationPlan;

  // Moves bits by the same amount: (fp & mask) shifted left by `shift` when
  // positive, right by -shift when negative. All blocks that move by the same
  // amount share one move (adjacent blocks that stay adjacent always do), so
  // a table costs at most m masks and shifts, and table 0 just one. A 64-bit
  // plan's moves are of one word (Word = std::uint64_t), a 128-bit plan's of
  // two (Word = Fingerprint).
  template <typename Word>
  struct Move {
    Word mask;
    int shift;
  };
  template <typename Word>
  static Word Rearrange(const std::vector<Move<Word>>& moves, Word fp) {
    Word out = 0;
    for (const Move<Word>& m : moves) {
      const Word bits = fp & m.mask;
      out |= m.shift >= 0 ? bits << m.shift : bits >> -m.shift;
    }
    return out;
  }
  Fingerprint Rearrange(const std::vector<Move<std::uint64_t>>& narrow,
                        const std::vector<Move<Fingerprint>>& wide, Fingerprint fp) const {
    if (wide.empty()) return Rearrange(narrow, fp.low());
    return Rearrange(wide, fp);
  }

  // One of each pair is empty: the plan's width's.
  std::vector<Move<std::uint64_t>> apply_narrow_, invert_narrow_;
  std::vector<Move<Fingerprint>> apply_wide_, invert_wide_;
  std::vector<int> leading_blocks_;
  int prefix_bits_ = 0;
  Fingerprint prefix_mask_ = 0;
};

// All tables for `blocks` m and `distance` k.
class FPSTORE_EXPORT PermutationPlan {
 public:
  // Plans with more tables than this are refused: each table is a full copy
  // of the index. The largest plan with m <= 12 has C(12, 6) = 924 tables.
  static constexpr std::size_t kMaxTables = 1024;

  // Returns InvalidArgument, with the reason, unless `bits` (the
  // fingerprints' width) is 64 or 128, 1 <= blocks <= bits, 0 <= distance <
  // blocks and the plan has at most kMaxTables tables.
  static Result<PermutationPlan> Create(int blocks, int distance, int bits = 64);

  int blocks() const { return blocks_; }
  int distance() const { return distance_; }
  int bits() const { return bits_; }

  // Size in bits of each block, block 0 first; they sum to bits().
  const std::vector<int>& block_bits() const { return block_bits_; }

  // The mask of block b's bits in an unpermuted fingerprint.
  // REQUIRES: 0 <= b < blocks()
  Fingerprint block_mask(int b) const { return block_masks_[b]; }

  std::size_t table_count() const { return tables_.size(); }

  // REQUIRES: i < table_count()
  const TablePermutation& table(std::size_t i) const { return tables_[i]; }
  const std::vector<TablePermutation>& tables() const { return tables_; }

  // The lowest-numbered table in which a and b share the prefix (they agree
  // on all of its chosen blocks), or -1 if there is none, which can only
  // happen when more than distance() blocks differ. A search that meets a
  // pair in table t reports it only when FirstSharedTable == t: each pair is
  // then reported exactly once without remembering what was seen.
  int FirstSharedTable(Fingerprint a, Fingerprint b) const;

  // "blocks=6 distance=3", and " bits=128" after it for a 128-bit plan.
  std::string ToString() const;

 private:
  PermutationPlan() = default;

  int blocks_ = 0;
  int distance_ = 0;
  int bits_ = 64;
  std::vector<int> block_bits_;
  std::vector<Fingerprint> block_masks_;
  std::vector<TablePermutation> tables_;

  // For FirstSharedTable: the block holding each bit, indexed by the bit's
  // distance from the top of the plan's width.
  std::array<std::uint8_t, 128> block_of_bit_{};
  // tables_skipped_[v * distance_ + j] = C(blocks_ - 1 - v, distance_ - j):
  // how many tables precede a pair's first shared table because they choose
  // block v, where v is the pair's j-th differing block counted from 0.
  std::vector<std::uint32_t> tables_skipped_;
};

}  // namespace fpstore

#endif  // FPSTORE_PERMUTATION_H_
