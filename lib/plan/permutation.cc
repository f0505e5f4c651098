#include "fpstore/permutation.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fpstore {

namespace {

// C(n, r), or `cap` if that is smaller; 0 when r < 0 or r > n.
// REQUIRES: n <= 128, cap <= 2^32
std::uint64_t BinomialAtMost(int n, int r, std::uint64_t cap) {
  if (r < 0 || r > n) return 0;
  r = std::min(r, n - r);
  // C(n, 1), C(n, 2), ... only grow up to r <= n / 2, so stopping at the cap
  // is exact and c * (n - i + 1) never overflows.
  std::uint64_t c = 1;
  for (int i = 1; i <= r; ++i) {
    c = c * (n - i + 1) / i;
    if (c >= cap) return cap;
  }
  return c;
}

// `bits` ones starting `top` bits below the most significant bit of a
// `width`-bit value.
// REQUIRES: 1 <= bits, top + bits <= width <= 128
Fingerprint RangeMask(int top, int bits, int width) {
  return (~Fingerprint{} >> (128 - bits)) << (width - top - bits);
}

// How far below the top of a `width`-bit value its highest set bit lies.
// REQUIRES: v != 0, v < 2^width
int LeadingZeros(Fingerprint v, int width) {
  const int zeros = v.high() != 0 ? std::countl_zero(v.high()) : 64 + std::countl_zero(v.low());
  return zeros - (128 - width);
}

// The plan's constraints (PermutationPlan::Create).
Status CheckPlan(int blocks, int distance, int bits) {
  if (bits != 64 && bits != 128) {
    return Status::InvalidArgument("bits (" + std::to_string(bits) + ") must be 64 or 128");
  }
  if (blocks < 1 || blocks > bits) {
    return Status::InvalidArgument("blocks (" + std::to_string(blocks) +
                                   ") must be between 1 and " + std::to_string(bits));
  }
  if (distance < 0) {
    return Status::InvalidArgument("distance (" + std::to_string(distance) +
                                   ") must not be negative");
  }
  if (distance >= blocks) {
    return Status::InvalidArgument("blocks (" + std::to_string(blocks) +
                                   ") must exceed distance (" + std::to_string(distance) + ")");
  }
  if (BinomialAtMost(blocks, distance, PermutationPlan::kMaxTables + 1) >
      PermutationPlan::kMaxTables) {
    return Status::InvalidArgument(
        "blocks (" + std::to_string(blocks) + ") and distance (" + std::to_string(distance) +
        ") need C(" + std::to_string(blocks) + ", " + std::to_string(distance) +
        ") tables, more than the limit of " + std::to_string(PermutationPlan::kMaxTables));
  }
  return Status::OK();
}

}  // namespace

Result<PermutationPlan> PermutationPlan::Create(int blocks, int distance, int bits) {
  if (Status s = CheckPlan(blocks, distance, bits); !s.ok()) return s;
  PermutationPlan plan;
  plan.blocks_ = blocks;
  plan.distance_ = distance;
  plan.bits_ = bits;

  // Blocks as equal as possible, the larger ones first.
  std::vector<int> block_top(blocks);  // bits above each block
  for (int b = 0, top = 0; b < blocks; ++b) {
    const int size = bits / blocks + (b < bits % blocks ? 1 : 0);
    block_top[b] = top;
    plan.block_bits_.push_back(size);
    plan.block_masks_.push_back(RangeMask(top, size, bits));
    for (int i = top; i < top + size; ++i) {
      plan.block_of_bit_[i] = static_cast<std::uint8_t>(b);
    }
    top += size;
  }

  // Every term FirstSharedTable adds counts tables that precede the answer,
  // so it is below table_count() <= kMaxTables and the cap never shows.
  for (int v = 0; v < blocks; ++v) {
    for (int j = 0; j < distance; ++j) {
      plan.tables_skipped_.push_back(
          static_cast<std::uint32_t>(BinomialAtMost(blocks - 1 - v, distance - j, kMaxTables + 1)));
    }
  }

  // Walk the (m-k)-subsets of blocks in lexicographic order.
  const int chosen = blocks - distance;
  std::vector<int> subset(chosen);
  for (int i = 0; i < chosen; ++i) subset[i] = i;
  while (true) {
    TablePermutation table;
    table.leading_blocks_ = subset;

    std::vector<int> order = subset;
    for (int b = 0; b < blocks; ++b) {
      if (!std::binary_search(subset.begin(), subset.end(), b)) {
        order.push_back(b);
      }
    }
    std::vector<TablePermutation::Move<Fingerprint>> moves;
    int top = 0;
    for (int b : order) {
      const int shift = block_top[b] - top;
      auto same = std::find_if(moves.begin(), moves.end(),
                               [shift](const auto& m) { return m.shift == shift; });
      if (same == moves.end()) {
        moves.push_back({plan.block_masks_[b], shift});
      } else {
        same->mask |= plan.block_masks_[b];
      }
      top += plan.block_bits_[b];
    }
    for (const auto& m : moves) {
      const Fingerprint moved = m.shift >= 0 ? m.mask << m.shift : m.mask >> -m.shift;
      if (bits == 128) {
        table.apply_wide_.push_back(m);
        table.invert_wide_.push_back({moved, -m.shift});
      } else {
        table.apply_narrow_.push_back({m.mask.low(), m.shift});
        table.invert_narrow_.push_back({moved.low(), -m.shift});
      }
    }

    for (int b : subset) table.prefix_bits_ += plan.block_bits_[b];
    table.prefix_mask_ = RangeMask(0, table.prefix_bits_, bits);
    plan.tables_.push_back(std::move(table));

    // Advance the rightmost element that can still move, reset those after.
    int i = chosen - 1;
    while (i >= 0 && subset[i] == blocks - chosen + i) --i;
    if (i < 0) break;
    ++subset[i];
    for (int j = i + 1; j < chosen; ++j) subset[j] = subset[j - 1] + 1;
  }
  return plan;
}

int PermutationPlan::FirstSharedTable(Fingerprint a, Fingerprint b) const {
  // The lowest shared table takes the first m-k agreeing blocks. Its number
  // counts the tables before it, each agreeing with it above some block v it
  // skips and then choosing v. Only differing blocks are skipped before its
  // last block, so walk just those, from the top.
  const int chosen = blocks_ - distance_;
  Fingerprint diff = a ^ b;
  int table = 0;
  if (bits_ == 64) diff = diff.low();
  for (int j = 0; diff != Fingerprint{}; ++j) {
    const int v = block_of_bit_[LeadingZeros(diff, bits_)];
    if (v - j >= chosen) break;     // m-k agreeing blocks lie above v
    if (j == distance_) return -1;  // k+1 blocks differ: too few can agree
    table += static_cast<int>(tables_skipped_[v * distance_ + j]);
    diff &= ~block_masks_[v];
  }
  return table;
}

std::string PermutationPlan::ToString() const {
  std::string text = "blocks=" + std::to_string(blocks_) + " distance=" + std::to_string(distance_);
  if (bits_ != 64) text += " bits=" + std::to_string(bits_);
  return text;
}

}  // namespace fpstore
