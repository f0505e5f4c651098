#include "fpstore/simhash.h"

#include <array>
#include <cassert>
#include <cinttypes>
#include <cstdio>
#include <ostream>

namespace fpstore {

std::ostream& operator<<(std::ostream& out, Fingerprint fp) {
  char text[35];
  if (fp.fits_64()) {
    std::snprintf(text, sizeof text, "0x%016" PRIx64, fp.low());
  } else {
    std::snprintf(text, sizeof text, "0x%016" PRIx64 "%016" PRIx64, fp.high(), fp.low());
  }
  return out << text;
}

Fingerprint Simhash(std::span<const WeightedFeature> features, int width) {
  assert(width >= 1 && width <= 128);
  // Votes for and against each bit are summed apart: a real-valued tie such as
  // 1/3 + 1/6 against 3 x 1/6 then rounds alike and stays a tie, where a signed
  // running sum could drift by an ulp and flip the bit.
  std::array<double, 128> for_one{}, for_zero{};
  for (const WeightedFeature& f : features) {
    for (int bit = 0; bit < width; ++bit) {
      const std::uint64_t word = bit < 64 ? f.hash.low() : f.hash.high();
      ((word >> (bit & 63)) & 1 ? for_one : for_zero)[bit] += f.weight;
    }
  }
  std::uint64_t words[2] = {0, 0};
  for (int bit = 0; bit < width; ++bit) {
    if (for_one[bit] > for_zero[bit]) words[bit / 64] |= std::uint64_t{1} << (bit & 63);
  }
  return Fingerprint(words[1], words[0]);
}

}  // namespace fpstore
