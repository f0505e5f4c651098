#include "store/id_locks.h"

#include <algorithm>
#include <utility>

namespace fpstore::internal {

bool IdLocks::Free(std::span<const DocumentId> ids, const Waiter* self) const {
  for (DocumentId id : ids) {
    if (held_.contains(id)) return false;
  }
  // Nor wanted by an earlier waiter: else a stream of small writes could keep a large batch out.
  for (const Waiter* w : waiting_) {
    if (w == self) break;
    for (DocumentId id : ids) {
      if (std::binary_search(w->begin(), w->end(), id)) return false;
    }
  }
  return true;
}

IdLocks::Held IdLocks::Lock(std::span<const DocumentId> ids) {
  std::vector<DocumentId> taken(ids.begin(), ids.end());
  MutexLock lock(mu_);
  if (!Free(taken, nullptr)) {
    // Sorted, for the batches that come later to search.
    std::sort(taken.begin(), taken.end());
    waiting_.push_back(&taken);
    while (!Free(taken, &taken)) released_.Wait(mu_);
    waiting_.erase(std::find(waiting_.begin(), waiting_.end(), &taken));
    // Batches behind this one may have waited only for its place.
    released_.NotifyAll();
  }
  try {
    held_.insert(taken.begin(), taken.end());
  } catch (...) {
    // Out of memory: none held rather than some, forever.
    for (DocumentId id : taken) held_.erase(id);
    throw;
  }
  return Held(this, std::move(taken));
}

void IdLocks::GiveBack(std::vector<DocumentId> ids) {
  bool wake;
  {
    MutexLock lock(mu_);
    for (DocumentId id : ids) held_.erase(id);
    wake = !waiting_.empty();
  }
  if (wake) released_.NotifyAll();
}

std::size_t IdLocks::held_count() const {
  MutexLock lock(mu_);
  return held_.size();
}

std::size_t IdLocks::waiting_count() const {
  MutexLock lock(mu_);
  return waiting_.size();
}

}  // namespace fpstore::internal
