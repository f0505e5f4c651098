// Why the default window is 3: for each window, how often a licence text
// with 3 random words replaced stays within 3 bits of the original, and how
// far apart unrelated licences are. Reproduces the table in docs/design.md.
//
//   build/rel/bench/window_choice

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fpstore/fingerprinter.h"

namespace {

std::string ReadLicence(const std::string& name) {
  std::ifstream in("/usr/share/common-licenses/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

int main() {
  const char* edited[] = {"GPL-3", "Apache-2.0", "MPL-2.0", "LGPL-2.1",
                          "GPL-2", "Artistic",   "MPL-1.1", "GFDL-1.3"};
  const char* unrelated[] = {"GPL-3",   "Apache-2.0", "MPL-2.0", "Artistic",
                             "CC0-1.0", "BSD",        "GFDL-1.3"};
  std::printf("window  edited copy within 3 bits  unrelated licences: mean (min) distance\n");
  for (int window : {1, 2, 3, 4}) {
    const fpstore::Fingerprinter f = *fpstore::Fingerprinter::Create({.window = window});
    int within = 0, trials = 0;
    for (const char* name : edited) {
      const std::string text = ReadLicence(name);
      std::vector<std::string> words;
      std::istringstream in(text);
      for (std::string w; in >> w;) words.push_back(w);
      const fpstore::Fingerprint base = *f.FromText(text);
      std::mt19937 rng(1);
      for (int trial = 0; trial < 200; ++trial) {
        std::vector<std::string> copy = words;
        for (int e = 0; e < 3; ++e)
          copy[rng() % copy.size()] = "zzz" + std::to_string(rng() % 1000);
        std::string joined;
        for (const std::string& w : copy) joined += w + " ";
        within += fpstore::HammingDistance(base, *f.FromText(joined)) <= 3;
        ++trials;
      }
    }
    std::vector<fpstore::Fingerprint> fps;
    for (const char* name : unrelated) fps.push_back(*f.FromText(ReadLicence(name)));
    int total = 0, pairs = 0, closest = 64;
    for (std::size_t i = 0; i < fps.size(); ++i) {
      for (std::size_t j = i + 1; j < fps.size(); ++j) {
        const int d = fpstore::HammingDistance(fps[i], fps[j]);
        total += d;
        closest = std::min(closest, d);
        ++pairs;
      }
    }
    std::printf("%6d  %24.1f%%  %.1f (%d)\n", window, 100.0 * within / trials,
                static_cast<double>(total) / pairs, closest);
  }
}
