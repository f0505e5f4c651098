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

// A document's time: seconds since the Unix epoch (UTC), e.g. when a crawler
// fetched the page. From 0 to kMaxDocumentTime (9999-12-31T23:59:59Z); a
// store refuses others with InvalidArgument.
using DocumentTime = std::int64_t;
inline constexpr DocumentTime kMaxDocumentTime = 253'402'300'799;

struct Document {
  DocumentId id = 0;
  Fingerprint fingerprint = 0;
  std::string metadata;   // opaque bytes kept beside the fingerprint, e.g. a URL
  Signature signature;    // empty for a document given as a bare fingerprint
  DocumentTime time = 0;  // of its last insert
};

// A document to insert; `metadata` must stay valid during the call.
struct NewDocument {
  DocumentId id = 0;
  Fingerprint fingerprint = 0;
  std::string_view metadata;
  // Empty, or made with the store's fingerprint options (Store::fingerprinter()).
  Signature signature;
  // Its time; absent: the store's clock when it is written (StoreOptions::clock).
  // A re-insert of an id (a page fetched again) takes the new time.
  std::optional<DocumentTime> time;
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
  DocumentTime time = 0;  // the stored document's
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
