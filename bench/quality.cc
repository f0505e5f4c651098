// fpstore-quality: how well near-duplicates are found, on a labelled corpus
// (bench/quality/make_corpus.py, docs/quality.md). In one run it computes
//
//  - the truth: every pair of documents whose word 5-shingle sets have an
//    exact Jaccard similarity of at least --min-jaccard (quality/truth.h);
//  - fpstore through its public API: every text sketched (fingerprint and
//    signature) at FingerprintOptions{} (or the options given), a store at
//    the default plan filled by the BulkLoader, and Store::FindAll(k) for
//    k = 0 up to the plan's distance, each by distance alone (simhash
//    alone) and confirmed by the store's similarity threshold, with the
//    curve over the threshold at the plan's distance; then a store whose
//    plan reaches --max-distance (--wide-blocks blocks) for the k beyond;
//  - 128-bit fingerprints from the same options (FingerprintOptions::bits),
//    by distance alone and confirmed by the same signatures, at each of
//    --wide-distances, their pairs found by a brute-force popcount;
//  - a MinHash-LSH baseline over the same shingle sets (quality/minhash.h);
//
// and prints precision, recall and F1 of each against the truth, overall and
// for the pairs that are not exact copies, as Markdown on standard output.
// Every pair count of the stores is checked against a brute-force popcount
// over all pairs, and the confirmed pairs against the similarities FindAll
// reports.
//
// Not a test: nothing passes or fails on quality. Exit status 0, 1 for an
// error (bad input names FILE:LINE), 2 for a bad command line.

#include <stdlib.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fpstore/store.h"
#include "quality/common.h"
#include "quality/corpus.h"
#include "quality/minhash.h"
#include "quality/simhash_pairs.h"
#include "quality/truth.h"

namespace fs = std::filesystem;
namespace po = boost::program_options;

namespace fpstore::quality {
namespace {

struct Config {
  std::string input;
  double min_jaccard = 0.9;
  int shingle_words = 5;
  int max_distance = 6;
  int wide_blocks = 8;
  int baseline_window = 3;
  std::vector<int> wide_distances = {0, 2, 4, 6, 7, 8, 10, 12};
  MinHashOptions minhash;
  // fpstore's options: FingerprintOptions{} and the store's defaults unless given.
  FingerprintOptions fingerprint;
  std::optional<double> min_similarity;
  int threads = 0;
  std::string temp_dir;
  bool keep = false;
};

Config ParseOptions(int argc, char** argv) {
  Config c;
  std::string weighting;
  po::options_description desc(
      "fpstore-quality --input CORPUS.jsonl [options]\n\n"
      "Precision and recall of near-duplicate detection against exact Jaccard truth.\n"
      "Example:\n  bench/quality/make_corpus.py --output /tmp/quality.jsonl\n"
      "  build/release/bench/fpstore-quality --input /tmp/quality.jsonl\n\nOptions");
  desc.add_options()("help,h", "this help")(
      "input", po::value(&c.input)->required(),
      "the corpus: JSONL with \"id\", \"text\", optional \"url\" and \"source\"")(
      "min-jaccard", po::value(&c.min_jaccard)->default_value(0.9),
      "truth: pairs whose shingle sets have at least this Jaccard similarity")(
      "shingle-words", po::value(&c.shingle_words)->default_value(5), "words per shingle")(
      "max-distance", po::value(&c.max_distance)->default_value(6),
      "simhash curve up to this k (a second store for the k beyond the default plan)")(
      "wide-blocks", po::value(&c.wide_blocks)->default_value(8),
      "blocks of the second store's plan")(
      "baseline-window", po::value(&c.baseline_window)->default_value(3),
      "simhash alone at k = 3 with this fingerprint window, by brute force: fpstore's "
      "fingerprint before signatures; 0 for none")(
      "wide-distances", po::value(&c.wide_distances)->multitoken()->zero_tokens(),
      "128-bit fingerprints at these k, by brute force (default: 0 2 4 6 7 8 10 12); none "
      "given after the flag: no 128-bit rows")(
      "bands", po::value(&c.minhash.bands)->default_value(16), "MinHash-LSH bands b")(
      "rows", po::value(&c.minhash.rows)->default_value(8), "MinHash-LSH rows per band r")(
      "minhash-threshold", po::value(&c.minhash.threshold),
      "MinHash: least estimated Jaccard of a reported pair (default: --min-jaccard)")(
      "window", po::value(&c.fingerprint.window)->default_value(c.fingerprint.window),
      "fpstore: tokens per shingle of the fingerprint")(
      "weighting", po::value(&weighting)->default_value("tf"), "fpstore: tf or presence")(
      "signature-bytes",
      po::value(&c.fingerprint.signature_bytes)->default_value(c.fingerprint.signature_bytes),
      "fpstore: bytes of the signature (0: none)")(
      "signature-window",
      po::value(&c.fingerprint.signature_window)->default_value(c.fingerprint.signature_window),
      "fpstore: tokens per shingle of the signature")(
      "min-similarity", po::value<double>(),
      "fpstore: the store's threshold (default: StoreOptions' default)")(
      "threads", po::value(&c.threads)->default_value(0), "threads; 0 = one per core")(
      "temp-dir", po::value(&c.temp_dir),
      "where the temporary stores go (default: the system's temporary directory)")(
      "keep", po::bool_switch(&c.keep), "keep the temporary stores");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, desc), vm);
    if (vm.count("help")) {
      std::cout << desc << "\n";
      std::exit(0);
    }
    po::notify(vm);
    if (!vm.count("minhash-threshold")) c.minhash.threshold = c.min_jaccard;
    if (vm.count("min-similarity")) c.min_similarity = vm["min-similarity"].as<double>();
    if (weighting != "tf" && weighting != "presence")
      throw po::error("--weighting: tf or presence");
    c.fingerprint.weighting =
        weighting == "tf" ? FeatureWeighting::kTermFrequency : FeatureWeighting::kPresence;
    if (Status s = c.fingerprint.Validate(); !s.ok()) throw po::error(s.message());
    if (!(c.min_jaccard > 0 && c.min_jaccard <= 1)) throw po::error("--min-jaccard: 0 < t <= 1");
    if (c.shingle_words < 1) throw po::error("--shingle-words must be at least 1");
    if (c.minhash.bands < 1 || c.minhash.rows < 1) throw po::error("--bands and --rows >= 1");
    for (const int k : c.wide_distances) {
      if (k < 0 || k > 128) throw po::error("--wide-distances: each from 0 to 128");
    }
  } catch (const po::error& e) {
    std::cerr << "fpstore-quality: " << e.what() << "\n" << desc << "\n";
    std::exit(2);
  }
  if (c.threads <= 0)
    c.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (c.temp_dir.empty()) c.temp_dir = fs::temp_directory_path().string();
  return c;
}

