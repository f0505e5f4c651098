// Locks in a Redis Cluster, each a key (SET NX PX) beside what it guards, so that writers in many
// processes on many hosts take turns (docs/design.md, "The Redis backend"): a document's id lock
// in its shard's slot, a bucket's lock in the bucket's slot. A set of locks is taken all at once
// or not at all, so that two writers can never wait for each other; a writer that finds one taken
// gives back what it took and tries again a little later. A lock lapses after its time to live, so
// that a writer that died holding it stops nobody for long; a writer never commits once its locks
// may have lapsed (Expired).
//
// Thread safety: a LockSet is used by one thread at a time.

#ifndef FPSTORE_LIB_REDIS_LOCKS_H_
#define FPSTORE_LIB_REDIS_LOCKS_H_

#include <chrono>
#include <span>
#include <string>
#include <vector>

#include "fpstore/status.h"
#include "redis/cluster_client.h"

namespace fpstore::internal::redis {

struct LockOptions {
  // How long a lock lives if its holder never gives it back.
  // Check allows a write only in its first half, which leaves the other half for the write's
  // commands, however long the client takes to deliver them (its deadline is 15 s).
  std::chrono::milliseconds time_to_live{60000};
  // How long Acquire tries before it gives up with Busy.
  std::chrono::milliseconds patience{20000};
};

class LockSet {
 public:
  explicit LockSet(LockOptions options = {}) : options_(options) {}
  LockSet(const LockSet&) = delete;
  LockSet& operator=(const LockSet&) = delete;

  // Takes every lock of `keys` (duplicates allowed) at once, running `with` in the same pipelined
  // call each try; the replies of `with` of the try that took them into *replies. Busy if another
  // holder keeps one of them longer than options.patience; IOError if the cluster does not answer.
  // REQUIRES: holds none.
  Status Acquire(ClusterClient& client, std::vector<std::string> keys,
                 std::span<const Command> with = {}, std::vector<Reply>* replies = nullptr);

  // OK while the locks are surely held: taken less than their time to live ago, with a margin
  // for the commands still to send. IOError otherwise.
  Status Check() const;

  // Gives back the locks still held (a lapsed one another holder took is left alone).
  Status Release(ClusterClient& client);

  bool held() const { return !keys_.empty(); }

 private:
  const LockOptions options_;
  std::vector<std::string> keys_;  // held
  std::string token_;
  std::chrono::steady_clock::time_point taken_;
};

}  // namespace fpstore::internal::redis

#endif  // FPSTORE_LIB_REDIS_LOCKS_H_
