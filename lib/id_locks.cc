#include "id_locks.h"

#include <algorithm>
#include <utility>

namespace fpstore::internal {

IdLocks::Held::Held(Held&& other) noexcept
    : owner_(std::exchange(other.owner_, nullptr)), ids_(std::move(other.ids_)) {}

IdLocks::Held& IdLocks::Held::operator=(Held&& other) noexcept {
  if (this != &other) {
    Release();
    owner_ = std::exchange(other.owner_, nullptr);
    ids_ = std::move(other.ids_);
  }
  return *this;
}

IdLocks::Held::~Held() { Release(); }

void IdLocks::Held::Release() {
  if (owner_ != nullptr) std::exchange(owner_, nullptr)->Unlock(ids_);
  ids_.clear();
}

IdLocks::Held IdLocks::Lock(std::span<const DocumentId> ids) {
  std::vector<DocumentId> taken(ids.begin(), ids.end());
  std::unique_lock lock(mu_);
  const auto free = [&] {
    return std::none_of(taken.begin(), taken.end(),
                        [&](DocumentId id) { return held_.contains(id); });
  };
  if (!free()) {
    ++waiters_;
    released_.wait(lock, free);
    --waiters_;
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

void IdLocks::Unlock(std::span<const DocumentId> ids) {
  bool wake;
  {
    std::lock_guard lock(mu_);
    for (DocumentId id : ids) held_.erase(id);
    wake = waiters_ > 0;
  }
  if (wake) released_.notify_all();
}

std::size_t IdLocks::held_count() const {
  std::lock_guard lock(mu_);
  return held_.size();
}

}  // namespace fpstore::internal