// ---- Scores ----

struct Score {
  std::uint64_t flagged = 0, correct = 0, truth = 0;
  double Precision() const { return flagged ? double(correct) / double(flagged) : 0; }
  double Recall() const { return truth ? double(correct) / double(truth) : 0; }
  double F1() const {
    const double p = Precision(), r = Recall();
    return p + r > 0 ? 2 * p * r / (p + r) : 0;
  }
};

Score Compare(const std::vector<PairKey>& flagged, const std::vector<PairKey>& truth) {
  Score s{.flagged = flagged.size(), .correct = 0, .truth = truth.size()};
  for (std::size_t i = 0, j = 0; i < flagged.size() && j < truth.size();) {
    if (flagged[i] < truth[j]) {
      ++i;
    } else if (truth[j] < flagged[i]) {
      ++j;
    } else {
      ++s.correct, ++i, ++j;
    }
  }
  return s;
}

class Scorer {
 public:
  Scorer(const std::vector<ShingleSet>& sets, const std::vector<PairKey>& truth)
      : sets_(sets), truth_(truth), truth_not_copies_(NotCopies(truth)) {}

  void Add(const std::string& method, const std::vector<PairKey>& flagged) {
    rows_.push_back(
        {method, Compare(flagged, truth_), Compare(NotCopies(flagged), truth_not_copies_)});
  }

  std::size_t truth_not_copies() const { return truth_not_copies_.size(); }

  // Pairs whose word sequences differ.
  std::vector<PairKey> NotCopies(const std::vector<PairKey>& pairs) const {
    std::vector<PairKey> out;
    for (const PairKey p : pairs) {
      if (sets_[FirstOf(p)].words_digest != sets_[SecondOf(p)].words_digest) out.push_back(p);
    }
    return out;
  }

  void Print() const {
    std::printf(
        "| method | flagged | precision | recall | F1 | flagged, not copies | precision | "
        "recall | F1 |\n|---|---|---|---|---|---|---|---|---|\n");
    for (const Row& r : rows_) {
      std::printf("| %s | %" PRIu64 " | %.3f | %.3f | %.3f | %" PRIu64 " | %.3f | %.3f | %.3f |\n",
                  r.method.c_str(), r.all.flagged, r.all.Precision(), r.all.Recall(), r.all.F1(),
                  r.not_copies.flagged, r.not_copies.Precision(), r.not_copies.Recall(),
                  r.not_copies.F1());
    }
  }

