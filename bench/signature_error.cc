// The error of EstimateSimilarity: for signatures of each size and pairs of
// texts of known Jaccard similarity J, the mean estimate less J (the bias)
// and the standard deviation of the estimates, beside the standard error of
// the model in docs/design.md and that of 256 one-byte MinHash slots (the
// signature fingerprint version 1 made, 256 bytes). Reproduces the table in
// docs/design.md, "Confirming candidates".
//
//   build/release/bench/signature_error [--trials N] [--words N]

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fpstore/fingerprinter.h"

namespace {

// The model: the slots' sampling error plus that of counting the slots
// that differ by the bits that do (docs/design.md).
double ModelError(double j, int bytes) {
  const double n = 8.0 * bytes, k = 16.0 * bytes;
  const double q = std::exp(-4 * k * (1 - j) / n), p = (1 - q) / 2;
  return std::sqrt(j * (1 - j) / k + n * p * (1 - p) / (4 * q * q) / (k * k));
}

// A text of `words` distinct words named by `tag`, numbered from `first`.
std::string Words(const std::string& tag, int first, int words) {
  std::string text;
  for (int i = first; i < first + words; ++i) text += tag + "x" + std::to_string(i) + " ";
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 1000, words = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const int value = std::atoi(argv[i + 1]);
    if (flag == "--trials" && value > 1) {
      trials = value;
    } else if (flag == "--words" && value > 10) {
      words = value;
    } else {
      std::fprintf(stderr,
                   "signature_error: usage: signature_error [--trials N>1] [--words N>10]\n");
      return 2;
    }
  }
  std::printf(
      "texts of %d words, %d pairs a cell; signature window 1 (its shingles are the words)\n",
      words, trials);
  std::printf("bytes  J     bias     std.dev  model    1-byte slots x 256\n");
  for (const int bytes : {16, 32, 64, 128, 256}) {
    const fpstore::Fingerprinter f =
        *fpstore::Fingerprinter::Create({.signature_bytes = bytes, .signature_window = 1});
    for (const double j : {0.7, 0.8, 0.85, 0.9, 0.95}) {
      // |A| = |B| = words, |A n B| = s: J = s / (2 words - s).
      const int shared = static_cast<int>(std::lround(2 * words * j / (1 + j)));
      const double exact = shared / (2.0 * words - shared);
      double sum = 0, squares = 0;
      for (int t = 0; t < trials; ++t) {
        const std::string tag = "t" + std::to_string(t);
        const std::string common = Words(tag + "s", 0, shared);
        const fpstore::Sketch a = *f.SketchText(common + Words(tag + "a", 0, words - shared));
        const fpstore::Sketch b = *f.SketchText(common + Words(tag + "b", 0, words - shared));
        const double e = *fpstore::EstimateSimilarity(a.signature, b.signature) - exact;
        sum += e;
        squares += e * e;
      }
      const double mean = sum / trials;
      const double sd = std::sqrt((squares - trials * mean * mean) / (trials - 1));
      std::printf("%-6d %.3f %+.5f %.5f  %.5f  %.5f\n", bytes, exact, mean, sd,
                  ModelError(exact, bytes), std::sqrt(exact * (1 - exact) / 256));
    }
  }
  return 0;
}
