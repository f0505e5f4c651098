// Locks on document ids, taken a whole batch at a time, so that a writer's
// read of a document's version and its write of the next one are atomic.

#ifndef FPSTORE_LIB_STORE_ID_LOCKS_H_
#define FPSTORE_LIB_STORE_ID_LOCKS_H_

#include <cstddef>
#include <span>
#include <unordered_set>
#include <vector>

#include "fpstore/document.h"
#include "util/holding.h"
#include "util/mutex.h"

namespace fpstore::internal {

// A writer holds every id of its batch or none, so writers cannot deadlock each other, and two
// batches wait for each other only if they share an id (striped mutexes would let a large batch
// take nearly every stripe). Waiting batches go in turn: none takes an id an earlier waiter wants.
//
// Thread safety: Lock may be called concurrently; a Held belongs to one thread at a time.
class IdLocks {
 public:
  // Ids held until destroyed or assigned over.
  using Held = Holding<IdLocks, std::vector<DocumentId>>;

  // Waits until no other holder has any of `ids` (without repeats), and no
  // batch that waited first wants one, then holds them all.
  Held Lock(std::span<const DocumentId> ids) EXCLUDES(mu_);

  // Ids held now, and batches waiting: for tests.
  std::size_t held_count() const EXCLUDES(mu_);
  std::size_t waiting_count() const EXCLUDES(mu_);

 private:
  // A waiting batch's ids, sorted.
  using Waiter = std::vector<DocumentId>;

  // Whether `ids` are neither held nor wanted by a batch waiting before
  // `self` (nullptr: a batch that has not waited, so behind every waiter).
  bool Free(std::span<const DocumentId> ids, const Waiter* self) const REQUIRES(mu_);
  friend Held;
  void GiveBack(std::vector<DocumentId> ids) EXCLUDES(mu_);

  mutable Mutex mu_;
  CondVar released_;  // ids were released, or a waiter left the queue
  std::vector<const Waiter*> waiting_ GUARDED_BY(mu_);  // in the order they began to wait
  std::unordered_set<DocumentId> held_ GUARDED_BY(mu_);
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_ID_LOCKS_H_
