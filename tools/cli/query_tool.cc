#include "cli/query_tool.h"

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cli/document_pipeline.h"
#include "cli/line_reader.h"
#include "cli/match_printer.h"
#include "cli/options.h"
#include "cli/output_file.h"
#include "cli/parse.h"
#include "cli/progress.h"
#include "cli/record_reader.h"
#include "cli/store_access.h"
#include "fpstore/fingerprinter.h"
#include "fpstore/store.h"

namespace fpstore::cli {
namespace po = boost::program_options;
namespace {

constexpr const char* kTool = "fpstore-query";

constexpr const char* kInputHelp =
    "A file of records: documents, or hashes with --format tsv or hash; - reads standard input. "
    "e.g. --input docs.jsonl";

// ---- The store ----------------------------------------------------------------

constexpr const char* kDbHelp =
    "Search this store for near-duplicates (the default mode). With --fingerprint or "
    "--distance-between, use the store's fingerprint options. Opened read-only: works beside "
    "a process that writes to it.";

// --db in every mode: optional here, each mode says when it needs it.
void DefineDb(OptionTable& table, StoreFlags* store) {
  store->Define(table, {.db_required = false, .db_help = kDbHelp, .db_group = kModeGroup});
}

// The options to fingerprint texts with. Without a store: the defaults,
// changed by --window and --weighting. With one, the options the store
// recorded at creation (fingerprints made otherwise would not be comparable
// with the store's); --window or --weighting values that differ from them
// are refused.
FingerprintOptions ResolveFingerprintOptions(const StoreFlags& store,
                                             const FingerprintFlags& flags) {
  if (!store.given()) return flags.Apply(FingerprintOptions{});
  OpenedStore opened = store.Open(StoreAccess::kReadOnly, &flags);
  return opened.store->fingerprinter().options();
}

// ---- Helpers shared by the modes --------------------------------------------

void DefineDistance(OptionTable& table, int* distance) {
  table.Add(kQueryGroup, "distance", WholeNumber("distance", distance, 0, 128)->value_name("K"),
            "The largest Hamming distance, in bits (0 to 128), that counts as a near-duplicate. "
            "Search: default the store's planned distance. With --distance-between: exit 0 if "
            "the two are within K, 1 if not. e.g. --distance 3");
}

void DefineQuiet(OptionTable& table, bool* quiet) {
  table.AddSwitch(kGeneralGroup, "quiet,q", quiet,
                  "No progress bar on a terminal for --input. e.g. --quiet");
}

Fingerprinter MakeFingerprinter(const FingerprintOptions& options) {
  Result<Fingerprinter> fingerprinter = Fingerprinter::Create(options);
  if (!fingerprinter.ok()) throw UsageError(fingerprinter.status().message());
  return *std::move(fingerprinter);
}

// The fingerprint and signature of a text; `where` names it in messages.
Sketch SketchOf(const Fingerprinter& fingerprinter, std::string_view text,
                const std::string& where) {
  Result<Sketch> sketch = fingerprinter.SketchText(text);
  if (!sketch.ok()) throw RuntimeError(where + ": " + sketch.status().message());
  return *std::move(sketch);
}

// The fingerprint and signature of a file's whole content.
Sketch SketchOfFile(const Fingerprinter& fingerprinter, const std::string& path) {
  const std::string text = ReadWholeFile(path);
  const std::string name = path == "-" ? "<stdin>" : path;
  if (text.empty()) throw RuntimeError(name + ": empty text");
  return SketchOf(fingerprinter, text, name);
}

// ---- --fingerprint ----------------------------------------------------------

class FingerprintCommand final : public Command {
 public:
  std::string_view Name() const override { return "fingerprint"; }
  std::string_view Summary() const override {
    return "Print the fingerprint of a text, a file, or each JSONL document.";
  }
  std::vector<std::string> Synopsis() const override {
    return {"--fingerprint (--text T | --file F) [--window N] [--weighting W]",
            "--fingerprint --input FILE.jsonl [--text-column KEY] [--id-column KEY]"};
  }
  std::vector<Example> Examples() const override {
    return {{"--fingerprint --text 'the quick brown fox jumps over the lazy dog'",
             "Print the text's fingerprint as 0x and 16 hex digits."},
            {"--fingerprint --file page.txt --window 5 --weighting presence",
             "Fingerprint a file with 5-token shingles, each counted once."},
            {"--fingerprint --input docs.jsonl --text-column body",
             "Print id<TAB>fingerprint for each document."}};
  }

