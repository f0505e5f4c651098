#include <gtest/gtest.h>

#include <string>

#include "brute_force.h"
#include "format/records.h"

namespace fpstore::internal {
namespace {

using testing::Random;

TEST(KeyCodecTest, BigEndianBytesOrderAsNumbers) {
  Random rnd(testing::TestSeed(7));
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t a = rnd.Next(), b = rnd.Uniform(2) == 0 ? a ^ rnd.Bits(1) : rnd.Next();
    char ka[8], kb[8];
    PutBigEndian64(ka, a);
    PutBigEndian64(kb, b);
    EXPECT_EQ(std::string(ka, 8) < std::string(kb, 8), a < b);
    EXPECT_EQ(GetBigEndian64(ka), a);
    for (std::size_t bytes = 1; bytes <= 8; ++bytes) {
      char part[8];
      PutBigEndianBytes(part, a, bytes);
      const std::uint64_t low = bytes == 8 ? a : a & ((std::uint64_t{1} << (8 * bytes)) - 1);
      EXPECT_EQ(GetBigEndianBytes(part, bytes), low);
    }
  }
}

TEST(KeyCodecTest, DocumentValuesRoundTripAndShortOnesAreRefused) {
  Fingerprint fp;
  DocumentTime time = -1;
  Signature signature;
  std::string metadata;
  const std::string slots(32, 'x');
  const DocumentTime fetched = 1'765'000'000;
  const std::string value = EncodeDocumentValue(
      0x0123456789abcdefULL, EncodeDocumentTail(fetched, slots, "https://example.com/"), 64);
  ASSERT_EQ(value.size(), 8u + 8 + 2 + 32 + 20);
  // The time follows the fingerprint, big-endian.
  EXPECT_EQ(GetBigEndian64(value.data() + 8), static_cast<std::uint64_t>(fetched));
  ASSERT_TRUE(DecodeDocumentValue(value, 64, &fp, &time, &signature, &metadata));
  EXPECT_EQ(fp, 0x0123456789abcdefULL);
  EXPECT_EQ(time, fetched);
  EXPECT_EQ(signature.bytes(), slots);
  EXPECT_EQ(metadata, "https://example.com/");
  ASSERT_TRUE(DecodeDocumentValue(EncodeDocumentValue(7, EncodeDocumentTail(0, {}, {}), 64), 64,
                                  &fp, &time, &signature, &metadata));
  EXPECT_EQ(fp, 7u);
  EXPECT_EQ(time, 0);
  EXPECT_TRUE(signature.empty());
  EXPECT_EQ(metadata, "");
  // Too short for the time or the signature's length.
  EXPECT_FALSE(DecodeDocumentValue(value.substr(0, 9), 64, &fp, &time, &signature, &metadata));
  EXPECT_FALSE(DecodeDocumentValue(value.substr(0, 17), 64, &fp, &time, &signature, &metadata));
  // A signature longer than what is left, or of a length no signature has.
  EXPECT_FALSE(DecodeDocumentValue(value.substr(0, 38), 64, &fp, &time, &signature, &metadata));
  const std::string three_slots =
      EncodeDocumentValue(7, EncodeDocumentTail(fetched, std::string(3, 'x'), "m"), 64);
  EXPECT_FALSE(DecodeDocumentValue(three_slots, 64, &fp, &time, &signature, &metadata));
  EXPECT_TRUE(DecodeDocumentValue(three_slots, 64, &fp, &time, nullptr, &metadata));
}

// The three marks docs/format.md describes, and nothing else.
TEST(KeyCodecTest, StagingMarksRoundTripAndOthersAreRefused) {
  for (const StagingMark& mark : {StagingMark{5, std::nullopt}, StagingMark{5, 9},
                                  StagingMark{std::nullopt, 9}, StagingMark{5, 5}}) {
    const std::string value = EncodeStagingMark(mark, 64);
    EXPECT_EQ(value.size(), mark.staged && mark.leaving ? 16u : mark.staged ? 8u : 9u);
    StagingMark read;
    ASSERT_TRUE(DecodeStagingMark(value, 64, &read));
    EXPECT_EQ(read.staged, mark.staged);
    EXPECT_EQ(read.leaving, mark.leaving);
  }
  StagingMark read;
  std::string removal = EncodeStagingMark({std::nullopt, 9}, 64);
  removal[8] = 1;  // the removal's zero byte
  EXPECT_FALSE(DecodeStagingMark(removal, 64, &read));
  for (std::size_t size : {0, 1, 7, 10, 15, 17}) {
    EXPECT_FALSE(DecodeStagingMark(std::string(size, '\0'), 64, &read)) << size;
  }
}

// A 128-bit store's records: the fingerprint in 16 bytes, high half first,
// the rest as at 64 bits; its marks of 16, 32 and 17 bytes.
TEST(KeyCodecTest, WideRecordsAndMarksRoundTrip) {
  const Fingerprint wide(0x0123456789abcdefULL, 0xfedcba9876543210ULL);
  const std::string value = EncodeDocumentValue(wide, EncodeDocumentTail(9, {}, "m"), 128);
  ASSERT_EQ(value.size(), 16u + 8 + 2 + 1);
  EXPECT_EQ(value.substr(0, 2), "\x01\x23");
  Fingerprint fp;
  DocumentTime time;
  std::string metadata;
  ASSERT_TRUE(DecodeDocumentValue(value, 128, &fp, &time, nullptr, &metadata));
  EXPECT_EQ(fp, wide);
  EXPECT_EQ(time, 9);
  EXPECT_EQ(metadata, "m");
  // A 64-bit fingerprint in a 128-bit store still takes 16 bytes.
  ASSERT_TRUE(DecodeDocumentValue(EncodeDocumentValue(7, EncodeDocumentTail(0, {}, {}), 128), 128,
                                  &fp, &time, nullptr, nullptr));
  EXPECT_EQ(fp, Fingerprint(7));
  EXPECT_FALSE(DecodeDocumentValue(value.substr(0, 25), 128, &fp, &time, nullptr, nullptr));
  for (const StagingMark& mark :
       {StagingMark{wide, std::nullopt}, StagingMark{wide, 9}, StagingMark{std::nullopt, wide}}) {
    const std::string encoded = EncodeStagingMark(mark, 128);
    EXPECT_EQ(encoded.size(), mark.staged && mark.leaving ? 32u : mark.staged ? 16u : 17u);
    StagingMark read;
    ASSERT_TRUE(DecodeStagingMark(encoded, 128, &read));
    EXPECT_EQ(read.staged, mark.staged);
    EXPECT_EQ(read.leaving, mark.leaving);
    // A 64-bit store reads none of them as it was written.
    StagingMark narrow;
    EXPECT_FALSE(DecodeStagingMark(encoded, 64, &narrow) && narrow.staged == mark.staged &&
                 narrow.leaving == mark.leaving);
  }
  StagingMark read;
  for (std::size_t size : {0, 8, 9, 15, 18, 31, 33}) {
    EXPECT_FALSE(DecodeStagingMark(std::string(size, '\0'), 128, &read)) << size;
  }
}

}  // namespace
}  // namespace fpstore::internal
