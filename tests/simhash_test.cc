#include "fpstore/simhash.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace fpstore {
namespace {

// The worked examples of the seed documents, written MSB first as there.

TEST(SimhashTest, ErlangSeedFiveBitExample) {
  // "Twitter is littered with spam" hashes to 10101, 11001, 11000, 01100 and
  // 01000. The seed sums the columns to (1, 3, -3, -5, 1) and answers 11001,
  // but its own +1/-1 rows add up to (1, 3, -1, -5, -1): the third column
  // has one 1 and four 0s, the fifth two 1s and three 0s. The algorithm the
  // seed describes therefore gives 11000; the seed's 11001 is an arithmetic
  // slip, and no bit order reconciles it.
  std::vector<WeightedFeature> f = {
      {0b10101, 1}, {0b11001, 1}, {0b11000, 1}, {0b01100, 1}, {0b01000, 1}};
  EXPECT_EQ(Simhash(f, 5), 0b11000u);
}

TEST(SimhashTest, HyperplaneSeedThreeBitExample) {
  // h(w1)=(1,-1,1) ... h(w5)=(1,1,-1) with d=(1,2,0,3,0): m = (-4,-2,6) -> 001.
  std::vector<WeightedFeature> f = {
      {0b101, 1}, {0b011, 2}, {0b100, 0}, {0b001, 3}, {0b110, 0}};
  EXPECT_EQ(Simhash(f, 3), 0b001u);
}

TEST(SimhashTest, TermFrequencySeedSixBitExample) {
  // The seed's weights 0.33 and 0.17 are the term frequencies 2/6 and 1/6 of
  // "gourd" (twice) and four words once each; the vote is
  // (1/3, -1/3, 0, 0, 0, -2/3) -> 100000, three bits being exact ties.
  const std::vector<std::uint64_t> hashes = {0b100100, 0b010101, 0b101010, 0b111010, 0b001010};
  std::vector<WeightedFeature> counts, fractions;
  for (std::size_t i = 0; i < hashes.size(); ++i) {
    const double count = i == 0 ? 2 : 1;
    counts.push_back({hashes[i], count});
    fractions.push_back({hashes[i], count / 6});
  }
  EXPECT_EQ(Simhash(counts, 6), 0b100000u);
  EXPECT_EQ(Simhash(fractions, 6), 0b100000u);

  // Taken literally, the rounded decimals break the ties (0.17 * 3 > 0.33 +
  // 0.17) and give another fingerprint: why fpstore weights by exact counts.
  std::vector<WeightedFeature> rounded = {
      {0b100100, 0.33}, {0b010101, 0.17}, {0b101010, 0.17}, {0b111010, 0.17}, {0b001010, 0.17}};
  EXPECT_EQ(Simhash(rounded, 6), 0b101010u);
}

TEST(SimhashTest, NoFeaturesAndZeroWeightsGiveZero) {
  EXPECT_EQ(Simhash({}), 0u);
  std::vector<WeightedFeature> f = {{~0ULL, 0}, {0x1234, 0}};
  EXPECT_EQ(Simhash(f), 0u);
}

TEST(SimhashTest, SingleFeatureIsItsOwnHash) {
  std::vector<WeightedFeature> f = {{0xdeadbeefcafef00dULL, 2.5}};
  EXPECT_EQ(Simhash(f), 0xdeadbeefcafef00dULL);
  EXPECT_EQ(Simhash(f, 16), 0xf00dULL);
}

TEST(SimhashTest, NegativeWeightVotesAgainst) {
  std::vector<WeightedFeature> f = {{0xff00ff00ff00ff00ULL, -1}};
  EXPECT_EQ(Simhash(f), 0x00ff00ff00ff00ffULL);
}

TEST(HammingTest, DistanceAndBoundedCheck) {
  EXPECT_EQ(HammingDistance(0b100111, 0b101010), 3);  // the seed's example
  EXPECT_EQ(HammingDistance(0, ~0ULL), 64);
  EXPECT_EQ(HammingDistance(42, 42), 0);
  EXPECT_TRUE(WithinDistance(0b100111, 0b101010, 3));
  EXPECT_FALSE(WithinDistance(0b100111, 0b101010, 2));
  EXPECT_TRUE(WithinDistance(7, 7, 0));
  EXPECT_FALSE(WithinDistance(7, 7, -1));
}

TEST(HammingTest, MatchesBitByBitCount) {
  const unsigned seed = 20261122;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 10000; ++i) {
    const Fingerprint a = rng(), b = rng();
    int expected = 0;
    for (int bit = 0; bit < 64; ++bit) expected += ((a >> bit) & 1) != ((b >> bit) & 1);
    ASSERT_EQ(HammingDistance(a, b), expected) << "seed " << seed << " a=" << a << " b=" << b;
  }
}

}  // namespace
}  // namespace fpstore
