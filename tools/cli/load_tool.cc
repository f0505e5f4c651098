#include "cli/load_tool.h"

#include <malloc.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/document_pipeline.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/record_reader.h"
#include "cli/store_access.h"
#include "fpstore/bulk_loader.h"
#include "fpstore/store.h"

namespace fpstore::cli {
namespace po = boost::program_options;
namespace {

constexpr const char* kTool = "fpstore-load";

// The loader's workers allocate and free hundreds of megabytes a table
// (RocksDB's file builders); glibc would give them back to the system after
// each table only to fault them in again for the next. The tool, not the
// library, keeps them: it owns its process.
void KeepFreedMemory() {
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest
}

constexpr std::string_view kLoadGroup = "Loading";

std::string Plural(std::uint64_t n, const char* one, const char* many) {
  return WithCommas(n) + " " + (n == 1 ? one : many);
}

class LoadCommand final : public Command {
 public:
  std::string_view Name() const override { return "load"; }
  std::string_view Summary() const override {
    return "Load documents or fingerprints into a store, all or nothing (into Redis: in rounds, "
           "each document whole).";
  }
  std::vector<std::string> Synopsis() const override {
    return {
        "--db STORE --input FILE [--format jsonl|tsv|hash] [--blocks M --distance K] "
        "[--window N]",
        "--db STORE --input FILE [--expected-documents N [--disk-budget GB] "
        "[--memory-budget GB]]",
        "--db STORE --input FILE [--text-column KEY] [--id-column KEY] [--meta-column KEY] "
        "[--threads N] [--skip-bad FILE] [--sample N] [--quiet]"};
  }
  std::vector<Example> Examples() const override {
    return {{"--db crawl.fps --input pages.jsonl --meta-column url",
             "Fingerprint and load JSONL documents, keeping each one's url; creates crawl.fps "
             "if needed."},
            {"--db crawl.fps --input fingerprints.tsv --format tsv",
             "Load id<TAB>hash lines made elsewhere."},
            {"--db new.fps --blocks 8 --distance 4 --window 5 --input docs.jsonl",
             "Create a store that answers within 4 bits, with 5-token shingles, and load it."},
            {"--db crawl.fps --input - --skip-bad rejected.txt < pages.jsonl",
             "Read standard input; write malformed lines to rejected.txt instead of stopping."},
            {"--db redis://10.0.0.5:7000/crawl --input pages.jsonl --meta-column url",
             "Load into the store crawl in the Redis Cluster of the node at 10.0.0.5:7000, "
             "creating it if needed."}};
  }

  void DefineOptions(OptionTable& table) override {
    store_.Define(table, {.plan = true,
                          .db_help = "The store to load into, created with --blocks, "
                                     "--distance, --window and --weighting if there is none "
                                     "yet. A load into Redis is not all or nothing: one that "
                                     "fails while writing leaves the documents written before."});
    input_.Define(table,
                  "The file to load: documents (jsonl) or fingerprints (tsv, hash); - reads "
                  "standard input. e.g. --input pages.jsonl");
    fingerprint_.Define(table, /*offer_bits=*/true);
    pipeline_.Define(table, kLoadGroup, "load");
    table.Add(kLoadGroup, "memory",
              WholeNumber("memory", &memory_mb_, 1, kMaxMemoryMb)->value_name("MB"),
              "Megabytes of documents held in memory before a sorted run is spilled to disk, 1 "
              "to 16,777,216 (a load into Redis holds every document in memory). "
              "Default: 1024. e.g. --memory 4096");
    table.Add(kLoadGroup, "temp-dir", po::value(&temp_dir_)->value_name("DIR"),
              "Where sorted runs and table files are written before ingestion (not for a store "
              "in Redis, which writes none). Default: inside the store, so that ingestion moves "
              "the files instead of copying them. e.g. --temp-dir /scratch",
              {"temp_dir"});
    table.AddSwitch(kGeneralGroup, "quiet,q", &quiet_,
                    "No progress and no summary on standard error; errors are still shown. "
                    "e.g. --quiet");
    table.Add(kGeneralGroup, "output", po::value(&output_)->value_name("FILE"),
              "Refused: fpstore-load writes a store, not results (the simhash tool wrote its "
              "clusters to --output). Load, then write them with fpstore-admin clusters. "
              "e.g. fpstore-admin clusters --db crawl.fps --output clusters.tsv");
  }

