// Keys and values of the documents and staging families (docs/format.md),
// big-endian so that bytewise order is numeric order.

#ifndef FPSTORE_LIB_FORMAT_RECORDS_H_
#define FPSTORE_LIB_FORMAT_RECORDS_H_

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

// A staged document: its staged version, and the one leaving the tables.
struct StagedDocument {
  DocumentId id;
  Fingerprint fingerprint;  // the staged version's; 0 for a removal
  std::optional<Fingerprint> leaving;
  bool removal = false;  // nothing staged: the document was removed
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FORMAT_RECORDS_H_