 private:
  struct Row {
    std::string method;
    Score all, not_copies;
  };
  const std::vector<ShingleSet>& sets_;
  const std::vector<PairKey>& truth_;
  const std::vector<PairKey> truth_not_copies_;
  std::vector<Row> rows_;
};

// ---- Steps ----

class Timings {
 public:
  void Add(const std::string& phase, double seconds) {
    std::cerr << "fpstore-quality: " << phase << ": " << seconds << " s\n";
    rows_.emplace_back(phase, seconds);
  }
  void Print() const {
    std::printf("| phase | seconds |\n|---|---|\n");
    for (const auto& [phase, seconds] : rows_)
      std::printf("| %s | %.1f |\n", phase.c_str(), seconds);
  }

 private:
  std::vector<std::pair<std::string, double>> rows_;
};

// fpstore through its public API: every text sketched (fingerprint and
// signature) at the default FingerprintOptions, a store at the default
// StoreOptions, FindAll with and without confirmation at each k of its plan,
// and the curve over the threshold; then a wider store for the k beyond.
// Every pair count is checked against brute force, and the confirmed pairs
// against the similarities FindAll reports.
void RunStore(const Config& c, const std::vector<Document>& docs, Scorer* scorer,
              Timings* timings) {
  if (c.baseline_window > 0) {
    Stopwatch watch;
    FingerprintOptions options;
    options.window = c.baseline_window;
    options.signature_bytes = 0;
    const Result<Fingerprinter> fingerprinter = Fingerprinter::Create(options);
    if (!fingerprinter.ok()) Die("--baseline-window: " + fingerprinter.status().ToString());
    std::vector<Fingerprint> fps;
    for (const Sketch& s : SketchAll(docs, *fingerprinter, c.threads)) fps.push_back(s.fingerprint);
    char label[160];
    std::snprintf(label, sizeof label,
                  "simhash alone, window %d, k=3, brute force: the fingerprint without signatures",
                  c.baseline_window);
    scorer->Add(label, BruteForcePairs(fps, 3, c.threads));
    timings->Add("baseline: window " + std::to_string(c.baseline_window) +
                     " fingerprints and brute-force pairs",
                 watch.Seconds());
  }
  std::unordered_map<DocumentId, std::uint32_t> index_of;
  for (std::size_t i = 0; i < docs.size(); ++i)
    index_of[docs[i].id] = static_cast<std::uint32_t>(i);
  Stopwatch watch;
  const Result<Fingerprinter> fingerprinter = Fingerprinter::Create(c.fingerprint);
  if (!fingerprinter.ok()) Die(fingerprinter.status().ToString());
  const std::vector<Sketch> sketches = SketchAll(docs, *fingerprinter, c.threads);
  std::vector<Fingerprint> fps;
  for (const Sketch& s : sketches) fps.push_back(s.fingerprint);
  timings->Add("fingerprints and signatures (" + fingerprinter->options().ToString() + ")",
               watch.Seconds());
  watch = {};
  const std::vector<std::uint64_t> brute = BruteForceCounts(fps, c.max_distance, c.threads);
  timings->Add("brute-force distance counts", watch.Seconds());

  std::string dir_template = (fs::path(c.temp_dir) / "fpstore-quality-XXXXXX").string();
  if (mkdtemp(dir_template.data()) == nullptr) Die("cannot make a directory in " + c.temp_dir);
  const fs::path root = dir_template;
  std::uint64_t expected = 0;
  int k = 0;
  for (const bool wide : {false, true}) {
    if (wide && k > c.max_distance) break;
    StoreOptions options;
    options.fingerprint = c.fingerprint;
    options.min_similarity = c.min_similarity;
    if (wide) {
      options.blocks = c.wide_blocks;
      options.distance = c.max_distance;
    }
    const std::string name = wide ? "wide" : "default";
    watch = {};
    std::unique_ptr<Store> store = LoadStore((root / name).string(), options, docs, sketches);
    const std::string plan = store->plan().ToString();
    const Result<StoreStats> stats = store->Stats();
    if (!stats.ok()) Die("Stats: " + stats.status().ToString());
    const double threshold = stats->min_similarity;
    timings->Add("load store at " + plan, watch.Seconds());
    watch = {};
    char label[160];
    for (; k <= std::min(store->plan().distance(), c.max_distance); ++k) {
      const std::vector<FoundPair> found = StorePairs(*store, k, 0.0, index_of);
      expected += brute[static_cast<std::size_t>(k)];
      if (found.size() != expected) {
        Die("FindAll(" + std::to_string(k) + ") found " + std::to_string(found.size()) +
            " pairs, brute force " + std::to_string(expected));
      }
      std::vector<PairKey> all;
      for (const FoundPair& p : found) all.push_back(p.pair);
      std::snprintf(label, sizeof label, "simhash alone, k=%d (%s)", k, plan.c_str());
      scorer->Add(label, all);
      std::vector<PairKey> confirmed;
      for (const FoundPair& p : StorePairs(*store, k, std::nullopt, index_of)) {
        confirmed.push_back(p.pair);
      }
      if (confirmed != PairsAbove(found, threshold)) {
        Die("FindAll(" + std::to_string(k) + ") confirmed pairs other than those its " +
            "similarities pass");
      }
      const bool is_default = !wide && k == store->plan().distance();
      const bool defaults = c.fingerprint == FingerprintOptions{} && !c.min_similarity;
      std::snprintf(label, sizeof label, "%sk=%d, similarity >= %.2f (%s)%s",
                    is_default ? "**" : "", k, threshold, plan.c_str(),
                    !is_default ? ""
                    : defaults  ? ": fpstore at its defaults**"
                                : ": fpstore at the options given**");
      scorer->Add(label, confirmed);
      if (is_default) {
        for (const double t : {0.80, 0.85, 0.87, 0.88, 0.89, 0.91, 0.92, 0.95}) {
          std::snprintf(label, sizeof label, "k=%d, similarity >= %.2f (%s)", k, t, plan.c_str());
          scorer->Add(label, PairsAbove(found, t));
        }
      }
    }
    timings->Add("FindAll on the store at " + plan, watch.Seconds());
    if (Status s = store->Close(); !s.ok()) Die("closing a store: " + s.ToString());
  }
  if (c.keep) {
    std::cerr << "fpstore-quality: stores kept in " << root.string() << "\n";
  } else {
    fs::remove_all(root);
  }
}

