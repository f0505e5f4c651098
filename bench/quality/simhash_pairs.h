// fpstore as a user runs it: fingerprints from the public Fingerprinter, a
// store filled by its BulkLoader, and the near pairs from Store::FindAll.

#ifndef FPSTORE_BENCH_QUALITY_SIMHASH_PAIRS_H_
#define FPSTORE_BENCH_QUALITY_SIMHASH_PAIRS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "fpstore/store.h"
#include "quality/common.h"
#include "quality/corpus.h"

namespace fpstore::quality {

// The fingerprint of every document's text; stops the program with the
// document's id if one cannot be made (invalid UTF-8).
std::vector<Fingerprint> FingerprintAll(const std::vector<Document>& docs,
                                        const Fingerprinter& fingerprinter, int threads);

// A new store in `dir` (absent or empty) created with `options`, holding
// every document with its url as metadata, loaded with one BulkLoader.
// Stops the program on an error.
std::unique_ptr<Store> LoadStore(const std::string& dir, const StoreOptions& options,
                                 const std::vector<Document>& docs,
                                 const std::vector<Fingerprint>& fingerprints);

// Store::FindAll(k), as pairs of indices into the corpus.
std::vector<PairKey> StorePairs(const Store& store, int k,
                                const std::unordered_map<DocumentId, std::uint32_t>& index_of);

// How many pairs lie at each distance 0..max_k, counted by a brute-force
// popcount over all pairs: a check of the store's answers.
std::vector<std::uint64_t> BruteForceCounts(const std::vector<Fingerprint>& fingerprints, int max_k,
                                            int threads);

}  // namespace fpstore::quality

#endif  // FPSTORE_BENCH_QUALITY_SIMHASH_PAIRS_H_
