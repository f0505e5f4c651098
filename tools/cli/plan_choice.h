// Choosing a new store's plan for the documents it expects: the plans for
// its distance, each with its estimated disk, memory, candidates and query
// time (docs/performance.md, "Choosing a plan"), and the fastest of those
// within the budgets. Shared by fpstore-admin create and fpstore-load.

#ifndef FPSTORE_TOOLS_CLI_PLAN_CHOICE_H_
#define FPSTORE_TOOLS_CLI_PLAN_CHOICE_H_

#include <optional>
#include <string>
#include <vector>

#include "fpstore/permutation.h"

namespace fpstore::cli {

// The plan a new store of `bits`-bit fingerprints gets when --blocks or
// --distance is left out and no plan is chosen for --expected-documents:
// the library's defaults (StoreOptions, options.h).
constexpr int DefaultBlocks(int bits) { return bits == 128 ? 8 : 6; }
constexpr int DefaultDistance(int bits) { return bits == 128 ? 6 : 3; }

// What a plan costs at a number of documents: disk and memory are the
// library's estimates (EstimateStoreBytes, EstimateStoreMemory); a query,
// per table probed, a fixed cost, a data block read when the probe's prefix
// range is not empty, and a cost per candidate, fitted to fpstore-bench's
// warm misses, cold hits and FindAll.
struct PlanEstimate {
  PermutationPlan plan;
  double candidates = 0;  // per query: the sum over tables of documents / 2^prefix bits
  double disk_bytes = 0;
  double memory_bytes = 0;
  double query_micros = 0;
};

// `signature_bytes`: of the documents' signatures, which take disk too.
PlanEstimate EstimatePlan(const PermutationPlan& plan, double documents, int signature_bytes);

// Budgets in bytes; 0 means none.
struct PlanBudgets {
  double disk_bytes = 0;
  double memory_bytes = 0;
  static constexpr double kDefaultMemoryGb = 16;
};

struct PlanComparison {
  int distance = 0;
  double documents = 0;
  PlanBudgets budgets;
  std::vector<PlanEstimate> rows;         // k+1 to k+5 blocks, as many as make a plan
  std::optional<PermutationPlan> chosen;  // the fastest query within the budgets, if any
};

// The plans of `bits`-bit fingerprints for `distance`.
PlanComparison ComparePlans(int distance, double documents, int signature_bytes,
                            const PlanBudgets& budgets, int bits);

// "no plan for distance 3 at 1e+11 documents fits in 16 GB of memory: ..."
std::string NoPlanFits(const PlanComparison& comparison);

}  // namespace fpstore::cli

#endif  // FPSTORE_TOOLS_CLI_PLAN_CHOICE_H_
