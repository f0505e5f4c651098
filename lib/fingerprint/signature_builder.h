// One-permutation MinHash with optimal densification, 8 bits a slot, over
// shingles of a token stream: how a Fingerprinter makes a Signature
// (fpstore/signature.h; the bytes in docs/format.md, "Documents").
//
// Thread safety: a builder is used by one thread.

#ifndef FPSTORE_LIB_FINGERPRINT_SIGNATURE_BUILDER_H_
#define FPSTORE_LIB_FINGERPRINT_SIGNATURE_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

namespace fpstore::internal {

class SignatureBuilder {
 public:
  // REQUIRES: slots >= 1; 1 <= window <= 64.
  SignatureBuilder(int slots, int window);

  // The next token, by its hash (Fingerprinter::HashTerm). Each window of
  // `window` tokens is a shingle, hashed as a polynomial of its token
  // hashes, rolled from one shingle to the next in constant time.
  void AddToken(std::uint64_t token);

  // The slots' bytes; empty if no token was added. A text shorter than the
  // window has one shingle, of all its tokens.
  std::string Finish();

 private:
  static constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
  // Adds one shingle's polynomial hash; a repeated one changes nothing.
  void AddShingle(std::uint64_t polynomial);

  std::vector<std::uint64_t> mins_;  // per slot, the least mixed hash seen; kEmpty if none
  const std::size_t window_;
  std::vector<std::uint64_t> ring_;  // the last `window_` token hashes
  std::size_t next_ = 0;             // where the next token goes in ring_
  std::uint64_t count_ = 0;          // tokens added
  std::uint64_t rolling_ = 0;        // the polynomial of the last min(count_, window_) tokens
  std::uint64_t leaving_power_ = 1;  // kBase^(window_ - 1)
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FINGERPRINT_SIGNATURE_BUILDER_H_
