// fpstore-admin: find-all and clusters.

#include <limits>

#include "cli/admin_common.h"
#include "cli/match_printer.h"

namespace fpstore::cli::admin {
namespace {

// ---- find-all and clusters ---------------------------------------------------------

// What find-all and clusters share: the read-only store, --distance,
// --output, --threads, --memory and --quiet; Run opens the store, scans it into the
// output file and says what it wrote.
class ScanCommand : public Command {
 public:
  void DefineOptions(OptionTable& table) final {
    store_.Define(table, ReadOnlyStore());
    DefineScanDistance(table, &distance_);
    DefineMinSimilarity(table, kScanGroup, "a pair", &min_similarity_);
    DefineOutput(table, &output_, OutputHelp());
    DefineMoreOptions(table);
    DefineScanThreads(table, &threads_);
    table.Add(kScanGroup, "memory",
              WholeNumber("memory", &memory_mb_, std::int64_t{0}, std::int64_t{kMaxMemoryMb})
                  ->value_name("MB"),
              "Megabytes the scan may take to read every document once and sort the tables in "
              "memory: 32 bytes a document, 16 more per further thread. A larger store is read "
              "table by table from disk, several times slower; 0 always does that. A store in "
              "Redis is always sorted in memory, 16 bytes a document. Default: 1024. "
              "e.g. --memory 4096");
    DefineQuiet(table, &quiet_);
  }

  int Run() final {
    OpenedStore opened = store_.Open(StoreAccess::kReadOnly, nullptr);
    const Store& store = *opened.store;
    const int k = SearchDistance(store, store_.db(), asked_);
    OutputFile output(output_, out());
    const std::string written = Scan(store, k, output.get());
    output.Commit();
    if (!quiet_) {
      std::fprintf(err(), "%s: %s within distance %d written to %s\n", kTool, written.c_str(), k,
                   output.name().c_str());
    }
    return 0;
  }

 protected:
  void Check(const po::variables_map& vm) override {
    store_.Check(vm);
    asked_ = CheckScanDistance(vm, distance_);
    CheckOutput(output_);
  }

  // --output's description: what each line holds.
  virtual std::string OutputHelp() const = 0;

  // The command's own options, shown between --output and --threads.
  virtual void DefineMoreOptions(OptionTable& /*table*/) {}

  // Writes what the scan at distance `k` finds to `file`; returns what it
  // wrote for the summary, e.g. "12 pairs". Throws RuntimeError.
  virtual std::string Scan(const Store& store, int k, std::FILE* file) = 0;

  // `what` names the work in the progress report: "finding pairs".
  WorkProgress NewProgress(std::string what) const {
    return WorkProgress(Progress::AutoStyle(quiet_, err()), kTool, std::move(what), err());
  }

  // With --threads and --memory, reporting to `progress`.
  ScanOptions Options(WorkProgress& progress) const {
    ScanOptions scan;
    scan.progress = progress.Callback();
    scan.threads = threads_;
    scan.memory_bytes = static_cast<std::size_t>(memory_mb_) << 20;
    scan.min_similarity = min_similarity_;
    return scan;
  }

 private:
  StoreFlags store_;
  int distance_ = 0;
  std::optional<int> asked_;
  std::optional<double> min_similarity_;
  std::string output_ = "-";
  int threads_ = 0;
  std::int64_t memory_mb_ = 1024;
  bool quiet_ = false;
};

class FindAllCommand final : public ScanCommand {
 public:
  std::string_view Name() const override { return "find-all"; }
  std::string_view Summary() const override {
    return "Write every pair of near-duplicates: id_a<TAB>id_b<TAB>distance<TAB>similarity.";
  }
  std::vector<std::string> Synopsis() const override {
    return {
        "--db STORE [--distance K] [--min-similarity S] [--output FILE] [--threads N] "
        "[--memory MB] [--quiet]"};
  }
  std::vector<Example> Examples() const override {
    return {{"--db crawl.fps --distance 2 --output pairs.tsv",
             "Write the pairs within 2 bits to pairs.tsv."},
            {"--db crawl.fps --quiet | sort -n | head", "The first pairs, in id order."}};
  }

 protected:
  std::string OutputHelp() const override {
    return "Where to write the pairs: id_a<TAB>id_b<TAB>distance<TAB>similarity per line, "
           "id_a < id_b, in no particular order; similarity is - for a pair that stands on its "
           "distance alone (a document without a signature).";
  }

