#include "redis/locks.h"

#include <algorithm>
#include <random>
#include <thread>

namespace fpstore::internal::redis {

namespace {

// Deletes the lock KEYS[1] only if it still holds this holder's token ARGV[1].
constexpr const char* kReleaseScript =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end "
    "return 0";

std::string NewToken() {
  thread_local std::mt19937_64 random(std::random_device{}());
  static constexpr char kHex[] = "0123456789abcdef";
  std::string token(16, '0');
  std::uint64_t bits = random();
  for (char& c : token) {
    c = kHex[bits & 15];
    bits >>= 4;
  }
  return token;
}

Command ReleaseCommand(const std::string& key, const std::string& token) {
  return {key, {"EVAL", kReleaseScript, "1", key, token}};
}

}  // namespace

Status LockSet::Acquire(ClusterClient& client, std::vector<std::string> keys,
                        std::span<const Command> with, std::vector<Reply>* replies) {
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  const auto start = std::chrono::steady_clock::now();
  thread_local std::mt19937 random(std::random_device{}());
  for (int attempt = 0;; ++attempt) {
    token_ = NewToken();
    std::vector<Command> commands;
    commands.reserve(keys.size() + with.size());
    const std::string ttl = std::to_string(options_.time_to_live.count());
    for (const std::string& key : keys) {
      commands.push_back({key, {"SET", key, token_, "NX", "PX", ttl}});
    }
    commands.insert(commands.end(), with.begin(), with.end());
    taken_ = std::chrono::steady_clock::now();
    Result<std::vector<Reply>> got = client.Run(commands);
    if (!got.ok()) {
      // Some may be held: give back what is ours, as far as the cluster answers.
      keys_ = keys;
      (void)Release(client);
      return got.status();
    }
    std::string refused, error;
    for (std::size_t i = 0; i < keys.size(); ++i) {
      const Reply& r = (*got)[i];
      if (r.type == Reply::Type::kError && error.empty()) {
        error = keys[i] + ": " + r.str;
      } else if (r.type != Reply::Type::kStatus && refused.empty()) {
        refused = keys[i];
      }
    }
    if (refused.empty() && error.empty()) {
      keys_ = std::move(keys);
      if (replies != nullptr) replies->assign(got->begin() + keys_.size(), got->end());
      return Status::OK();
    }
    // Every key of this try is given back, the refused ones too: a SET that ran but whose reply
    // was lost is sent again by the client and refused by the lock it took itself, which holds
    // this try's token (the release script leaves others' locks alone).
    keys_ = keys;
    if (!error.empty()) {
      (void)Release(client);
      return Status::IOError("Redis refused the lock " + error);
    }
    if (Status s = Release(client); !s.ok()) return s;
    if (std::chrono::steady_clock::now() - start > options_.patience) {
      return Status::Busy("another writer has held the lock " + refused + " for over " +
                          std::to_string(options_.patience.count()) + " ms");
    }
    // A random wait, growing, so that writers that collided do not collide again.
    const int most = std::min(50, 1 << std::min(attempt, 6));
    std::this_thread::sleep_for(
        std::chrono::microseconds(std::uniform_int_distribution<int>(100, most * 1000)(random)));
  }
}

Status LockSet::Check() const {
  // The other half covers the commands between this check and the write it guards, retries
  // through a failover included.
  if (std::chrono::steady_clock::now() - taken_ < options_.time_to_live / 2) {
    return Status::OK();
  }
  return Status::IOError("a write held its locks for too long (their time to live is " +
                         std::to_string(options_.time_to_live.count()) +
                         " ms): it stopped before writing its documents' records, which repair "
                         "tidies after");
}

Status LockSet::Release(ClusterClient& client) {
  if (keys_.empty()) return Status::OK();
  std::vector<Command> commands;
  for (const std::string& key : keys_) commands.push_back(ReleaseCommand(key, token_));
  keys_.clear();
  Result<std::vector<Reply>> got = client.Run(commands);
  return got.ok() ? Status::OK() : got.status();
}

}  // namespace fpstore::internal::redis
