// One-permutation MinHash over shingles of a token stream, densified and
// folded into an odd sketch: how a Fingerprinter makes a Signature
// (fpstore/signature.h; the bytes in docs/format.md, "Documents").
//
// Thread safety: a builder is used by one thread.

#ifndef FPSTORE_LIB_FINGERPRINT_SIGNATURE_BUILDER_H_
#define FPSTORE_LIB_FINGERPRINT_SIGNATURE_BUILDER_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace fpstore::internal {

// SplitMix64's finaliser: a bijection of 64-bit words with full avalanche.
inline std::uint64_t Mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// floor(high * n / 2^32) of h's high 32 bits: a slot without a division.
// REQUIRES: n <= 2^32.
inline std::size_t Scale(std::uint64_t h, std::size_t n) {
  return static_cast<std::size_t>(((h >> 32) * n) >> 32);
}

// Inline below: called for every token of every text.
class SignatureBuilder {
 public:
  // The slots of a signature of `bytes` bytes.
  static constexpr std::size_t kSlotsPerByte = 16;

  // REQUIRES: Signature::ValidSize(bytes); 1 <= window <= 64.
  SignatureBuilder(int bytes, int window);

  // The next token, by its hash (Fingerprinter::HashTerm). Each window of
  // `window` tokens is a shingle, hashed as a polynomial of its token
  // hashes, rolled from one shingle to the next in constant time.
  void AddToken(std::uint64_t token);

  // The signature's bytes; empty if no token was added. A text shorter than
  // the window has one shingle, of all its tokens.
  std::string Finish();

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  // The polynomial's base: odd, so multiplying by it is a bijection mod 2^64.
  static constexpr std::uint64_t kBase = 0x9e3779b97f4a7c15ULL;
  // Adds one shingle's polynomial hash; a repeated one changes nothing.
  void AddShingle(std::uint64_t polynomial);
  // Gives each empty slot the least hash of the first full slot in its own
  // sequence of slots.
  void Densify();

  std::vector<std::uint64_t> mins_;  // per slot, the least mixed hash seen; kEmpty if none
  const std::size_t window_;
  std::vector<std::uint64_t> ring_;  // the last `window_` token hashes
  std::size_t next_ = 0;             // where the next token goes in ring_
  std::uint64_t count_ = 0;          // tokens added
  std::uint64_t rolling_ = 0;        // the polynomial of the last min(count_, window_) tokens
  std::uint64_t leaving_power_ = 1;  // kBase^(window_ - 1)
};

inline void SignatureBuilder::AddToken(std::uint64_t token) {
  // rolling = sum of h_j * kBase^(n - 1 - j) over the window's tokens h_0 .. h_{n-1}; ring_[next_]
  // holds the oldest of them once the window is full.
  std::uint64_t& oldest = ring_[next_];
  if (count_ >= window_) rolling_ -= oldest * leaving_power_;
  rolling_ = rolling_ * kBase + token;
  oldest = token;
  if (++next_ == window_) next_ = 0;
  if (++count_ >= window_) AddShingle(rolling_);
}

inline void SignatureBuilder::AddShingle(std::uint64_t polynomial) {
  // Mixed, so that every bit depends on every token; the slot comes from
  // the high bits, and within a slot the least hash is a random member of
  // the slot's shingles all the same.
  const std::uint64_t h = Mix(polynomial);
  std::uint64_t& slot = mins_[Scale(h, mins_.size())];
  // A conditional move: whether h is less is as good as random while slots fill.
  slot = std::min(slot, h);
}

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FINGERPRINT_SIGNATURE_BUILDER_H_