  void DefineOptions(OptionTable& table) override {
    table.AddSwitch(kModeGroup, "fingerprint", &mode_,
                    "Print fingerprints instead of searching. e.g. --fingerprint --text 'hello "
                    "world'");
    DefineDb(table, &store_);
    sources_.Define(table);
    input_.Define(table, kInputHelp);
    flags_.Define(table, /*offer_bits=*/true);
    DefineQuiet(table, &quiet_);
  }

  int Run() override {
    const Fingerprinter fingerprinter =
        MakeFingerprinter(ResolveFingerprintOptions(store_, flags_));
    const int bits = fingerprinter.options().bits;
    if (!sources_.texts.empty()) {
      Print(SketchOf(fingerprinter, sources_.texts.front(), "--text").fingerprint, bits);
    } else if (!sources_.files.empty()) {
      Print(SketchOfFile(fingerprinter, sources_.files.front()).fingerprint, bits);
    } else {
      FingerprintDocuments(fingerprinter);
    }
    return 0;
  }

 protected:
  void Check(const po::variables_map& vm) override {
    store_.Check(vm);
    sources_.Check();
    input_.Check(vm);
    flags_.Check(vm);
    const std::size_t count = sources_.count() + (input_.given() ? 1 : 0);
    if (count == 0) throw UsageError("--fingerprint needs --text, --file or --input");
    if (count > 1) throw UsageError("--fingerprint takes one of --text, --file or --input");
    if (input_.given() && input_.reader_options().format != InputFormat::kJsonl) {
      throw UsageError("--fingerprint --input reads JSONL documents; --format " +
                       std::string(InputFormatName(input_.reader_options().format)) +
                       " holds fingerprints already");
    }
  }

 private:
  void Print(Fingerprint fp, int bits) {
    std::fprintf(out(), "%s\n", FormatFingerprint(fp, bits).c_str());
  }

  void FingerprintDocuments(const Fingerprinter& fingerprinter) {
    std::unique_ptr<RecordReader> reader = RecordReader::Open(input_.reader_options());
    Progress::Options options;
    options.style = Progress::AutoStyle(quiet_, err(), /*lines_when_not_terminal=*/false);
    options.label = kTool;
    options.total_bytes = reader->total_bytes();
    options.stream = err();
    Progress progress(options);
    Record record;
    std::uint64_t bytes = 0;
    while (reader->Next(&record)) {
      Result<Fingerprint> fp = fingerprinter.FromText(record.text);
      if (!fp.ok()) {
        throw InputError(
            reader->name(), record.line,
            QuoteForMessage(input_.reader_options().text_column) + ": " + fp.status().message());
      }
      std::fprintf(out(), "%llu\t%s\n", static_cast<unsigned long long>(record.id),
                   FormatFingerprint(*fp, fingerprinter.options().bits).c_str());
      progress.AddDocuments(1);
      progress.AddBytes(reader->bytes_read() - bytes);
      bytes = reader->bytes_read();
    }
    progress.Finish("fingerprinted");
  }