  int Run() override {
    KeepFreedMemory();
    InterruptGuard interrupts;
    ReaderOptions reader_options = input_.reader_options();
    reader_options.allow_empty = true;  // said below, with the skipped lines counted

    // Everything that can fail without the store comes first, so that it
    // fails before the store is touched (or created).
    std::unique_ptr<BadLineFile> bad_lines;
    if (!pipeline_.skip_bad().empty()) {
      bad_lines = std::make_unique<BadLineFile>(pipeline_.skip_bad());
    }
    Progress* progress = nullptr;
    std::function<void(std::uint64_t, std::string_view, const std::string&)> write_bad;
    if (bad_lines != nullptr) {
      write_bad = bad_lines->Callback();
      reader_options.on_bad_line = [&](std::uint64_t line, std::string_view text,
                                       const std::string& reason) {
        write_bad(line, text, reason);
        if (progress != nullptr) progress->AddSkipped(1);
      };
    }
    std::unique_ptr<RecordReader> reader = RecordReader::Open(reader_options);

    // Fingerprints from tsv or hash come bare: a new store's plan is costed without signatures.
    const std::optional<int> plan_signature_bytes =
        reader_options.format == InputFormat::kJsonl ? std::nullopt : std::optional<int>(0);
    OpenedStore opened = store_.Open(StoreAccess::kCreate, &fingerprint_, plan_signature_bytes);
    reader->SetFingerprintBits(opened.store->plan().bits());
    int status = 0;
    try {
      status = Load(*reader, opened, interrupts, bad_lines.get(), &progress);
    } catch (...) {
      DiscardCreatedStore(&opened);
      throw;
    }
    if (status != 0) DiscardCreatedStore(&opened);
    return status;
  }

 protected:
  void Check(const po::variables_map& vm) override {
    if (vm.count("output") > 0) {
      throw UsageError(
          "--output: fpstore-load writes a store, not results; load with fpstore-load --db STORE "
          "..., then write the clusters with fpstore-admin clusters --db STORE --output " +
          (output_.empty() ? std::string("FILE") : output_) +
          " (or the pairs with fpstore-admin find-all)");
    }
    store_.Check(vm);
    input_.Check(vm);
    fingerprint_.Check(vm);
    if (!input_.given()) throw UsageError("--input FILE is required (- for standard input)");
    if (fingerprint_.text_options_given() &&
        input_.reader_options().format != InputFormat::kJsonl) {
      throw UsageError(
          "--window and --weighting apply to --format jsonl only; tsv and hash hold "
          "fingerprints already");
    }
    pipeline_.Check(vm);
    if (vm.count("temp-dir") > 0 && temp_dir_.empty()) {
      throw UsageError("--temp-dir: empty directory name");
    }
  }

