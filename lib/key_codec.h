// Byte layouts of the store's keys and values (docs/format.md). Integers are
// big-endian so that RocksDB's bytewise order is numeric order.

#ifndef FPSTORE_LIB_KEY_CODEC_H_
#define FPSTORE_LIB_KEY_CODEC_H_

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "fpstore/document.h"

namespace fpstore::internal {

inline void PutBigEndian64(char* out, std::uint64_t v) {
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
}

inline std::uint64_t GetBigEndian64(const char* in) {
  std::uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

// A table entry: the permuted fingerprint, then the document id.
constexpr std::size_t kTableKeySize = 16;
using TableKey = std::array<char, kTableKeySize>;

inline TableKey EncodeTableKey(Fingerprint permuted, DocumentId id) {
  TableKey key;
  PutBigEndian64(key.data(), permuted);
  PutBigEndian64(key.data() + 8, id);
  return key;
}

struct TableEntry {
  Fingerprint permuted;
  DocumentId id;
};

// REQUIRES: key.size() == kTableKeySize
inline TableEntry DecodeTableKey(std::string_view key) {
  return {GetBigEndian64(key.data()), GetBigEndian64(key.data() + 8)};
}

// A documents-family key: the id.
using DocumentKey = std::array<char, 8>;

inline DocumentKey EncodeDocumentKey(DocumentId id) {
  DocumentKey key;
  PutBigEndian64(key.data(), id);
  return key;
}

// A documents-family value: the fingerprint, then the metadata bytes.
inline std::string EncodeDocumentValue(Fingerprint fingerprint, std::string_view metadata) {
  std::string value(8 + metadata.size(), '\0');
  PutBigEndian64(value.data(), fingerprint);
  // An empty string_view may hold a null pointer, which memcpy must not get.
  if (!metadata.empty()) std::memcpy(value.data() + 8, metadata.data(), metadata.size());
  return value;
}

// False if `value` is too short to hold a fingerprint.
inline bool DecodeDocumentValue(std::string_view value, Fingerprint* fingerprint,
                                std::string* metadata) {
  if (value.size() < 8) return false;
  *fingerprint = GetBigEndian64(value.data());
  if (metadata != nullptr) metadata->assign(value.substr(8));
  return true;
}

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_KEY_CODEC_H_
