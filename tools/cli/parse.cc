#include "cli/parse.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <string>

#include "fpstore/signature.h"

namespace fpstore::cli {
namespace {

// Each byte's value as a digit, up to base 16; kNotDigit for the rest.
constexpr std::uint8_t kNotDigit = 0xFF;
constexpr std::array<std::uint8_t, 256> kDigitValues = [] {
  std::array<std::uint8_t, 256> values{};
  values.fill(kNotDigit);
  for (int c = '0'; c <= '9'; ++c) values[c] = static_cast<std::uint8_t>(c - '0');
  for (int c = 'a'; c <= 'f'; ++c) values[c] = static_cast<std::uint8_t>(c - 'a' + 10);
  for (int c = 'A'; c <= 'F'; ++c) values[c] = static_cast<std::uint8_t>(c - 'A' + 10);
  return values;
}();

__extension__ using Uint128 = unsigned __int128;

Fingerprint FromUint128(Uint128 v) {
  return Fingerprint(static_cast<std::uint64_t>(v >> 64), static_cast<std::uint64_t>(v));
}

// The value of `digits` in `base` (10 or 16), up to 2^bits - 1 (`bits` 64
// or 128), or why not. `noun` and `original` name the whole token in
// messages ("hash \"0x12g\""). A bulk load parses two numbers a line: one
// pass, a table instead of branches on the digit's kind (mispredicted on
// random hex digits), and only digits past the 16th hexadecimal or 19th
// decimal one (every such number fits 64 bits) checked for overflow, in
// 128-bit arithmetic. Parsing took half of reading a 10M tsv when it
// branched.
template <unsigned base>
Result<Fingerprint> ParseDigits(std::string_view noun, std::string_view original,
                                std::string_view digits, int bits = 64) {
  static_assert(base == 10 || base == 16);
  if (digits.empty()) {
    return Status::InvalidArgument(std::string(noun) + " " + QuoteForMessage(original) +
                                   " is not a number");
  }
  // Leading zeros take no room in the value.
  std::size_t first = 0;
  while (first + 1 < digits.size() && digits[first] == '0') ++first;
  const std::size_t count = digits.size() - first;
  const std::size_t unchecked = std::min<std::size_t>(count, base == 16 ? 16 : 19);
  std::uint64_t value = 0;
  bool bad = false;  // a byte that is no digit of the base
  for (std::size_t i = first; i < first + unchecked; ++i) {
    const unsigned d = kDigitValues[static_cast<unsigned char>(digits[i])];
    bad |= d >= base;
    value = value * base + d;
  }
  Uint128 wide = value;
  bool overflow = false;
  if (unchecked < count) {
    const Uint128 limit = bits == 128 ? ~Uint128{0} : Uint128{~std::uint64_t{0}};
    for (std::size_t i = first + unchecked; i < digits.size(); ++i) {
      const unsigned d = kDigitValues[static_cast<unsigned char>(digits[i])];
      bad |= d >= base;
      overflow = overflow || d >= base || wide > (limit - d) / base;
      if (!overflow) wide = wide * base + d;
    }
  }
  if (bad) {
    return Status::InvalidArgument(std::string(noun) + " " + QuoteForMessage(original) +
                                   (base == 16     ? " is not a hexadecimal number"
                                    : noun == "id" ? " is not a non-negative decimal integer"
                                                   : " is not a decimal or 0x-hexadecimal number"));
  }
  if (overflow) {
    return Status::InvalidArgument(std::string(noun) + " " + QuoteForMessage(original) +
                                   " does not fit in " + std::to_string(bits) + " bits");
  }
  return FromUint128(wide);
}

// `plural` names the kind in "hashes are unsigned 64-bit integers".
Status RejectEmptyOrSigned(std::string_view noun, std::string_view plural, std::string_view text,
                           int bits = 64) {
  if (text.empty()) return Status::InvalidArgument("empty " + std::string(noun));
  if (text[0] == '-' || text[0] == '+') {
    return Status::InvalidArgument(std::string(noun) + " " + QuoteForMessage(text) +
                                   " has a sign; " + std::string(plural) + " are unsigned " +
                                   std::to_string(bits) + "-bit integers");
  }
  return Status::OK();
}

// The length of the well-formed UTF-8 sequence at s[i], or 0 if there is
// none (RFC 3629 table: no overlongs, no surrogates, nothing above U+10FFFF).
std::size_t Utf8SequenceLength(const unsigned char* s, std::size_t n, std::size_t i) {
  const unsigned char c = s[i];
  if (c < 0x80) return 1;
  std::size_t length;
  unsigned char lo = 0x80;  // the range of the second byte
  unsigned char hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    length = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    length = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    length = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (n - i < length || s[i + 1] < lo || s[i + 1] > hi) return 0;
  for (std::size_t k = 2; k < length; ++k) {
    if (s[i + k] < 0x80 || s[i + k] > 0xBF) return 0;
  }
  return length;
}

void AppendHexEscape(std::string& out, unsigned char c) {
  char hex[5];
  std::snprintf(hex, sizeof(hex), "\\x%02X", c);
  out += hex;
}

}  // namespace

Result<Fingerprint> ParseFingerprint(std::string_view text, int bits) {
  if (Status s = RejectEmptyOrSigned("hash", "hashes", text, bits); !s.ok()) return s;
  if (text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    if (text.size() == 2) {
      return Status::InvalidArgument("hash " + QuoteForMessage(text) + " has no digits after 0x");
    }
    return ParseDigits<16>("hash", text, text.substr(2), bits);
  }
  return ParseDigits<10>("hash", text, text, bits);
}

Result<HashEncoding> ParseHashEncoding(std::string_view name) {
  if (name == "unsigned") return HashEncoding::kUnsigned;
  if (name == "signed") return HashEncoding::kSigned;
  if (name == "hex") return HashEncoding::kHex;
  return Status::InvalidArgument("unknown hash encoding " + QuoteForMessage(name) +
                                 " (expected unsigned, signed or hex)");
}

Result<Fingerprint> ParseFingerprintAs(std::string_view text, HashEncoding encoding, int bits) {
  switch (encoding) {
    case HashEncoding::kUnsigned:
      return ParseFingerprint(text, bits);
    case HashEncoding::kHex: {
      std::string_view digits = text;
      if (digits.size() >= 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) {
        digits.remove_prefix(2);
      }
      if (digits.empty())
        return Status::InvalidArgument("hash " + QuoteForMessage(text) +
                                       " has no hexadecimal digits");
      return ParseDigits<16>("hash", text, digits, bits);
    }
    case HashEncoding::kSigned: {
      const bool negative = !text.empty() && text[0] == '-';
      const std::string_view digits = negative ? text.substr(1) : text;
      if (Status s = RejectEmptyOrSigned("hash", "signed hashes", digits); !s.ok()) {
        return Status::InvalidArgument("hash " + QuoteForMessage(text) +
                                       " is not a signed decimal number");
      }
      Result<Fingerprint> magnitude = ParseDigits<10>("hash", text, digits, bits);
      if (!magnitude.ok()) return magnitude.status();
      // |the least value|, 2^(bits - 1): a Java long's, or a 128-bit BigInteger's.
      const Fingerprint limit = Fingerprint{1} << (bits - 1);
      if (*magnitude > limit || (!negative && *magnitude == limit)) {
        return Status::InvalidArgument("hash " + QuoteForMessage(text) + " is outside the signed " +
                                       std::to_string(bits) + "-bit range");
      }
      if (!negative) return *magnitude;
      // Two's complement within `bits`.
      const Uint128 value = -((Uint128{magnitude->high()} << 64) | magnitude->low());
      const Fingerprint within = FromUint128(value);
      return bits == 128 ? within : Fingerprint(within.low());
    }
  }
  return Status::InvalidArgument("unknown hash encoding");
}

Result<std::uint64_t> ParseId(std::string_view text) {
  if (Status s = RejectEmptyOrSigned("id", "ids", text); !s.ok()) return s;
  Result<Fingerprint> id = ParseDigits<10>("id", text, text);
  if (!id.ok()) return id.status();
  return id->low();
}

namespace {

// The number of `digits` at `text`'s front, or nullopt if they are not all digits.
std::optional<int> DigitsAt(std::string_view text, std::size_t at, std::size_t digits) {
  if (at + digits > text.size()) return std::nullopt;
  int value = 0;
  for (std::size_t i = at; i < at + digits; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

Status BadTime(std::string_view text) {
  return Status::InvalidArgument(
      "time " + QuoteForMessage(text) +
      " is neither seconds since the Unix epoch nor an RFC 3339 time such as "
      "2025-12-06T05:46:40Z");
}

// An RFC 3339 date-time's seconds since the epoch, or nullopt if `text` is not one.
std::optional<std::int64_t> Rfc3339Seconds(std::string_view text) {
  namespace chrono = std::chrono;
  const std::optional<int> year = DigitsAt(text, 0, 4), month = DigitsAt(text, 5, 2),
                           day = DigitsAt(text, 8, 2), hour = DigitsAt(text, 11, 2),
                           minute = DigitsAt(text, 14, 2), second = DigitsAt(text, 17, 2);
  if (!year || !month || !day || !hour || !minute || !second || text[4] != '-' || text[7] != '-' ||
      (text[10] != 'T' && text[10] != 't' && text[10] != ' ') || text[13] != ':' ||
      text[16] != ':') {
    return std::nullopt;
  }
  const chrono::year_month_day date{chrono::year(*year),
                                    chrono::month(static_cast<unsigned>(*month)),
                                    chrono::day(static_cast<unsigned>(*day))};
  // 60: a leap second, which the epoch's count folds into the next one.
  if (!date.ok() || *hour > 23 || *minute > 59 || *second > 60) return std::nullopt;
  std::size_t at = 19;
  if (at < text.size() && text[at] == '.') {
    const std::size_t end = text.find_first_not_of("0123456789", at + 1);
    if (end == at + 1) return std::nullopt;
    at = end == std::string_view::npos ? text.size() : end;
  }
  std::int64_t offset = 0;  // of the local time from UTC, in seconds
  const std::string_view zone = text.substr(at);
  if (zone == "Z" || zone == "z") {
    offset = 0;
  } else if (zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && zone[3] == ':') {
    const std::optional<int> hours = DigitsAt(zone, 1, 2), minutes = DigitsAt(zone, 4, 2);
    if (!hours || !minutes || *hours > 23 || *minutes > 59) return std::nullopt;
    offset = (zone[0] == '-' ? -1 : 1) * (*hours * 3600 + *minutes * 60);
  } else {
    return std::nullopt;
  }
  const std::int64_t days = chrono::sys_days(date).time_since_epoch().count();
  return days * 86400 + *hour * 3600 + *minute * 60 + *second - offset;
}

}  // namespace

Result<DocumentTime> ParseTime(std::string_view text) {
  std::int64_t seconds = 0;
  if (!text.empty() && text.find_first_not_of("0123456789") == std::string_view::npos) {
    // Digits: seconds; past the range, the rest need not be read.
    for (char c : text) {
      seconds = seconds * 10 + (c - '0');
      if (seconds > kMaxDocumentTime) break;
    }
  } else if (const std::optional<std::int64_t> parsed = Rfc3339Seconds(text)) {
    seconds = *parsed;
  } else {
    return BadTime(text);
  }
  if (seconds < 0 || seconds > kMaxDocumentTime) {
    return Status::InvalidArgument("time " + QuoteForMessage(text) +
                                   " is out of range: from 1970-01-01T00:00:00Z (0) to "
                                   "9999-12-31T23:59:59Z (" +
                                   std::to_string(kMaxDocumentTime) + ")");
  }
  return seconds;
}

std::string FormatTime(DocumentTime time) {
  namespace chrono = std::chrono;
  const chrono::sys_days day{chrono::days(time >= 0 ? time / 86400 : (time - 86399) / 86400)};
  const std::int64_t second = time - day.time_since_epoch().count() * std::int64_t{86400};
  const chrono::year_month_day date(day);
  char text[32];
  std::snprintf(text, sizeof text, "%04d-%02u-%02uT%02d:%02d:%02dZ", static_cast<int>(date.year()),
                static_cast<unsigned>(date.month()), static_cast<unsigned>(date.day()),
                static_cast<int>(second / 3600), static_cast<int>(second / 60 % 60),
                static_cast<int>(second % 60));
  return text;
}

Result<std::int64_t> ParseDuration(std::string_view text) {
  const auto bad = [&] {
    return Status::InvalidArgument("length of time " + QuoteForMessage(text) +
                                   " is not a number and a unit, s, h or d, such as 90d");
  };
  if (text.size() < 2) return bad();
  const char unit = text.back();
  const std::int64_t scale = unit == 's' ? 1 : unit == 'h' ? 3600 : unit == 'd' ? 86400 : 0;
  const std::string_view digits = text.substr(0, text.size() - 1);
  if (scale == 0 || digits.find_first_not_of("0123456789") != std::string_view::npos) {
    return bad();
  }
  std::int64_t count = 0;
  for (char c : digits) {
    count = count * 10 + (c - '0');
    if (count * scale > kMaxDocumentTime) {
      return Status::InvalidArgument("length of time " + QuoteForMessage(text) +
                                     " is longer than 9999 years");
    }
  }
  if (count == 0)
    return Status::InvalidArgument("length of time " + QuoteForMessage(text) + " is 0");
  return count * scale;
}

std::string FormatFingerprint(Fingerprint fp, int bits) {
  char buffer[35];
  if (bits == 64 && fp.fits_64()) {
    std::snprintf(buffer, sizeof(buffer), "0x%016llx", static_cast<unsigned long long>(fp.low()));
  } else {
    std::snprintf(buffer, sizeof(buffer), "0x%016llx%016llx",
                  static_cast<unsigned long long>(fp.high()),
                  static_cast<unsigned long long>(fp.low()));
  }
  return buffer;
}

std::string FormatFingerprintDecimal(Fingerprint fp) {
  Uint128 v = (Uint128{fp.high()} << 64) | fp.low();
  char digits[40];
  std::size_t n = 0;
  do {
    digits[n++] = static_cast<char>('0' + static_cast<int>(v % 10));
    v /= 10;
  } while (v != 0);
  return std::string(std::reverse_iterator(digits + n), std::reverse_iterator(digits));
}

std::string FormatSignature(std::string_view bytes) {
  if (bytes.empty()) return "-";
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * bytes.size());
  for (const unsigned char b : bytes) {
    hex += kDigits[b >> 4];
    hex += kDigits[b & 15];
  }
  return hex;
}

Result<std::string> ParseSignature(std::string_view text) {
  if (text == "-") return std::string();
  const auto nibble = [](char c) { return kDigitValues[static_cast<unsigned char>(c)]; };
  const std::size_t size = text.size() / 2;
  if (text.size() % 2 != 0 || !Signature::ValidSize(size)) {
    return Status::InvalidArgument(
        "signature " + QuoteForMessage(text) + " is not \"-\" or " + "a power of two from " +
        std::to_string(Signature::kMinBytes) + " to " + std::to_string(Signature::kMaxBytes) +
        " bytes in hex (" + std::to_string(text.size()) + " characters)");
  }
  std::string bytes(size, '\0');
  for (std::size_t i = 0; i < size; ++i) {
    const unsigned high = nibble(text[2 * i]), low = nibble(text[2 * i + 1]);
    if (high == kNotDigit || low == kNotDigit) {
      return Status::InvalidArgument("signature " + QuoteForMessage(text) +
                                     " holds a character that is not a hex digit");
    }
    bytes[i] = static_cast<char>(high << 4 | low);
  }
  return bytes;
}

std::optional<std::size_t> FindInvalidUtf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = Utf8SequenceLength(s, text.size(), i);
    if (length == 0) return i;
    i += length;
  }
  return std::nullopt;
}

