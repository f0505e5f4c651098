#include "fpstore/simhash.h"

#include <array>
#include <cassert>

namespace fpstore {

std::uint64_t Simhash(std::span<const WeightedFeature> features, int width) {
  assert(width >= 1 && width <= 64);
  // Votes for and against each bit are summed apart: a real-valued tie such as
  // 1/3 + 1/6 against 3 x 1/6 then rounds alike and stays a tie, where a signed
  // running sum could drift by an ulp and flip the bit.
  std::array<double, 64> for_one{}, for_zero{};
  for (const WeightedFeature& f : features) {
    for (int bit = 0; bit < width; ++bit) {
      ((f.hash >> bit) & 1 ? for_one : for_zero)[bit] += f.weight;
    }
  }
  std::uint64_t result = 0;
  for (int bit = 0; bit < width; ++bit) {
    if (for_one[bit] > for_zero[bit]) result |= std::uint64_t{1} << bit;
  }
  return result;
}

}  // namespace fpstore
