#include "fingerprint/tokenizer.h"

#include <unicode/brkiter.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/utf8.h>

#include <memory>
#include <string>

namespace fpstore::internal {

namespace {

constexpr AsciiTables MakeAsciiTables() {
  AsciiTables t{};
  for (int c = 0; c < 128; ++c) {
    const bool upper = c >= 'A' && c <= 'Z';
    const bool letter = upper || (c >= 'a' && c <= 'z');
    const bool digit = c >= '0' && c <= '9';
    t.lower[c] = static_cast<char>(upper ? c - 'A' + 'a' : c);
    AsciiWordClass cls = AsciiWordClass::kOther;
    if (letter || c == '@') cls = AsciiWordClass::kLetter;
    if (digit) cls = AsciiWordClass::kNumeric;
    if (c == '_') cls = AsciiWordClass::kExtendNumLet;
    if (c == '.' || c == '\'') cls = AsciiWordClass::kMidNumLet;
    if (c == ',' || c == ';') cls = AsciiWordClass::kMidNum;
    std::uint8_t f = static_cast<std::uint8_t>(cls);
    if (cls == AsciiWordClass::kLetter || cls == AsciiWordClass::kNumeric ||
        cls == AsciiWordClass::kExtendNumLet) {
      f |= AsciiTables::kJoins;
    }
    if (upper) f |= AsciiTables::kUpper;
    if (letter || digit) f |= AsciiTables::kAlnum;
    t.flags[c] = f;
  }
  return t;
}

// Offset of the first invalid UTF-8 sequence (overlong forms, surrogates and
// code points above U+10FFFF included), or -1 if there is none.
int64_t FirstInvalidUtf8(std::string_view text) {
  const auto* s = reinterpret_cast<const uint8_t*>(text.data());
  const auto length = static_cast<int64_t>(text.size());
  int64_t i = 0;
  while (i < length) {
    const int64_t start = i;
    UChar32 c;
    U8_NEXT(s, i, length, c);
    if (c < 0) return start;
  }
  return -1;
}

bool HasWordCharacter(const icu::UnicodeString& segment) {
  for (int32_t i = 0; i < segment.length();) {
    const UChar32 c = segment.char32At(i);
    if (u_hasBinaryProperty(c, UCHAR_ALPHABETIC) || (U_GET_GC_MASK(c) & U_GC_N_MASK)) {
      return true;
    }
    i += U16_LENGTH(c);
  }
  return false;
}

// BreakIterator is expensive to create and not thread-safe: one per thread.
icu::BreakIterator* ThreadWordBreaker(UErrorCode& status) {
  thread_local std::unique_ptr<icu::BreakIterator> breaker;
  if (!breaker) {
    breaker.reset(icu::BreakIterator::createWordInstance(icu::Locale::getRoot(), status));
    if (U_FAILURE(status)) breaker.reset();
  }
  return breaker.get();
}

}  // namespace

const AsciiTables kAsciiTables = MakeAsciiTables();

bool IsAscii(std::string_view text) {
  std::size_t i = 0;
  for (; i + 8 <= text.size(); i += 8) {
    uint64_t word;
    std::memcpy(&word, text.data() + i, 8);
    if (word & 0x8080808080808080ULL) return false;
  }
  for (; i < text.size(); ++i) {
    if (static_cast<unsigned char>(text[i]) & 0x80) return false;
  }
  return true;
}

Status TokenizeUnicode(std::string_view utf8, const std::function<void(std::string_view)>& emit) {
  if (const int64_t bad = FirstInvalidUtf8(utf8); bad >= 0) {
    return Status::InvalidArgument("invalid UTF-8 at byte offset " + std::to_string(bad));
  }
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfkc_cf = icu::Normalizer2::getNFKCCasefoldInstance(status);
  if (U_FAILURE(status)) {
    return Status::NotSupported(std::string("ICU NFKC_Casefold data: ") + u_errorName(status));
  }
  const icu::UnicodeString normalized =
      nfkc_cf->normalize(icu::UnicodeString::fromUTF8(
                             icu::StringPiece(utf8.data(), static_cast<int32_t>(utf8.size()))),
                         status);
  if (U_FAILURE(status)) {
    return Status::InvalidArgument(std::string("cannot normalise text: ") + u_errorName(status));
  }
  icu::BreakIterator* breaker = ThreadWordBreaker(status);
  if (breaker == nullptr) {
    return Status::NotSupported(std::string("ICU word break data: ") + u_errorName(status));
  }
  breaker->setText(normalized);
  std::string token;
  int32_t start = breaker->first();
  for (int32_t end = breaker->next(); end != icu::BreakIterator::DONE;
       start = end, end = breaker->next()) {
    const icu::UnicodeString segment = normalized.tempSubStringBetween(start, end);
    if (!HasWordCharacter(segment)) continue;
    token.clear();
    segment.toUTF8String(token);
    emit(token);
  }
  // The iterator keeps a pointer into `normalized`; drop it before it dies.
  breaker->setText(icu::UnicodeString());
  return Status::OK();
}

}  // namespace fpstore::internal