  bool mode_ = false;
  StoreFlags store_;
  TextFlags sources_;
  InputFlags input_;
  FingerprintFlags flags_;
  bool quiet_ = false;
};

// ---- --distance-between -----------------------------------------------------

class DistanceCommand final : public Command {
 public:
  std::string_view Name() const override { return "distance-between"; }
  std::string_view Summary() const override {
    return "Print the Hamming distance between two hashes, texts or files.";
  }
  std::vector<std::string> Synopsis() const override {
    return {"--distance-between A B [--distance K]",
            "--distance-between (--text T | --file F) (--text T | --file F) [--window N]"};
  }
  std::vector<Example> Examples() const override {
    return {{"--distance-between 0x0123456789abcdef 0x0123456789abcdee",
             "Print 1: the hashes differ in one bit."},
            {"--distance-between --file a.txt --file b.txt --distance 3",
             "Print the distance between two files' fingerprints; exit 0 if within 3 bits."}};
  }

  void DefineOptions(OptionTable& table) override {
    table.Add(kModeGroup, "distance-between",
              po::value(&hashes_)->value_name("[A B]")->multitoken()->zero_tokens(),
              "Print the Hamming distance between two fingerprints: two hashes of up to 128 bits "
              "(decimal or 0x hex) after the flag, or two of --text and --file, or one of each. "
              "e.g. --distance-between 0x1f 0x2f");
    DefineDb(table, &store_);
    sources_.Define(table);
    flags_.Define(table, /*offer_bits=*/true);
    DefineDistance(table, &distance_);
  }

  int Run() override {
    std::vector<Fingerprint> fingerprints = parsed_;
    if (sources_.count() > 0) {
      const Fingerprinter fingerprinter =
          MakeFingerprinter(ResolveFingerprintOptions(store_, flags_));
      for (const std::string& text : sources_.texts) {
        fingerprints.push_back(SketchOf(fingerprinter, text, "--text").fingerprint);
      }
      for (const std::string& file : sources_.files) {
        fingerprints.push_back(SketchOfFile(fingerprinter, file).fingerprint);
      }
    }
    const int distance = HammingDistance(fingerprints[0], fingerprints[1]);
    std::fprintf(out(), "%d\n", distance);
    return has_threshold_ && distance > distance_ ? 1 : 0;
  }

 protected:
  void Check(const po::variables_map& vm) override {
    store_.Check(vm);
    sources_.Check();
    flags_.Check(vm);
    has_threshold_ = vm.count("distance") > 0;
    for (const std::string& hash : hashes_) {
      Result<Fingerprint> fp = ParseFingerprint(hash, 128);
      if (!fp.ok()) throw UsageError("--distance-between: " + fp.status().message());
      parsed_.push_back(*fp);
    }
    if (sources_.count() == 0 && (store_.given() || flags_.given())) {
      throw UsageError(store_.given()
                           ? "--db only applies to --text and --file, not to hashes"
                           : "--window, --weighting and --bits only apply to --text and --file, "
                             "not to hashes");
    }
    const std::size_t count = parsed_.size() + sources_.count();
    if (count != 2) {
      throw UsageError(
          "--distance-between needs two fingerprints (hashes, --text or --file), got " +
          std::to_string(count));
    }
  }

 private:
  std::vector<std::string> hashes_;
  std::vector<Fingerprint> parsed_;
  StoreFlags store_;
  TextFlags sources_;
  FingerprintFlags flags_;
  int distance_ = 0;
  bool has_threshold_ = false;
};

// ---- Search (the default mode) ------------------------------------------------

class SearchCommand final : public Command {
 public:
  std::string_view Name() const override { return "search"; }
  std::string_view Summary() const override {
    return "Find the near-duplicates in a store of a hash, a text, a file or a batch.";
  }
  std::vector<std::string> Synopsis() const override {
    return {
        "--db STORE (--hash H | --text T | --file F | --input FILE) [--distance K] "
        "[--min-similarity S] [--json]"};
  }
  std::vector<Example> Examples() const override {
    return {{"--db crawl.fps --text 'the quick brown fox' --distance 3",
             "List the stored documents within 3 bits of the text."},
            {"--db crawl.fps --hash 0x5f2a9c41d7e8b306 --json",
             "Near-duplicates of a fingerprint, as JSON lines."},
            {"--db crawl.fps --input batch.tsv --format tsv",
             "Near-duplicates of every id<TAB>hash line, with a query column."},
            {"--db redis://10.0.0.5:7000/crawl --text 'the quick brown fox'",
             "Search the store crawl in the Redis Cluster of the node at 10.0.0.5:7000."}};
  }

