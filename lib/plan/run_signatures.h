// The signatures of a run's documents, and the rule that confirms a pair of them (docs/design.md,
// "Confirming candidates"): by estimated similarity when both have a signature, else by distance
// alone. Both backends' FindAll and Clusters confirm their pairs with it; each reads the signatures
// its own way.
//
// Thread safety: a RunSignatures is used by one thread.

#ifndef FPSTORE_LIB_PLAN_RUN_SIGNATURES_H_
#define FPSTORE_LIB_PLAN_RUN_SIGNATURES_H_

#include <cstddef>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "fpstore/document.h"
#include "fpstore/signature.h"
#include "plan/table_entry.h"

namespace fpstore::internal {

class RunSignatures {
 public:
  // None: every pair stands on its distance (a store no document was signed in).
  RunSignatures() = default;

  // Adds a document's signature; an empty one is not kept (the document has none).
  void Add(DocumentId id, Signature signature);

  // Whether the pair (a, b) stands at `min_similarity`; its similarity into *similarity (none
  // when either has no signature).
  bool Confirmed(DocumentId a, DocumentId b, double min_similarity,
                 std::optional<double>* similarity) const;

  // A set of copies (one fingerprint) by distinct signature: a member of each group, and for each
  // copy the index of its group. Copies with one signature, or none, are one another's matches.
  struct Groups {
    std::vector<DocumentId> members;
    std::vector<std::size_t> group_of;
  };
  Groups GroupCopies(std::span<const TableEntry> copies) const;

 private:
  const Signature* Of(DocumentId id) const;

  std::unordered_map<DocumentId, Signature> signatures_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_PLAN_RUN_SIGNATURES_H_
