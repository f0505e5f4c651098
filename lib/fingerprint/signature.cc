#include "fpstore/signature.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <utility>
#include <vector>

#include "fingerprint/signature_builder.h"

namespace fpstore {

Result<Signature> Signature::FromBytes(std::string_view bytes) {
  if (!bytes.empty() && !ValidSize(bytes.size())) {
    return Status::InvalidArgument("a signature of " + std::to_string(bytes.size()) +
                                   " bytes (expected none, or a power of two from " +
                                   std::to_string(kMinBytes) + " to " + std::to_string(kMaxBytes) +
                                   ")");
  }
  return Signature(std::string(bytes));
}

std::optional<double> EstimateSimilarity(const Signature& a, const Signature& b) {
  if (a.empty() || a.size() != b.size()) return std::nullopt;
  const std::string_view x = a.bytes(), y = b.bytes();
  std::size_t differ = 0;
  for (std::size_t i = 0; i < x.size(); i += 8) {  // sizes are multiples of 8
    std::uint64_t u, v;
    std::memcpy(&u, x.data() + i, 8);
    std::memcpy(&v, y.data() + i, 8);
    differ += static_cast<std::size_t>(__builtin_popcountll(u ^ v));
  }
  // A slot that differs flips two bits, one in each signature; the bits that
  // differ are those flipped an odd number of times. With m = 2 D flips
  // over n bits, E[z] = n (1 - (1 - 2 / n)^m) / 2, about n (1 - e^(-4 D / n)) / 2.
  const double n = 8.0 * static_cast<double>(x.size());
  const double p = static_cast<double>(differ) / n;
  const double q = 1 - 2 * p;
  if (q <= 0) return 0.0;
  const double slots = static_cast<double>(internal::SignatureBuilder::kSlotsPerByte * x.size());
  // Inverting E[z] gives D. Being convex in z, the inverse overshoots D by
  // about half its second derivative times z's variance: p (1 - p) / (2 q^2)
  // slots, a small fraction of its standard error where near-copies are
  // decided (docs/design.md), and left in.
  const double differing_slots = -(n / 4) * std::log(q);
  return std::clamp(1 - differing_slots / slots, 0.0, 1.0);
}

namespace internal {

SignatureBuilder::SignatureBuilder(int bytes, int window)
    : mins_(kSlotsPerByte * static_cast<std::size_t>(bytes), kEmpty),
      window_(static_cast<std::size_t>(window)),
      ring_(window_, 0) {
  for (std::size_t i = 1; i < window_; ++i) leaving_power_ *= kBase;
}

namespace {

// Slot i's sequence, t -> (step t + start) mod S: the same for every text.
struct Sequence {
  std::uint32_t step;  // odd
  std::uint32_t start;
};

// The sequences of the S slots, made once for each S a signature may have
// (16 slots a byte: 256 to 4,096), so that texts do not hash them anew.
const std::vector<Sequence>& SequencesOf(std::size_t slots) {
  constexpr std::size_t kMinSlots = SignatureBuilder::kSlotsPerByte * Signature::kMinBytes;
  constexpr int kSizes = std::countr_zero(static_cast<unsigned>(Signature::kMaxBytes)) -
                         std::countr_zero(static_cast<unsigned>(Signature::kMinBytes)) + 1;
  static const std::array<std::vector<Sequence>, kSizes> all = [] {
    std::array<std::vector<Sequence>, kSizes> made;
    for (int size = 0; size < kSizes; ++size) {
      const std::uint64_t n = kMinSlots << size, mask = n - 1;
      made[size].resize(n);
      for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t h = Mix(i + 0x632be59bd9b4e019ULL);
        made[size][i] = {static_cast<std::uint32_t>((h | 1) & mask),
                         static_cast<std::uint32_t>((h >> 32) & mask)};
      }
    }
    return made;
  }();
  return all[std::countr_zero(slots / kMinSlots)];
}

}  // namespace

void SignatureBuilder::Densify() {
  // Slot i's sequence is t -> (a t + b) mod S for odd a, a permutation of the
  // S slots (S a power of two), the same for every document; the slot takes
  // the least hash of the first full slot in it. Whatever the sequences, two
  // documents then agree on an empty slot with probability J (optimal
  // densification). The first full slot is found either by walking the
  // sequence, about S / f steps for f full slots, or as the full slot j
  // whose place in it, a^-1 (j - b) mod S, is least: f steps. Both give the
  // same slot, so each text takes the shorter way: at most sqrt(S) steps a
  // slot. Empty slots take values in place: `full` keeps which slots were full.
  const std::size_t n = mins_.size();
  const std::uint64_t mask = n - 1;
  // Which slots are full, 64 a word, without a branch per slot (whether a
  // slot is full is as good as random); then the empty ones and, where the
  // full ones are few, those, by their bits.
  std::vector<std::uint64_t> full(n / 64, 0);
  std::size_t full_count = 0;
  for (std::size_t w = 0; w < full.size(); ++w) {
    std::uint64_t word = 0;
    for (std::size_t k = 0; k < 64; ++k) {
      word |= std::uint64_t{mins_[64 * w + k] != kEmpty} << k;
    }
    full[w] = word;
    full_count += static_cast<std::size_t>(std::popcount(word));
  }
  if (full_count == n) return;
  const auto slots_of = [&](bool full_ones, std::vector<std::uint32_t>& out) {
    out.clear();
    for (std::size_t w = 0; w < full.size(); ++w) {
      for (std::uint64_t word = full_ones ? full[w] : ~full[w]; word != 0; word &= word - 1) {
        out.push_back(static_cast<std::uint32_t>(64 * w) +
                      static_cast<std::uint32_t>(std::countr_zero(word)));
      }
    }
  };
  std::vector<std::uint32_t> empty;
  empty.reserve(n - full_count);
  slots_of(false, empty);
  const std::size_t empty_count = empty.size();
  const std::vector<Sequence>& sequences = SequencesOf(n);
  if (n > full_count * full_count) {
    std::vector<std::uint32_t> full_slots;
    full_slots.reserve(full_count);
    slots_of(true, full_slots);
    for (const std::uint32_t i : empty) {
      const std::uint64_t a = sequences[i].step, b = sequences[i].start;
      // a^-1 modulo 2^64 by Newton's iteration: each step doubles the bits
      // that are right, from the 3 that a itself gets right.
      std::uint64_t inverse = a;
      for (int step = 0; step < 5; ++step) inverse *= 2 - a * inverse;
      std::uint64_t least = ~std::uint64_t{0}, source = 0;
      for (const std::uint32_t j : full_slots) {
        const std::uint64_t place = (inverse * (j - b)) & mask;
        source = place < least ? j : source;
        least = std::min(least, place);
      }
      mins_[i] = mins_[source];
    }
    return;
  }
  // The walks, one step of every unfinished walk a round, without a branch
  // per slot, so that one walk's step need not wait for another's.
  std::vector<std::uint32_t> at(empty_count), stride(empty_count);
  for (std::size_t e = 0; e < empty_count; ++e) {
    at[e] = sequences[empty[e]].start;
    stride[e] = sequences[empty[e]].step;
  }
  for (std::size_t left = empty_count; left > 0;) {
    std::size_t still = 0;
    for (std::size_t e = 0; e < left; ++e) {
      const std::uint32_t i = empty[e], j = at[e], a = stride[e];
      const bool found = (full[j / 64] >> (j % 64)) & 1;
      mins_[i] = mins_[j];  // written again by a later round if not found
      empty[still] = i;
      at[still] = static_cast<std::uint32_t>((j + a) & mask);
      stride[still] = a;
      still += !found;
    }
    left = still;
  }
}

std::string SignatureBuilder::Finish() {
  if (count_ == 0) return {};
  if (count_ < window_) AddShingle(rolling_);
  Densify();
  // Each slot flips the bit its least hash and its own index choose: two
  // slots that hold the same hash flip different bits, so that the flips of
  // the slots that differ land independently.
  const std::size_t n = mins_.size();
  const std::size_t bits = n / kSlotsPerByte * 8;
  std::string bytes(bits / 8, '\0');
  for (std::size_t i = 0; i < n; ++i) {
    // The values are mixed already: one multiply spreads the pair (value, i).
    const std::size_t bit =
        Scale((mins_[i] ^ (i * 0x9e3779b97f4a7c15ULL)) * 0xd6e8feb86659fd93ULL, bits);
    bytes[bit / 8] = static_cast<char>(bytes[bit / 8] ^ (1 << (bit % 8)));
  }
  return bytes;
}

}  // namespace internal
}  // namespace fpstore
