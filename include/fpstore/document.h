// The values a Store hands back: stored documents, matches, near pairs.
//
// Thread safety: plain values.

#ifndef FPSTORE_DOCUMENT_H_
#define FPSTORE_DOCUMENT_H_

#include <compare>
#include <cstdint>
#include <string>

#include "fpstore/simhash.h"

namespace fpstore {

// Caller-chosen document identifier, e.g. a crawler's URL id.
using DocumentId = std::uint64_t;

struct Document {
  DocumentId id = 0;
  Fingerprint fingerprint = 0;
  std::string metadata;  // opaque bytes kept beside the fingerprint, e.g. a URL
};

// A stored document near a query fingerprint.
struct Match {
  DocumentId id = 0;
  Fingerprint fingerprint = 0;
  int distance = 0;  // HammingDistance(query, fingerprint)
  std::string metadata;
};

// Two documents within the asked distance of each other; first < second.
struct NearPair {
  DocumentId first = 0;
  DocumentId second = 0;
  int distance = 0;

  friend bool operator==(const NearPair&, const NearPair&) = default;
  friend auto operator<=>(const NearPair&, const NearPair&) = default;
};

}  // namespace fpstore

#endif  // FPSTORE_DOCUMENT_H_