  void DefineOptions(OptionTable& table) override {
    DefineDb(table, &store_);
    table.Add(kSourceGroup, "hash", po::value(&hash_)->value_name("H"),
              "A fingerprint, decimal or 0x hex. e.g. --hash 0x5f2a9c41d7e8b306");
    sources_.Define(table);
    input_.Define(table, kInputHelp);
    flags_.Define(table);
    DefineDistance(table, &distance_);
    DefineMinSimilarity(table, kQueryGroup, "a match", &min_similarity_);
    table.AddSwitch(kQueryGroup, "json", &json_,
                    "Print JSON lines instead of a table: one object per match. e.g. --json");
    table.Add(kQueryGroup, "output,o", po::value(&output_)->value_name("FILE"),
              "Where the matches go; - means standard output. A file is written under a "
              "temporary name and renamed when complete. Default: -. e.g. --output matches.tsv");
    table.AddSwitch(kQueryGroup, "tsv", &tsv_,
                    "Print tab-separated lines under a header line instead of a table, "
                    "tabs, line ends and backslashes in metadata escaped. e.g. --tsv");
    table.AddSwitch(kQueryGroup, "per-query", &per_query_,
                    "With --json: one object per query, {\"query\":ID,\"matches\":[...]}, "
                    "written even when it has no match, so that a program feeding --input - "
                    "knows where each answer ends. e.g. --json --per-query");
    DefineQuiet(table, &quiet_);
  }

  int Run() override {
    OpenedStore opened = store_.Open(StoreAccess::kReadOnly, &flags_);
    const Store& store = *opened.store;
    const int k = SearchDistance(store, store_.db(),
                                 has_distance_ ? std::optional<int>(distance_) : std::nullopt);
    const QueryOptions query{k, min_similarity_};
    const MatchPrinter::Format format = per_query_ ? MatchPrinter::Format::kJsonPerQuery
                                        : json_    ? MatchPrinter::Format::kJson
                                        : tsv_     ? MatchPrinter::Format::kTsv
                                                   : MatchPrinter::Format::kTable;
    OutputFile output(output_, out());
    MatchPrinter printer(output.get(), format, /*batch=*/input_.given(), store.plan().bits());
    if (input_.given()) {
      SearchBatch(store, query, printer);
    } else {
      Sketch sketch;
      if (hash_given_) {
        Result<Fingerprint> fp = ParseFingerprint(hash_, store.plan().bits());
        if (!fp.ok()) throw UsageError("--hash: " + fp.status().message());
        sketch.fingerprint = *fp;
      } else if (!sources_.texts.empty()) {
        sketch = SketchOf(store.fingerprinter(), sources_.texts.front(), "--text");
      } else {
        sketch = SketchOfFile(store.fingerprinter(), sources_.files.front());
      }
      const std::vector<Match> matches =
          ValueOrThrow(store.Query(sketch, query), "searching " + store_.db());
      printer.Print({}, std::span<const std::vector<Match>>(&matches, 1));
    }
    output.Commit();
    return printer.matches() > 0 ? 0 : 1;
  }

