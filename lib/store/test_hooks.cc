#include "store/test_hooks.h"

#include <algorithm>
#include <mutex>
#include <utility>

#include "store/recent_prefixes.h"

namespace fpstore::internal {

namespace {

std::mutex hooks_mu;
std::function<Status()> during_merge;                          // guarded by hooks_mu
std::function<void()> after_ingestion;                         // guarded by hooks_mu
std::function<void(const std::atomic<bool>&)> before_rewrite;  // guarded by hooks_mu
std::function<void()> before_staging_room;                     // guarded by hooks_mu
std::function<void()> after_verify_snapshot;                   // guarded by hooks_mu
std::atomic<std::uint64_t> rewrite_threshold{0};
std::atomic<std::uint64_t> recent_limit{0};
std::atomic<std::size_t> split_above{0};
std::atomic<rocksdb::Env*> env_for_testing{nullptr};
std::atomic<std::int64_t> reopen_interval_ms{-1};

template <typename Hook>
Hook Get(const Hook& hook) {
  std::lock_guard lock(hooks_mu);
  return hook;
}

template <typename Hook>
void Set(Hook& hook, Hook value) {
  std::lock_guard lock(hooks_mu);
  hook = std::move(value);
}

}  // namespace

void SetDuringMergeForTesting(std::function<Status()> hook) { Set(during_merge, std::move(hook)); }

Status DuringMerge() {
  const std::function<Status()> hook = Get(during_merge);
  return hook ? hook() : Status::OK();
}

void SetAfterIngestionForTesting(std::function<void()> hook) {
  Set(after_ingestion, std::move(hook));
}

void AfterIngestion() {
  if (const std::function<void()> hook = Get(after_ingestion)) hook();
}

void SetAfterVerifySnapshotForTesting(std::function<void()> hook) {
  Set(after_verify_snapshot, std::move(hook));
}

void AfterVerifySnapshot() {
  if (const std::function<void()> hook = Get(after_verify_snapshot)) hook();
}

void SetBeforeLoneBitsRewriteForTesting(std::function<void(const std::atomic<bool>&)> hook) {
  Set(before_rewrite, std::move(hook));
}

void BeforeLoneBitsRewrite(const std::atomic<bool>& closing) {
  if (const auto hook = Get(before_rewrite)) hook(closing);
}

void SetBeforeStagingRoomForTesting(std::function<void()> hook) {
  Set(before_staging_room, std::move(hook));
}

void BeforeStagingRoom() {
  if (const std::function<void()> hook = Get(before_staging_room)) hook();
}

std::uint64_t LoneBitsRewriteThreshold(std::uint64_t documents) {
  const std::uint64_t threshold = rewrite_threshold.load();
  return threshold != 0 ? threshold : std::max(RecentPrefixesLimit() / 2, documents / 8);
}

void SetLoneBitsRewriteThresholdForTesting(std::uint64_t threshold) {
  rewrite_threshold = threshold;
}

std::uint64_t RecentPrefixesLimit() {
  const std::uint64_t limit = recent_limit.load();
  return limit != 0 ? limit : RecentPrefixes::kDefaultLimit;
}

void SetRecentPrefixesLimitForTesting(std::uint64_t limit) { recent_limit = limit; }

std::size_t SplitLastTableAbove() {
  const std::size_t ops = split_above.load();
  return ops != 0 ? ops : std::size_t{1} << 20;
}

void SetSplitLastTableAboveForTesting(std::size_t ops) { split_above = ops; }

std::chrono::milliseconds ReopenInterval() {
  const std::int64_t set = reopen_interval_ms.load();
  return std::chrono::milliseconds(set >= 0 ? set : 1000);
}

void SetReopenIntervalForTesting(std::chrono::milliseconds interval) {
  reopen_interval_ms.store(interval.count());
}

void SetEnvForTesting(rocksdb::Env* env) { env_for_testing = env; }
rocksdb::Env* EnvForTesting() { return env_for_testing; }

}  // namespace fpstore::internal
