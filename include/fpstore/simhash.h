// Simhash fingerprints: the core of Charikar's estimator and the Hamming
// distance that compares two fingerprints.
//
// A fingerprint summarises a document's weighted features. Each feature hash
// votes on every bit: +weight where the hash has a 1, -weight where it has a
// 0; bit i of the fingerprint is 1 exactly where the total for bit i is
// strictly positive (ties give 0). Similar documents get fingerprints a few
// bits apart; fpstore calls two fingerprints near-duplicates when their
// Hamming distance is at most k (3 for 64 bits, as in Manku et al., WWW'07).
//
// Turning text into features lives in fingerprinter.h; this header is the
// pure arithmetic, usable with any width from 1 to 128 bits so that small
// worked examples can be checked by hand.
//
// Thread safety: every function here is pure and thread-safe.

#ifndef FPSTORE_SIMHASH_H_
#define FPSTORE_SIMHASH_H_

#include <bit>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <span>

#include "fpstore/export.h"

namespace fpstore {

// A simhash fingerprint of 64 or 128 bits: an unsigned 128-bit value, whose
// high half is 0 for a 64-bit fingerprint. Bit 0 is the least significant,
// bit 127 the most. A std::uint64_t converts to it implicitly, so a 64-bit
// fingerprint is written as the integer it is. A store holds fingerprints
// of one width (StoreOptions::bits); a 64-bit store refuses a fingerprint
// with high bits set.
class FPSTORE_EXPORT Fingerprint {
 public:
  constexpr Fingerprint() = default;
  constexpr Fingerprint(std::uint64_t low) : low_(low) {}  // NOLINT: a 64-bit value
  constexpr Fingerprint(std::uint64_t high, std::uint64_t low) : high_(high), low_(low) {}

  constexpr std::uint64_t high() const { return high_; }
  constexpr std::uint64_t low() const { return low_; }
  // True when the value fits 64 bits (high() is 0).
  constexpr bool fits_64() const { return high_ == 0; }

  friend constexpr Fingerprint operator~(Fingerprint a) { return {~a.high_, ~a.low_}; }
  friend constexpr Fingerprint operator&(Fingerprint a, Fingerprint b) {
    return {a.high_ & b.high_, a.low_ & b.low_};
  }
  friend constexpr Fingerprint operator|(Fingerprint a, Fingerprint b) {
    return {a.high_ | b.high_, a.low_ | b.low_};
  }
  friend constexpr Fingerprint operator^(Fingerprint a, Fingerprint b) {
    return {a.high_ ^ b.high_, a.low_ ^ b.low_};
  }
  Fingerprint& operator&=(Fingerprint b) { return *this = *this & b; }
  Fingerprint& operator|=(Fingerprint b) { return *this = *this | b; }
  Fingerprint& operator^=(Fingerprint b) { return *this = *this ^ b; }
  // Shifts within 128 bits; a shift of 128 or more gives 0.
  // REQUIRES: n >= 0
  friend constexpr Fingerprint operator<<(Fingerprint a, int n) {
    if (n == 0) return a;
    if (n >= 128) return {};
    if (n >= 64) return {a.low_ << (n - 64), 0};
    return {(a.high_ << n) | (a.low_ >> (64 - n)), a.low_ << n};
  }
  friend constexpr Fingerprint operator>>(Fingerprint a, int n) {
    if (n == 0) return a;
    if (n >= 128) return {};
    if (n >= 64) return {0, a.high_ >> (n - 64)};
    return {a.high_ >> n, (a.low_ >> n) | (a.high_ << (64 - n))};
  }
  // Unsigned order, as of 128-bit integers.
  friend constexpr bool operator==(const Fingerprint&, const Fingerprint&) = default;
  friend constexpr auto operator<=>(const Fingerprint&, const Fingerprint&) = default;

 private:
  std::uint64_t high_ = 0;  // declared first: the defaulted order compares it first
  std::uint64_t low_ = 0;
};

// "0x" and 16 hexadecimal digits, or 32 when the value needs more than 64
// bits: for messages and test failures.
FPSTORE_EXPORT std::ostream& operator<<(std::ostream& out, Fingerprint fp);

// Number of bits in which a and b differ. A POPCNT instruction where the
// compiler may use one (fpstore itself is built with -mpopcnt on x86-64).
inline int HammingDistance(Fingerprint a, Fingerprint b) {
  return std::popcount(a.high() ^ b.high()) + std::popcount(a.low() ^ b.low());
}

// True iff HammingDistance(a, b) <= k. Negative k is never within.
inline bool WithinDistance(Fingerprint a, Fingerprint b, int k) {
  return k >= 0 && HammingDistance(a, b) <= k;
}

// One feature of a document: its hash and how much it counts. Weights may be
// integers (term counts) or real numbers (e.g. TF-IDF scores); negative
// weights are allowed and vote against the feature's bits.
struct WeightedFeature {
  Fingerprint hash;
  double weight;
};

// The simhash of `features` over the low `width` bits of each hash.
// Bit i of the result (0 = least significant) is 1 iff the weighted vote for
// bit i is > 0. No features give 0.
// REQUIRES: 1 <= width <= 128.
FPSTORE_EXPORT Fingerprint Simhash(std::span<const WeightedFeature> features, int width = 64);

}  // namespace fpstore

template <>
struct std::hash<fpstore::Fingerprint> {
  std::size_t operator()(fpstore::Fingerprint fp) const noexcept {
    return std::hash<std::uint64_t>{}(fp.low() ^ (fp.high() * 0x9e3779b97f4a7c15ULL));
  }
};

#endif  // FPSTORE_SIMHASH_H_
