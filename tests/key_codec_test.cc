#include "key_codec.h"

#include <gtest/gtest.h>

#include <string_view>

#include "brute_force.h"

namespace fpstore::internal {
namespace {

using testing::Random;

std::string_view View(const TableKey& key) { return {key.data(), key.size()}; }

// The p leading bits of a fingerprint.
Fingerprint Prefix(Fingerprint permuted, int p) { return p == 64 ? permuted : permuted >> (64 - p); }

constexpr TableKeyCodec::Ids kBothLayouts[] = {TableKeyCodec::Ids::kKept,
                                                TableKeyCodec::Ids::kNone};

TEST(TableKeyCodecTest, RoundTripsEveryPrefixLength) {
  Random rnd(testing::TestSeed(7));
  for (TableKeyCodec::Ids ids : kBothLayouts) {
    for (int p = 1; p <= 64; ++p) {
      const TableKeyCodec codec(p, ids);
      const bool kept = ids == TableKeyCodec::Ids::kKept;
      EXPECT_EQ(codec.prefix_bytes(), static_cast<std::size_t>((p + 7) / 8));
      EXPECT_EQ(codec.size(), (p + 7) / 8 + (64 - p + 7) / 8 + (kept ? 8u : 0u));
      for (int i = 0; i < 200; ++i) {
        const Fingerprint permuted = i == 0 ? 0 : i == 1 ? ~Fingerprint{0} : rnd.Next();
        const DocumentId id = rnd.Next();
        const TableKey key = codec.Encode(permuted, id);
        ASSERT_EQ(key.size(), codec.size());
        TableEntry e{};
        ASSERT_TRUE(codec.Decode(View(key), &e)) << "p=" << p;
        EXPECT_EQ(e.permuted, permuted) << "p=" << p;
        EXPECT_EQ(e.id, kept ? id : 0) << "p=" << p;
      }
    }
  }
}

// Byte order must be (permuted, id) order, and the first prefix_bytes bytes
// must hold the p-bit prefix and nothing else: the bloom filter and the
// range scans depend on both.
TEST(TableKeyCodecTest, BytesOrderAsNumbersAndPrefixFillsWholeBytes) {
  Random rnd(testing::TestSeed(8));
  for (int p : {1, 7, 8, 9, 16, 30, 31, 32, 33, 43, 63, 64}) {
    const TableKeyCodec codec(p, TableKeyCodec::Ids::kKept);
    const TableKeyCodec without_ids(p, TableKeyCodec::Ids::kNone);
    for (int i = 0; i < 2000; ++i) {
      const Fingerprint a = rnd.Next();
      // Often a near neighbour, so that equal prefixes and ties occur.
      const Fingerprint b = rnd.Uniform(2) == 0 ? a ^ rnd.Bits(1 + rnd.Uniform(3)) : rnd.Next();
      const DocumentId ia = rnd.Uniform(4), ib = rnd.Uniform(4);
      const TableKey ka = codec.Encode(a, ia), kb = codec.Encode(b, ib);
      const bool numeric_less = a != b ? a < b : ia < ib;
      EXPECT_EQ(View(ka) < View(kb), numeric_less) << "p=" << p;
      const bool same_prefix = Prefix(a, p) == Prefix(b, p);
      EXPECT_EQ(View(ka).substr(0, codec.prefix_bytes()) == View(kb).substr(0, codec.prefix_bytes()),
                same_prefix)
          << "p=" << p;
      EXPECT_EQ(View(without_ids.Encode(a, ia)) < View(without_ids.Encode(b, ib)), a < b)
          << "p=" << p;
    }
  }
}

TEST(TableKeyCodecTest, RejectsWrongSizeAndNonZeroPadding) {
  for (TableKeyCodec::Ids ids : kBothLayouts) {
    const TableKeyCodec codec(31, ids);  // 1 pad bit after the prefix, 7 after the rest
    const TableKey key = codec.Encode(0x0123456789abcdefULL, 42);
    TableEntry e{};
    std::string bytes(View(key));
    EXPECT_FALSE(codec.Decode(bytes.substr(0, bytes.size() - 1), &e));
    EXPECT_FALSE(codec.Decode(bytes + "x", &e));
    std::string padded = bytes;
    padded[3] = static_cast<char>(padded[3] | 1);  // the prefix's pad bit
    EXPECT_FALSE(codec.Decode(padded, &e));
    padded = bytes;
    padded[8] = static_cast<char>(padded[8] | 1);  // the rest's last pad bit
    EXPECT_FALSE(codec.Decode(padded, &e));
    EXPECT_TRUE(codec.Decode(bytes, &e));
  }
}

}  // namespace
}  // namespace fpstore::internal
