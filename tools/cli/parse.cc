#include "cli/parse.h"

#include <cstdio>

namespace fpstore::cli {
namespace {

// The value of digit `c` in `base` (10 or 16), or -1.
int DigitValue(char c, int base) {
  if (c >= '0' && c <= '9') return c - '0';
  if (base == 16) {
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  }
  return -1;
}

// The value of `digits` in `base`, or why not. `noun` and `original` name
// the whole token in messages ("hash \"0x12g\""). One pass over the digits:
// a bulk load parses two numbers a line, and checking the digits before
// std::from_chars read them again took a third of reading a 10M tsv.
Result<std::uint64_t> ParseDigits(std::string_view noun, std::string_view original,
                                  std::string_view digits, int base) {
  if (digits.empty()) {
    return Status::InvalidArgument(std::string(noun) + " " + QuoteForMessage(original) +
                                   " is not a number");
  }
  std::uint64_t value = 0;
  bool overflow = false;
  for (char c : digits) {
    const int d = DigitValue(c, base);
    if (d < 0) {
      return Status::InvalidArgument(std::string(noun) + " " + QuoteForMessage(original) +
                                     (base == 16 ? " is not a hexadecimal number"
                                      : noun == "id"
                                          ? " is not a non-negative decimal integer"
                                          : " is not a decimal or 0x-hexadecimal number"));
    }
    overflow = overflow || __builtin_mul_overflow(value, static_cast<std::uint64_t>(base), &value) ||
               __builtin_add_overflow(value, static_cast<std::uint64_t>(d), &value);
  }
  if (overflow) {
    return Status::InvalidArgument(std::string(noun) + " " + QuoteForMessage(original) +
                                   " does not fit in 64 bits");
  }
  return value;
}

// `plural` names the kind in "hashes are unsigned 64-bit integers".
Status RejectEmptyOrSigned(std::string_view noun, std::string_view plural, std::string_view text) {
  if (text.empty()) return Status::InvalidArgument("empty " + std::string(noun));
  if (text[0] == '-' || text[0] == '+') {
    return Status::InvalidArgument(std::string(noun) + " " + QuoteForMessage(text) +
                                   " has a sign; " + std::string(plural) +
                                   " are unsigned 64-bit integers");
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

Result<Fingerprint> ParseFingerprint(std::string_view text) {
  if (Status s = RejectEmptyOrSigned("hash", "hashes", text); !s.ok()) return s;
  if (text.size() >= 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    if (text.size() == 2) {
      return Status::InvalidArgument("hash " + QuoteForMessage(text) + " has no digits after 0x");
    }
    return ParseDigits("hash", text, text.substr(2), 16);
  }
  return ParseDigits("hash", text, text, 10);
}

Result<std::uint64_t> ParseId(std::string_view text) {
  if (Status s = RejectEmptyOrSigned("id", "ids", text); !s.ok()) return s;
  return ParseDigits("id", text, text, 10);
}

std::string FormatFingerprint(Fingerprint fp) {
  char buffer[19];
  std::snprintf(buffer, sizeof(buffer), "0x%016llx", static_cast<unsigned long long>(fp));
  return buffer;
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
