#include "plan/near_pairs.h"

#include <algorithm>
#include <optional>

#include "plan/run_pairs.h"

namespace fpstore::internal {

void KeepConfirmed(std::vector<NearPair>& pairs, const RunSignatures& signatures,
                   double min_similarity) {
  std::erase_if(pairs, [&](NearPair& p) {
    return !signatures.Confirmed(p.first, p.second, min_similarity, &p.similarity);
  });
}

void AddClusterEdges(std::span<const TableEntry> run, const PermutationPlan& plan, std::size_t t,
                     int k, double min_similarity,
                     const std::function<const RunSignatures*()>& signatures,
                     std::vector<std::pair<DocumentId, DocumentId>>& edges) {
  // Each pair of groups whose members are confirmed; `same`: a group with itself is not.
  auto link = [&](const RunSignatures& of, const std::vector<DocumentId>& xs,
                  const std::vector<DocumentId>& ys, bool same) {
    std::optional<double> similarity;
    for (std::size_t i = 0; i < xs.size(); ++i) {
      for (std::size_t j = same ? i + 1 : 0; j < ys.size(); ++j) {
        if (of.Confirmed(xs[i], ys[j], min_similarity, &similarity)) edges.emplace_back(xs[i], ys[j]);
      }
    }
  };
  ForEachLinkedCopies(
      run, plan, t, k,
      [&](std::span<const TableEntry> copies) {
        const RunSignatures* of = signatures();
        if (of == nullptr) return;
        const RunSignatures::Groups groups = of->GroupCopies(copies);
        for (std::size_t i = 0; i < copies.size(); ++i) {
          const DocumentId member = groups.members[groups.group_of[i]];
          if (copies[i].id != member) edges.emplace_back(copies[i].id, member);
        }
        link(*of, groups.members, groups.members, /*same=*/true);
      },
      [&](std::span<const TableEntry> a, std::span<const TableEntry> b, int) {
        const RunSignatures* of = signatures();
        if (of == nullptr) return;
        link(*of, of->GroupCopies(a).members, of->GroupCopies(b).members, /*same=*/false);
      });
}

void DisjointSets::Union(DocumentId a, DocumentId b) {
  a = Find(a);
  b = Find(b);
  if (a != b) parent_[std::max(a, b)] = std::min(a, b);
}

DocumentId DisjointSets::Find(DocumentId x) {
  auto it = parent_.try_emplace(x, x).first;
  while (it->second != x) {
    auto up = parent_.find(it->second);
    it->second = up->second;
    x = it->second;
    it = parent_.find(x);
  }
  return x;
}

void DisjointSets::ForEachSet(const std::function<void(std::span<const DocumentId>)>& sink) {
  std::unordered_map<DocumentId, std::vector<DocumentId>> sets;
  std::vector<DocumentId> ids;
  ids.reserve(parent_.size());
  for (const auto& [id, parent] : parent_) ids.push_back(id);
  for (const DocumentId id : ids) sets[Find(id)].push_back(id);
  std::vector<std::vector<DocumentId>> ordered;
  ordered.reserve(sets.size());
  for (auto& [root, members] : sets) {
    if (members.size() < 2) continue;
    std::sort(members.begin(), members.end());
    ordered.push_back(std::move(members));
  }
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.front() < b.front(); });
  for (const std::vector<DocumentId>& set : ordered) sink(set);
}

}  // namespace fpstore::internal
