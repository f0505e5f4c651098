// The values a Store hands back: stored documents, matches, near pairs.
//
// Thread safety: plain values.

#ifndef FPSTORE_DOCUMENT_H_
#define FPSTORE_DOCUMENT_H_

#include <compare>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fpstore/signature.h"
#include "fpstore/simhash.h"

namespace fpstore {

// Caller-chosen document identifier, e.g. a crawler's URL id.
using DocumentId = std::uint64_t;

struct Document {
  DocumentId id = 0;
  Fingerprint fingerprint = 0;
  std::string metadata;  // opaque bytes kept beside the fingerprint, e.g. a URL
  Signature signature;   // empty for a document given as a bare fingerprint
};

// A document to insert; `metadata` must stay valid during the call.
struct NewDocument {
  DocumentId id = 0;
  Fingerprint fingerprint = 0;
  std::string_view metadata;
  // Empty, or made with the store's fingerprint options (Store::fingerprinter()).
  Signature signature;
};

// A stored document near a query.
struct Match {
  DocumentId id = 0;
  Fingerprint fingerprint = 0;
  int distance = 0;  // HammingDistance(query, fingerprint)
  std::string metadata;
  // EstimateSimilarity(query's signature, document's): absent when either
  // has none, and the match then stands on its distance alone.
  std::optional<double> similarity;
};

// Two documents within the asked distance of each other; first < second.
struct NearPair {
  DocumentId first = 0;
  DocumentId second = 0;
  int distance = 0;
  // Their estimated similarity; absent when either has no signature.
  std::optional<double> similarity;

  friend bool operator==(const NearPair&, const NearPair&) = default;
  friend auto operator<=>(const NearPair&, const NearPair&) = default;
};

}  // namespace fpstore

#endif  // FPSTORE_DOCUMENT_H_
