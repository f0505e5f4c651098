// A document's entry in a permutation table, and a document as the scans
// and the in-memory tables hold it.

#ifndef FPSTORE_LIB_PLAN_TABLE_ENTRY_H_
#define FPSTORE_LIB_PLAN_TABLE_ENTRY_H_

#include <compare>
#include <cstdint>

#include "fpstore/document.h"

namespace fpstore::internal {

struct TableEntry {
  Fingerprint permuted;  // as the table permutes it
  DocumentId id;

  // A table's order: by permuted fingerprint, then id.
  friend auto operator<=>(const TableEntry&, const TableEntry&) = default;
};

struct IdFingerprint {
  DocumentId id;
  Fingerprint fingerprint;
};

// Orders documents by fingerprint, then id.
inline bool ByFingerprint(const IdFingerprint& a, const IdFingerprint& b) {
  return a.fingerprint != b.fingerprint ? a.fingerprint < b.fingerprint : a.id < b.id;
}

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_PLAN_TABLE_ENTRY_H_
