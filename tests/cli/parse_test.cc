#include "cli/parse.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace fpstore::cli {
namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

std::string FingerprintError(std::string_view text) {
  Result<Fingerprint> fp = ParseFingerprint(text);
  EXPECT_FALSE(fp.ok()) << text << " parsed as " << (fp.ok() ? *fp : 0);
  return fp.ok() ? "" : fp.status().message();
}

TEST(ParseFingerprintTest, AcceptsDecimal) {
  for (const auto& [text, value] :
       std::initializer_list<std::pair<std::string_view, std::uint64_t>>{
           {"0", 0},
           {"7", 7},
           {"007", 7},
           {"81985529216486895", 0x0123456789abcdefULL},
           {"18446744073709551615", kMax},
           {"000000000000000000000018446744073709551615", kMax}}) {
    Result<Fingerprint> fp = ParseFingerprint(text);
    ASSERT_TRUE(fp.ok()) << text << ": " << fp.status().ToString();
    EXPECT_EQ(*fp, value) << text;
  }
}

TEST(ParseFingerprintTest, AcceptsHexInEitherCase) {
  for (const auto& [text, value] :
       std::initializer_list<std::pair<std::string_view, std::uint64_t>>{
           {"0x0", 0},
           {"0x0123456789abcdef", 0x0123456789abcdefULL},
           {"0X0123456789ABCDEF", 0x0123456789abcdefULL},
           {"0xAbCdEf", 0xabcdef},
           {"0xffffffffffffffff", kMax},
           {"0x0000ffffffffffffffff", kMax}}) {
    Result<Fingerprint> fp = ParseFingerprint(text);
    ASSERT_TRUE(fp.ok()) << text << ": " << fp.status().ToString();
    EXPECT_EQ(*fp, value) << text;
  }
}

TEST(ParseFingerprintTest, RejectsOverflowWithAReason) {
  EXPECT_EQ(FingerprintError("18446744073709551616"),
            "hash \"18446744073709551616\" does not fit in 64 bits");
  EXPECT_EQ(FingerprintError("99999999999999999999999"),
            "hash \"99999999999999999999999\" does not fit in 64 bits");
  EXPECT_EQ(FingerprintError("0x10000000000000000"),
            "hash \"0x10000000000000000\" does not fit in 64 bits");
  // Twenty digits, the first that may not fit, and past leading zeros.
  EXPECT_EQ(FingerprintError("20000000000000000000"),
            "hash \"20000000000000000000\" does not fit in 64 bits");
  EXPECT_EQ(FingerprintError("0018446744073709551616"),
            "hash \"0018446744073709551616\" does not fit in 64 bits");
  EXPECT_EQ(FingerprintError("0x00100000000000000000"),
            "hash \"0x00100000000000000000\" does not fit in 64 bits");
  // A bad digit wins over an overflow, wherever it is.
  EXPECT_EQ(FingerprintError("1844674407370955161x"),
            "hash \"1844674407370955161x\" is not a decimal or 0x-hexadecimal number");
  EXPECT_EQ(FingerprintError("x99999999999999999999999"),
            "hash \"x99999999999999999999999\" is not a decimal or 0x-hexadecimal number");
  EXPECT_EQ(FingerprintError("0x1000000000000000g"),
            "hash \"0x1000000000000000g\" is not a hexadecimal number");
}

TEST(ParseFingerprintTest, RejectsSignsEmptinessAndGarbage) {
  EXPECT_EQ(FingerprintError(""), "empty hash");
  EXPECT_EQ(FingerprintError("-1"), "hash \"-1\" has a sign; hashes are unsigned 64-bit integers");
  EXPECT_EQ(FingerprintError("+1"), "hash \"+1\" has a sign; hashes are unsigned 64-bit integers");
  EXPECT_EQ(FingerprintError("0x"), "hash \"0x\" has no digits after 0x");
  EXPECT_EQ(FingerprintError("0xfg"), "hash \"0xfg\" is not a hexadecimal number");
  EXPECT_EQ(FingerprintError("12a"), "hash \"12a\" is not a decimal or 0x-hexadecimal number");
  EXPECT_EQ(FingerprintError("abc"), "hash \"abc\" is not a decimal or 0x-hexadecimal number");
  for (std::string_view bad :
       {" 1", "1 ", "1\t", "1.0", "1e5", "0b101", "x12", "0x-1", "0x 1", "１２", "0xx1"}) {
    FingerprintError(bad);
  }
}

