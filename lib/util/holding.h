// A claim given back when its holder lets it go, for claims that must not
// leak past an early return: ids locked, room reserved.

#ifndef FPSTORE_LIB_UTIL_HOLDING_H_
#define FPSTORE_LIB_UTIL_HOLDING_H_

#include <utility>

namespace fpstore::internal {

// `what`, held from `owner` until destroyed or assigned over, then given back
// once: owner->GiveBack(what). Move-only; moving onto itself keeps the claim.
// Owner declares the Holding a friend if GiveBack is private.
template <typename Owner, typename What>
class Holding {
 public:
  Holding() = default;
  Holding(Owner* owner, What what) : owner_(owner), what_(std::move(what)) {}
  Holding(Holding&& other) noexcept
      : owner_(std::exchange(other.owner_, nullptr)), what_(std::move(other.what_)) {}
  Holding& operator=(Holding&& other) noexcept {
    if (this != &other) {
      Release();
      owner_ = std::exchange(other.owner_, nullptr);
      what_ = std::move(other.what_);
    }
    return *this;
  }
  ~Holding() { Release(); }

 private:
  void Release() {
    if (owner_ != nullptr) std::exchange(owner_, nullptr)->GiveBack(std::exchange(what_, What{}));
  }

  Owner* owner_ = nullptr;
  What what_{};
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_UTIL_HOLDING_H_
