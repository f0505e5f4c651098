#include "fingerprint/tokenizer.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace fpstore::internal {
namespace {

std::vector<std::string> AsciiTokens(std::string_view text) {
  std::vector<std::string> out;
  std::string buffer;
  TokenizeAscii(text, buffer, [&](std::string_view t) { out.emplace_back(t); });
  return out;
}

std::vector<std::string> UnicodeTokens(std::string_view text) {
  std::vector<std::string> out;
  Status s = TokenizeUnicode(text, [&](std::string_view t) { out.emplace_back(t); });
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out;
}

using Tokens = std::vector<std::string>;

TEST(TokenizerTest, IsAsciiLooksAtEveryByte) {
  EXPECT_TRUE(IsAscii(""));
  EXPECT_TRUE(IsAscii("plain text, 0123456789 and more"));
  EXPECT_FALSE(IsAscii("caf\xc3\xa9"));
  std::string long_ascii(1000, 'a');
  EXPECT_TRUE(IsAscii(long_ascii));
  long_ascii[997] = '\x80';
  EXPECT_FALSE(IsAscii(long_ascii));
}

TEST(TokenizerTest, AsciiWordBoundaries) {
  EXPECT_EQ(AsciiTokens("Don't panic, e.g. U.S.A. costs $3.14 or 1,000;"),
            (Tokens{"don't", "panic", "e.g", "u.s.a", "costs", "3.14", "or", "1,000"}));
  EXPECT_EQ(AsciiTokens("foo_bar a:b a-b x@y.z _ __ #tag"),
            (Tokens{"foo_bar", "a", "b", "a", "b", "x@y.z", "tag"}));
  EXPECT_EQ(AsciiTokens("1.a a.1 a'1 1'2 a..b"),
            (Tokens{"1", "a", "a", "1", "a", "1", "1'2", "a", "b"}));
  EXPECT_EQ(AsciiTokens(""), Tokens{});
  EXPECT_EQ(AsciiTokens(" \t\r\n  .,;:!? "), Tokens{});
}

// Random texts of 1 to max_length bytes from `alphabet`, its first `common`
// characters drawn three times in four: the fast path must agree with ICU on
// every one.
void ExpectAsciiPathMatchesIcu(const std::string& alphabet, std::size_t common, unsigned seed,
                               int rounds, std::size_t max_length) {
  std::mt19937 rng(seed);
  for (int round = 0; round < rounds; ++round) {
    std::string text(1 + rng() % max_length, ' ');
    for (char& c : text) {
      const bool any = rng() % 4 == 0;
      c = alphabet[rng() % (any ? alphabet.size() : common)];
    }
    ASSERT_EQ(AsciiTokens(text), UnicodeTokens(text))
        << "seed " << seed << " text [" << text << "]";
  }
}

// The fast path must agree with ICU on every ASCII text, or fingerprints
// would depend on which path ran. The alphabet stresses the classes that
// UAX #29 treats specially.
TEST(TokenizerTest, AsciiFastPathMatchesIcu) {
  const std::string alphabet = "aZ9_.',;:@- \t\n#\"$!x0";
  ExpectAsciiPathMatchesIcu(alphabet, alphabet.size(), 7, 20000, 12);
  std::string all;
  for (int c = 1; c < 128; ++c) {
    all += static_cast<char>(c);
    all += "a" + std::string(1, static_cast<char>(c)) + "1" + std::string(1, static_cast<char>(c));
  }
  EXPECT_EQ(AsciiTokens(all), UnicodeTokens(all));
}

TEST(TokenizerTest, LowercaseRunStopsAtTheFirstOtherByte) {
  for (std::size_t length = 0; length <= 20; ++length) {
    for (std::size_t at = 0; at < length; ++at) {
      for (int byte = 0; byte < 128; ++byte) {
        std::string text(length, 'q');
        text[at] = static_cast<char>(byte);
        const bool lower = byte >= 'a' && byte <= 'z';
        ASSERT_EQ(LowercaseRun(text), lower ? length : at) << "byte " << byte << " at " << at;
      }
    }
  }
}

// Longer texts, mostly lowercase letters (which the fast path skips eight
// bytes at a time) beside the bytes just outside a-z and A-Z.
TEST(TokenizerTest, AsciiFastPathMatchesIcuOnLongRuns) {
  ExpectAsciiPathMatchesIcu("abcdefghijklmnopqrstuvwxyz`{@[AZ9_.', \x7f", 26, 11, 5000, 48);
}

TEST(TokenizerTest, UnicodeNormalisesAndFoldsCase) {
  // Fullwidth letters, the "fi" ligature, German sharp s and Greek final sigma.
  EXPECT_EQ(UnicodeTokens("ＡＢＣ ﬁle Straße ΟΔΟΣ"), (Tokens{"abc", "file", "strasse", "οδοσ"}));
  EXPECT_EQ(UnicodeTokens("Café CAFÉ cafe\xcc\x81"), (Tokens{"café", "café", "café"}));
}

TEST(TokenizerTest, ChineseJapaneseAndThaiAreSegmentedIntoWords) {
  EXPECT_EQ(UnicodeTokens("中华人民共和国成立了"),
            (Tokens{"中华", "人民", "共和国", "成立", "了"}));
  EXPECT_EQ(UnicodeTokens("日本語のテキストです"), (Tokens{"日本語", "の", "テキスト", "です"}));
  EXPECT_EQ(UnicodeTokens("ภาษาไทยง่ายนิดเดียว"), (Tokens{"ภาษา", "ไทย", "ง่าย", "นิด", "เดียว"}));
  EXPECT_EQ(UnicodeTokens("“中文”，标点。"), (Tokens{"中文", "标点"}));
}

TEST(TokenizerTest, InvalidUtf8IsAnErrorWithItsOffset) {
  const std::string cases[] = {
      std::string("ok \xff rest"),          // a byte that never starts UTF-8
      std::string("ok \xc0\xaf rest"),      // overlong '/'
      std::string("ok \xed\xa0\x80 rest"),  // a UTF-16 surrogate
      std::string("ok \xf4\x90\x80\x80"),   // above U+10FFFF
      std::string("ok \xe4\xb8"),           // truncated at the end
  };
  for (const std::string& text : cases) {
    bool emitted = false;
    Status s = TokenizeUnicode(text, [&](std::string_view) { emitted = true; });
    EXPECT_TRUE(s.IsInvalidArgument()) << text;
    EXPECT_EQ(s.message(), "invalid UTF-8 at byte offset 3") << text;
    EXPECT_FALSE(emitted);
  }
}

}  // namespace
}  // namespace fpstore::internal
