// The word the tables, the staging index and the scans hold a fingerprint
// and its permutations in (a store's fingerprints are 64 bits wide), a
// document's entry in a permutation table, and a document as the scans and
// the in-memory tables hold it.

#ifndef FPSTORE_LIB_PLAN_TABLE_ENTRY_H_
#define FPSTORE_LIB_PLAN_TABLE_ENTRY_H_

#include <compare>
#include <cstdint>

#include "fpstore/document.h"
#include "fpstore/permutation.h"

namespace fpstore::internal {

using Word = std::uint64_t;

// A table's permutation of a word, and its inverse.
inline Word Permute(const TablePermutation& perm, Word fp) { return perm.Apply64(fp); }
inline Word Unpermute(const TablePermutation& perm, Word permuted) {
  return perm.Invert64(permuted);
}
// The table's prefix bits of a permuted word.
inline Word PrefixMask(const TablePermutation& perm) { return perm.prefix_mask().low(); }

struct TableEntry {
  Word permuted;  // as the table permutes it
  DocumentId id;

  // A table's order: by permuted fingerprint, then id.
  friend auto operator<=>(const TableEntry&, const TableEntry&) = default;
};

struct IdFingerprint {
  DocumentId id;
  Word fingerprint;
};

// Orders documents by fingerprint, then id.
inline bool ByFingerprint(const IdFingerprint& a, const IdFingerprint& b) {
  return a.fingerprint != b.fingerprint ? a.fingerprint < b.fingerprint : a.id < b.id;
}

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_PLAN_TABLE_ENTRY_H_
