// fpstore-admin: create, stats, dump and checkpoint.

#include "cli/admin_common.h"

namespace fpstore::cli::admin {
namespace {

// ---- create ----------------------------------------------------------------------

class CreateCommand final : public Command {
 public:
  std::string_view Name() const override { return "create"; }
  std::string_view Summary() const override {
    return "Create a store with a plan (blocks, distance) and fingerprint options, sized for "
           "the documents expected; estimate and compare plans.";
  }
  std::vector<std::string> Synopsis() const override {
    return {
        "--db STORE [--blocks M] [--distance K] [--window N] [--weighting W] "
        "[--expected-documents N [--disk-budget GB] [--memory-budget GB]] [--dry-run]"};
  }
  std::vector<Example> Examples() const override {
    return {
        {"--db crawl.fps", "Create a store with the defaults: 6 blocks, distance 3 (20 tables)."},
        {"--db crawl.fps --blocks 8 --distance 4 --window 5 --expected-documents 100000000",
         "Create a store for distance 4 (70 tables) and estimate the candidates per query "
         "at 100 million documents."},
        {"--db unused --blocks 7 --distance 3 --expected-documents 1e9 --dry-run",
         "Show a plan without creating anything."},
        {"--db crawl.fps --expected-documents 1e9",
         "Create a store for a billion documents with the fastest plan whose filters and "
         "indexes fit in 16 GB of memory."},
        {"--db unused --expected-documents 1e8 --disk-budget 40 --dry-run",
         "Compare the plans for distance 3 at 100 million documents and choose the fastest "
         "that fits in 40 GB of disk (and 16 GB of memory)."},
        {"--db redis://10.0.0.5:7000/crawl --expected-documents 1e9",
         "Create the store crawl in the Redis Cluster of the node at 10.0.0.5:7000, its tables "
         "cut for a billion documents."}};
  }

  void DefineOptions(OptionTable& table) override {
    store_.Define(table, {.plan = true,
                          .db_help = "The store to create: an absent or empty directory, or a "
                                     "NAME that the Redis Cluster holds no store under."});
    table.AddSwitch(kStoreGroup, "dry-run", &dry_run_,
                    "Print the plan and create nothing. e.g. --dry-run");
    fingerprint_.Define(table, /*offer_bits=*/true);
  }

  int Run() override {
    const FingerprintOptions fingerprint = fingerprint_.Apply(FingerprintOptions{});
    if (!dry_run_) {
      StoreOptions options = store_.Options();
      options.create_if_missing = true;
      options.error_if_exists = true;
      options.blocks = plan_->blocks();
      options.distance = plan_->distance();
      options.fingerprint = fingerprint;
      std::unique_ptr<Store> store = ValueOrThrow(Store::Open(store_.path(), options));
      CloseStore(*store);
      std::fprintf(out(), "created %s\n", store_.db().c_str());
    }
    if (plan_) {
      std::fprintf(out(), "plan:               %s: %s\n", plan_->ToString().c_str(),
                   DescribeTables(*plan_).c_str());
    } else {  // a dry run whose budgets no plan fits
      std::fprintf(out(), "plan:               none within the budgets (below)\n");
    }
    std::fprintf(out(), "fingerprint:        %s\n", fingerprint.ToString().c_str());
    std::fprintf(
        out(), "min similarity:     %s\n",
        Fixed(store_.Options().min_similarity.value_or(StoreOptions::kDefaultMinSimilarity), 3)
            .c_str());
    if (store_.expected_documents() && plan_) {
      std::fprintf(out(),
                   "candidates/query:   about %s at %s documents (random fingerprints: the sum "
                   "over the tables of N / 2^prefix bits)\n",
                   Rough(EstimatePlan(*plan_, expected(), 0).candidates).c_str(),
                   Rough(expected()).c_str());
      if (store_.in_redis()) {
        std::fprintf(out(),
                     "\nno plans compared: their estimates are of an embedded store's disk and "
                     "reads, while a store in Redis takes the cluster's memory and a query costs "
                     "network round trips (docs/design.md, \"The Redis backend\")\n");
      } else {
        PrintPlanComparison(fingerprint.signature_bytes);
      }
    } else if (!plan_) {
      PrintPlanComparison(fingerprint.signature_bytes);
    }
    return 0;
  }

