// From text to a simhash fingerprint of 64 or 128 bits.
//
// A Fingerprinter splits UTF-8 text into tokens (NFKC normalisation and case
// folding, then Unicode word boundaries; Chinese, Japanese and Thai text is
// segmented into words with ICU's dictionaries), makes features out of every
// `window` consecutive tokens, weights each feature by how often it occurs,
// hashes it with XXH3-64 (XXH3-128 for 128 bits) and takes the simhash (see
// simhash.h). In the same
// pass it can make the document's verification signature (signature.h) from
// the shingles of `signature_window` tokens.
//
// Fingerprints are persisted, so everything that shapes them is recorded in
// FingerprintOptions, whose text form (ToString / Parse) is stable: a store
// writes it down at creation and refuses to mix fingerprints made otherwise.
// The fingerprint of a given text under given options never changes; a change
// of algorithm gets a new `version`.
//
// Thread safety: a Fingerprinter is immutable; any number of threads may call
// its const methods concurrently.

#ifndef FPSTORE_FINGERPRINTER_H_
#define FPSTORE_FINGERPRINTER_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fpstore/export.h"
#include "fpstore/signature.h"
#include "fpstore/simhash.h"
#include "fpstore/status.h"

namespace fpstore {

// How much each feature counts. Recorded on disk by name: never rename.
enum class FeatureWeighting {
  kTermFrequency,  // a feature counts once per occurrence ("tf")
  kPresence,       // a feature counts once however often it occurs ("presence")
};

struct FPSTORE_EXPORT FingerprintOptions {
  // The algorithm version. 2 is the only one this build knows: NFKC_Casefold,
  // ICU word boundaries (letters, numbers, kana, ideographs), XXH3-64 with
  // seed 0 over the token's UTF-8 bytes, shingles hashed as the XXH3-64 of
  // their token hashes, and the signature of signature.h (version 1's kept a
  // byte of each of its slots). Default: 2.
  int version = 2;

  // Number of consecutive tokens per feature (shingle) of the fingerprint. 1
  // makes the features single words: near-copies land closest, and so do
  // pages that merely share vocabulary, which the signature then refuses
  // (docs/design.md, "Confirming candidates"). A text with fewer tokens than
  // `window` has one feature, all of its tokens. Default: 1.
  // REQUIRES: 1 <= window <= 64.
  int window = 1;

  FeatureWeighting weighting = FeatureWeighting::kTermFrequency;

  // Bytes of the verification signature (signature.h); 0 makes none. A
  // larger one estimates similarity more closely and costs its bytes a
  // document (docs/design.md, "Confirming candidates"). Default: 64.
  // REQUIRES: 0, or a power of two from Signature::kMinBytes to
  // Signature::kMaxBytes.
  int signature_bytes = 64;

  // Consecutive tokens per shingle of the signature: it estimates the
  // Jaccard similarity of the documents' sets of such shingles. Default: 5.
  // REQUIRES: 1 <= signature_window <= 64.
  int signature_window = 5;

  // The fingerprints' width: 64, or 128, whose features are hashed with
  // XXH3-128 (a token's UTF-8 bytes for window 1; a shingle's token hashes,
  // as for 64 bits, otherwise). The signature is the same at either width.
  // Default: 64.
  int bits = 64;

  // "v2 window=1 weighting=tf signature=64 signature_window=5", then
  // " bits=128" for 128-bit fingerprints: stable, human-readable, and the
  // form a store records. Parse(ToString()) gives back equal options.
  std::string ToString() const;
  static Result<FingerprintOptions> Parse(std::string_view text);

  // InvalidArgument naming the field unless every field is in range.
  Status Validate() const;

  bool operator==(const FingerprintOptions&) const = default;
};

// A term chosen and weighted by the caller, e.g. a TF-IDF keyword.
struct WeightedTerm {
  std::string_view term;
  double weight;
};

class FPSTORE_EXPORT Fingerprinter {
 public:
  // Fails with InvalidArgument if options.Validate() does.
  static Result<Fingerprinter> Create(const FingerprintOptions& options = {});

  const FingerprintOptions& options() const { return options_; }

  // The fingerprint of a UTF-8 text. Text without any word (empty, spaces,
  // punctuation only) has fingerprint 0. Invalid UTF-8 gives InvalidArgument
  // with the byte offset of the first bad sequence.
  Result<Fingerprint> FromText(std::string_view utf8) const;

  // The fingerprint and the verification signature of a UTF-8 text, in one
  // pass. The signature is empty when options().signature_bytes is 0 or the
  // text has no word. Errors as FromText.
  Result<Sketch> SketchText(std::string_view utf8) const;

  // The normalised tokens of a UTF-8 text, in order, as FromText sees them.
  Result<std::vector<std::string>> Tokens(std::string_view utf8) const;

  // The fingerprint of caller-chosen terms: each term is hashed as a
  // one-token feature would be (HashTerm, or XXH3-128 of the term at 128
  // bits) and weighted as given; `window` and `weighting` do not apply.
  Fingerprint FromTerms(std::span<const WeightedTerm> terms) const;

  // The feature hash of one already-normalised term.
  static std::uint64_t HashTerm(std::string_view term);

 private:
  explicit Fingerprinter(const FingerprintOptions& options) : options_(options) {}

  FingerprintOptions options_;
};

}  // namespace fpstore

#endif  // FPSTORE_FINGERPRINTER_H_
