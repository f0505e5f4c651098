// fpstore as a user runs it: fingerprints from the public Fingerprinter, a
// store filled by its BulkLoader, and the near pairs from Store::FindAll.

#ifndef FPSTORE_BENCH_QUALITY_SIMHASH_PAIRS_H_
#define FPSTORE_BENCH_QUALITY_SIMHASH_PAIRS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "fpstore/store.h"
#include "quality/common.h"
#include "quality/corpus.h"

namespace fpstore::quality {

// The fingerprint and signature of every document's text
// (Fingerprinter::SketchText); stops the program with the document's id if
// one cannot be made (invalid UTF-8).
std::vector<Sketch> SketchAll(const std::vector<Document>& docs, const Fingerprinter& fingerprinter,
                              int threads);

// A new store in `dir` (absent or empty) created with `options`, holding
// every document with its url as metadata and its signature, loaded with
// one BulkLoader. Stops the program on an error.
std::unique_ptr<Store> LoadStore(const std::string& dir, const StoreOptions& options,
                                 const std::vector<Document>& docs,
                                 const std::vector<Sketch>& sketches);

// A pair the store found, by indices into the corpus, with its similarity
// (-1 when absent).
struct FoundPair {
  PairKey pair;
  double similarity;
  bool operator<(const FoundPair& o) const { return pair < o.pair; }
};

// Store::FindAll(k) with ScanOptions::min_similarity = `min_similarity`
// (none: the store's), sorted by pair.
std::vector<FoundPair> StorePairs(const Store& store, int k, std::optional<double> min_similarity,
                                  const std::unordered_map<DocumentId, std::uint32_t>& index_of);

// The pairs of `found` whose similarity is at least `min_similarity`.
std::vector<PairKey> PairsAbove(const std::vector<FoundPair>& found, double min_similarity);

// Every pair within k bits, by a brute-force popcount over all pairs, sorted.
std::vector<PairKey> BruteForcePairs(const std::vector<Fingerprint>& fingerprints, int k,
                                     int threads);

// How many pairs lie at each distance 0..max_k, counted by a brute-force
// popcount over all pairs: a check of the store's answers.
std::vector<std::uint64_t> BruteForceCounts(const std::vector<Fingerprint>& fingerprints, int max_k,
                                            int threads);

}  // namespace fpstore::quality

#endif  // FPSTORE_BENCH_QUALITY_SIMHASH_PAIRS_H_
