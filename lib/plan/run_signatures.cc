#include "plan/run_signatures.h"

#include <algorithm>

namespace fpstore::internal {

void RunSignatures::Add(DocumentId id, Signature signature) {
  if (!signature.empty()) signatures_.insert_or_assign(id, std::move(signature));
}

const Signature* RunSignatures::Of(DocumentId id) const {
  const auto it = signatures_.find(id);
  return it == signatures_.end() ? nullptr : &it->second;
}

bool RunSignatures::Confirmed(DocumentId a, DocumentId b, double min_similarity,
                              std::optional<double>* similarity) const {
  const Signature* x = Of(a);
  const Signature* y = Of(b);
  *similarity = x && y ? EstimateSimilarity(*x, *y) : std::nullopt;
  return !*similarity || **similarity >= min_similarity;
}

RunSignatures::Groups RunSignatures::GroupCopies(std::span<const TableEntry> copies) const {
  Groups groups;
  std::vector<const Signature*> signature_of_group;
  for (const TableEntry& e : copies) {
    const Signature* signature = Of(e.id);
    const auto same = [&](const Signature* s) {
      return signature == nullptr ? s == nullptr : s != nullptr && *s == *signature;
    };
    const auto found = std::find_if(signature_of_group.begin(), signature_of_group.end(), same);
    groups.group_of.push_back(static_cast<std::size_t>(found - signature_of_group.begin()));
    if (found == signature_of_group.end()) {
      signature_of_group.push_back(signature);
      groups.members.push_back(e.id);
    }
  }
  return groups;
}

}  // namespace fpstore::internal
