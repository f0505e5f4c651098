#include "cli/plan_choice.h"

#include <cmath>
#include <cstdint>
#include <cstdio>

#include "fpstore/store.h"

namespace fpstore::cli {

PlanEstimate EstimatePlan(const PermutationPlan& plan, double documents, int signature_bytes) {
  constexpr double kMicrosPerProbe = 0.8, kMicrosPerBlockRead = 13, kMicrosPerCandidate = 0.2;
  const auto n = static_cast<std::uint64_t>(documents);
  PlanEstimate e{.plan = plan,
                 .disk_bytes = EstimateStoreBytes(plan, n, signature_bytes),
                 .memory_bytes = EstimateStoreMemory(plan, n, signature_bytes)};
  for (const TablePermutation& t : plan.tables()) {
    // Random fingerprints: a prefix range holds Poisson(in_range) entries.
    const double in_range = std::ldexp(documents, -t.prefix_bits());
    e.candidates += in_range;
    e.query_micros += kMicrosPerProbe + (1 - std::exp(-in_range)) * kMicrosPerBlockRead +
                      kMicrosPerCandidate * in_range;
  }
  return e;
}

PlanComparison ComparePlans(int distance, double documents, int signature_bytes,
                            const PlanBudgets& budgets, int bits) {
  PlanComparison out;
  out.distance = distance;
  out.documents = documents;
  out.budgets = budgets;
  const PlanEstimate* best = nullptr;
  // Beyond k + 5 blocks the tables only multiply: probes cost more than the
  // candidates they save at any size a machine holds.
  for (int m = distance + 1; m <= distance + 5; ++m) {
    Result<PermutationPlan> plan = PermutationPlan::Create(m, distance, bits);
    if (!plan.ok()) break;  // too many tables from here on
    out.rows.push_back(EstimatePlan(*plan, documents, signature_bytes));
  }
  for (const PlanEstimate& e : out.rows) {
    const bool fits = (budgets.disk_bytes == 0 || e.disk_bytes <= budgets.disk_bytes) &&
                      (budgets.memory_bytes == 0 || e.memory_bytes <= budgets.memory_bytes);
    if (fits && (best == nullptr || e.query_micros < best->query_micros)) best = &e;
  }
  if (best != nullptr) out.chosen = best->plan;
  return out;
}

std::string NoPlanFits(const PlanComparison& comparison) {
  const PlanBudgets& b = comparison.budgets;
  std::string within;
  char buffer[128];
  if (b.disk_bytes > 0) {
    std::snprintf(buffer, sizeof(buffer), "%.4g GB of disk", b.disk_bytes / 1e9);
    within = buffer;
  }
  if (b.memory_bytes > 0) {
    std::snprintf(buffer, sizeof(buffer), "%.4g GB of memory", b.memory_bytes / 1e9);
    within += (within.empty() ? "" : " and ") + std::string(buffer);
  }
  std::snprintf(buffer, sizeof(buffer), "no plan for distance %d at %.4g documents fits in ",
                comparison.distance, comparison.documents);
  return buffer + within +
         " (fpstore-admin create --dry-run compares them): raise --disk-budget or "
         "--memory-budget, or give --blocks";
}

}  // namespace fpstore::cli