TEST(ParseIdTest, AcceptsDecimalDigitsOnly) {
  EXPECT_EQ(*ParseId("0"), 0u);
  EXPECT_EQ(*ParseId("0042"), 42u);
  EXPECT_EQ(*ParseId("18446744073709551615"), kMax);
  for (std::string_view bad : {"", "-1", "+1", "0x10", "1.0", "1e3", " 1", "1 ", "one"}) {
    EXPECT_FALSE(ParseId(bad).ok()) << bad;
  }
  EXPECT_EQ(ParseId("18446744073709551616").status().message(),
            "id \"18446744073709551616\" does not fit in 64 bits");
  EXPECT_EQ(ParseId("12a").status().message(), "id \"12a\" is not a non-negative decimal integer");
  EXPECT_EQ(ParseId("0x10").status().message(),
            "id \"0x10\" is not a non-negative decimal integer");
}

TEST(FormatFingerprintTest, SixteenLowerCaseDigits) {
  EXPECT_EQ(FormatFingerprint(0), "0x0000000000000000");
  EXPECT_EQ(FormatFingerprint(0x0123456789ABCDEFULL), "0x0123456789abcdef");
  EXPECT_EQ(FormatFingerprint(kMax), "0xffffffffffffffff");
  for (Fingerprint fp :
       {Fingerprint{0}, Fingerprint{1}, Fingerprint{0xdeadbeef}, Fingerprint{kMax}}) {
    EXPECT_EQ(*ParseFingerprint(FormatFingerprint(fp)), fp);
  }
}

// 2^128 - 1, 2^127 and 2^64 in every form the tools read.
TEST(ParseFingerprintTest, OneHundredTwentyEightBitValues) {
  const Fingerprint all(kMax, kMax), top(std::uint64_t{1} << 63, 0), past64(1, 0);
  EXPECT_EQ(*ParseFingerprint("340282366920938463463374607431768211455", 128), all);
  EXPECT_EQ(*ParseFingerprint("0xffffffffffffffffffffffffffffffff", 128), all);
  EXPECT_EQ(*ParseFingerprint("0X80000000000000000000000000000000", 128), top);
  EXPECT_EQ(*ParseFingerprint("18446744073709551616", 128), past64);
  EXPECT_EQ(
      *ParseFingerprint("0x00000000000000000000000000000000000000000000010000000000000000", 128),
      past64);
  EXPECT_EQ(*ParseFingerprint("42", 128), Fingerprint{42});
  EXPECT_EQ(*ParseFingerprintAs("ffffffffffffffffffffffffffffffff", HashEncoding::kHex, 128), all);
  EXPECT_EQ(ParseFingerprint("340282366920938463463374607431768211456", 128).status().message(),
            "hash \"340282366920938463463374607431768211456\" does not fit in 128 bits");
  EXPECT_EQ(ParseFingerprint("0x100000000000000000000000000000000", 128).status().message(),
            "hash \"0x100000000000000000000000000000000\" does not fit in 128 bits");
  EXPECT_EQ(ParseFingerprint("-1", 128).status().message(),
            "hash \"-1\" has a sign; hashes are unsigned 128-bit integers");
  EXPECT_EQ(ParseFingerprint("3402823669209384634633746074317682114x", 128).status().message(),
            "hash \"3402823669209384634633746074317682114x\" is not a decimal or 0x-hexadecimal "
            "number");
  // A 64-bit store's reading refuses them.
  EXPECT_EQ(ParseFingerprint("0xffffffffffffffffffffffffffffffff").status().message(),
            "hash \"0xffffffffffffffffffffffffffffffff\" does not fit in 64 bits");

  // A Java BigInteger's signed decimal: two's complement within 128 bits.
  EXPECT_EQ(*ParseFingerprintAs("-1", HashEncoding::kSigned, 128), all);
  EXPECT_EQ(
      *ParseFingerprintAs("-170141183460469231731687303715884105728", HashEncoding::kSigned, 128),
      top);
  EXPECT_EQ(
      *ParseFingerprintAs("170141183460469231731687303715884105727", HashEncoding::kSigned, 128),
      ~top);
  EXPECT_EQ(*ParseFingerprintAs("-18446744073709551616", HashEncoding::kSigned, 128),
            Fingerprint(kMax, 0));
  EXPECT_EQ(
      ParseFingerprintAs("170141183460469231731687303715884105728", HashEncoding::kSigned, 128)
          .status()
          .message(),
      "hash \"170141183460469231731687303715884105728\" is outside the signed 128-bit range");
  EXPECT_EQ(*ParseFingerprintAs("-1", HashEncoding::kSigned), Fingerprint{kMax});
  EXPECT_EQ(ParseFingerprintAs("9223372036854775808", HashEncoding::kSigned).status().message(),
            "hash \"9223372036854775808\" is outside the signed 64-bit range");
}

