#include "format/recorded_options.h"

#include <charconv>

namespace fpstore::internal {

Result<RecordedOptions> RecordedOptionsFor(const StoreOptions& options) {
  RecordedOptions recorded{options.blocks.value_or(6), options.distance.value_or(3),
                           options.fingerprint.value_or(FingerprintOptions{}),
                           options.min_similarity.value_or(StoreOptions::kDefaultMinSimilarity)};
  if (Status s = CheckMinSimilarity(recorded.min_similarity); !s.ok()) return s;
  if (recorded.fingerprint.bits != 64) {
    return Status::InvalidArgument("fingerprint options \"" + recorded.fingerprint.ToString() +
                                   "\" make " + std::to_string(recorded.fingerprint.bits) +
                                   "-bit fingerprints; a store holds 64-bit fingerprints");
  }
  return recorded;
}

Status CheckRecordedWidth(const FingerprintOptions& recorded) {
  if (recorded.bits == 64) return Status::OK();
  return Status::NotSupported("the store records " + std::to_string(recorded.bits) +
                              "-bit fingerprints; this build's stores hold 64-bit ones");
}

Status CheckAgainstRecorded(const std::string& where, const StoreOptions& options,
                            const RecordedOptions& recorded) {
  auto mismatch = [&](const std::string& what, const std::string& asked, const std::string& was) {
    return Status::InvalidArgument(where + " was created with " + what + " " + was + ", not " +
                                   asked);
  };
  if (options.blocks && *options.blocks != recorded.blocks) {
    return mismatch("blocks", std::to_string(*options.blocks), std::to_string(recorded.blocks));
  }
  if (options.distance && *options.distance != recorded.distance) {
    return mismatch("distance", std::to_string(*options.distance),
                    std::to_string(recorded.distance));
  }
  if (options.fingerprint && !(*options.fingerprint == recorded.fingerprint)) {
    return mismatch("fingerprint options", "\"" + options.fingerprint->ToString() + "\"",
                    "\"" + recorded.fingerprint.ToString() + "\"");
  }
  if (options.min_similarity && *options.min_similarity != recorded.min_similarity) {
    return mismatch("min_similarity", DoubleText(*options.min_similarity),
                    DoubleText(recorded.min_similarity) +
                        " (QueryOptions and ScanOptions override it per call)");
  }
  return Status::OK();
}

Status CheckMinSimilarity(double value) {
  if (value >= 0 && value <= 1) return Status::OK();
  return Status::InvalidArgument("min_similarity " + DoubleText(value) + " is outside 0..1");
}

Result<Matching> MatchingFor(std::optional<int> distance, std::optional<double> min_similarity,
                             int planned_distance, double default_similarity) {
  const int k = distance.value_or(planned_distance);
  if (k < 0 || k > planned_distance) {
    return Status::InvalidArgument("distance " + std::to_string(k) + " is outside 0.." +
                                   std::to_string(planned_distance) +
                                   ", the distance this store was planned for");
  }
  const double t = min_similarity.value_or(default_similarity);
  if (Status s = CheckMinSimilarity(t); !s.ok()) return s;
  return Matching{k, t};
}

std::string DoubleText(double value) {
  char text[32];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, value);
  return std::string(text, ec == std::errc() ? end : text);
}

}  // namespace fpstore::internal
