#include "store/run_signatures.h"

#include <algorithm>

namespace fpstore::internal {

Result<RunSignatures> RunSignatures::Read(const Documents& documents,
                                          const rocksdb::Snapshot* snapshot,
                                          std::span<const TableEntry> run) {
  std::vector<DocumentId> ids;
  ids.reserve(run.size());
  for (const TableEntry& e : run) ids.push_back(e.id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  RunSignatures result;
  Status s = documents.Read(snapshot, ids, /*whole=*/true, [&](std::size_t, const Document& doc) {
    if (!doc.signature.empty()) result.signatures_.emplace(doc.id, doc.signature);
  });
  if (!s.ok()) return s;
  return result;
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