std::string JsonString(std::string_view text) {
  std::string out = "\"";
  while (!text.empty()) {
    const std::optional<std::size_t> bad = FindInvalidUtf8(text);
    const std::string_view valid = text.substr(0, bad.value_or(text.size()));
    for (const char c : valid) {
      const auto byte = static_cast<unsigned char>(c);
      switch (c) {
        case '"':
          out += "\\\"";
          break;
        case '\\':
          out += "\\\\";
          break;
        case '\n':
          out += "\\n";
          break;
        case '\r':
          out += "\\r";
          break;
        case '\t':
          out += "\\t";
          break;
        default:
          if (byte < 0x20) {
            char escape[8];
            std::snprintf(escape, sizeof(escape), "\\u%04x", byte);
            out += escape;
          } else {
            out += c;
          }
      }
    }
    if (!bad) break;
    out += "\\ufffd";
    text.remove_prefix(*bad + 1);
  }
  return out + "\"";
}

std::string QuoteForMessage(std::string_view text, std::size_t max_bytes) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t shown = text.size() <= max_bytes ? text.size() : max_bytes;
  std::string out = "\"";
  for (std::size_t i = 0; i < shown;) {
    const unsigned char c = s[i];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      AppendHexEscape(out, c);
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if (const std::size_t length = Utf8SequenceLength(s, shown, i); length > 0) {
      out.append(text.substr(i, length));
      i += length;
    } else {
      AppendHexEscape(out, c);
      ++i;
    }
  }
  out += '"';
  if (shown < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

Result<InputFormat> ParseInputFormat(std::string_view name) {
  if (name == "jsonl" || name == "json") return InputFormat::kJsonl;
  if (name == "tsv") return InputFormat::kTsv;
  if (name == "hash") return InputFormat::kHash;
  return Status::InvalidArgument("unknown format " + QuoteForMessage(name) +
                                 " (expected jsonl, tsv or hash)");
}

std::string_view InputFormatName(InputFormat format) {
  switch (format) {
    case InputFormat::kJsonl:
      return "jsonl";
    case InputFormat::kTsv:
      return "tsv";
    case InputFormat::kHash:
      return "hash";
  }
  return "?";
}

}  // namespace fpstore::cli