 private:
  // Reads, then ingests. Throws with the store unchanged, except once
  // Finish has succeeded, or, into an existing store in Redis, has begun.
  int Load(RecordReader& reader, OpenedStore& opened, InterruptGuard& interrupts,
           BadLineFile* bad_lines, Progress** progress_slot) {
    Store& store = *opened.store;
    const Progress::Style style = Progress::AutoStyle(quiet_, err());

    BulkLoadOptions load_options;
    load_options.memory_bytes = static_cast<std::size_t>(memory_mb_) << 20;
    load_options.threads = pipeline_.threads();
    load_options.temp_dir = temp_dir_;
    WorkProgress finishing(style, kTool,
                           store_.in_redis() ? "writing to Redis" : "writing and ingesting tables",
                           err());
    load_options.progress = finishing.Callback();
    std::unique_ptr<BulkLoader> loader =
        ValueOrThrow(store.NewBulkLoader(load_options), "loading into " + store_.db());

    Progress::Options progress_options;
    progress_options.style = style;
    progress_options.label = kTool;
    progress_options.total_bytes = reader.total_bytes();
    progress_options.stream = err();
    std::optional<Progress> progress(std::in_place, progress_options);
    *progress_slot = &*progress;

    PipelineOptions pipeline;
    pipeline.threads = pipeline_.threads();
    pipeline.limit = pipeline_.sample();
    pipeline.progress = &*progress;
    pipeline.stop = interrupts.Poll();
    std::uint64_t read = 0;
    const std::string context = "loading into " + store_.db();  // not made anew a record
    try {
      read = ReadDocuments(reader, store.fingerprinter(), pipeline, [&](InputDocument& doc) {
        ThrowIfError(loader->Add({doc.id, doc.fingerprint, doc.metadata, std::move(doc.signature),
                                  doc.time}),
                     context);
      });
    } catch (const Interrupted& e) {
      return Interrupt(e.signal(), &progress, progress_slot, style);
    }
    const Progress::Snapshot reading = progress->Now();
    *progress_slot = nullptr;
    progress.reset();  // stops its reports; the summary comes at the end
    if (style == Progress::Style::kBar) std::fputs("\r\x1b[K", err());

    const std::uint64_t skipped = bad_lines != nullptr ? bad_lines->count() : 0;
    if (bad_lines != nullptr) bad_lines->Close();
    if (read == 0) {
      throw InputError(reader.name(), 0,
                       skipped == 0
                           ? "empty input (no records)"
                           : "no valid records (" + Plural(skipped, "bad line", "bad lines") +
                                 " written to " + bad_lines->path() + ")");
    }

    // Ingestion cannot stop part-way, and need not: it is atomic. A signal
    // from now on ends the process at once, with the load in or not (in
    // Redis, with the rounds written so far).
    interrupts.RestoreDefaults();
    if (const int signal = interrupts.signal(); signal != 0) {
      return Interrupt(signal, nullptr, progress_slot, style);
    }
    Result<BulkLoadStats> stats = loader->Finish();
    finishing.Finish();
    if (!stats.ok() && store_.in_redis() && !opened.created) {
      // A new store goes as a whole (Run); an existing one keeps what was written.
      throw RuntimeError(ErrorMessage(stats.status(), context) +
                         " (a load into Redis is not all or nothing: the documents written "
                         "before the failure are stored, each whole; the same load again "
                         "finishes it)");
    }
    ThrowIfError(stats.status(), context);
    loader.reset();
    opened.created = false;  // the load is in: nothing to undo any more
    ThrowIfError(store.Close(), "closing " + store_.db());

    if (style != Progress::Style::kNone) {
      Progress::Snapshot summary = reading;
      summary.seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      summary.documents = stats->added + stats->replaced;
      std::fprintf(err(), "%s: %s\n", kTool, Progress::FormatSummary(summary, "loaded").c_str());
      std::string details =
          WithCommas(stats->added) + " new, " + WithCommas(stats->replaced) + " replaced";
      if (stats->superseded > 0) {
        details += ", " + Plural(stats->superseded, "duplicate id", "duplicate ids") +
                   " in the input (the later line won)";
      }
      if (stats->past_retention > 0) {
        details += ", " + WithCommas(stats->past_retention) +
                   " already past the retention (stored, never returned)";
      }
      if (skipped > 0) {
        details +=
            ", " + Plural(skipped, "bad line", "bad lines") + " written to " + bad_lines->path();
      }
      std::fprintf(err(), "%s: %s\n", kTool, details.c_str());
    }
    return 0;
  }

  // Says that the load stopped and returns the exit status, 128 + signal.
  int Interrupt(int signal, std::optional<Progress>* progress, Progress** progress_slot,
                Progress::Style style) {
    *progress_slot = nullptr;
    if (progress != nullptr) progress->reset();
    if (style == Progress::Style::kBar) std::fputs("\r\x1b[K", err());
    std::fprintf(err(), "%s: %s: nothing loaded, %s is unchanged\n", kTool,
                 Interrupted(signal).what(), store_.db().c_str());
    return 128 + signal;
  }

  const std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  StoreFlags store_;
  InputFlags input_;
  FingerprintFlags fingerprint_;
  PipelineFlags pipeline_;
  int memory_mb_ = 1024;
  std::string temp_dir_;
  std::string output_;  // refused: what the simhash tool's users give
  bool quiet_ = false;
};

}  // namespace

CommandRegistry LoadTool() {
  CommandRegistry tool(
      kTool,
      "Bulk import into an fpstore: all documents in one atomic step (into Redis, in "
      "rounds).",
      ExitPolicy::Standard(), CommandRegistry::Dispatch::kModeFlag);
  tool.Register([] { return std::make_unique<LoadCommand>(); }, /*is_default=*/true);
  return tool;
}

}  // namespace fpstore::cli
