#include "format/recorded_options.h"

#include <charconv>
#include <cstdio>
#include <string_view>

namespace fpstore::internal {

Result<RecordedOptions> RecordedOptionsFor(const StoreOptions& options) {
  FingerprintOptions fingerprint = options.fingerprint.value_or(FingerprintOptions{});
  if (options.bits) {
    if (*options.bits != 64 && *options.bits != 128) {
      return Status::InvalidArgument("bits " + std::to_string(*options.bits) +
                                     " is neither 64 nor 128");
    }
    if (options.fingerprint && fingerprint.bits != *options.bits) {
      return Status::InvalidArgument("bits " + std::to_string(*options.bits) +
                                     " disagrees with the fingerprint options \"" +
                                     fingerprint.ToString() + "\", which make " +
                                     std::to_string(fingerprint.bits) + "-bit fingerprints");
    }
    fingerprint.bits = *options.bits;
  }
  const bool wide = fingerprint.bits == 128;
  RecordedOptions recorded{options.blocks.value_or(wide ? 8 : 6),
                           options.distance.value_or(wide ? 6 : 3), fingerprint,
                           options.min_similarity.value_or(StoreOptions::kDefaultMinSimilarity),
                           options.retention_seconds.value_or(0)};
  if (Status s = CheckMinSimilarity(recorded.min_similarity); !s.ok()) return s;
  if (Status s = CheckRetention(recorded.retention_seconds); !s.ok()) return s;
  return recorded;
}

bool ParsePlanRecord(const std::string& value, int* blocks, int* distance, int* bits) {
  int end = 0;
  if (std::sscanf(value.c_str(), "blocks=%d distance=%d%n", blocks, distance, &end) != 2) {
    return false;
  }
  const std::string_view rest = std::string_view(value).substr(static_cast<std::size_t>(end));
  *bits = rest == " bits=128" ? 128 : 64;
  return rest.empty() || *bits == 128;
}

Status CheckPlanWidth(const std::string& where, int plan_bits, const FingerprintOptions& recorded) {
  if (plan_bits == recorded.bits) return Status::OK();
  return Status::Corruption(where + ": the plan record is of " + std::to_string(plan_bits) +
                            "-bit fingerprints, the fingerprint options record of " +
                            std::to_string(recorded.bits));
}

Status CheckAgainstRecorded(const std::string& where, const StoreOptions& options,
                            const RecordedOptions& recorded) {
  auto mismatch = [&](const std::string& what, const std::string& asked, const std::string& was) {
    return Status::InvalidArgument(where + " was created with " + what + " " + was + ", not " +
                                   asked);
  };
  if (options.bits && *options.bits != recorded.fingerprint.bits) {
    return mismatch("bits", std::to_string(*options.bits),
                    std::to_string(recorded.fingerprint.bits));
  }
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
  if (options.retention_seconds && *options.retention_seconds != recorded.retention_seconds) {
    return mismatch("retention_seconds", std::to_string(*options.retention_seconds),
                    std::to_string(recorded.retention_seconds));
  }
  return Status::OK();
}

Status CheckRetention(std::int64_t seconds) {
  if (seconds >= 0 && seconds <= kMaxDocumentTime) return Status::OK();
  return Status::InvalidArgument("retention_seconds " + std::to_string(seconds) +
                                 " is outside 0.." + std::to_string(kMaxDocumentTime));
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
