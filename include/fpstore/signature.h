// Verification signatures: what confirms that a candidate within k bits is a
// near-copy.
//
// A simhash fingerprint holds 64 bits of a noisy angle between feature
// vectors: on real pages, documents that share only navigation and templates
// land within a few bits. A Signature is a second summary of the same
// document, from which the Jaccard similarity of two documents' feature sets
// (the fraction of shingles they share) is estimated. It is an odd sketch
// (Mitzenmacher, Pagh and Pham, WWW 2014) of a one-permutation MinHash
// (Li, Owen and Zhang, NIPS 2012) of 16 slots a byte: each slot's least
// shingle hash, empty slots densified (Shrivastava, ICML 2017), flips one bit
// of the signature. Two signatures differ in the bits their differing slots
// flip, so the count of bits that differ estimates the count of slots that
// do: precise where near-copies are decided, at high similarity
// (docs/design.md, "Confirming candidates", has its error against other
// summaries of the same size). A store finds candidates exactly by Hamming
// distance, then confirms each by its estimated similarity.
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
  // The sizes a signature may have, in bytes: 0 (none), or a power of two
  // from kMinBytes to kMaxBytes.
  static constexpr int kMinBytes = 16;
  static constexpr int kMaxBytes = 256;
  // True for kMinBytes, 2 kMinBytes, ... kMaxBytes.
  static bool ValidSize(std::size_t bytes) {
    return bytes >= kMinBytes && bytes <= kMaxBytes && (bytes & (bytes - 1)) == 0;
  }

  // No signature.
  Signature() = default;

  // The signature whose bytes() are `bytes`. InvalidArgument unless empty or
  // of a size ValidSize allows.
  static Result<Signature> FromBytes(std::string_view bytes);

  bool empty() const { return bytes_.empty(); }
  std::size_t size() const { return bytes_.size(); }
  // What a store keeps and what FromBytes takes back.
  std::string_view bytes() const { return bytes_; }

  friend bool operator==(const Signature&, const Signature&) = default;

 private:
  friend class Fingerprinter;
  explicit Signature(std::string bytes) : bytes_(std::move(bytes)) {}

  std::string bytes_;
};

// The estimated Jaccard similarity, from 0 to 1, of the feature sets that `a`
// and `b` summarise: one less the fraction of the 16 x size() slots that
// differ, which the z of its n = 8 x size() bits that differ estimate as
// -(n / 4) ln(1 - 2 z / n): the inverse of the chance that flips cancel on
// one bit. It is 0 once half the bits differ; below about 0.75 it is
// coarse, and says only that the texts are not near-copies (two unrelated
// texts may show anything from 0 to about 0.75). Its bias and standard
// error are in docs/design.md.
// nullopt if either is empty or their sizes differ.
FPSTORE_EXPORT std::optional<double> EstimateSimilarity(const Signature& a, const Signature& b);

// What the Fingerprinter makes of one text: the fingerprint that finds
// candidates and the signature that confirms them.
struct Sketch {
  Fingerprint fingerprint = 0;
  Signature signature;
};

}  // namespace fpstore

#endif  // FPSTORE_SIGNATURE_H_
