// Big-endian integers, the store's only kind: bytewise order is numeric order.

#ifndef FPSTORE_LIB_UTIL_BIG_ENDIAN_H_
#define FPSTORE_LIB_UTIL_BIG_ENDIAN_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

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

// The low `bytes` bytes of v, big-endian.
inline void PutBigEndianBytes(char* out, std::uint64_t v, std::size_t bytes) {
  for (std::size_t i = bytes; i-- > 0; v >>= 8) out[i] = static_cast<char>(v & 0xff);
}

inline std::uint64_t GetBigEndianBytes(const char* in, std::size_t bytes) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < bytes; ++i) v = (v << 8) | static_cast<unsigned char>(in[i]);
  return v;
}

// `v` as an 8-byte key: an id, or a fingerprint as table 0 permutes it.
// view() converts to rocksdb::Slice.
class Key8 {
 public:
  explicit Key8(std::uint64_t v) { PutBigEndian64(bytes_, v); }
  std::string_view view() const { return {bytes_, sizeof bytes_}; }

 private:
  char bytes_[8];
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_UTIL_BIG_ENDIAN_H_
