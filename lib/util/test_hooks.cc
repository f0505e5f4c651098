#include "util/test_hooks.h"

#include <mutex>
#include <utility>

namespace fpstore::internal {

namespace {

std::mutex hooks_mu;
std::function<Status()> during_merge;       // guarded by hooks_mu
std::function<void()> after_ingestion;      // guarded by hooks_mu
std::function<void()> before_staging_room;  // guarded by hooks_mu
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

void SetBeforeStagingRoomForTesting(std::function<void()> hook) {
  Set(before_staging_room, std::move(hook));
}

void BeforeStagingRoom() {
  if (const std::function<void()> hook = Get(before_staging_room)) hook();
}

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
