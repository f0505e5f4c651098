// Parsing and printing the values the tools read and write: fingerprints,
// ids, input formats.
//
// Parsers return a Result whose error message names the value, e.g.
// "hash \"12x\" is not a decimal or 0x-hexadecimal number"; callers add the
// place ("data.tsv:4: ", "--hash: ").
//
// Thread safety: every function here is pure and thread-safe.

#ifndef FPSTORE_TOOLS_CLI_PARSE_H_
#define FPSTORE_TOOLS_CLI_PARSE_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fpstore/document.h"
#include "fpstore/simhash.h"
#include "fpstore/status.h"

namespace fpstore::cli {

// A fingerprint in decimal ("12345") or hexadecimal with a 0x or 0X prefix
// ("0x3039", upper or lower case digits). Leading zeros are allowed. No
// sign, no spaces, no other prefix or suffix. Fails with InvalidArgument
// for an empty text, a sign, a non-digit, or a value above 2^bits - 1
// (`bits` 64 or 128).
Result<Fingerprint> ParseFingerprint(std::string_view text, int bits = 64);

// How --input's hashes are written (--hash-encoding).
enum class HashEncoding {
  kUnsigned,  // decimal or 0x-hexadecimal, as ParseFingerprint reads them
  kSigned,    // decimal from -2^(bits-1) to 2^(bits-1) - 1, two's complement (a Java long,
              // or the BigInteger of a 128-bit simhash)
  kHex,       // hexadecimal, 1 to bits/4 digits, with or without 0x
};

// "unsigned", "signed", "hex".
Result<HashEncoding> ParseHashEncoding(std::string_view name);

// A fingerprint written as `encoding` says. Fails with InvalidArgument
// naming the value, as ParseFingerprint does.
Result<Fingerprint> ParseFingerprintAs(std::string_view text, HashEncoding encoding, int bits = 64);

// A document id: a decimal integer from 0 to 2^64 - 1, digits only (no sign,
// no hex, no spaces). Fails with InvalidArgument otherwise.
Result<std::uint64_t> ParseId(std::string_view text);

// A document's time: seconds since the Unix epoch in decimal digits
// ("1765000000"), or an RFC 3339 date and time ("2025-12-06T05:46:40Z",
// "2025-12-06T06:46:40.250+01:00": an offset or Z is required, fractions of
// a second are dropped). Fails with InvalidArgument naming the value for
// anything else or a time outside 0 to kMaxDocumentTime.
Result<DocumentTime> ParseTime(std::string_view text);

// `time` in RFC 3339, in UTC: "2025-12-06T05:46:40Z".
std::string FormatTime(DocumentTime time);

// A length of time in seconds: digits and a unit, s, h or d ("90d", "36h",
// "3600s"). Fails with InvalidArgument naming the value otherwise, or for a
// length of 0 or past kMaxDocumentTime.
Result<std::int64_t> ParseDuration(std::string_view text);

// "0x" and bits/4 lower-case hex digits (32 for any value past 64 bits):
// the form every tool prints.
std::string FormatFingerprint(Fingerprint fp, int bits = 64);
// Unsigned decimal digits, as JSON output's strings and TSV hold them.
std::string FormatFingerprintDecimal(Fingerprint fp);

// A signature as `fpstore-admin dump` writes it: two lower-case hex digits
// a byte, or "-" for none (an empty signature).
std::string FormatSignature(std::string_view bytes);
// Its bytes back (empty for "-"); InvalidArgument naming the value unless it
// is "-" or 2 x B hex digits, B a size Signature::ValidSize allows.
Result<std::string> ParseSignature(std::string_view text);

// The byte offset of the first byte that does not start or continue a
// well-formed UTF-8 sequence (RFC 3629: no overlongs, no surrogates, nothing
// above U+10FFFF), or nullopt if `text` is valid UTF-8.
std::optional<std::size_t> FindInvalidUtf8(std::string_view text);

// `text` as a JSON string literal, quotes included. Bytes that are not valid
// UTF-8 (metadata is opaque bytes) become U+FFFD.
std::string JsonString(std::string_view text);

// `text` in double quotes for a message, cut to at most `max_bytes` bytes
// (then followed by "..." and the full length), with control characters
// and invalid bytes shown as \xHH.
std::string QuoteForMessage(std::string_view text, std::size_t max_bytes = 40);

// The input formats of --format.
enum class InputFormat {
  kJsonl,  // one JSON object per line: id, text, optional metadata
  kTsv,    // id<TAB>hash[<TAB>metadata]
  kHash,   // one hash per line; the id is the line number
};

// "jsonl" (also "json", the original simhash tool's spelling), "tsv", "hash".
Result<InputFormat> ParseInputFormat(std::string_view name);
std::string_view InputFormatName(InputFormat format);

}  // namespace fpstore::cli

#endif  // FPSTORE_TOOLS_CLI_PARSE_H_
