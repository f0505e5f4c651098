// Splits UTF-8 text into the normalised tokens fingerprints are made of.
//
// Fingerprint version 1: normalise with NFKC_Casefold, cut at word boundaries
// as ICU's root-locale word BreakIterator finds them (UAX #29 plus ICU's
// dictionaries for scripts written without spaces), and keep each segment
// with at least one alphabetic or numeric character.
//
// Pure-ASCII text takes a fast path with exactly those boundaries, without
// ICU; a differential test holds the two paths to the same answer.

#ifndef FPSTORE_LIB_FINGERPRINT_TOKENIZER_H_
#define FPSTORE_LIB_FINGERPRINT_TOKENIZER_H_

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>

#include "fpstore/status.h"

namespace fpstore::internal {

bool IsAscii(std::string_view text);

// The ICU path: calls `emit` with each token, in order. Invalid UTF-8 is
// InvalidArgument naming its byte offset, before anything is emitted.
Status TokenizeUnicode(std::string_view utf8, const std::function<void(std::string_view)>& emit);

// Word-break classes of ASCII bytes as ICU 72 assigns them. ':' is not a
// MidLetter in ICU's rules, and '@' is an ALetter there.
enum class AsciiWordClass : std::uint8_t {
  kOther,
  kLetter,        // A-Z a-z @
  kNumeric,       // 0-9
  kExtendNumLet,  // _
  kMidNumLet,     // . '   (join letter-letter and digit-digit)
  kMidNum,        // , ;   (join digit-digit only)
};

// Per ASCII byte: its class in the low bits, and flags.
struct AsciiTables {
  static constexpr std::uint8_t kClassMask = 0x07;
  static constexpr std::uint8_t kJoins = 0x08;  // Letter, Numeric or ExtendNumLet
  static constexpr std::uint8_t kUpper = 0x10;  // A-Z
  static constexpr std::uint8_t kAlnum = 0x20;  // A-Z a-z 0-9 (not '@' or '_')
  std::array<std::uint8_t, 128> flags;
  std::array<char, 128> lower;
};
extern const AsciiTables kAsciiTables;

// The number of lowercase letters a-z that `text` starts with, counted eight
// bytes at a time. REQUIRES: IsAscii(text).
inline std::size_t LowercaseRun(std::string_view text) {
  constexpr std::uint64_t kHigh = 0x8080808080808080ULL;
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  std::size_t i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    std::uint64_t word;
    std::memcpy(&word, text.data() + i, 8);
    if constexpr (std::endian::native == std::endian::big) word = __builtin_bswap64(word);
    // Bytes are below 0x80, so no sum carries into the next byte: the high
    // bit of a byte of `at_least_a` is set iff the byte is >= 'a', of
    // `past_z` iff it is > 'z'.
    const std::uint64_t at_least_a = word + (0x80 - 'a') * kOnes;
    const std::uint64_t past_z = word + (0x80 - 'z' - 1) * kOnes;
    const std::uint64_t other = ~(at_least_a & ~past_z) & kHigh;
    if (other != 0) return i + static_cast<std::size_t>(std::countr_zero(other)) / 8;
  }
  while (i < text.size() && text[i] >= 'a' && text[i] <= 'z') ++i;
  return i;
}

// The ASCII fast path. REQUIRES: IsAscii(text). `emit` sees each token as a
// view into `text` when it is already lowercase, else into `buffer`, which
// holds its lowercased copy.
template <typename Emit>
void TokenizeAscii(std::string_view text, std::string& buffer, Emit&& emit) {
  const AsciiTables& t = kAsciiTables;
  const std::size_t n = text.size();
  const auto flags = [&](std::size_t i) { return t.flags[static_cast<unsigned char>(text[i])]; };
  const auto cls = [](std::uint8_t f) {
    return static_cast<AsciiWordClass>(f & AsciiTables::kClassMask);
  };
  std::size_t i = 0;
  while (i < n) {
    std::uint8_t f = flags(i);
    if ((f & t.kJoins) == 0) {
      ++i;
      continue;
    }
    const std::size_t start = i;
    std::uint8_t seen = 0;  // the flags of the token's bytes, or-ed
    for (;;) {
      // Most of a token is lowercase letters: skip them a word at a time.
      const std::size_t run = LowercaseRun(std::string_view(text.data() + i, n - i));
      if (run > 0) {
        seen |= t.kAlnum;
        i += run;
        if (i == n) break;
        f = flags(i);
      }
      if (f & t.kJoins) {  // WB5, WB8-WB10, WB13a/b
        seen |= f;
        ++i;
        if (i == n) break;
        f = flags(i);
        continue;
      }
      const AsciiWordClass c = cls(f);
      if (i + 1 < n && (c == AsciiWordClass::kMidNumLet || c == AsciiWordClass::kMidNum)) {
        const AsciiWordClass prev = cls(flags(i - 1));
        const std::uint8_t next_flags = flags(i + 1);
        const AsciiWordClass next = cls(next_flags);
        const bool letters = c == AsciiWordClass::kMidNumLet && prev == AsciiWordClass::kLetter &&
                             next == AsciiWordClass::kLetter;
        const bool digits = prev == AsciiWordClass::kNumeric && next == AsciiWordClass::kNumeric;
        if (letters || digits) {  // WB6/WB7, WB11/WB12
          seen |= next_flags;
          i += 2;
          if (i == n) break;
          f = flags(i);
          continue;
        }
      }
      break;
    }
    if ((seen & t.kAlnum) == 0) continue;
    const std::string_view token(text.data() + start, i - start);
    if ((seen & t.kUpper) == 0) {
      emit(token);
      continue;
    }
    buffer.resize(token.size());
    for (std::size_t j = 0; j < token.size(); ++j) {
      buffer[j] = t.lower[static_cast<unsigned char>(token[j])];
    }
    emit(std::string_view(buffer));
  }
}

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FINGERPRINT_TOKENIZER_H_