// 128-bit fingerprints from the same options, their pairs within each k by
// brute force, alone and confirmed by the signatures (the same at either
// width) at the store's default threshold, or the one given.
void RunWide(const Config& c, const std::vector<Document>& docs, Scorer* scorer, Timings* timings) {
  if (c.wide_distances.empty()) return;
  Stopwatch watch;
  FingerprintOptions options = c.fingerprint;
  options.bits = 128;
  const Result<Fingerprinter> fingerprinter = Fingerprinter::Create(options);
  if (!fingerprinter.ok()) Die(fingerprinter.status().ToString());
  const std::vector<Sketch> sketches = SketchAll(docs, *fingerprinter, c.threads);
  std::vector<Fingerprint> fps;
  for (const Sketch& s : sketches) fps.push_back(s.fingerprint);
  timings->Add("128-bit fingerprints and signatures", watch.Seconds());
  const double threshold = c.min_similarity.value_or(StoreOptions::kDefaultMinSimilarity);
  char label[160];
  for (const int k : c.wide_distances) {
    watch = {};
    const std::vector<PairKey> all = BruteForcePairs(fps, k, c.threads);
    std::snprintf(label, sizeof label, "128-bit simhash alone, k=%d (brute force)", k);
    scorer->Add(label, all);
    std::vector<PairKey> confirmed;
    for (const PairKey p : all) {
      const std::optional<double> similarity =
          EstimateSimilarity(sketches[FirstOf(p)].signature, sketches[SecondOf(p)].signature);
      if (!similarity || *similarity >= threshold) confirmed.push_back(p);
    }
    std::snprintf(label, sizeof label, "128-bit, k=%d, similarity >= %.2f (brute force)", k,
                  threshold);
    scorer->Add(label, confirmed);
    timings->Add("128-bit brute-force pairs at k=" + std::to_string(k), watch.Seconds());
  }
}

std::string SourceOf(const Document& d) { return d.source.empty() ? "-" : d.source; }