 protected:
  void Check(const po::variables_map& vm) override {
    store_.Check(vm);
    fingerprint_.Check(vm);
    const FingerprintOptions fingerprint = fingerprint_.Apply(FingerprintOptions{});
    bits_ = fingerprint.bits;
    if (std::optional<PlanComparison> choice =
            store_.PlanChoice(fingerprint.signature_bytes, bits_)) {
      if (!choice->chosen && !dry_run_) {
        throw UsageError("--expected-documents: " + NoPlanFits(*choice));
      }
      plan_ = choice->chosen;
      if (!plan_) return;  // a dry run: Run prints the comparison and no plan
    }
    if (!plan_) {
      Result<PermutationPlan> plan =
          PermutationPlan::Create(store_.blocks().value_or(DefaultBlocks(bits_)),
                                  store_.distance().value_or(DefaultDistance(bits_)), bits_);
      if (!plan.ok()) throw UsageError("--blocks/--distance: " + plan.status().message());
      plan_ = *std::move(plan);
    }
  }

 private:
  double expected() const { return store_.expected_documents().value_or(0); }

  // The plans for this distance with k+1 to k+5 blocks, each with its
  // estimates at the expected number of documents, and the one chosen (or,
  // with --blocks, the one that would be): the fastest query within the budgets.
  // `signature_bytes`: the new store's, whose signatures count on disk.
  void PrintPlanComparison(int signature_bytes) const {
    const PlanComparison c = ComparePlans(store_.distance().value_or(DefaultDistance(bits_)),
                                          expected(), signature_bytes, store_.budgets(), bits_);
    std::fprintf(out(),
                 "\nplans for distance %d%s at %s documents (estimates, see "
                 "docs/performance.md):\n",
                 c.distance, bits_ == 128 ? " of 128-bit fingerprints" : "",
                 Rough(expected()).c_str());
    std::fprintf(out(), "  %-7s %-7s %-12s %-18s %-10s %-10s %s\n", "blocks", "tables",
                 "prefix bits", "candidates/query", "disk GB", "memory GB", "query us");
    const int best = c.chosen ? c.chosen->blocks() : 0;
    for (const PlanEstimate& e : c.rows) {
      const std::string bits = PrefixBitsRange(e.plan);
      std::fprintf(out(), "%s %-7d %-7zu %-12s %-18s %-10.1f %-10.1f %.0f%s\n",
                   e.plan.blocks() == best ? "*" : " ", e.plan.blocks(), e.plan.table_count(),
                   bits.c_str(), Rough(e.candidates).c_str(), e.disk_bytes / 1e9,
                   e.memory_bytes / 1e9, e.query_micros,
                   plan_ && e.plan.blocks() == plan_->blocks() ? "  (this plan)" : "");
    }
    if (!c.chosen) {
      std::fprintf(out(), "%s\n", NoPlanFits(c).c_str());
    } else if (store_.blocks()) {
      std::fprintf(out(), "suggested: --blocks %d --distance %d\n", best, c.distance);
    } else {
      std::fprintf(out(), "chosen: the fastest within the budgets (--blocks %d --distance %d)\n",
                   best, c.distance);
    }
  }

  StoreFlags store_;
  FingerprintFlags fingerprint_;
  int bits_ = 64;  // of the new store's fingerprints
  bool dry_run_ = false;
  std::optional<PermutationPlan> plan_;
};

// ---- stats -----------------------------------------------------------------------

class StatsCommand final : public Command {
 public:
  std::string_view Name() const override { return "stats"; }
  std::string_view Summary() const override {
    return "Show documents, table sizes, bytes on disk (of memory, in Redis), plan and "
           "fingerprint options.";
  }
  std::vector<std::string> Synopsis() const override { return {"--db STORE [--json]"}; }
  std::vector<Example> Examples() const override {
    return {{"--db crawl.fps", "A readable report."},
            {"--db crawl.fps --json | jq .documents", "One JSON object, for scripts."}};
  }

  void DefineOptions(OptionTable& table) override {
    store_.Define(table, ReadOnlyStore());
    table.AddSwitch(kOutputGroup, "json", &json_, "Print one JSON object. e.g. --json");
  }

