// What a store records about itself when it is created, whichever backend holds it (the embedded
// store's metadata family, a Redis store's layout hash; docs/format.md): the plan, the fingerprint
// options and the default similarity threshold, their text forms, and the rule that options given
// when opening an existing store must agree with them.

#ifndef FPSTORE_LIB_FORMAT_RECORDED_OPTIONS_H_
#define FPSTORE_LIB_FORMAT_RECORDED_OPTIONS_H_

#include <charconv>
#include <string>
#include <string_view>
#include <system_error>

#include "fpstore/fingerprinter.h"
#include "fpstore/options.h"
#include "fpstore/status.h"

namespace fpstore::internal {

struct RecordedOptions {
  int blocks = 0;
  int distance = 0;
  FingerprintOptions fingerprint;
  double min_similarity = 0;
};

// The options a store created with `options` records: each unset one at its default.
// InvalidArgument if min_similarity is out of range.
Result<RecordedOptions> RecordedOptionsFor(const StoreOptions& options);

// InvalidArgument naming `where` and the first option set in `options` that disagrees with
// `recorded`.
Status CheckAgainstRecorded(const std::string& where, const StoreOptions& options,
                            const RecordedOptions& recorded);

// InvalidArgument unless 0 <= value <= 1.
Status CheckMinSimilarity(double value);

// The shortest text that parses back to `value`.
std::string DoubleText(double value);

// Whether the whole of `text` is a number of T (std::from_chars), put in `out`: how metadata
// values are read.
template <typename T>
bool ParseNumber(std::string_view text, T& out) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size();
}

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FORMAT_RECORDED_OPTIONS_H_