void PrintCorpus(const std::vector<Document>& docs, const std::vector<PairKey>& truth,
                 const Scorer& scorer) {
  std::map<std::string, std::uint64_t> by_source;
  for (const Document& d : docs) ++by_source[SourceOf(d)];
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> pairs_by_sources;
  const std::vector<PairKey> not_copies = scorer.NotCopies(truth);
  auto sources = [&](PairKey p) {
    std::string a = SourceOf(docs[FirstOf(p)]), b = SourceOf(docs[SecondOf(p)]);
    return a < b ? a + " / " + b : b + " / " + a;
  };
  for (const PairKey p : truth) ++pairs_by_sources[sources(p)].first;
  for (const PairKey p : not_copies) ++pairs_by_sources[sources(p)].second;

  std::printf("## Corpus\n\n| source | documents |\n|---|---|\n");
  for (const auto& [source, n] : by_source)
    std::printf("| %s | %" PRIu64 " |\n", source.c_str(), n);
  std::printf("| all | %zu |\n\n", docs.size());
  std::printf("## Truth\n\n| sources of the pair | pairs | not exact copies |\n|---|---|---|\n");
  for (const auto& [names, n] : pairs_by_sources) {
    std::printf("| %s | %" PRIu64 " | %" PRIu64 " |\n", names.c_str(), n.first, n.second);
  }
  std::printf("| all | %zu | %zu |\n\n", truth.size(), not_copies.size());
}

// Exact Jaccard of two ascending sets without repeats.
double Jaccard(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b) {
  std::vector<std::uint64_t> common;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
  const std::size_t all = a.size() + b.size() - common.size();
  return all == 0 ? 0.0 : static_cast<double>(common.size()) / static_cast<double>(all);
}

// For the edited copies make_corpus.py writes (url "edit-of:ID:KIND"), by
// kind: how many there are and how many are within the truth's threshold of
// the document they were made from.
void PrintEdits(const std::vector<Document>& docs, const std::vector<ShingleSet>& sets,
                double min_jaccard) {
  std::unordered_map<DocumentId, std::size_t> index_of;
  for (std::size_t i = 0; i < docs.size(); ++i) index_of[docs[i].id] = i;
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> by_kind;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const std::string& url = docs[i].url;
    const std::size_t colon = url.find(':', 8);
    if (url.rfind("edit-of:", 0) != 0 || colon == std::string::npos) continue;
    const auto original = index_of.find(std::strtoull(url.c_str() + 8, nullptr, 10));
    if (original == index_of.end()) continue;
    auto& [copies, near] = by_kind[url.substr(colon + 1)];
    ++copies;
    near += Jaccard(sets[i].hashes, sets[original->second].hashes) + 1e-9 >= min_jaccard;
  }
  if (by_kind.empty()) return;
  std::printf(
      "## Edited copies\n\n| edit | copies | within the threshold of their original |\n"
      "|---|---|---|\n");
  for (const auto& [kind, n] : by_kind) {
    std::printf("| %s | %" PRIu64 " | %" PRIu64 " |\n", kind.c_str(), n.first, n.second);
  }
  std::printf("\n");
}

int Run(const Config& c) {
  Timings timings;
  Stopwatch watch;
  const std::vector<Document> docs = ReadCorpus(c.input);
  timings.Add("read " + std::to_string(docs.size()) + " documents", watch.Seconds());
  watch = {};
  std::vector<ShingleSet> sets(docs.size());
  ParallelFor(docs.size(), c.threads,
              [&](std::size_t i, int) { sets[i] = MakeShingles(docs[i].text, c.shingle_words); });
  timings.Add("shingle sets", watch.Seconds());
  watch = {};
  const TruthResult truth = ExactJaccardPairs(sets, c.min_jaccard, c.threads);
  timings.Add("truth (" + std::to_string(truth.candidates) + " candidates)", watch.Seconds());

  Scorer scorer(sets, truth.pairs);
  RunStore(c, docs, &scorer, &timings);
  RunWide(c, docs, &scorer, &timings);
  watch = {};
  const MinHashResult minhash = MinHashLsh(sets, c.minhash, c.threads);
  timings.Add("MinHash-LSH (" + std::to_string(minhash.candidates) + " candidates)",
              watch.Seconds());
  char label[128];
  std::snprintf(label, sizeof label, "MinHash-LSH %dx%d, estimated J >= %.2f", c.minhash.bands,
                c.minhash.rows, c.minhash.threshold);
  scorer.Add(label, minhash.pairs);

  std::printf("# fpstore-quality: %s, truth Jaccard >= %.2f of word %d-shingles\n\n",
              c.input.c_str(), c.min_jaccard, c.shingle_words);
  PrintCorpus(docs, truth.pairs, scorer);
  PrintEdits(docs, sets, c.min_jaccard);
  std::printf("## Results\n\n");
  scorer.Print();
  std::printf("\n## Timings\n\n");
  timings.Print();
  return 0;
}

}  // namespace
}  // namespace fpstore::quality

int main(int argc, char** argv) {
  return fpstore::quality::Run(fpstore::quality::ParseOptions(argc, argv));
}