  int Run() override {
    OpenedStore opened = store_.Open(StoreAccess::kReadOnly, nullptr);
    const StoreStats stats = ValueOrThrow(opened.store->Stats());
    if (json_) {
      PrintJson(opened.store->plan(), stats);
    } else {
      PrintReport(opened.store->plan(), stats);
    }
    return 0;
  }

 protected:
  void Check(const po::variables_map& vm) override { store_.Check(vm); }

 private:
  // What differs between the backends: a store in Redis counts bytes of the
  // cluster's memory (MEMORY USAGE of its keys), not of files; it cuts its
  // tables into buckets, not groups; it stages nothing.
  bool redis() const { return store_.in_redis(); }

  // A time as JSON: seconds, or null.
  static std::string JsonTime(std::optional<DocumentTime> time) {
    return time ? std::to_string(*time) : "null";
  }

  // An age in the largest of d, h and s that divides it: "90d".
  static std::string AgeText(std::int64_t seconds) {
    if (seconds % 86400 == 0) return std::to_string(seconds / 86400) + "d";
    if (seconds % 3600 == 0) return std::to_string(seconds / 3600) + "h";
    return std::to_string(seconds) + "s";
  }

  static double PerDocument(const StoreStats& stats) {
    return stats.documents > 0
               ? static_cast<double>(stats.bytes_on_disk) / static_cast<double>(stats.documents)
               : 0;
  }

  void PrintJson(const PermutationPlan& plan, const StoreStats& stats) const {
    std::string tables;
    for (std::size_t t = 0; t < plan.table_count(); ++t) {
      tables += std::string(t == 0 ? "" : ",") + "{\"table\":" + std::to_string(t) +
                ",\"blocks\":[" + BlockList(plan.table(t)) +
                "],\"prefix_bits\":" + std::to_string(plan.table(t).prefix_bits()) +
                ",\"bytes\":" + std::to_string(stats.table_bytes[t]) + "}";
    }
    const StoreStats::Internals& in = stats.internals;
    std::fprintf(
        out(),
        "{\"path\":%s,\"backend\":\"%s\",\"format_version\":%d,\"%s\":%d,\"blocks\":%d,"
        "\"distance\":%d,\"fingerprint\":{\"text\":%s,\"version\":%d,\"window\":%d,"
        "\"weighting\":\"%s\",\"signature_bytes\":%d,\"signature_window\":%d},"
        "\"min_similarity\":%s,\"retention_seconds\":%lld,\"documents\":%llu,"
        "\"expired_documents\":%llu,\"oldest_time\":%s,\"newest_time\":%s,"
        "\"staged_documents\":%llu,\"%s\":%llu,\"bytes_per_document\":%s,\"tables\":[%s]}\n",
        JsonString(store_.db()).c_str(), redis() ? "redis" : "embedded", in.format_version,
        redis() ? "bucket_bits" : "group_bits", in.group_bits, stats.blocks, stats.distance,
        JsonString(stats.fingerprint.ToString()).c_str(), stats.fingerprint.version,
        stats.fingerprint.window, std::string(WeightingName(stats.fingerprint.weighting)).c_str(),
        stats.fingerprint.signature_bytes, stats.fingerprint.signature_window,
        Fixed(stats.min_similarity, 3).c_str(), static_cast<long long>(stats.retention_seconds),
        static_cast<unsigned long long>(stats.documents),
        static_cast<unsigned long long>(stats.expired_documents),
        JsonTime(stats.oldest_time).c_str(), JsonTime(stats.newest_time).c_str(),
        static_cast<unsigned long long>(stats.staged_documents),
        redis() ? "redis_memory_bytes" : "bytes_on_disk",
        static_cast<unsigned long long>(stats.bytes_on_disk), Fixed(PerDocument(stats), 1).c_str(),
        tables.c_str());
  }

