// Verification signatures: what confirms that a candidate within k bits is a
// near-copy.
//
// A simhash fingerprint holds 64 bits of a noisy angle between feature
// vectors: on real pages, documents that share only navigation and templates
// land within a few bits. A Signature is a second, larger summary of the same
// document, from which the Jaccard similarity of two documents' feature sets
// (the fraction of shingles they share) is estimated: one-permutation
// MinHash (Li, Owen and Zhang, NIPS 2012) with optimal densification
// (Shrivastava, ICML 2017), keeping the lowest 8 bits of each slot's minimum
// (b-bit minwise hashing, Li and König, WWW 2010). A store finds candidates
// exactly by Hamming distance, then confirms each by its estimated similarity
// (docs/design.md, "Confirming candidates").
//
// The Fingerprinter makes both in one pass over the text (SketchText). A
// document given as a bare fingerprint has an empty Signature: it matches by
// distance alone.
//
// Thread safety: plain values; EstimateSimilarity is pure.

#ifndef FPSTORE_SIGNATURE_H_
#define FPSTORE_SIGNATURE_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "fpstore/export.h"
#include "fpstore/simhash.h"
#include "fpstore/status.h"

namespace fpstore {

class FPSTORE_EXPORT Signature {
 public:
  // Slots a signature may have: 0 (none), or kMinSlots to kMaxSlots.
  static constexpr int kMinSlots = 16;
  static constexpr int kMaxSlots = 1024;

  // No signature.
  Signature() = default;

  // The signature whose bytes() are `bytes`, one byte a slot. InvalidArgument
  // unless empty or kMinSlots to kMaxSlots bytes long.
  static Result<Signature> FromBytes(std::string_view bytes);

  bool empty() const { return bytes_.empty(); }
  std::size_t slots() const { return bytes_.size(); }
  // One byte a slot: what a store keeps and what FromBytes takes back.
  std::string_view bytes() const { return bytes_; }

  friend bool operator==(const Signature&, const Signature&) = default;

 private:
  friend class Fingerprinter;
  explicit Signature(std::string bytes) : bytes_(std::move(bytes)) {}

  std::string bytes_;
};

// The estimated Jaccard similarity, from 0 to 1, of the feature sets that `a`
// and `b` summarise: the fraction of equal slots, corrected for the 1 in 256
// chance that two different 8-bit slots are equal. Its standard error is
// about sqrt(J (1 - J) / slots): 0.019 at J = 0.9 with 256 slots. nullopt if
// either is empty or their slot counts differ.
FPSTORE_EXPORT std::optional<double> EstimateSimilarity(const Signature& a, const Signature& b);

// What the Fingerprinter makes of one text: the fingerprint that finds
// candidates and the signature that confirms them.
struct Sketch {
  Fingerprint fingerprint = 0;
  Signature signature;
};

}  // namespace fpstore

#endif  // FPSTORE_SIGNATURE_H_