TEST(FormatFingerprintTest, ThirtyTwoDigitsAndDecimalAt128Bits) {
  const Fingerprint wide(0x0123456789ABCDEFULL, 0xFEDCBA9876543210ULL);
  EXPECT_EQ(FormatFingerprint(wide), "0x0123456789abcdeffedcba9876543210");
  EXPECT_EQ(FormatFingerprint(7, 128), "0x00000000000000000000000000000007");
  EXPECT_EQ(FormatFingerprintDecimal(Fingerprint(kMax, kMax)),
            "340282366920938463463374607431768211455");
  EXPECT_EQ(FormatFingerprintDecimal(0), "0");
  EXPECT_EQ(FormatFingerprintDecimal(kMax), "18446744073709551615");
  for (const Fingerprint fp : {wide, Fingerprint(1, 0), Fingerprint(kMax, kMax), Fingerprint{5}}) {
    EXPECT_EQ(*ParseFingerprint(FormatFingerprint(fp, 128), 128), fp);
    EXPECT_EQ(*ParseFingerprint(FormatFingerprintDecimal(fp), 128), fp);
  }
}

TEST(FindInvalidUtf8Test, AcceptsWellFormedText) {
  EXPECT_EQ(FindInvalidUtf8(""), std::nullopt);
  EXPECT_EQ(FindInvalidUtf8("plain ascii"), std::nullopt);
  EXPECT_EQ(FindInvalidUtf8("été 全角 ﬁ \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF"), std::nullopt);
  EXPECT_EQ(FindInvalidUtf8(std::string_view("nul\0inside", 10)), std::nullopt);
}

TEST(FindInvalidUtf8Test, FindsTheFirstBadByte) {
  EXPECT_EQ(FindInvalidUtf8("ab\xFF"), 2u);
  EXPECT_EQ(FindInvalidUtf8("\x80"), 0u);              // lone continuation byte
  EXPECT_EQ(FindInvalidUtf8("a\xC0\x80"), 1u);         // overlong NUL
  EXPECT_EQ(FindInvalidUtf8("a\xE0\x80\x80"), 1u);     // overlong
  EXPECT_EQ(FindInvalidUtf8("ok\xED\xA0\x80"), 2u);    // UTF-16 surrogate
  EXPECT_EQ(FindInvalidUtf8("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(FindInvalidUtf8("é\xE2\x82"), 2u);         // truncated at the end
  EXPECT_EQ(FindInvalidUtf8("\xE2\x82x"), 0u);         // truncated in the middle
}

TEST(QuoteForMessageTest, EscapesAndCutsShort) {
  EXPECT_EQ(QuoteForMessage("abc"), "\"abc\"");
  EXPECT_EQ(QuoteForMessage("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(QuoteForMessage("tab\there\r"), "\"tab\\x09here\\x0D\"");
  EXPECT_EQ(QuoteForMessage("bad\xFF"), "\"bad\\xFF\"");
  EXPECT_EQ(QuoteForMessage("été"), "\"été\"");
  EXPECT_EQ(QuoteForMessage(std::string(100, 'x'), 10), "\"xxxxxxxxxx\"... (100 bytes)");
  // A character cut by the limit is escaped, not split.
  EXPECT_EQ(QuoteForMessage("aé", 2), "\"a\\xC3\"... (3 bytes)");
}

TEST(InputFormatTest, NamesRoundTrip) {
  for (InputFormat format : {InputFormat::kJsonl, InputFormat::kTsv, InputFormat::kHash}) {
    EXPECT_EQ(*ParseInputFormat(InputFormatName(format)), format);
  }
  EXPECT_EQ(*ParseInputFormat("json"), InputFormat::kJsonl);  // the original tool's spelling
  EXPECT_EQ(ParseInputFormat("csv").status().message(),
            "unknown format \"csv\" (expected jsonl, tsv or hash)");
  EXPECT_FALSE(ParseInputFormat("JSONL").ok());
}

}  // namespace
}  // namespace fpstore::cli
