#include "quality/simhash_pairs.h"

#include <algorithm>
#include <utility>

namespace fpstore::quality {

std::vector<Sketch> SketchAll(const std::vector<Document>& docs, const Fingerprinter& fingerprinter,
                              int threads) {
  std::vector<Sketch> sketches(docs.size());
  std::vector<std::string> errors(docs.size());
  ParallelFor(docs.size(), threads, [&](std::size_t i, int) {
    Result<Sketch> sketch = fingerprinter.SketchText(docs[i].text);
    if (sketch.ok()) {
      sketches[i] = *std::move(sketch);
    } else {
      errors[i] = sketch.status().ToString();
    }
  });
  for (std::size_t i = 0; i < docs.size(); ++i) {
    if (!errors[i].empty()) {
      Die("fingerprinting document " + std::to_string(docs[i].id) + ": " + errors[i]);
    }
  }
  return sketches;
}

std::unique_ptr<Store> LoadStore(const std::string& dir, const StoreOptions& options,
                                 const std::vector<Document>& docs,
                                 const std::vector<Sketch>& sketches) {
  Result<std::unique_ptr<Store>> store = Store::Open(dir, options);
  if (!store.ok()) Die("opening " + dir + ": " + store.status().ToString());
  Result<std::unique_ptr<BulkLoader>> loader = (*store)->NewBulkLoader();
  if (!loader.ok()) Die("starting a bulk load: " + loader.status().ToString());
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const NewDocument doc{
        docs[i].id, sketches[i].fingerprint, docs[i].url, sketches[i].signature, {}};
    if (Status s = (*loader)->Add(doc); !s.ok()) {
      Die("adding document " + std::to_string(docs[i].id) + ": " + s.ToString());
    }
  }
  if (Result<BulkLoadStats> stats = (*loader)->Finish(); !stats.ok()) {
    Die("bulk load into " + dir + ": " + stats.status().ToString());
  }
  return std::move(*store);
}

std::vector<FoundPair> StorePairs(const Store& store, int k, std::optional<double> min_similarity,
                                  const std::unordered_map<DocumentId, std::uint32_t>& index_of) {
  std::vector<FoundPair> pairs;
  ScanOptions scan;
  scan.min_similarity = min_similarity;
  const Status s = store.FindAll(
      k,
      [&](const NearPair& pair) {
        pairs.push_back({MakePair(index_of.at(pair.first), index_of.at(pair.second)),
                         pair.similarity.value_or(-1)});
      },
      scan);
  if (!s.ok()) Die("FindAll(" + std::to_string(k) + "): " + s.ToString());
  std::sort(pairs.begin(), pairs.end());
  for (std::size_t i = 1; i < pairs.size(); ++i) {
    if (pairs[i].pair == pairs[i - 1].pair) Die("FindAll reported a pair twice");
  }
  return pairs;
}

std::vector<PairKey> PairsAbove(const std::vector<FoundPair>& found, double min_similarity) {
  std::vector<PairKey> pairs;
  for (const FoundPair& p : found) {
    if (p.similarity >= min_similarity) pairs.push_back(p.pair);
  }
  return pairs;
}

std::vector<PairKey> BruteForcePairs(const std::vector<Fingerprint>& fingerprints, int k,
                                     int threads) {
  std::vector<std::vector<PairKey>> per_thread(static_cast<std::size_t>(threads));
  ParallelFor(fingerprints.size(), threads, [&](std::size_t i, int thread) {
    for (std::size_t j = i + 1; j < fingerprints.size(); ++j) {
      if (HammingDistance(fingerprints[i], fingerprints[j]) <= k) {
        per_thread[static_cast<std::size_t>(thread)].push_back(
            MakePair(static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(j)));
      }
    }
  });
  std::vector<PairKey> pairs;
  for (const auto& part : per_thread) pairs.insert(pairs.end(), part.begin(), part.end());
  SortUnique(&pairs);
  return pairs;
}

std::vector<std::uint64_t> BruteForceCounts(const std::vector<Fingerprint>& fingerprints, int max_k,
                                            int threads) {
  const auto width = static_cast<std::size_t>(max_k) + 1;
  std::vector<std::vector<std::uint64_t>> per_thread(static_cast<std::size_t>(threads),
                                                     std::vector<std::uint64_t>(width, 0));
  ParallelFor(fingerprints.size(), threads, [&](std::size_t i, int thread) {
    std::vector<std::uint64_t>& counts = per_thread[static_cast<std::size_t>(thread)];
    for (std::size_t j = i + 1; j < fingerprints.size(); ++j) {
      const auto d = static_cast<std::size_t>(HammingDistance(fingerprints[i], fingerprints[j]));
      if (d < width) ++counts[d];
    }
  });
  std::vector<std::uint64_t> counts(width, 0);
  for (const auto& part : per_thread) {
    for (std::size_t d = 0; d < width; ++d) counts[d] += part[d];
  }
  return counts;
}

}  // namespace fpstore::quality