  void PrintReport(const PermutationPlan& plan, const StoreStats& stats) const {
    std::fprintf(out(), "store:              %s\n", store_.db().c_str());
    std::fprintf(out(), "plan:               %s: %s\n", plan.ToString().c_str(),
                 DescribeTables(plan).c_str());
    std::fprintf(out(), "fingerprint:        %s\n", stats.fingerprint.ToString().c_str());
    std::fprintf(out(), "min similarity:     %s (of a match, unless a query sets its own)\n",
                 Fixed(stats.min_similarity, 3).c_str());
    std::fprintf(out(), "documents:          %s\n", WithCommas(stats.documents).c_str());
    if (stats.oldest_time) {
      std::fprintf(out(), "times:              %s to %s\n", FormatTime(*stats.oldest_time).c_str(),
                   FormatTime(*stats.newest_time).c_str());
    }
    if (stats.retention_seconds != 0) {
      std::fprintf(out(), "retention:          %s; %s past it, not yet removed\n",
                   AgeText(stats.retention_seconds).c_str(),
                   WithCommas(stats.expired_documents).c_str());
    }
    if (!redis()) {
      std::fprintf(out(), "staged documents:   %s (not yet merged into the tables)\n",
                   WithCommas(stats.staged_documents).c_str());
    }
    std::fprintf(out(), "%s%s (%s MB%s)\n",
                 redis() ? "Redis memory:       " : "bytes on disk:      ",
                 WithCommas(stats.bytes_on_disk).c_str(),
                 Fixed(static_cast<double>(stats.bytes_on_disk) / 1e6, 1).c_str(),
                 redis() ? ", MEMORY USAGE of the store's keys" : "");
    std::fprintf(out(), "bytes per document: %s\n",
                 stats.documents > 0 ? Fixed(PerDocument(stats), 1).c_str() : "-");
    std::fprintf(out(), "tables:\n");
    for (std::size_t t = 0; t < plan.table_count(); ++t) {
      std::fprintf(out(), "  table %3zu  blocks %-12s %2d-bit prefix  %s bytes\n", t,
                   BlockList(plan.table(t)).c_str(), plan.table(t).prefix_bits(),
                   WithCommas(stats.table_bytes[t]).c_str());
    }
    const StoreStats::Internals& in = stats.internals;
    std::fprintf(out(), "internals (docs/design.md):\n");
    if (redis()) {
      std::fprintf(out(), "  format version:   %d (of the Redis layout, docs/format.md)\n",
                   in.format_version);
      std::fprintf(out(), "  bucket bits:      %d\n", in.group_bits);
      return;
    }
    std::fprintf(out(), "  format version:   %d\n", in.format_version);
    std::fprintf(out(), "  group bits:       %d\n", in.group_bits);
  }

  StoreFlags store_;
  bool json_ = false;
};

// ---- dump ------------------------------------------------------------------------

class DumpCommand final : public Command {
 public:
  std::string_view Name() const override { return "dump"; }
  std::string_view Summary() const override {
    return "Write every document, id<TAB>fingerprint<TAB>time<TAB>signature<TAB>metadata, in id "
           "order.";
  }
  std::vector<std::string> Synopsis() const override {
    return {"--db STORE [--output FILE] [--quiet]"};
  }
  std::vector<Example> Examples() const override {
    return {{"--db crawl.fps --output all.tsv", "Dump every document."},
            {"--db old.fps -o all.tsv && fpstore-load --db new.fps --input all.tsv --format tsv "
             "--blocks 8 --distance 4",
             "Rebuild a store with another plan."}};
  }

  void DefineOptions(OptionTable& table) override {
    store_.Define(table, ReadOnlyStore());
    DefineOutput(table, &output_,
                 "Where to write the documents: a header line, then "
                 "id<TAB>fingerprint<TAB>time<TAB>signature<TAB>metadata per line, ids ascending, "
                 "fingerprints as 0x and 16 hex digits (32 for 128 bits), times in RFC 3339 (UTC), "
                 "signatures in hex (- for none), metadata "
                 "as stored except that line breaks are written as \\n and \\r.");
    DefineQuiet(table, &quiet_);
  }

