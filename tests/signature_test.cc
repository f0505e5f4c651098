// Verification signatures: the estimator against exact Jaccard, their text
// options, and how they round-trip.

#include "fpstore/signature.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "fpstore/fingerprinter.h"

namespace fpstore {
namespace {

// A text of `words` distinct words w<first> ... w<first + words - 1>.
std::string Words(int first, int words) {
  std::string text;
  for (int i = first; i < first + words; ++i) text += "w" + std::to_string(i) + " ";
  return text;
}

// The estimate's standard error at similarity J for a signature of `bytes`
// bytes (docs/design.md, "Confirming candidates"): the slots' own sampling
// error, J (1 - J) / k for k slots, plus that of counting the slots that
// differ by the bits that do.
double StandardError(double j, int bytes) {
  const double n = 8.0 * bytes, k = 16.0 * bytes;
  const double differing = k * (1 - j);
  const double q = std::exp(-4 * differing / n), p = (1 - q) / 2;
  const double counting = n * p * (1 - p) / (4 * q * q);
  return std::sqrt(j * (1 - j) / k + counting / (k * k));
}

// A text of `words` distinct words, each named by `tag` and its number from `first`.
std::string Tagged(const std::string& tag, int first, int words) {
  std::string text;
  for (int i = first; i < first + words; ++i) text += tag + "x" + std::to_string(i) + " ";
  return text;
}

TEST(SignatureTest, EstimatesTheJaccardOfShingleSetsWithinItsError) {
  // Signature window 1 makes the shingles the words themselves, so the exact
  // Jaccard of two texts of distinct words is known: overlap / union.
  for (const int bytes : {16, 64, 256}) {
    const Fingerprinter f =
        *Fingerprinter::Create({.signature_bytes = bytes, .signature_window = 1});
    for (const int overlap : {0, 100, 500, 700, 800, 900, 950, 980, 1000}) {
      const Sketch a = *f.SketchText(Words(0, 1000));
      const Sketch b = *f.SketchText(Words(1000 - overlap, 1000));
      const double exact = overlap / double(2000 - overlap);
      const std::optional<double> estimate = EstimateSimilarity(a.signature, b.signature);
      ASSERT_TRUE(estimate.has_value());
      SCOPED_TRACE("bytes " + std::to_string(bytes) + ", overlap " + std::to_string(overlap));
      if (exact < 0.7) {
        // Coarse there, but far from the similarities that confirm a match.
        EXPECT_LT(*estimate, 0.85);
      } else {
        EXPECT_NEAR(*estimate, exact, 4 * StandardError(exact, bytes) + 0.005);
      }
    }
  }
}

// The mean of many estimates is the similarity: for long texts (every slot
// full), medium ones (slots densified by walking their sequences) and short
// ones (densified by the least place among the full slots), and for pairs
// whose texts take the two ways, which must find the same slots.
TEST(SignatureTest, TheEstimateIsUnbiasedForLongAndShortTexts) {
  const Fingerprinter f = *Fingerprinter::Create({.signature_window = 1});
  struct Case {
    int shared, only_a, only_b;
  };
  // 64 bytes have 1,024 slots: a text of 20 words fills about 20 of them
  // (fewer than sqrt(1024) = 32: the least place), one of 36 about 35 (the walk).
  for (const Case c : {Case{1800, 100, 100}, Case{180, 10, 10}, Case{18, 1, 1}, Case{30, 0, 3}}) {
    const double exact = c.shared / double(c.shared + c.only_a + c.only_b);
    constexpr int kTrials = 400;
    double sum = 0;
    for (int t = 0; t < kTrials; ++t) {
      const std::string tag = "t" + std::to_string(t);
      const std::string shared = Tagged(tag + "s", 0, c.shared);
      const Sketch a = *f.SketchText(shared + Tagged(tag + "a", 0, c.only_a));
      const Sketch b = *f.SketchText(shared + Tagged(tag + "b", 0, c.only_b));
      sum += *EstimateSimilarity(a.signature, b.signature);
    }
    const double mean = sum / kTrials;
    // Texts of n words estimate no better than sampling their n words: five
    // standard errors of the mean, by the larger of the two errors.
    const double words = c.shared + c.only_a + c.only_b;
    const double error = std::max(StandardError(exact, 64), std::sqrt(exact * (1 - exact) / words));
    SCOPED_TRACE("shared " + std::to_string(c.shared));
    EXPECT_NEAR(mean, exact, 5 * error / std::sqrt(kTrials) + 0.002);
  }
}

// Signatures are persisted: the same text under the same options must give
// the same bytes forever. If this fails, the change needs a new fingerprint
// version (docs/format.md, "Documents").
TEST(SignatureTest, GoldenSignatures) {
  const Fingerprinter f = *Fingerprinter::Create();
  struct Golden {
    const char* text;
    const char* first_bytes;  // the first 16 bytes, in hex
    std::uint64_t digest;     // of all 64: d = 31 d + byte, modulo 2^64
  };
  const Golden goldens[] = {
      {"The quick brown fox jumps over the lazy dog.", "ca1c3496a474b22783f86020cf0a6d70",
       6746267538774603954ULL},
      {"近似重复检测用于网络爬虫，以避免重复抓取相同的网页内容。",
       "987ae872a5022f7ecdbb6b86071c3be1", 9609422241005586820ULL},
  };
  for (const Golden& g : goldens) {
    SCOPED_TRACE(g.text);
    const std::string bytes(f.SketchText(g.text)->signature.bytes());
    ASSERT_EQ(bytes.size(), 64u);
    char hex[33];
    for (int i = 0; i < 16; ++i) {
      std::snprintf(hex + 2 * i, 3, "%02x", static_cast<unsigned char>(bytes[i]));
    }
    EXPECT_STREQ(hex, g.first_bytes);
    std::uint64_t digest = 0;
    for (const unsigned char b : bytes) digest = digest * 31 + b;
    EXPECT_EQ(digest, g.digest);
  }
}

TEST(SignatureTest, ShortTextsAreDensifiedAndIdenticalTextsAgreeExactly) {
  const Fingerprinter f = *Fingerprinter::Create();
  const Sketch one = *f.SketchText("a few words only");
  ASSERT_EQ(one.signature.size(), 64u);
  EXPECT_EQ(EstimateSimilarity(one.signature, f.SketchText("a few words only")->signature), 1.0);
  // One shingle each, and not the same: every slot differs, about half the
  // bits do, and the estimate says only "low" (below 0.75 it is coarse).
  EXPECT_LT(*EstimateSimilarity(one.signature, f.SketchText("other words entirely")->signature),
            0.75);
  // The fingerprint is FromText's.
  EXPECT_EQ(one.fingerprint, *f.FromText("a few words only"));
}

TEST(SignatureTest, NoWordsOrNoSlotsMakeNoSignature) {
  EXPECT_TRUE(Fingerprinter::Create()->SketchText(" ... ")->signature.empty());
  const Fingerprinter none = *Fingerprinter::Create({.signature_bytes = 0});
  const Sketch sketch = *none.SketchText("some words here");
  EXPECT_TRUE(sketch.signature.empty());
  EXPECT_EQ(sketch.fingerprint, *none.FromText("some words here"));
  EXPECT_FALSE(EstimateSimilarity(sketch.signature, sketch.signature).has_value());
  EXPECT_FALSE(Fingerprinter::Create()->SketchText("\xff").ok());  // invalid UTF-8
}

TEST(SignatureTest, FromBytesTakesBackWhatBytesGaveAndRefusesOtherLengths) {
  const Sketch sketch = *Fingerprinter::Create()->SketchText("the quick brown fox jumps");
  const Result<Signature> back = Signature::FromBytes(sketch.signature.bytes());
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, sketch.signature);
  EXPECT_TRUE(Signature::FromBytes("")->empty());
  EXPECT_EQ(Signature::FromBytes(std::string(15, 'x')).status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(Signature::FromBytes(std::string(512, 'x')).status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_EQ(Signature::FromBytes(std::string(48, 'x')).status().code(),
            Status::Code::kInvalidArgument);  // not a power of two
  EXPECT_TRUE(Signature::FromBytes(std::string(16, 'x')).ok());
  EXPECT_TRUE(Signature::FromBytes(std::string(256, 'x')).ok());
  // Different sizes do not compare.
  EXPECT_FALSE(EstimateSimilarity(*Signature::FromBytes(std::string(16, 'x')),
                                  *Signature::FromBytes(std::string(32, 'x')))
                   .has_value());
}

TEST(SignatureTest, SimilarityCountsTheBitsThatDiffer) {
  std::mt19937 rng(7);
  std::string a(64, '\0');
  for (char& c : a) c = static_cast<char>(rng());
  const Signature sa = *Signature::FromBytes(a);
  EXPECT_EQ(*EstimateSimilarity(sa, sa), 1.0);
  // 64 of the 512 bits differ: p = 1/8 of them.
  std::string b = a;
  for (std::size_t i = 0; i < 64; i += 8) b[i] = static_cast<char>(~a[i]);
  const double p = 0.125, q = 1 - 2 * p;
  const double differing_slots = -(512.0 / 4) * std::log(q);
  EXPECT_DOUBLE_EQ(*EstimateSimilarity(sa, *Signature::FromBytes(b)), 1 - differing_slots / 1024);
  // Half the bits or more: 0, not below.
  for (std::size_t i = 0; i < 32; ++i) b[i] = static_cast<char>(~a[i]);
  EXPECT_EQ(*EstimateSimilarity(sa, *Signature::FromBytes(b)), 0.0);
}

TEST(SignatureTest, OptionsRecordTheSignatureAndRefuseItOutOfRange) {
  const FingerprintOptions defaults;
  EXPECT_EQ(defaults.ToString(), "v2 window=1 weighting=tf signature=64 signature_window=5");
  const FingerprintOptions other{.window = 4, .signature_bytes = 0, .signature_window = 2};
  EXPECT_EQ(*FingerprintOptions::Parse(other.ToString()), other);
  EXPECT_FALSE(FingerprintOptions::Parse("v2 window=3 weighting=tf").ok());
  EXPECT_FALSE(
      FingerprintOptions::Parse("v2 window=3 weighting=tf signature=8 signature_window=5").ok());
  EXPECT_FALSE(Fingerprinter::Create({.signature_bytes = 512}).ok());
  EXPECT_FALSE(Fingerprinter::Create({.signature_bytes = 48}).ok());
  EXPECT_FALSE(Fingerprinter::Create({.signature_bytes = -64}).ok());
  EXPECT_FALSE(Fingerprinter::Create({.signature_window = 0}).ok());
  EXPECT_FALSE(Fingerprinter::Create({.signature_window = 65}).ok());
}

}  // namespace
}  // namespace fpstore
