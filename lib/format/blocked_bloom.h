// A blocked Bloom filter's math: all of a key's probes fall in one 512-bit
// block, one cache line. The member filters store theirs (docs/format.md), so
// it must not change; the recent prefixes, in memory only, share it.

#ifndef FPSTORE_LIB_FORMAT_BLOCKED_BLOOM_H_
#define FPSTORE_LIB_FORMAT_BLOCKED_BLOOM_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace fpstore::internal::blocked_bloom {

inline constexpr std::size_t kBlockBytes = 64;
inline constexpr int kProbes = 6;

// Blocks for `keys` at `bits_per_key`, at least one.
inline std::size_t BlocksFor(std::size_t keys, std::size_t bits_per_key) {
  return std::max<std::size_t>(1, (keys * bits_per_key + 8 * kBlockBytes - 1) / (8 * kBlockBytes));
}

// The key's block, from the hash's high half.
inline std::size_t BlockOf(std::uint64_t hash, std::size_t blocks) {
  return static_cast<std::size_t>(((hash >> 32) * blocks) >> 32);
}

// Calls probe(bit) for the key's bits in its block, 0 to 511, until it
// returns false; false if it did. The bits are 9-bit slices of the hash times
// an odd constant, cheaper than a second finalizer.
template <typename Probe>
bool ForEachProbe(std::uint64_t hash, Probe&& probe) {
  const std::uint64_t slices = (hash * 0x9e3779b97f4a7c15ULL) >> 10;
  for (int i = 0; i < kProbes; ++i) {
    if (!probe(static_cast<unsigned>((slices >> (9 * i)) & 511))) return false;
  }
  return true;
}

}  // namespace fpstore::internal::blocked_bloom

#endif  // FPSTORE_LIB_FORMAT_BLOCKED_BLOOM_H_
