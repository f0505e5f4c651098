// What the fpstore-admin commands share: formatting, common options, the
// store configurations they open with, and atomic output files. Private to
// tools/cli's admin_*.cc files.

#ifndef FPSTORE_TOOLS_CLI_ADMIN_COMMON_H_
#define FPSTORE_TOOLS_CLI_ADMIN_COMMON_H_

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "cli/document_pipeline.h"
#include "cli/line_reader.h"
#include "cli/options.h"
#include "cli/output_file.h"
#include "cli/parse.h"
#include "cli/progress.h"
#include "cli/record_reader.h"
#include "cli/store_access.h"
#include "fpstore/store.h"

namespace fpstore::cli::admin {

namespace po = boost::program_options;
namespace fs = std::filesystem;

constexpr const char* kTool = "fpstore-admin";

constexpr std::string_view kScanGroup = "Scan options";
constexpr std::string_view kOutputGroup = "Output";

// ---- Formatting ---------------------------------------------------------------

inline std::string Fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
  return buffer;
}

// 0.0123 -> "0.0123", 12345.6 -> "12,346": a rough number, to about three
// significant digits.
inline std::string Rough(double value) {
  if (value >= 1000 && value < 1e15) {
    return WithCommas(static_cast<std::uint64_t>(std::llround(value)));
  }
  if (value == 0) return "0";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.3g", value);
  return buffer;
}

// The table's chosen blocks, "0,1,2".
inline std::string BlockList(const TablePermutation& table) {
  std::string out;
  for (int b : table.leading_blocks()) out += (out.empty() ? "" : ",") + std::to_string(b);
  return out;
}

// "20 tables, prefixes of 31 to 33 bits".
// The shortest and longest prefix among the plan's tables, "30-33" or "32".
inline std::string PrefixBitsRange(const PermutationPlan& plan, const char* between = "-") {
  int low = 64, high = 0;
  for (const TablePermutation& t : plan.tables()) {
    low = std::min(low, t.prefix_bits());
    high = std::max(high, t.prefix_bits());
  }
  return low == high ? std::to_string(low) : std::to_string(low) + between + std::to_string(high);
}

inline std::string DescribeTables(const PermutationPlan& plan) {
  const std::string bits = PrefixBitsRange(plan, " to ") + " bits";
  return std::to_string(plan.table_count()) + (plan.table_count() == 1 ? " table" : " tables") +
         ", prefixes of " + bits;
}

inline std::string_view WeightingName(FeatureWeighting weighting) {
  return weighting == FeatureWeighting::kPresence ? "presence" : "tf";
}

// ---- Options and steps shared by the commands ----------------------------------------

inline void DefineQuiet(OptionTable& table, bool* quiet) {
  table.AddSwitch(kGeneralGroup, "quiet,q", quiet,
                  "No progress and no summary on standard error. e.g. --quiet");
}

inline void DefineScanThreads(OptionTable& table, int* threads) {
  table.Add(kScanGroup, "threads", WholeNumber("threads", threads, 0, kMaxThreads)->value_name("N"),
            "Threads to scan the tables with, 0 to 1,024; 0 means one per core. Default: 0. "
            "e.g. --threads 4");
}

// --distance K of find-all and clusters: a search distance, checked against
// the store's plan once it is open (SearchDistance), as in fpstore-query.
inline void DefineScanDistance(OptionTable& table, int* distance) {
  table.Add(kScanGroup, "distance", WholeNumber("distance", distance, 0, 64)->value_name("K"),
            "The largest Hamming distance, in bits, between two documents that count as "
            "near-duplicates; at most the store's planned distance. Default: the planned "
            "distance. e.g. --distance 2");
}

inline std::optional<int> CheckScanDistance(const po::variables_map& vm, int distance) {
  if (vm.count("distance") == 0) return std::nullopt;
  return distance;
}

inline void DefineOutput(OptionTable& table, std::string* output, std::string_view what) {
  table.Add(kOutputGroup, "output,o", po::value(output)->value_name("FILE"),
            std::string(what) +
                " - means standard output. A file is written under a temporary name and renamed "
                "when complete, so a failed run leaves no partial file. Default: -. "
                "e.g. --output out.tsv");
}

inline void CheckOutput(const std::string& output) {
  if (output.empty()) throw UsageError("--output: empty file name (use - for standard output)");
}

// A store's --db description, by how the command opens it.
inline StoreFlags::Config ReadOnlyStore() {
  return {.db_help = "The store, opened read-only: works while another process writes to it."};
}
inline StoreFlags::Config WritableStore(bool durability = false) {
  return {.durability = durability, .db_help = "The store, opened for writing; it must exist."};
}

inline void CloseStore(Store& store) { ThrowIfError(store.Close()); }

// The commands, one factory each, defined in admin_{inspect,maintain,write,scan}.cc.
std::unique_ptr<Command> NewCreateCommand();
std::unique_ptr<Command> NewStatsCommand();
std::unique_ptr<Command> NewDumpCommand();
std::unique_ptr<Command> NewCheckpointCommand();
std::unique_ptr<Command> NewCompactCommand();
std::unique_ptr<Command> NewVerifyCommand();
std::unique_ptr<Command> NewRepairCommand();
std::unique_ptr<Command> NewRecoverCommand();
std::unique_ptr<Command> NewInsertCommand();
std::unique_ptr<Command> NewRemoveCommand();
std::unique_ptr<Command> NewExpireCommand();
std::unique_ptr<Command> NewFindAllCommand();
std::unique_ptr<Command> NewClustersCommand();

}  // namespace fpstore::cli::admin

#endif  // FPSTORE_TOOLS_CLI_ADMIN_COMMON_H_
