// What a store records about itself when it is created, whichever backend holds it (the embedded
// store's metadata family, a Redis store's layout hash; docs/format.md): the plan, the fingerprint
// options and the default similarity threshold, their text forms, and the rule that options given
// when opening an existing store must agree with them.

#ifndef FPSTORE_LIB_FORMAT_RECORDED_OPTIONS_H_
#define FPSTORE_LIB_FORMAT_RECORDED_OPTIONS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "fpstore/fingerprinter.h"
#include "fpstore/options.h"
#include "fpstore/status.h"
#include "util/parse_number.h"

namespace fpstore::internal {

struct RecordedOptions {
  int blocks = 0;
  int distance = 0;
  FingerprintOptions fingerprint;
  double min_similarity = 0;
  std::int64_t retention_seconds = 0;  // 0: none
};

// The options a store created with `options` records: each unset one at its default (the plan's
// for the width). The width is the fingerprint options' bits. InvalidArgument if min_similarity
// is out of range, or bits is neither 64 nor 128 or disagrees with the fingerprint options.
Result<RecordedOptions> RecordedOptionsFor(const StoreOptions& options);

// Reads a plan record, PermutationPlan::ToString's "blocks=M distance=K", and " bits=128" for
// 128 bits; false if it is none.
bool ParsePlanRecord(const std::string& value, int* blocks, int* distance, int* bits);
// Corruption naming `where` unless the plan record's width is the fingerprint options'.
Status CheckPlanWidth(const std::string& where, int plan_bits, const FingerprintOptions& recorded);

// InvalidArgument naming `where` and the first option set in `options` that disagrees with
// `recorded`.
Status CheckAgainstRecorded(const std::string& where, const StoreOptions& options,
                            const RecordedOptions& recorded);

// InvalidArgument unless 0 <= value <= 1.
Status CheckMinSimilarity(double value);
// InvalidArgument unless 0 <= seconds <= kMaxDocumentTime.
Status CheckRetention(std::int64_t seconds);

// What a call's distance and threshold mean for a store planned for `planned_distance` whose
// default threshold is `default_similarity`: unset ones filled in, each checked (InvalidArgument).
struct Matching {
  int distance;
  double min_similarity;
};
Result<Matching> MatchingFor(std::optional<int> distance, std::optional<double> min_similarity,
                             int planned_distance, double default_similarity);

// The shortest text that parses back to `value`.
std::string DoubleText(double value);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FORMAT_RECORDED_OPTIONS_H_
