// Verification signatures: the estimator against exact Jaccard, their text
// options, and how they round-trip.

#include "fpstore/signature.h"

#include <gtest/gtest.h>

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

TEST(SignatureTest, EstimatesTheJaccardOfShingleSetsWithinItsError) {
  // Window 1 makes the features the words themselves, so the exact Jaccard
  // of two texts of distinct words is known: overlap / union.
  const Fingerprinter f =
      *Fingerprinter::Create({.window = 3, .signature_slots = 256, .signature_window = 1});
  for (const int overlap : {0, 100, 500, 800, 900, 950, 1000}) {
    const Sketch a = *f.SketchText(Words(0, 1000));
    const Sketch b = *f.SketchText(Words(1000 - overlap, 1000));
    const double exact = overlap / double(2000 - overlap);
    const std::optional<double> estimate = EstimateSimilarity(a.signature, b.signature);
    ASSERT_TRUE(estimate.has_value());
    // Four standard errors of sqrt(J (1 - J) / 256), and a little for the
    // 8-bit correction.
    const double error = 4 * std::sqrt(exact * (1 - exact) / 256) + 0.01;
    EXPECT_NEAR(*estimate, exact, error) << "overlap " << overlap;
  }
}

// Signatures are persisted: the same text under the same options must give
// the same bytes forever. If this fails, the change needs a new fingerprint
// version (docs/format.md, "Documents").
TEST(SignatureTest, GoldenSignatures) {
  const Fingerprinter f = *Fingerprinter::Create();
  struct Golden {
    const char* text;
    const char* first_bytes;  // the first 16 slots, in hex
    std::uint64_t digest;     // of all 256: d = 31 d + byte, modulo 2^64
  };
  const Golden goldens[] = {
      {"The quick brown fox jumps over the lazy dog.", "77777787778787a5707070707887a577",
       7940775567512714922ULL},
      {"近似重复检测用于网络爬虫，以避免重复抓取相同的网页内容。",
       "ae6db8c6ed5160d499036d6d99039960", 17658799031747288970ULL},
  };
  for (const Golden& g : goldens) {
    SCOPED_TRACE(g.text);
    const std::string bytes(f.SketchText(g.text)->signature.bytes());
    ASSERT_EQ(bytes.size(), 256u);
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
  ASSERT_EQ(one.signature.slots(), 256u);
  EXPECT_EQ(EstimateSimilarity(one.signature, f.SketchText("a few words only")->signature), 1.0);
  EXPECT_LT(*EstimateSimilarity(one.signature, f.SketchText("other words entirely")->signature),
            0.2);
  // The fingerprint is FromText's.
  EXPECT_EQ(one.fingerprint, *f.FromText("a few words only"));
}

TEST(SignatureTest, NoWordsOrNoSlotsMakeNoSignature) {
  EXPECT_TRUE(Fingerprinter::Create()->SketchText(" ... ")->signature.empty());
  const Fingerprinter none = *Fingerprinter::Create({.signature_slots = 0});
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
  EXPECT_EQ(Signature::FromBytes(std::string(1025, 'x')).status().code(),
            Status::Code::kInvalidArgument);
  EXPECT_TRUE(Signature::FromBytes(std::string(16, 'x')).ok());
  // Different slot counts do not compare.
  EXPECT_FALSE(EstimateSimilarity(*Signature::FromBytes(std::string(16, 'x')),
                                  *Signature::FromBytes(std::string(32, 'x')))
                   .has_value());
}

TEST(SignatureTest, SimilarityCountsEqualSlotsCorrectedForChance) {
  std::mt19937 rng(7);
  std::string a(256, '\0'), b(256, '\0');
  for (std::size_t i = 0; i < 256; ++i) a[i] = static_cast<char>(rng());
  b = a;
  for (std::size_t i = 0; i < 64; ++i) b[i] = static_cast<char>(a[i] + 1);  // 192 of 256 equal
  const double fraction = 192.0 / 256, chance = 1.0 / 256;
  EXPECT_DOUBLE_EQ(*EstimateSimilarity(*Signature::FromBytes(a), *Signature::FromBytes(b)),
                   (fraction - chance) / (1 - chance));
  // Nothing equal is 0, not below.
  for (std::size_t i = 0; i < 256; ++i) b[i] = static_cast<char>(a[i] + 1);
  EXPECT_EQ(*EstimateSimilarity(*Signature::FromBytes(a), *Signature::FromBytes(b)), 0.0);
}

TEST(SignatureTest, OptionsRecordTheSignatureAndRefuseItOutOfRange) {
  const FingerprintOptions defaults;
  EXPECT_EQ(defaults.ToString(), "v1 window=1 weighting=tf signature=256 signature_window=5");
  const FingerprintOptions other{.window = 4, .signature_slots = 0, .signature_window = 2};
  EXPECT_EQ(*FingerprintOptions::Parse(other.ToString()), other);
  EXPECT_FALSE(FingerprintOptions::Parse("v1 window=3 weighting=tf").ok());
  EXPECT_FALSE(
      FingerprintOptions::Parse("v1 window=3 weighting=tf signature=8 signature_window=5").ok());
  EXPECT_FALSE(Fingerprinter::Create({.signature_slots = 2048}).ok());
  EXPECT_FALSE(Fingerprinter::Create({.signature_window = 0}).ok());
  EXPECT_FALSE(Fingerprinter::Create({.signature_window = 65}).ok());
}

}  // namespace
}  // namespace fpstore
