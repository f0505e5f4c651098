#include "quality/simhash_pairs.h"

#include <utility>

namespace fpstore::quality {

std::vector<Fingerprint> FingerprintAll(const std::vector<Document>& docs,
                                        const Fingerprinter& fingerprinter, int threads) {
  std::vector<Fingerprint> fingerprints(docs.size());
  std::vector<std::string> errors(docs.size());
  ParallelFor(docs.size(), threads, [&](std::size_t i, int) {
    Result<Fingerprint> fp = fingerprinter.FromText(docs[i].text);
    if (fp.ok()) {
      fingerprints[i] = *fp;
    } else {
      errors[i] = fp.status().ToString();
    }
  });
  for (std::size_t i = 0; i < docs.size(); ++i) {
    if (!errors[i].empty()) {
      Die("fingerprinting document " + std::to_string(docs[i].id) + ": " + errors[i]);
    }
  }
  return fingerprints;
}

std::unique_ptr<Store> LoadStore(const std::string& dir, const StoreOptions& options,
                                 const std::vector<Document>& docs,
                                 const std::vector<Fingerprint>& fingerprints) {
  Result<std::unique_ptr<Store>> store = Store::Open(dir, options);
  if (!store.ok()) Die("opening " + dir + ": " + store.status().ToString());
  Result<std::unique_ptr<BulkLoader>> loader = (*store)->NewBulkLoader();
  if (!loader.ok()) Die("starting a bulk load: " + loader.status().ToString());
  for (std::size_t i = 0; i < docs.size(); ++i) {
    if (Status s = (*loader)->Add(docs[i].id, fingerprints[i], docs[i].url); !s.ok()) {
      Die("adding document " + std::to_string(docs[i].id) + ": " + s.ToString());
    }
  }
  if (Result<BulkLoadStats> stats = (*loader)->Finish(); !stats.ok()) {
    Die("bulk load into " + dir + ": " + stats.status().ToString());
  }
  return std::move(*store);
}

std::vector<PairKey> StorePairs(const Store& store, int k,
                                const std::unordered_map<DocumentId, std::uint32_t>& index_of) {
  std::vector<PairKey> pairs;
  const Status s = store.FindAll(k, [&](const NearPair& pair) {
    pairs.push_back(MakePair(index_of.at(pair.first), index_of.at(pair.second)));
  });
  if (!s.ok()) Die("FindAll(" + std::to_string(k) + "): " + s.ToString());
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
