// Keys and values of the documents, staging, crowded and recent families
// (docs/format.md), big-endian so that bytewise order is numeric order.

#ifndef FPSTORE_LIB_FORMAT_RECORDS_H_
#define FPSTORE_LIB_FORMAT_RECORDS_H_

#include <algorithm>
#include <array>
#include <compare>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "fpstore/document.h"
#include "fpstore/signature.h"
#include "fpstore/status.h"
#include "util/big_endian.h"

namespace fpstore::internal {

// InvalidArgument unless `doc`'s signature is empty or has `slots` slots (the store's).
inline Status CheckSignature(const NewDocument& doc, int slots) {
  if (doc.signature.empty() || doc.signature.slots() == static_cast<std::size_t>(slots)) {
    return Status::OK();
  }
  return Status::InvalidArgument("document " + std::to_string(doc.id) + " has a signature of " +
                                 std::to_string(doc.signature.slots()) +
                                 " slots; this store's fingerprint options make " +
                                 (slots == 0 ? std::string("none") : std::to_string(slots)));
}

// A documents-family value: the fingerprint (8 bytes), then its "tail": the signature's length in
// bytes (2, big-endian; 0 for none), the signature, and the metadata bytes.
inline std::string EncodeDocumentTail(std::string_view signature, std::string_view metadata) {
  std::string tail(2 + signature.size() + metadata.size(), '\0');
  tail[0] = static_cast<char>(signature.size() >> 8);
  tail[1] = static_cast<char>(signature.size() & 0xff);
  // An empty string_view may hold a null pointer, which memcpy must not get.
  if (!signature.empty()) std::memcpy(tail.data() + 2, signature.data(), signature.size());
  if (!metadata.empty()) {
    std::memcpy(tail.data() + 2 + signature.size(), metadata.data(), metadata.size());
  }
  return tail;
}

inline std::string EncodeDocumentValue(Fingerprint fingerprint, std::string_view tail) {
  std::string value(8 + tail.size(), '\0');
  PutBigEndian64(value.data(), fingerprint);
  if (!tail.empty()) std::memcpy(value.data() + 8, tail.data(), tail.size());
  return value;
}

// False if `value` is too short for its fingerprint and signature, or the signature's length is not
// one a Signature can have. `signature` and `metadata` may be null.
inline bool DecodeDocumentValue(std::string_view value, Fingerprint* fingerprint,
                                Signature* signature, std::string* metadata) {
  if (value.size() < 10) return false;
  *fingerprint = GetBigEndian64(value.data());
  const std::size_t length = (static_cast<std::size_t>(static_cast<unsigned char>(value[8])) << 8) |
                             static_cast<unsigned char>(value[9]);
  if (value.size() < 10 + length) return false;
  if (signature != nullptr) {
    Result<Signature> decoded = Signature::FromBytes(value.substr(10, length));
    if (!decoded.ok()) return false;
    *signature = *std::move(decoded);
  }
  if (metadata != nullptr) metadata->assign(value.substr(10 + length));
  return true;
}

// A staging mark: the staged version's fingerprint, and that of the version
// the next merge takes out of the tables ("leaving"); a removal stages none.
struct StagingMark {
  std::optional<Fingerprint> staged;
  std::optional<Fingerprint> leaving;
};

// 8 bytes: staged alone; 16: staged, then leaving; 9: leaving, then a zero byte.
inline std::string EncodeStagingMark(const StagingMark& mark) {
  std::string value(mark.staged && mark.leaving ? 16 : mark.staged ? 8 : 9, '\0');
  if (mark.staged) PutBigEndian64(value.data(), *mark.staged);
  if (mark.leaving) PutBigEndian64(value.data() + (mark.staged ? 8 : 0), *mark.leaving);
  return value;
}

// False if `value` is none of the above (or a mark that neither stages nor leaves).
inline bool DecodeStagingMark(std::string_view value, StagingMark* mark) {
  switch (value.size()) {
    case 8:
      *mark = {GetBigEndian64(value.data()), std::nullopt};
      return true;
    case 16:
      *mark = {GetBigEndian64(value.data()), GetBigEndian64(value.data() + 8)};
      return true;
    case 9:
      if (value[8] != '\0') return false;
      *mark = {std::nullopt, GetBigEndian64(value.data())};
      return true;
    default:
      return false;
  }
}

// A crowded-family value: bit t set if, when written, no other fingerprint had
// this one's prefix in table t (store/recent_prefixes.h). Byte i holds tables
// 8i to 8i + 7, table 8i in its lowest bit; an empty value has no bits set.
using LoneBits = std::uint32_t;
// Lone bits name only a plan's first 32 tables.
inline constexpr std::size_t kMaxLoneBitTables = 32;

inline LoneBits AllLoneBits(std::size_t tables) {
  return tables >= 32 ? ~LoneBits{0} : (LoneBits{1} << tables) - 1;
}

inline std::string EncodeLoneBits(LoneBits bits, std::size_t tables) {
  std::string value((std::min<std::size_t>(tables, 32) + 7) / 8, '\0');
  for (std::size_t i = 0; i < value.size(); ++i) value[i] = static_cast<char>(bits >> (8 * i));
  return value;
}

// Bytes beyond the fourth, which no build writes, are ignored.
inline LoneBits DecodeLoneBits(std::string_view value) {
  LoneBits bits = 0;
  for (std::size_t i = 0; i < value.size() && i < 4; ++i) {
    bits |= LoneBits{static_cast<unsigned char>(value[i])} << (8 * i);
  }
  return bits;
}

// A recent-family key: the epoch of the rewrites of the lone bits in which the fingerprint was
// merged, then the fingerprint, both big-endian (16 bytes); the value is empty. An entry counts
// only from the store's recent epoch on (kRecentEpochKey): a rewrite raises that epoch instead of
// deleting each entry it took in, and the entries it retired sort before RecentEpochStart of the
// new epoch, where compactions skip them whole (format/families.cc).
class RecentKey {
 public:
  RecentKey(std::uint64_t epoch, Fingerprint fp) {
    PutBigEndian64(bytes_, epoch);
    PutBigEndian64(bytes_ + 8, fp);
  }
  std::string_view view() const { return {bytes_, sizeof bytes_}; }

 private:
  char bytes_[16];
};

// The first key of `epoch`: every entry of an earlier one sorts before it.
inline Key8 RecentEpochStart(std::uint64_t epoch) { return Key8(epoch); }

struct RecentEntry {
  std::uint64_t epoch;
  Fingerprint fingerprint;
};

// Nothing if `key` is not 16 bytes.
inline std::optional<RecentEntry> DecodeRecentKey(std::string_view key) {
  if (key.size() != 16) return std::nullopt;
  return RecentEntry{GetBigEndian64(key.data()), GetBigEndian64(key.data() + 8)};
}

// A staged document: its staged version, and the one leaving the tables.
struct StagedDocument {
  DocumentId id;
  Fingerprint fingerprint;  // the staged version's; 0 for a removal
  std::optional<Fingerprint> leaving;
  bool removal = false;  // nothing staged: the document was removed
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FORMAT_RECORDS_H_