  std::string Scan(const Store& store, int k, std::FILE* file) override {
    std::uint64_t pairs = 0;
    {
      WorkProgress progress = NewProgress("finding pairs");
      ThrowIfError(store.FindAll(
          k,
          [&](const NearPair& p) {
            std::fprintf(file, "%llu\t%llu\t%d\t%s\n", static_cast<unsigned long long>(p.first),
                         static_cast<unsigned long long>(p.second), p.distance,
                         SimilarityText(p.similarity, "-").c_str());
            ++pairs;
          },
          Options(progress)));
    }
    return WithCommas(pairs) + (pairs == 1 ? " pair" : " pairs");
  }
};

class ClustersCommand final : public ScanCommand {
 public:
  std::string_view Name() const override { return "clusters"; }
  std::string_view Summary() const override {
    return "Write groups of near-duplicates (linked by pairs within a distance): "
           "cluster_id<TAB>id.";
  }
  std::vector<std::string> Synopsis() const override {
    return {
        "--db STORE [--distance K] [--output FILE] [--min-size N] [--threads N] [--memory MB] "
        "[--quiet]"};
  }
  std::vector<Example> Examples() const override {
    return {{"--db crawl.fps --distance 3 --output clusters.tsv",
             "Write every cluster of two or more documents."},
            {"--db crawl.fps --min-size 1 --output all.tsv",
             "Every document: those without near-duplicates in clusters of their own."}};
  }

 protected:
  std::string OutputHelp() const override {
    return "Where to write the clusters: cluster_id<TAB>id per line; clusters numbered "
           "from 1 in the order of their smallest id, ids ascending within a cluster.";
  }

  void DefineMoreOptions(OptionTable& table) override {
    table.Add(
        kScanGroup, "min-size",
        WholeNumber("min-size", &min_size_, std::size_t{1}, std::numeric_limits<std::size_t>::max())
            ->value_name("N"),
        "The smallest cluster to write; 1 also writes each document without a "
        "near-duplicate, as a cluster of its own. Default: 2. e.g. --min-size 5");
  }

  void Check(const po::variables_map& vm) override { ScanCommand::Check(vm); }

  std::string Scan(const Store& store, int k, std::FILE* file) override {
    std::uint64_t clusters = 0, documents = 0;
    const auto write = [&](std::span<const DocumentId> ids) {
      ++clusters;
      for (DocumentId id : ids) {
        std::fprintf(file, "%llu\t%llu\n", static_cast<unsigned long long>(clusters),
                     static_cast<unsigned long long>(id));
      }
      documents += ids.size();
    };

    // With --min-size 1, the clusters are kept to be merged with the
    // documents that are in none.
    std::vector<std::vector<DocumentId>> found;
    std::unordered_set<DocumentId> clustered;
    {
      WorkProgress progress = NewProgress("clustering");
      ThrowIfError(store.Clusters(
          k,
          [&](std::span<const DocumentId> ids) {
            if (min_size_ >= 2) {
              if (ids.size() >= min_size_) write(ids);
            } else {
              found.emplace_back(ids.begin(), ids.end());
              clustered.insert(ids.begin(), ids.end());
            }
          },
          Options(progress)));
    }
    if (min_size_ == 1) {
      // Clusters come in the order of their smallest id and documents in id
      // order: merge them, each document outside every cluster making one of
      // its own.
      WorkProgress progress = NewProgress("listing documents");
      ScanOptions scan;
      scan.progress = progress.Callback();
      std::size_t next = 0;
      ThrowIfError(store.ForEachDocument(
          [&](const Document& doc) {
            while (next < found.size() && found[next].front() < doc.id) write(found[next++]);
            if (!clustered.contains(doc.id)) write(std::span(&doc.id, 1));
          },
          scan));
      while (next < found.size()) write(found[next++]);
    }
    return WithCommas(clusters) + (clusters == 1 ? " cluster" : " clusters") + " of " +
           WithCommas(documents) + " documents";
  }

 private:
  std::size_t min_size_ = 2;
};

}  // namespace

std::unique_ptr<Command> NewFindAllCommand() { return std::make_unique<FindAllCommand>(); }
std::unique_ptr<Command> NewClustersCommand() { return std::make_unique<ClustersCommand>(); }

}  // namespace fpstore::cli::admin
