#include "plan/near_pairs.h"

#include <algorithm>
#include <optional>
#include <tuple>

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
        if (of.Confirmed(xs[i], ys[j], min_similarity, &similarity))
          edges.emplace_back(xs[i], ys[j]);
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
  if (a == b) return;
  links_.emplace_back(a, b);
  if (links_.size() >= fold_at_) Fold();
}

void DisjointSets::Fold() {
  std::vector<DocumentId> ids;
  ids.reserve(2 * links_.size());
  for (const auto& [a, b] : links_) {
    ids.push_back(a);
    ids.push_back(b);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  const auto index = [&](DocumentId id) {
    return static_cast<std::size_t>(std::lower_bound(ids.begin(), ids.end(), id) - ids.begin());
  };
  // Indexes follow the ids' order, and every root is its set's least index.
  std::vector<std::size_t> parent(ids.size());
  for (std::size_t i = 0; i < parent.size(); ++i) parent[i] = i;
  const auto find = [&](std::size_t x) {
    while (parent[x] != x) x = parent[x] = parent[parent[x]];  // path halving
    return x;
  };
  for (const auto& [a, b] : links_) {
    const std::size_t ra = find(index(a)), rb = find(index(b));
    if (ra != rb) parent[std::max(ra, rb)] = std::min(ra, rb);
  }
  links_.clear();
  for (std::size_t i = 0; i < ids.size(); ++i) {
    if (const std::size_t root = find(i); root != i) links_.emplace_back(ids[i], ids[root]);
  }
  links_.shrink_to_fit();
  fold_at_ = std::max(first_fold_, 2 * links_.size());
}

void DisjointSets::ForEachSet(const std::function<void(std::span<const DocumentId>)>& sink) {
  Fold();  // now each id not a set's least links to its set's least id
  // By (least id, id): sets in the order of their first id, each ascending.
  std::sort(links_.begin(), links_.end(), [](const auto& x, const auto& y) {
    return std::tie(x.second, x.first) < std::tie(y.second, y.first);
  });
  std::vector<DocumentId> set;
  for (std::size_t i = 0; i < links_.size();) {
    const DocumentId least = links_[i].second;
    set.assign(1, least);
    for (; i < links_.size() && links_[i].second == least; ++i) set.push_back(links_[i].first);
    sink(set);
  }
}

}  // namespace fpstore::internal
