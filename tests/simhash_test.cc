#include "fpstore/simhash.h"

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <sstream>
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
  std::vector<WeightedFeature> f = {{0b101, 1}, {0b011, 2}, {0b100, 0}, {0b001, 3}, {0b110, 0}};
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

TEST(HammingTest, MatchesBitByBitCountAt128Bits) {
  const unsigned seed = 20261207;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 10000; ++i) {
    const Fingerprint a(rng(), rng()), b(rng(), rng());
    int expected = 0;
    for (int bit = 0; bit < 128; ++bit) expected += ((a >> bit) & 1) != ((b >> bit) & 1);
    ASSERT_EQ(HammingDistance(a, b), expected) << "seed " << seed << " a=" << a << " b=" << b;
    ASSERT_EQ(WithinDistance(a, b, expected), true);
    ASSERT_EQ(WithinDistance(a, b, expected - 1), false);
  }
}

// The 128-bit value behaves as an unsigned 128-bit integer would.
TEST(FingerprintTest, ArithmeticOfA128BitValue) {
  __extension__ using U128 = unsigned __int128;
  const auto wide = [](Fingerprint f) { return (U128{f.high()} << 64) | f.low(); };
  const unsigned seed = 20261208;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < 2000; ++i) {
    const Fingerprint a(rng(), rng()), b(rng(), rng());
    const int n = static_cast<int>(rng() % 140);
    const U128 left = n >= 128 ? 0 : wide(a) << n;
    const U128 right = n >= 128 ? 0 : wide(a) >> n;
    ASSERT_EQ(wide(a << n), left) << a << " << " << n;
    ASSERT_EQ(wide(a >> n), right) << a << " >> " << n;
    ASSERT_EQ(wide(a ^ b), wide(a) ^ wide(b));
    ASSERT_EQ(wide(a & b), wide(a) & wide(b));
    ASSERT_EQ(wide(a | b), wide(a) | wide(b));
    ASSERT_EQ(wide(~a), ~wide(a));
    ASSERT_EQ(a < b, wide(a) < wide(b));
    ASSERT_EQ(a == b, wide(a) == wide(b));
  }
  // A 64-bit value is the integer it is.
  const Fingerprint small = 0x0123456789abcdefULL;
  EXPECT_TRUE(small.fits_64());
  EXPECT_EQ(small.high(), 0u);
  EXPECT_EQ(small.low(), 0x0123456789abcdefULL);
  EXPECT_FALSE((small << 8).fits_64());
  EXPECT_LT(Fingerprint(~0ULL), Fingerprint(1, 0));
  EXPECT_NE(std::hash<Fingerprint>{}(Fingerprint(1, 0)),
            std::hash<Fingerprint>{}(Fingerprint(0, 1)));
  std::ostringstream text;
  text << small << " " << Fingerprint(1, 2);
  EXPECT_EQ(text.str(), "0x0123456789abcdef 0x00000000000000010000000000000002");
}

TEST(SimhashTest, OneHundredTwentyEightBitFeatures) {
  // A single feature is its own hash at any width; 128 bits vote as 64 do.
  const Fingerprint hash(0xfedcba9876543210ULL, 0x0123456789abcdefULL);
  std::vector<WeightedFeature> one = {{hash, 1.5}};
  EXPECT_EQ(Simhash(one, 128), hash);
  EXPECT_EQ(Simhash(one, 100), hash & (~Fingerprint{} >> 28));
  EXPECT_EQ(Simhash(one), Fingerprint(hash.low()));  // width 64 by default

  // Bit 64 is voted by the high words alone: two for it, one against.
  std::vector<WeightedFeature> votes = {
      {Fingerprint(1, 0), 1}, {Fingerprint(1, 0), 1}, {Fingerprint(0, 1), 1}};
  EXPECT_EQ(Simhash(votes, 128), Fingerprint(1, 0));
  votes.push_back({Fingerprint(0, 1), 3});
  EXPECT_EQ(Simhash(votes, 128), Fingerprint(0, 1));
}

}  // namespace
}  // namespace fpstore