 protected:
  void Check(const po::variables_map& vm) override {
    store_.Check(vm);
    sources_.Check();
    input_.Check(vm);
    flags_.Check(vm);
    has_distance_ = vm.count("distance") > 0;
    const bool has_hash = vm.count("hash") > 0;
    if (has_hash) {
      // A 64-bit value, or (read again at the store's width when it runs) a 128-bit one; a
      // value neither can be is refused as a 64-bit store would refuse it.
      Result<Fingerprint> fp = ParseFingerprint(hash_, 64);
      if (!fp.ok() && !ParseFingerprint(hash_, 128).ok()) {
        throw UsageError("--hash: " + fp.status().message());
      }
      hash_given_ = true;
    }
    const std::size_t count = sources_.count() + (has_hash ? 1 : 0) + (input_.given() ? 1 : 0);
    if (!store_.given()) {
      if (count == 0) {
        throw UsageError(
            "nothing to do: give --db STORE and what to look for, or --fingerprint, or "
            "--distance-between");
      }
      throw UsageError(
          "searching needs --db STORE (the store); to print a fingerprint, add --fingerprint");
    }
    if (count == 0) throw UsageError("--db needs one of --hash, --text, --file or --input");
    if (count > 1) throw UsageError("give only one of --hash, --text, --file or --input");
    if (json_ && tsv_) throw UsageError("give only one of --json and --tsv");
    if (output_.empty()) throw UsageError("--output: empty file name (use - for standard output)");
    if (per_query_ && !json_) throw UsageError("--per-query applies to --json only");
  }

 private:
  // Queries this many fingerprints at a time: QueryBatch walks each table
  // once per call, so larger batches are cheaper per query.
  static constexpr std::size_t kQueryBatch = 4096;

  // --input: the near-duplicates of every record, in input order. From a pipe or a terminal each
  // record is answered, and the answer written out, before the next is read.
  void SearchBatch(const Store& store, const QueryOptions& query, MatchPrinter& printer) {
    std::unique_ptr<RecordReader> reader = RecordReader::Open(input_.reader_options());
    reader->SetFingerprintBits(store.plan().bits());
    const bool streaming = !reader->total_bytes().has_value();
    Progress::Options options;
    options.style = Progress::AutoStyle(quiet_, err(), /*lines_when_not_terminal=*/false);
    options.label = kTool;
    options.total_bytes = reader->total_bytes();
    options.stream = err();
    Progress progress(options);

    std::vector<DocumentId> ids;
    std::vector<Sketch> sketches;
    const auto flush = [&] {
      if (sketches.empty()) return;
      const std::vector<std::vector<Match>> answers =
          ValueOrThrow(store.QueryBatch(sketches, query), "searching " + store_.db());
      printer.Print(ids, answers);
      if (streaming) printer.Flush();
      ids.clear();
      sketches.clear();
    };
    PipelineOptions pipeline;
    pipeline.progress = &progress;
    pipeline.streaming = streaming;
    try {
      ReadDocuments(*reader, store.fingerprinter(), pipeline, [&](InputDocument& doc) {
        ids.push_back(doc.id);
        sketches.push_back({doc.fingerprint, std::move(doc.signature)});
        if (streaming || sketches.size() == kQueryBatch) flush();
      });
    } catch (const InputError&) {
      flush();  // the answers for the lines before the bad one, as --fingerprint does
      throw;
    }
    flush();
    progress.Finish("searched");
  }

  StoreFlags store_;
  std::string hash_;
  bool hash_given_ = false;  // --hash, read at the store's width when it runs
  TextFlags sources_;
  InputFlags input_;
  FingerprintFlags flags_;
  int distance_ = 0;
  bool has_distance_ = false;
  std::optional<double> min_similarity_;
  bool json_ = false;
  bool tsv_ = false;
  bool per_query_ = false;
  std::string output_ = "-";
  bool quiet_ = false;
};

}  // namespace

CommandRegistry QueryTool() {
  CommandRegistry tool(kTool,
                       "Ad-hoc checks: near-duplicates in an fpstore, fingerprints, distances.",
                       ExitPolicy::GrepLike(), CommandRegistry::Dispatch::kModeFlag);
  tool.Register([] { return std::make_unique<SearchCommand>(); }, /*is_default=*/true);
  tool.Register([] { return std::make_unique<FingerprintCommand>(); });
  tool.Register([] { return std::make_unique<DistanceCommand>(); });
  return tool;
}

}  // namespace fpstore::cli
