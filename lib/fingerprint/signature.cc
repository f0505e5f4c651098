#include "fpstore/signature.h"

#include <cstring>
#include <utility>
#include <vector>

#include "fingerprint/signature_builder.h"

namespace fpstore {

Result<Signature> Signature::FromBytes(std::string_view bytes) {
  if (!bytes.empty() && (bytes.size() < kMinSlots || bytes.size() > kMaxSlots)) {
    return Status::InvalidArgument("a signature of " + std::to_string(bytes.size()) +
                                   " bytes (expected none, or " + std::to_string(kMinSlots) +
                                   " to " + std::to_string(kMaxSlots) + ")");
  }
  return Signature(std::string(bytes));
}

std::optional<double> EstimateSimilarity(const Signature& a, const Signature& b) {
  if (a.empty() || a.slots() != b.slots()) return std::nullopt;
  const std::string_view x = a.bytes(), y = b.bytes();
  std::size_t equal = 0;
  std::size_t i = 0;
  // Eight slots at a time: a zero byte in x ^ y is an equal slot.
  for (; i + 8 <= x.size(); i += 8) {
    std::uint64_t u, v;
    std::memcpy(&u, x.data() + i, 8);
    std::memcpy(&v, y.data() + i, 8);
    const std::uint64_t d = u ^ v;
    // High bit of each byte set iff the byte is nonzero.
    const std::uint64_t nonzero =
        (((d & 0x7f7f7f7f7f7f7f7fULL) + 0x7f7f7f7f7f7f7f7fULL) | d) & 0x8080808080808080ULL;
    equal += 8 - static_cast<std::size_t>(__builtin_popcountll(nonzero));
  }
  for (; i < x.size(); ++i) equal += x[i] == y[i];
  // Two slots whose minima differ still agree in their low 8 bits once in
  // 256: P(equal) = J + (1 - J) / 256.
  constexpr double kChance = 1.0 / 256;
  const double fraction = static_cast<double>(equal) / static_cast<double>(x.size());
  const double estimate = (fraction - kChance) / (1 - kChance);
  return estimate < 0 ? 0.0 : estimate;
}

namespace internal {

SignatureBuilder::SignatureBuilder(int slots, int window)
    : mins_(static_cast<std::size_t>(slots), kEmpty),
      window_(static_cast<std::size_t>(window)),
      ring_(window_, 0) {
  for (std::size_t i = 1; i < window_; ++i) leaving_power_ *= kBase;
}

std::string SignatureBuilder::Finish() {
  if (count_ == 0) return {};
  if (count_ < window_) AddShingle(rolling_);
  const std::size_t n = mins_.size();
  std::string bytes(n, '\0');
  // Each slot keeps its least hash's low byte. An empty slot borrows the
  // byte of the first full slot along its own fixed sequence of probes, the
  // same for every document: two documents then agree on it with
  // probability J (optimal densification). The empty slots, a fraction of
  // them at random, are listed and probed round by round, without a branch
  // per slot, so that one slot's probe need not wait for another's.
  std::vector<std::uint32_t> empty(n);
  std::size_t left = 0;
  for (std::size_t i = 0; i < n; ++i) {
    bytes[i] = static_cast<char>(mins_[i] & 0xff);
    empty[left] = static_cast<std::uint32_t>(i);
    left += mins_[i] == kEmpty;
  }
  for (std::uint64_t attempt = 1; left > 0; ++attempt) {
    std::size_t still = 0;
    for (std::size_t e = 0; e < left; ++e) {
      const std::uint32_t i = empty[e];
      const std::uint64_t min = mins_[Scale(Mix((std::uint64_t{i} << 32) + attempt), n)];
      bytes[i] = static_cast<char>(min & 0xff);  // written again by a later round if empty
      empty[still] = i;
      still += min == kEmpty;
    }
    left = still;
  }
  return bytes;
}

}  // namespace internal
}  // namespace fpstore
