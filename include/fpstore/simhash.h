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
// pure arithmetic, usable with any width from 1 to 64 bits so that small
// worked examples can be checked by hand.
//
// Thread safety: every function here is pure and thread-safe.

#ifndef FPSTORE_SIMHASH_H_
#define FPSTORE_SIMHASH_H_

#include <bit>
#include <cstdint>
#include <span>

#include "fpstore/export.h"

namespace fpstore {

// A 64-bit simhash fingerprint. Bit 63 is the most significant bit.
using Fingerprint = std::uint64_t;

// Number of bits in which a and b differ. A POPCNT instruction where the
// compiler may use one (fpstore itself is built with -mpopcnt on x86-64).
inline int HammingDistance(Fingerprint a, Fingerprint b) { return std::popcount(a ^ b); }

// True iff HammingDistance(a, b) <= k. Negative k is never within.
inline bool WithinDistance(Fingerprint a, Fingerprint b, int k) {
  return k >= 0 && std::popcount(a ^ b) <= k;
}

// One feature of a document: its hash and how much it counts. Weights may be
// integers (term counts) or real numbers (e.g. TF-IDF scores); negative
// weights are allowed and vote against the feature's bits.
struct WeightedFeature {
  std::uint64_t hash;
  double weight;
};

// The simhash of `features` over the low `width` bits of each hash.
// Bit i of the result (0 = least significant) is 1 iff the weighted vote for
// bit i is > 0. No features give 0.
// REQUIRES: 1 <= width <= 64.
FPSTORE_EXPORT std::uint64_t Simhash(std::span<const WeightedFeature> features, int width = 64);

}  // namespace fpstore

#endif  // FPSTORE_SIMHASH_H_
