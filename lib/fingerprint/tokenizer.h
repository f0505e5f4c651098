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

struct AsciiTables {
  std::array<AsciiWordClass, 128> word_class;
  std::array<char, 128> lower;
  std::array<bool, 128> alnum;
};
extern const AsciiTables kAsciiTables;

// The ASCII fast path. REQUIRES: IsAscii(text). `buffer` holds each token
// while `emit` sees it.
template <typename Emit>
void TokenizeAscii(std::string_view text, std::string& buffer, Emit&& emit) {
  const auto& t = kAsciiTables;
  const std::size_t n = text.size();
  const auto cls = [&](std::size_t i) { return t.word_class[static_cast<unsigned char>(text[i])]; };
  auto joins_word = [](AsciiWordClass c) {
    return c == AsciiWordClass::kLetter || c == AsciiWordClass::kNumeric ||
           c == AsciiWordClass::kExtendNumLet;
  };
  std::size_t i = 0;
  while (i < n) {
    if (!joins_word(cls(i))) {
      ++i;
      continue;
    }
    const std::size_t start = i;
    AsciiWordClass prev = cls(i++);
    while (i < n) {
      const AsciiWordClass c = cls(i);
      if (joins_word(c)) {  // WB5, WB8-WB10, WB13a/b
        prev = c;
        ++i;
        continue;
      }
      if (i + 1 < n && (c == AsciiWordClass::kMidNumLet || c == AsciiWordClass::kMidNum)) {
        const AsciiWordClass next = cls(i + 1);
        const bool letters = c == AsciiWordClass::kMidNumLet && prev == AsciiWordClass::kLetter &&
                             next == AsciiWordClass::kLetter;
        const bool digits = prev == AsciiWordClass::kNumeric && next == AsciiWordClass::kNumeric;
        if (letters || digits) {  // WB6/WB7, WB11/WB12
          prev = next;
          i += 2;
          continue;
        }
      }
      break;
    }
    buffer.resize(i - start);
    bool has_alnum = false;
    for (std::size_t j = start; j < i; ++j) {
      const auto byte = static_cast<unsigned char>(text[j]);
      buffer[j - start] = t.lower[byte];
      has_alnum |= t.alnum[byte];
    }
    if (has_alnum) emit(std::string_view(buffer));
  }
}

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FINGERPRINT_TOKENIZER_H_
