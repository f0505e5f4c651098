// Locks on document ids, taken a whole batch at a time, so that a writer's
// read of a document's version and its write of the next one are atomic.

#ifndef FPSTORE_LIB_STORE_ID_LOCKS_H_
#define FPSTORE_LIB_STORE_ID_LOCKS_H_

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <span>
#include <unordered_set>
#include <vector>

#include "fpstore/document.h"

namespace fpstore::internal {

// A writer holds every id of its batch or none, so writers cannot deadlock
// each other, and two batches wait for each other only if they share an id.
// Batches that wait go in turn: a batch does not take an id that one
// waiting before it wants.
// (Striped mutexes made every batch of 1,000 random ids take nearly all the
// stripes, so batches of different documents took turns.)
//
// Thread safety: Lock may be called concurrently; a Held belongs to one
// thread at a time.
class IdLocks {
 public:
  // Ids held until destroyed or assigned over.
  class Held {
   public:
    Held() = default;
    Held(Held&& other) noexcept;
    Held& operator=(Held&& other) noexcept;
    ~Held();

   private:
    friend class IdLocks;
    Held(IdLocks* owner, std::vector<DocumentId> ids) : owner_(owner), ids_(std::move(ids)) {}
    void Release();

    IdLocks* owner_ = nullptr;
    std::vector<DocumentId> ids_;
  };

  // Waits until no other holder has any of `ids` (without repeats), and no
  // batch that waited first wants one, then holds them all.
  Held Lock(std::span<const DocumentId> ids);

  // Ids held now, and batches waiting: for tests.
  std::size_t held_count() const;
  std::size_t waiting_count() const;

 private:
  // A waiting batch's ids, sorted.
  using Waiter = std::vector<DocumentId>;

  // Whether `ids` are neither held nor wanted by a batch waiting before
  // `self` (nullptr: a batch that has not waited, so behind every waiter).
  bool Free(std::span<const DocumentId> ids, const Waiter* self) const;
  void Unlock(std::span<const DocumentId> ids);

  mutable std::mutex mu_;
  std::condition_variable released_;
  std::vector<const Waiter*> waiting_;  // in the order they began to wait
  std::unordered_set<DocumentId> held_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_ID_LOCKS_H_
