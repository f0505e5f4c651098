#include "store/crowded_tables.h"

#include <algorithm>
#include <atomic>

#include "store/recent_prefixes.h"

namespace fpstore::internal {

CrowdedTables::CrowdedTables(const PermutationPlan& plan,
                             std::vector<std::vector<Fingerprint>> crowded)
    : all_(AllLoneBits(plan.table_count())) {
  const TablePermutation& perm0 = plan.table(0);
  for (std::size_t t = 0; t < crowded.size(); ++t) {
    std::vector<Fingerprint>& fps = crowded[t];
    for (Fingerprint& fp : fps) fp = perm0.Apply(fp);
    std::sort(fps.begin(), fps.end());
    fps.erase(std::unique(fps.begin(), fps.end()), fps.end());
    // Merged into what the tables before t gave, one table at a time, so
    // that only one table's list is held twice.
    std::vector<std::pair<Fingerprint, LoneBits>> merged;
    merged.reserve(crowded_.size() + fps.size());
    const LoneBits bit = LoneBits{1} << t;
    auto old = crowded_.begin();
    for (Fingerprint fp : fps) {
      for (; old != crowded_.end() && old->first < fp; ++old) merged.push_back(*old);
      if (old != crowded_.end() && old->first == fp) {
        merged.emplace_back(fp, old->second | bit);
        ++old;
      } else {
        merged.emplace_back(fp, bit);
      }
    }
    merged.insert(merged.end(), old, crowded_.end());
    crowded_ = std::move(merged);
    fps = {};
  }
}

LoneBits CrowdedTables::BitsOf(Fingerprint permuted0) const {
  const auto it = std::lower_bound(
      crowded_.begin(), crowded_.end(), permuted0,
      [](const std::pair<Fingerprint, LoneBits>& e, Fingerprint fp) { return e.first < fp; });
  return it != crowded_.end() && it->first == permuted0 ? all_ & ~it->second : all_;
}

namespace {

std::atomic<std::uint64_t> refresh_threshold_for_testing{0};
std::mutex hook_mu;
std::function<void(const std::atomic<bool>&)> before_rewrite;

}  // namespace

std::uint64_t LoneBitsRefreshThreshold(std::uint64_t documents) {
  const std::uint64_t threshold = refresh_threshold_for_testing.load();
  return threshold != 0 ? threshold : std::max(RecentPrefixesLimit() / 2, documents / 8);
}

void SetLoneBitsRefreshThresholdForTesting(std::uint64_t threshold) {
  refresh_threshold_for_testing = threshold;
}

void SetBeforeLoneBitsRewriteForTesting(std::function<void(const std::atomic<bool>&)> hook) {
  std::lock_guard lock(hook_mu);
  before_rewrite = std::move(hook);
}

void BeforeLoneBitsRewrite(const std::atomic<bool>& closing) {
  std::lock_guard lock(hook_mu);
  if (before_rewrite) before_rewrite(closing);
}

}  // namespace fpstore::internal
