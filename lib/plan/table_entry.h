// The word the tables, the staging index and the scans hold a fingerprint
// and its permutations in, whatever the store's width (a 64-bit store's
// fingerprints and their permutations are in its low half), a document's
// entry in a permutation table, and a document as the scans and the
// in-memory tables hold it.

#ifndef FPSTORE_LIB_PLAN_TABLE_ENTRY_H_
#define FPSTORE_LIB_PLAN_TABLE_ENTRY_H_

#include <compare>
#include <cstdint>
#include <sstream>
#include <string>

#include "fpstore/document.h"
#include "fpstore/permutation.h"

namespace fpstore::internal {

using Word = Fingerprint;

// The 64 bits of a permuted fingerprint of `width` bits that the tables cut
// and code (format/groups.h): a 64-bit store's whole fingerprint, a 128-bit
// store's high half.
using Head = std::uint64_t;
inline Head HeadOf(Word permuted, int width) {
  return width == 64 ? permuted.low() : permuted.high();
}

// A table's permutation of a word, and its inverse.
inline Word Permute(const TablePermutation& perm, Word fp) { return perm.Apply(fp); }
inline Word Unpermute(const TablePermutation& perm, Word permuted) { return perm.Invert(permuted); }
// The table's prefix bits of a permuted word.
inline Word PrefixMask(const TablePermutation& perm) { return perm.prefix_mask(); }

// A fingerprint in a message: decimal if it fits 64 bits, else hexadecimal.
inline std::string FingerprintText(Word fp) {
  if (fp.fits_64()) return std::to_string(fp.low());
  std::ostringstream text;
  text << fp;
  return text.str();
}

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
