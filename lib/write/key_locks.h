// Locks on keys, taken a whole batch at a time: a writer's document ids, so that its read of a
// document's version and its write of the next one are atomic; and CheckAndInsert's near keys, so
// that of two near-duplicates offered at once the second sees the first.

#ifndef FPSTORE_LIB_WRITE_KEY_LOCKS_H_
#define FPSTORE_LIB_WRITE_KEY_LOCKS_H_

#include <cstddef>
#include <span>
#include <unordered_set>
#include <vector>

#include "fpstore/document.h"
#include "fpstore/permutation.h"
#include "plan/table_entry.h"
#include "util/holding.h"
#include "util/mutex.h"

namespace fpstore::internal {

// Keys share one space: an id is its own key, and a near key is hashed into the same 64 bits. Two
// keys that are equal by chance only make one writer wait for the other.
using LockKey = std::uint64_t;

// The keys of which any two fingerprints within `plan`'s distance share one: `fp`'s prefix in each
// table of `plan`, with the table's number. For the store's distance k, plan (k + 1, k) gives k + 1
// keys.
std::vector<LockKey> NearKeys(const PermutationPlan& plan, Word fp);

// A writer holds every key of its batch or none, so writers cannot deadlock each other, and two
// batches wait for each other only if they share a key (striped mutexes would let a large batch
// take nearly every stripe). Waiting batches go in turn: none takes a key an earlier waiter wants.
//
// Thread safety: Lock may be called concurrently; a Held belongs to one thread at a time.
class KeyLocks {
 public:
  // Keys held until destroyed or assigned over.
  using Held = Holding<KeyLocks, std::vector<LockKey>>;

  // Waits until no other holder has any of `keys` (without repeats), and no
  // batch that waited first wants one, then holds them all.
  Held Lock(std::span<const LockKey> keys) EXCLUDES(mu_);

  // Keys held now, and batches waiting: for tests.
  std::size_t held_count() const EXCLUDES(mu_);
  std::size_t waiting_count() const EXCLUDES(mu_);

 private:
  // A waiting batch's keys, sorted.
  using Waiter = std::vector<LockKey>;

  // Whether `keys` are neither held nor wanted by a batch waiting before
  // `self` (nullptr: a batch that has not waited, so behind every waiter).
  bool Free(std::span<const LockKey> keys, const Waiter* self) const REQUIRES(mu_);
  friend Held;
  void GiveBack(std::vector<LockKey> keys) EXCLUDES(mu_);

  mutable Mutex mu_;
  CondVar released_;  // keys were released, or a waiter left the queue
  std::vector<const Waiter*> waiting_ GUARDED_BY(mu_);  // in the order they began to wait
  std::unordered_set<LockKey> held_ GUARDED_BY(mu_);
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_WRITE_KEY_LOCKS_H_
