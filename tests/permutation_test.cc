#include "fpstore/permutation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "brute_force.h"

namespace fpstore {
namespace {

using testing::Random;
using testing::TestSeed;

PermutationPlan MustCreate(int blocks, int distance, int bits = 64) {
  Result<PermutationPlan> plan = PermutationPlan::Create(blocks, distance, bits);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return *std::move(plan);
}

// Every plan with 1 <= m <= 12 and 0 <= k < m, and a few with many blocks,
// of both widths.
std::vector<PermutationPlan> SweptPlans() {
  std::vector<PermutationPlan> plans;
  for (int bits : {64, 128}) {
    for (int m = 1; m <= 12; ++m) {
      for (int k = 0; k < m; ++k) plans.push_back(MustCreate(m, k, bits));
    }
    for (auto [m, k] : {std::pair{16, 3}, {32, 2}, {bits, 0}, {bits, 1}, {bits, bits - 1}}) {
      plans.push_back(MustCreate(m, k, bits));
    }
  }
  return plans;
}

int Popcount(Fingerprint fp) { return HammingDistance(fp, Fingerprint{}); }

int CountrZero(Fingerprint fp) {
  return fp.low() != 0 ? std::countr_zero(fp.low()) : 64 + std::countr_zero(fp.high());
}

// Zeros above the highest one of a `width`-bit value.
int CountlZero(Fingerprint fp, int width) {
  const int zeros = fp.high() != 0 ? std::countl_zero(fp.high()) : 64 + std::countl_zero(fp.low());
  return zeros - (128 - width);
}

// The `width` low bits set.
Fingerprint Ones(int width) { return ~Fingerprint{} >> (128 - width); }

// A random value of the plan's width.
Fingerprint RandomOf(Random& rnd, const PermutationPlan& plan) {
  return Fingerprint(rnd.Next(), rnd.Next()) & Ones(plan.bits());
}

// `count` distinct random bits of the plan's width.
Fingerprint RandomBits(Random& rnd, const PermutationPlan& plan, int count) {
  std::vector<int> positions(plan.bits());
  for (int i = 0; i < plan.bits(); ++i) positions[i] = i;
  rnd.Shuffle(positions);
  Fingerprint bits;
  for (int i = 0; i < count; ++i) bits |= Fingerprint{1} << positions[i];
  return bits;
}

// Table t's permutation the slow way: its blocks, one at a time, packed from
// the top in the table's order.
Fingerprint ApplyByBlocks(const PermutationPlan& plan, std::size_t t, Fingerprint fp) {
  std::vector<int> order = plan.table(t).leading_blocks();
  for (int b = 0; b < plan.blocks(); ++b) {
    if (std::find(order.begin(), order.end(), b) == order.end()) {
      order.push_back(b);
    }
  }
  Fingerprint out = 0;
  int below = plan.bits();  // bits not yet filled
  for (int b : order) {
    const Fingerprint mask = plan.block_mask(b);
    below -= plan.block_bits()[b];
    out |= ((fp & mask) >> CountrZero(mask)) << below;
  }
  return out;
}

int LowestSharedTableByScan(const PermutationPlan& plan, Fingerprint a, Fingerprint b) {
  for (std::size_t t = 0; t < plan.table_count(); ++t) {
    const TablePermutation& table = plan.table(t);
    if (((table.Apply(a) ^ table.Apply(b)) & table.prefix_mask()) == 0) {
      return static_cast<int>(t);
    }
  }
  return -1;
}

int DifferingBlocks(const PermutationPlan& plan, Fingerprint a, Fingerprint b) {
  int n = 0;
  for (int i = 0; i < plan.blocks(); ++i) {
    if (((a ^ b) & plan.block_mask(i)) != 0) ++n;
  }
  return n;
}

TEST(PermutationPlanTest, BlockBits) {
  EXPECT_EQ(MustCreate(6, 3).block_bits(), (std::vector<int>{11, 11, 11, 11, 10, 10}));
  EXPECT_EQ(MustCreate(5, 3).block_bits(), (std::vector<int>{13, 13, 13, 13, 12}));
  EXPECT_EQ(MustCreate(4, 3).block_bits(), (std::vector<int>{16, 16, 16, 16}));
  EXPECT_EQ(MustCreate(1, 0).block_bits(), (std::vector<int>{64}));
  EXPECT_EQ(MustCreate(64, 0).block_bits(), std::vector<int>(64, 1));
  EXPECT_EQ(MustCreate(8, 6, 128).block_bits(), std::vector<int>(8, 16));
  EXPECT_EQ(MustCreate(10, 6, 128).block_bits(),
            (std::vector<int>{13, 13, 13, 13, 13, 13, 13, 13, 12, 12}));
  EXPECT_EQ(MustCreate(1, 0, 128).block_bits(), (std::vector<int>{128}));
}

TEST(PermutationPlanTest, BlockMasksTileTheFingerprint) {
  const PermutationPlan six = MustCreate(6, 3);
  EXPECT_EQ(six.block_mask(0), 0xFFE0000000000000u);
  EXPECT_EQ(six.block_mask(5), 0x00000000000003FFu);
  EXPECT_EQ(MustCreate(1, 0).block_mask(0), Fingerprint{~std::uint64_t{0}});
  const PermutationPlan wide = MustCreate(8, 6, 128);
  EXPECT_EQ(wide.block_mask(0), Fingerprint(0xFFFF000000000000u, 0));
  EXPECT_EQ(wide.block_mask(4), Fingerprint(0, 0xFFFF000000000000u));
  EXPECT_EQ(MustCreate(1, 0, 128).block_mask(0), ~Fingerprint{});

  for (const PermutationPlan& plan : SweptPlans()) {
    SCOPED_TRACE(plan.ToString());
    Fingerprint above = 0;
    for (int b = 0; b < plan.blocks(); ++b) {
      const Fingerprint mask = plan.block_mask(b);
      // Contiguous, right below the blocks before it.
      EXPECT_EQ(Popcount(mask), plan.block_bits()[b]);
      EXPECT_EQ(CountlZero(mask, plan.bits()), Popcount(above));
      EXPECT_EQ(CountrZero(mask), plan.bits() - Popcount(above | mask));
      above |= mask;
    }
    EXPECT_EQ(above, Ones(plan.bits()));
  }
}

TEST(PermutationPlanTest, TableCounts) {
  EXPECT_EQ(MustCreate(6, 3).table_count(), 20u);
  EXPECT_EQ(MustCreate(5, 3).table_count(), 10u);
  EXPECT_EQ(MustCreate(4, 3).table_count(), 4u);
  EXPECT_EQ(MustCreate(6, 0).table_count(), 1u);
  EXPECT_EQ(MustCreate(12, 6).table_count(), 924u);
  EXPECT_EQ(MustCreate(64, 0).table_count(), 1u);
  EXPECT_EQ(MustCreate(64, 1).table_count(), 64u);
  EXPECT_EQ(MustCreate(64, 63).table_count(), 64u);
  EXPECT_EQ(MustCreate(8, 6, 128).table_count(), 28u);
  EXPECT_EQ(MustCreate(10, 6, 128).table_count(), 210u);
  EXPECT_EQ(MustCreate(128, 127, 128).table_count(), 128u);
}

TEST(PermutationPlanTest, TablesInLexicographicOrder) {
  const PermutationPlan plan = MustCreate(6, 3);
  EXPECT_EQ(plan.table(0).leading_blocks(), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(plan.table(1).leading_blocks(), (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(plan.table(4).leading_blocks(), (std::vector<int>{0, 2, 3}));
  EXPECT_EQ(plan.table(19).leading_blocks(), (std::vector<int>{3, 4, 5}));

  for (const PermutationPlan& plan : SweptPlans()) {
    SCOPED_TRACE(plan.ToString());
    for (std::size_t t = 0; t < plan.table_count(); ++t) {
      const std::vector<int>& leading = plan.table(t).leading_blocks();
      EXPECT_EQ(static_cast<int>(leading.size()), plan.blocks() - plan.distance());
      EXPECT_TRUE(std::is_sorted(leading.begin(), leading.end()));
      if (t > 0) {
        EXPECT_LT(plan.table(t - 1).leading_blocks(), leading);
      }
    }
  }
}

TEST(PermutationPlanTest, PrefixBitsAndMask) {
  const PermutationPlan plan = MustCreate(6, 3);
  EXPECT_EQ(plan.table(0).prefix_bits(), 33);   // {0, 1, 2}: 11 + 11 + 11
  EXPECT_EQ(plan.table(3).prefix_bits(), 32);   // {0, 1, 5}: 11 + 11 + 10
  EXPECT_EQ(plan.table(19).prefix_bits(), 31);  // {3, 4, 5}: 11 + 10 + 10
  EXPECT_EQ(plan.table(19).prefix_mask(), 0xFFFFFFFE00000000u);

  // k = 0: one table whose prefix is the whole fingerprint.
  const PermutationPlan exact = MustCreate(6, 0);
  EXPECT_EQ(exact.table(0).prefix_bits(), 64);
  EXPECT_EQ(exact.table(0).prefix_mask(), Ones(64));

  const PermutationPlan one_bit = MustCreate(64, 63);
  EXPECT_EQ(one_bit.table(0).prefix_bits(), 1);
  EXPECT_EQ(one_bit.table(0).prefix_mask(), Fingerprint{1} << 63);
  const PermutationPlan wide = MustCreate(8, 6, 128);
  EXPECT_EQ(wide.table(0).prefix_bits(), 32);
  EXPECT_EQ(wide.table(0).prefix_mask(), Fingerprint(0xFFFFFFFF00000000u, 0));
  EXPECT_EQ(MustCreate(4, 1, 128).table(0).prefix_mask(),
            Fingerprint(~std::uint64_t{0}, 0xFFFFFFFF00000000u));

  for (const PermutationPlan& plan : SweptPlans()) {
    SCOPED_TRACE(plan.ToString());
    for (const TablePermutation& table : plan.tables()) {
      int bits = 0;
      for (int b : table.leading_blocks()) bits += plan.block_bits()[b];
      EXPECT_EQ(table.prefix_bits(), bits);
      EXPECT_EQ(CountlZero(~table.prefix_mask() & Ones(plan.bits()), plan.bits()), bits);
      EXPECT_EQ(Popcount(table.prefix_mask()), bits);
    }
  }
}

// The worked example of the simhash-cpp README, cut into our block sizes.
TEST(PermutationPlanTest, HandWorkedExample) {
  const PermutationPlan plan = MustCreate(6, 3);
  const Fingerprint fp = 0b0100101110111011001000101111101110111100001010011101100110110101;
  const Fingerprint query = 0b0100101110111011011000101111101110011100001010011100100110110101;
  // fp's blocks, 11 11 11 11 10 10 bits from the top.
  const Fingerprint a = 0b01001011101;
  const Fingerprint b = 0b11011001000;
  const Fingerprint c = 0b10111110111;
  const Fingerprint d = 0b01111000010;
  const Fingerprint e = 0b1001110110;
  const Fingerprint f = 0b0110110101;
  ASSERT_EQ(fp, a << 53 | b << 42 | c << 31 | d << 20 | e << 10 | f);

  // Table 6 leads with A C F ({0,1,x} are tables 0-3, {0,2,3} and {0,2,4}
  // are 4 and 5), then B D E: 11 11 10 11 11 10 bits.
  const TablePermutation& acf = plan.table(6);
  ASSERT_EQ(acf.leading_blocks(), (std::vector<int>{0, 2, 5}));
  EXPECT_EQ(acf.prefix_bits(), 32);
  const Fingerprint permuted = a << 53 | c << 42 | f << 32 | b << 21 | d << 10 | e;
  EXPECT_EQ(acf.Apply(fp), permuted);
  EXPECT_EQ(acf.Invert(permuted), fp);

  // The query differs in blocks B, D and E, so A C F is the only table
  // where the two meet.
  EXPECT_EQ(HammingDistance(fp, query), 3);
  EXPECT_EQ(plan.FirstSharedTable(fp, query), 6);
  EXPECT_EQ(plan.FirstSharedTable(query, fp), 6);
  for (std::size_t t = 0; t < plan.table_count(); ++t) {
    const TablePermutation& table = plan.table(t);
    const bool shared = ((table.Apply(fp) ^ table.Apply(query)) & table.prefix_mask()) == 0;
    EXPECT_EQ(shared, t == 6) << "table " << t;
  }
}

TEST(PermutationPlanTest, ApplyMovesBlocksAndInvertUndoesIt) {
  const std::uint64_t seed = TestSeed(1);
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  for (const PermutationPlan& plan : SweptPlans()) {
    SCOPED_TRACE(plan.ToString());
    for (std::size_t t = 0; t < plan.table_count(); ++t) {
      SCOPED_TRACE("table " + std::to_string(t));
      const TablePermutation& table = plan.table(t);
      // Apply is linear over xor, so if the single bits map to distinct
      // single bits, it is a bijection.
      Fingerprint images = 0;
      for (int bit = 0; bit < plan.bits(); ++bit) {
        const Fingerprint image = table.Apply(Fingerprint{1} << bit);
        ASSERT_EQ(Popcount(image), 1) << "bit " << bit;
        images |= image;
      }
      EXPECT_EQ(images, Ones(plan.bits()));

      for (int i = 0; i < 4; ++i) {
        const Fingerprint fp = RandomOf(rnd, plan);
        const Fingerprint permuted = table.Apply(fp);
        ASSERT_EQ(permuted, ApplyByBlocks(plan, t, fp)) << "fp " << fp;
        ASSERT_EQ(table.Invert(permuted), fp) << "fp " << fp;
        ASSERT_EQ(Popcount(permuted), Popcount(fp)) << "fp " << fp;
        if (plan.bits() == 64) {
          ASSERT_EQ(table.Apply64(fp.low()), permuted.low()) << "fp " << fp;
          ASSERT_EQ(table.Invert64(permuted.low()), fp.low()) << "fp " << fp;
        }
      }
    }
  }
}

TEST(PermutationPlanTest, FirstSharedTableOfEqualFingerprintsIsZero) {
  for (const PermutationPlan& plan : SweptPlans()) {
    EXPECT_EQ(plan.FirstSharedTable(0, 0), 0) << plan.ToString();
    EXPECT_EQ(plan.FirstSharedTable(0x0123456789ABCDEFu, 0x0123456789ABCDEFu), 0)
        << plan.ToString();
    if (plan.bits() == 128) {
      const Fingerprint wide(0xFEDCBA9876543210u, 0x0123456789ABCDEFu);
      EXPECT_EQ(plan.FirstSharedTable(wide, wide), 0) << plan.ToString();
    }
  }
}

// Pigeonhole: pairs within k share a prefix in some table, and
// FirstSharedTable names the lowest such table for any pair.
TEST(PermutationPlanTest, FirstSharedTableOfRandomBitFlips) {
  const std::uint64_t seed = TestSeed(2);
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  for (const PermutationPlan& plan : SweptPlans()) {
    SCOPED_TRACE(plan.ToString());
    const int max_distance = std::min(plan.bits(), plan.distance() + 2);
    for (int d = 0; d <= max_distance; ++d) {
      for (int i = 0; i < 8; ++i) {
        const Fingerprint a = RandomOf(rnd, plan);
        const Fingerprint b = a ^ RandomBits(rnd, plan, d);
        SCOPED_TRACE(::testing::Message() << "a " << a << " b " << b);
        const int first = plan.FirstSharedTable(a, b);
        ASSERT_EQ(first, LowestSharedTableByScan(plan, a, b));
        ASSERT_EQ(first, plan.FirstSharedTable(b, a));
        if (d <= plan.distance()) {
          ASSERT_NE(first, -1);
        }
        ASSERT_EQ(first == -1, DifferingBlocks(plan, a, b) > plan.distance());
      }
    }
  }
}

// Far pairs whose differences sit in few blocks still share a table, and
// every k + 1 differing blocks rule all tables out.
TEST(PermutationPlanTest, FirstSharedTableByDifferingBlocks) {
  const std::uint64_t seed = TestSeed(3);
  SCOPED_TRACE("seed " + std::to_string(seed));
  Random rnd(seed);
  for (const PermutationPlan& plan : SweptPlans()) {
    SCOPED_TRACE(plan.ToString());
    const int max_blocks = std::min(plan.blocks(), plan.distance() + 2);
    for (int differing = 0; differing <= max_blocks; ++differing) {
      for (int i = 0; i < 8; ++i) {
        // Choose the differing blocks, then a nonzero change inside each.
        std::vector<int> blocks(plan.blocks());
        for (int b = 0; b < plan.blocks(); ++b) blocks[b] = b;
        rnd.Shuffle(blocks);
        const Fingerprint a = RandomOf(rnd, plan);
        Fingerprint b = a;
        for (int j = 0; j < differing; ++j) {
          const Fingerprint mask = plan.block_mask(blocks[j]);
          Fingerprint change = 0;
          while (change == 0) change = RandomOf(rnd, plan) & mask;
          b ^= change;
        }
        SCOPED_TRACE(::testing::Message() << "a " << a << " b " << b);
        const int first = plan.FirstSharedTable(a, b);
        ASSERT_EQ(first, LowestSharedTableByScan(plan, a, b));
        ASSERT_EQ(first == -1, differing > plan.distance());
      }
    }
  }
}

TEST(PermutationPlanTest, InvalidPlans) {
  const std::pair<int, int> invalid[] = {{0, 0},  {3, 3},   {2, 5},      {65, 3}, {-1, 0},
                                         {6, -1}, {40, 20}, {64, 2},     {13, 6}, {64, 64},
                                         {1, 1},  {-5, -5}, {1000000, 0}};
  for (auto [m, k] : invalid) {
    SCOPED_TRACE(::testing::Message() << "blocks " << m << " distance " << k);
    Result<PermutationPlan> plan = PermutationPlan::Create(m, k);
    ASSERT_FALSE(plan.ok());
    EXPECT_TRUE(plan.status().IsInvalidArgument());
    EXPECT_FALSE(plan.status().message().empty());
  }
  EXPECT_EQ(PermutationPlan::Create(0, 0).status().message(),
            "blocks (0) must be between 1 and 64");
  EXPECT_EQ(PermutationPlan::Create(65, 3).status().message(),
            "blocks (65) must be between 1 and 64");
  EXPECT_EQ(PermutationPlan::Create(6, -1).status().message(),
            "distance (-1) must not be negative");
  EXPECT_EQ(PermutationPlan::Create(3, 3).status().ToString(),
            "Invalid argument: blocks (3) must exceed distance (3)");
  EXPECT_EQ(PermutationPlan::Create(40, 20).status().message(),
            "blocks (40) and distance (20) need C(40, 20) tables, more than "
            "the limit of 1024");
  EXPECT_EQ(PermutationPlan::Create(6, 3, 96).status().message(), "bits (96) must be 64 or 128");
  EXPECT_TRUE(PermutationPlan::Create(6, 3, 32).status().IsInvalidArgument());
  EXPECT_EQ(PermutationPlan::Create(129, 3, 128).status().message(),
            "blocks (129) must be between 1 and 128");
  EXPECT_TRUE(PermutationPlan::Create(65, 3, 128).status().IsInvalidArgument());  // C(65, 3) tables
}

TEST(PermutationPlanTest, LargestValidPlans) {
  EXPECT_TRUE(PermutationPlan::Create(64, 63).ok());  // C(64, 1) = 64 tables
  EXPECT_TRUE(PermutationPlan::Create(128, 127, 128).ok());
  EXPECT_TRUE(PermutationPlan::Create(12, 6).ok());   // 924
  EXPECT_TRUE(PermutationPlan::Create(45, 2).ok());   // 990
  EXPECT_FALSE(PermutationPlan::Create(46, 2).ok());  // 1035
}

TEST(PermutationPlanTest, ToString) {
  EXPECT_EQ(MustCreate(6, 3).ToString(), "blocks=6 distance=3");
  EXPECT_EQ(MustCreate(64, 0).ToString(), "blocks=64 distance=0");
  EXPECT_EQ(MustCreate(8, 6, 128).ToString(), "blocks=8 distance=6 bits=128");
}

}  // namespace
}  // namespace fpstore