  int Run() override {
    OpenedStore opened = store_.Open(StoreAccess::kReadOnly, nullptr);
    const Store& store = *opened.store;
    OutputFile output(output_, out());
    std::FILE* file = output.get();
    std::uint64_t documents = 0, escaped = 0;
    std::string metadata;
    std::fputs("id\tfingerprint\ttime\tsignature\tmetadata\n", file);
    {
      WorkProgress progress(Progress::AutoStyle(quiet_, err()), kTool, "dumping", err());
      ScanOptions scan;
      scan.progress = progress.Callback();
      ThrowIfError(store.ForEachDocument(
          [&](const Document& doc) {
            std::string_view meta = doc.metadata;
            if (meta.find_first_of("\r\n") != std::string_view::npos) {
              metadata.clear();
              for (char c : meta) {
                metadata += c == '\n' ? "\\n" : c == '\r' ? "\\r" : std::string(1, c);
              }
              meta = metadata;
              ++escaped;
            }
            std::fprintf(file, "%llu\t%s\t%s\t%s\t", static_cast<unsigned long long>(doc.id),
                         FormatFingerprint(doc.fingerprint, store.plan().bits()).c_str(),
                         FormatTime(doc.time).c_str(),
                         FormatSignature(doc.signature.bytes()).c_str());
            std::fwrite(meta.data(), 1, meta.size(), file);
            std::fputc('\n', file);
            ++documents;
          },
          scan));
    }
    output.Commit();
    if (escaped > 0) {
      std::fprintf(err(),
                   "%s: warning: the metadata of %s %s held line breaks, written as \\n "
                   "or \\r\n",
                   kTool, WithCommas(escaped).c_str(), escaped == 1 ? "document" : "documents");
    }
    if (!quiet_) {
      std::fprintf(err(), "%s: %s %s written to %s\n", kTool, WithCommas(documents).c_str(),
                   documents == 1 ? "document" : "documents", output.name().c_str());
    }
    return 0;
  }

 protected:
  void Check(const po::variables_map& vm) override {
    store_.Check(vm);
    CheckOutput(output_);
  }

 private:
  StoreFlags store_;
  std::string output_ = "-";
  bool quiet_ = false;
};

// ---- checkpoint ------------------------------------------------------------------

class CheckpointCommand final : public Command {
 public:
  std::string_view Name() const override { return "checkpoint"; }
  std::string_view Summary() const override {
    return "Write a consistent copy of the store to a new directory (hard links where "
           "possible); a store in Redis refuses: Redis keeps its own copies.";
  }
  std::vector<std::string> Synopsis() const override {
    return {"--db STORE --output DIR", "--db STORE DIR"};
  }
  std::vector<Example> Examples() const override {
    return {{"--db crawl.fps --output backup/crawl-2024-06-01.fps",
             "Back up the store; the copy opens as a store of its own."}};
  }

  void DefineOptions(OptionTable& table) override {
    store_.Define(table, WritableStore());
    table.Add(kOutputGroup, "output,o", po::value(&output_)->value_name("DIR"),
              "The directory to create, which must not exist; may also be given as an "
              "argument. e.g. --output backup.fps");
    table.AllowPositional(&args_);
  }

  int Run() override {
    OpenedStore opened = store_.Open(StoreAccess::kWrite, nullptr);
    Store& store = *opened.store;
    // First, so that a store that cannot be copied (in Redis) is not scanned for its stats.
    ThrowIfError(store.Checkpoint(output_));
    const StoreStats stats = ValueOrThrow(store.Stats());
    CloseStore(store);
    std::fprintf(out(), "checkpoint of %s (%s documents) written to %s\n", store_.db().c_str(),
                 WithCommas(stats.documents).c_str(), output_.c_str());
    return 0;
  }

 protected:
  void Check(const po::variables_map& vm) override {
    store_.Check(vm);
    if (args_.size() > 1 || (!args_.empty() && vm.count("output") > 0)) {
      throw UsageError("checkpoint takes one output directory");
    }
    if (!args_.empty()) output_ = args_.front();
    if (output_.empty()) throw UsageError("checkpoint needs --output DIR");
  }

 private:
  StoreFlags store_;
  std::string output_;
  std::vector<std::string> args_;
};

}  // namespace

std::unique_ptr<Command> NewCreateCommand() { return std::make_unique<CreateCommand>(); }
std::unique_ptr<Command> NewStatsCommand() { return std::make_unique<StatsCommand>(); }
std::unique_ptr<Command> NewDumpCommand() { return std::make_unique<DumpCommand>(); }
std::unique_ptr<Command> NewCheckpointCommand() { return std::make_unique<CheckpointCommand>(); }

}  // namespace fpstore::cli::admin
