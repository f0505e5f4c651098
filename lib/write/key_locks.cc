#include "write/key_locks.h"

#include <algorithm>
#include <utility>

#include "plan/table_entry.h"

namespace fpstore::internal {

std::vector<LockKey> NearKeys(const PermutationPlan& plan, Word fp) {
  std::vector<LockKey> keys;
  for (std::size_t t = 0; t < plan.table_count(); ++t) {
    const TablePermutation& perm = plan.table(t);
    // splitmix64's finalizer of the prefix, offset by the table: prefixes of different tables
    // rarely meet.
    const Word prefix = Permute(perm, fp) & PrefixMask(perm);
    std::uint64_t x =
        (prefix.low() ^ (prefix.high() * 0xc2b2ae3d27d4eb4fULL)) + 0x9e3779b97f4a7c15ULL * (t + 1);
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    keys.push_back(x ^ (x >> 31));
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

bool KeyLocks::Free(std::span<const LockKey> keys, const Waiter* self) const {
  for (LockKey key : keys) {
    if (held_.contains(key)) return false;
  }
  // Nor wanted by an earlier waiter: else a stream of small writes could keep a large batch out.
  for (const Waiter* w : waiting_) {
    if (w == self) break;
    for (LockKey key : keys) {
      if (std::binary_search(w->begin(), w->end(), key)) return false;
    }
  }
  return true;
}

KeyLocks::Held KeyLocks::Lock(std::span<const LockKey> keys) {
  std::vector<LockKey> taken(keys.begin(), keys.end());
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
    for (LockKey key : taken) held_.erase(key);
    throw;
  }
  return Held(this, std::move(taken));
}

void KeyLocks::GiveBack(std::vector<LockKey> keys) {
  bool wake;
  {
    MutexLock lock(mu_);
    for (LockKey key : keys) held_.erase(key);
    wake = !waiting_.empty();
  }
  if (wake) released_.NotifyAll();
}

std::size_t KeyLocks::held_count() const {
  MutexLock lock(mu_);
  return held_.size();
}

std::size_t KeyLocks::waiting_count() const {
  MutexLock lock(mu_);
  return waiting_.size();
}

}  // namespace fpstore::internal
