#include "cli/admin_tool.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cli/line_reader.h"
#include "cli/options.h"
#include "cli/parse.h"
#include "cli/progress.h"
#include "cli/record_reader.h"
#include "cli/store_access.h"
#include "fpstore/store.h"

namespace fpstore::cli {
namespace po = boost::program_options;
namespace fs = std::filesystem;
namespace {

constexpr const char* kTool = "fpstore-admin";

constexpr std::string_view kScanGroup = "Scan options";
constexpr std::string_view kOutputGroup = "Output";

// ---- Formatting ---------------------------------------------------------------

std::string Fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", decimals, value);
  return buffer;
}

// 0.0123 -> "0.0123", 12345.6 -> "12,346": a rough number, to about three
// significant digits.
std::string Rough(double value) {
  if (value >= 1000 && value < 1e15) {
    return WithCommas(static_cast<std::uint64_t>(std::llround(value)));
  }
  if (value == 0) return "0";
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.3g", value);
  return buffer;
}

// The table's chosen blocks, "0,1,2".
std::string BlockList(const TablePermutation& table) {
  std::string out;
  for (int b : table.leading_blocks()) out += (out.empty() ? "" : ",") + std::to_string(b);
  return out;
}

// "20 tables, prefixes of 31 to 33 bits".
std::string DescribeTables(const PermutationPlan& plan) {
  int low = 64, high = 0;
  for (const TablePermutation& t : plan.tables()) {
    low = std::min(low, t.prefix_bits());
    high = std::max(high, t.prefix_bits());
  }
  const std::string bits = low == high
                               ? std::to_string(low) + " bits"
                               : std::to_string(low) + " to " + std::to_string(high) + " bits";
  return std::to_string(plan.table_count()) + (plan.table_count() == 1 ? " table" : " tables") +
         ", prefixes of " + bits;
}

// The number of stored documents a query meets in all tables' prefix
// ranges when `documents` random fingerprints are stored: the sum over
// tables of documents / 2^prefix_bits. Each candidate costs a popcount.
double ExpectedCandidates(const PermutationPlan& plan, double documents) {
  double sum = 0;
  for (const TablePermutation& t : plan.tables()) {
    sum += std::ldexp(documents, -t.prefix_bits());
  }
  return sum;
}

std::string_view WeightingName(FeatureWeighting weighting) {
  return weighting == FeatureWeighting::kPresence ? "presence" : "tf";
}

// ---- Options and steps shared by the commands ----------------------------------------

// The plan a new store gets when --blocks or --distance is left out: the
// library's defaults at creation (StoreOptions, options.h).
constexpr int kDefaultBlocks = 6;
constexpr int kDefaultDistance = 3;

void DefineQuiet(OptionTable& table, bool* quiet) {
  table.AddSwitch(kGeneralGroup, "quiet,q", quiet,
                  "No progress and no summary on standard error. e.g. --quiet");
}

void DefineScanThreads(OptionTable& table, int* threads) {
  table.Add(kScanGroup, "threads", po::value(threads)->value_name("N"),
            "Threads to scan the tables with; 0 means one per core. Default: 0. "
            "e.g. --threads 4");
}

void CheckThreads(int threads) {
  if (threads < 0) throw UsageError("--threads: " + std::to_string(threads) + " is negative");
}

// --distance K of find-all and clusters: a search distance, checked against
// the store's plan once it is open (SearchDistance), as in fpstore-query.
void DefineScanDistance(OptionTable& table, int* distance) {
  table.Add(kScanGroup, "distance", po::value(distance)->value_name("K"),
            "The largest Hamming distance, in bits, between two documents that count as "
            "near-duplicates; at most the store's planned distance. Default: the planned "
            "distance. e.g. --distance 2");
}

std::optional<int> CheckScanDistance(const po::variables_map& vm, int distance) {
  if (vm.count("distance") == 0) return std::nullopt;
  if (distance < 0 || distance > 64) {
    throw UsageError("--distance: " + std::to_string(distance) + " is out of range (0 to 64)");
  }
  return distance;
}

void DefineOutput(OptionTable& table, std::string* output, std::string_view what) {
  table.Add(kOutputGroup, "output,o", po::value(output)->value_name("FILE"),
            std::string(what) +
                " - means standard output. A file is written under a temporary name and renamed "
                "when complete, so a failed run leaves no partial file. Default: -. "
                "e.g. --output out.tsv");
}

void CheckOutput(const std::string& output) {
  if (output.empty()) throw UsageError("--output: empty file name (use - for standard output)");
}

// A store's --db description, by how the command opens it.
StoreFlags::Config ReadOnlyStore() {
  return {.db_help =
              "The store, opened read-only: works while another process writes to it. "
              "e.g. --db crawl.fps"};
}
StoreFlags::Config WritableStore(bool durability = false) {
  return {.durability = durability,
          .db_help = "The store, opened for writing; it must exist. e.g. --db crawl.fps"};
}

void CloseStore(Store& store) { ThrowIfError(store.Close()); }

// ---- Output files ------------------------------------------------------------------

// Where --output goes. "-" is the command's standard output. A regular file
// (or a new one) is written as FILE.tmp-PID beside it and renamed to FILE
// by Commit, so that a run that fails leaves no partial file behind; other
// paths (/dev/stdout, a pipe) are written directly.
class OutputFile {
 public:
  OutputFile(const std::string& path, std::FILE* standard_output) : path_(path) {
    if (path == "-") {
      file_ = standard_output;
      name_ = "standard output";
      return;
    }
    name_ = path;
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (fs::is_directory(status)) throw RuntimeError("cannot write " + path + ": a directory");
    const bool direct = fs::exists(status) && !fs::is_regular_file(status);
    write_path_ = direct ? path : path + ".tmp-" + std::to_string(::getpid());
    file_ = std::fopen(write_path_.c_str(), "wb");
    if (file_ == nullptr) {
      throw RuntimeError("cannot write " + write_path_ + ": " + std::strerror(errno));
    }
    owned_ = true;
    temporary_ = !direct;
  }

  ~OutputFile() {
    if (owned_) std::fclose(file_);
    if (temporary_) {
      std::error_code ignored;
      fs::remove(write_path_, ignored);
    }
  }

  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  std::FILE* get() const { return file_; }

  // "pairs.tsv", or "standard output".
  const std::string& name() const { return name_; }

  // Flushes and puts the file in place. Throws RuntimeError.
  void Commit() {
    const bool failed = std::fflush(file_) != 0 || std::ferror(file_) != 0;
    const int error = errno;
    if (owned_) {
      owned_ = false;
      if (std::fclose(file_) != 0 && !failed) {
        throw RuntimeError("cannot write " + write_path_ + ": " + std::strerror(errno));
      }
    }
    if (failed) throw RuntimeError("cannot write " + name_ + ": " + std::strerror(error));
    if (temporary_) {
      std::error_code ec;
      fs::rename(write_path_, path_, ec);
      if (ec) {
        throw RuntimeError("cannot rename " + write_path_ + " to " + path_ + ": " + ec.message());
      }
      temporary_ = false;
    }
  }

 private:
  std::string path_;
  std::string name_;
  std::string write_path_;
  std::FILE* file_ = nullptr;
  bool owned_ = false;
  bool temporary_ = false;
};

// ---- create ----------------------------------------------------------------------

class CreateCommand final : public Command {
 public:
  std::string_view Name() const override { return "create"; }
  std::string_view Summary() const override {
    return "Create a store with a plan (blocks, distance) and fingerprint options.";
  }
  std::vector<std::string> Synopsis() const override {
    return {
        "--db DIR [--blocks M] [--distance K] [--window N] [--weighting W] "
        "[--expected-documents N] [--dry-run]"};
  }
  std::vector<Example> Examples() const override {
    return {
        {"--db crawl.fps", "Create a store with the defaults: 6 blocks, distance 3 (20 tables)."},
        {"--db crawl.fps --blocks 8 --distance 4 --window 5 --expected-documents 100000000",
         "Create a store for distance 4 (70 tables) and estimate the candidates per query "
         "at 100 million documents."},
        {"--db unused --blocks 7 --distance 3 --expected-documents 1e9 --dry-run",
         "Show a plan without creating anything."}};
  }

  void DefineOptions(OptionTable& table) override {
    store_.Define(table, {.plan = true,
                          .db_help = "The directory to create the store in: absent, or an empty "
                                     "directory. e.g. --db crawl.fps"});
    table.Add(kStoreGroup, "expected-documents", po::value(&expected_)->value_name("N"),
              "Also estimate how many candidates a query meets among N stored documents. "
              "e.g. --expected-documents 50000000");
    table.AddSwitch(kStoreGroup, "dry-run", &dry_run_,
                    "Print the plan and create nothing. e.g. --dry-run");
    fingerprint_.Define(table);
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
      std::unique_ptr<Store> store = ValueOrThrow(Store::Open(store_.db(), options));
      CloseStore(*store);
      std::fprintf(out(), "created %s\n", store_.db().c_str());
    }
    std::fprintf(out(), "plan:               %s: %s\n", plan_->ToString().c_str(),
                 DescribeTables(*plan_).c_str());
    std::fprintf(out(), "fingerprint:        %s\n", fingerprint.ToString().c_str());
    std::fprintf(out(), "format version:     %d\n", Store::kFormatVersion);
    if (expected_given_) {
      std::fprintf(out(),
                   "candidates/query:   about %s at %s documents (random fingerprints: the sum "
                   "over the tables of N / 2^prefix bits)\n",
                   Rough(ExpectedCandidates(*plan_, expected_)).c_str(), Rough(expected_).c_str());
    }
    return 0;
  }

 protected:
  void Check(const po::variables_map& vm) override {
    store_.Check(vm);
    fingerprint_.Check(vm);
    Result<PermutationPlan> plan = PermutationPlan::Create(
        store_.blocks().value_or(kDefaultBlocks), store_.distance().value_or(kDefaultDistance));
    if (!plan.ok()) throw UsageError("--blocks/--distance: " + plan.status().message());
    plan_ = *std::move(plan);
    expected_given_ = vm.count("expected-documents") > 0;
    if (expected_given_ && !(expected_ >= 0 && std::isfinite(expected_))) {
      throw UsageError("--expected-documents: must be a number of documents, 0 or more");
    }
  }

 private:
  StoreFlags store_;
  FingerprintFlags fingerprint_;
  double expected_ = 0;
  bool expected_given_ = false;
  bool dry_run_ = false;
  std::optional<PermutationPlan> plan_;
};

// ---- stats -----------------------------------------------------------------------

class StatsCommand final : public Command {
 public:
  std::string_view Name() const override { return "stats"; }
  std::string_view Summary() const override {
    return "Show documents, table sizes, bytes on disk, plan and fingerprint options.";
  }
  std::vector<std::string> Synopsis() const override { return {"--db DIR [--json]"}; }
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
    const Store& store = *opened.store;
    const StoreStats stats = ValueOrThrow(store.Stats());
    const PermutationPlan& plan = store.plan();
    const std::string& db = store_.db();
    const double per_document = stats.documents > 0 ? static_cast<double>(stats.bytes_on_disk) /
                                                          static_cast<double>(stats.documents)
                                                    : 0;
    if (json_) {
      std::string tables;
      for (std::size_t t = 0; t < plan.table_count(); ++t) {
        tables += std::string(t == 0 ? "" : ",") + "{\"table\":" + std::to_string(t) +
                  ",\"blocks\":[" + BlockList(plan.table(t)) +
                  "],\"prefix_bits\":" + std::to_string(plan.table(t).prefix_bits()) +
                  ",\"entries\":" + std::to_string(stats.table_entries[t]) + "}";
      }
      std::fprintf(
          out(),
          "{\"path\":%s,\"format_version\":%d,\"blocks\":%d,\"distance\":%d,"
          "\"fingerprint\":{\"text\":%s,\"version\":%d,\"window\":%d,\"weighting\":\"%s\"},"
          "\"documents\":%llu,\"bytes_on_disk\":%llu,\"bytes_per_document\":%s,\"tables\":[%s]}\n",
          JsonString(db).c_str(), stats.format_version, stats.blocks, stats.distance,
          JsonString(stats.fingerprint.ToString()).c_str(), stats.fingerprint.version,
          stats.fingerprint.window, std::string(WeightingName(stats.fingerprint.weighting)).c_str(),
          static_cast<unsigned long long>(stats.documents),
          static_cast<unsigned long long>(stats.bytes_on_disk), Fixed(per_document, 1).c_str(),
          tables.c_str());
      return 0;
    }
    std::fprintf(out(), "store:              %s\n", db.c_str());
    std::fprintf(out(), "format version:     %d\n", stats.format_version);
    std::fprintf(out(), "plan:               %s: %s\n", plan.ToString().c_str(),
                 DescribeTables(plan).c_str());
    std::fprintf(out(), "fingerprint:        %s\n", stats.fingerprint.ToString().c_str());
    std::fprintf(out(), "documents:          %s\n", WithCommas(stats.documents).c_str());
    std::fprintf(out(), "bytes on disk:      %s (%s MB)\n", WithCommas(stats.bytes_on_disk).c_str(),
                 Fixed(static_cast<double>(stats.bytes_on_disk) / 1e6, 1).c_str());
    std::fprintf(out(), "bytes per document: %s\n",
                 stats.documents > 0 ? Fixed(per_document, 1).c_str() : "-");
    std::fprintf(out(), "table entries (RocksDB's estimates):\n");
    for (std::size_t t = 0; t < plan.table_count(); ++t) {
      std::fprintf(out(), "  table %3zu  blocks %-12s %2d-bit prefix  %s\n", t,
                   BlockList(plan.table(t)).c_str(), plan.table(t).prefix_bits(),
                   WithCommas(stats.table_entries[t]).c_str());
    }
    return 0;
  }

 protected:
  void Check(const po::variables_map& vm) override { store_.Check(vm); }

 private:
  StoreFlags store_;
  bool json_ = false;
};

// ---- compact ---------------------------------------------------------------------

class CompactCommand final : public Command {
 public:
  std::string_view Name() const override { return "compact"; }
  std::string_view Summary() const override {
    return "Compact every table fully, e.g. after many inserts or removals.";
  }
  std::vector<std::string> Synopsis() const override { return {"--db DIR [--quiet]"}; }
  std::vector<Example> Examples() const override {
    return {{"--db crawl.fps", "Compact, with progress on standard error."}};
  }

  void DefineOptions(OptionTable& table) override {
    store_.Define(table, WritableStore());
    DefineQuiet(table, &quiet_);
  }

  int Run() override {
    OpenedStore opened = store_.Open(StoreAccess::kWrite, nullptr);
    Store& store = *opened.store;
    const StoreStats before = ValueOrThrow(store.Stats());
    {
      WorkProgress progress(Progress::AutoStyle(quiet_, err()), kTool, "compacting", err());
      ScanOptions scan;
      scan.progress = progress.Callback();
      ThrowIfError(store.Compact(scan));
    }
    const StoreStats after = ValueOrThrow(store.Stats());
    CloseStore(store);
    std::fprintf(out(), "compacted %s: %s bytes on disk before, %s after\n", store_.db().c_str(),
                 WithCommas(before.bytes_on_disk).c_str(), WithCommas(after.bytes_on_disk).c_str());
    return 0;
  }

 protected:
  void Check(const po::variables_map& vm) override { store_.Check(vm); }

 private:
  StoreFlags store_;
  bool quiet_ = false;
};

// ---- verify ----------------------------------------------------------------------

class VerifyCommand final : public Command {
 public:
  std::string_view Name() const override { return "verify"; }
  std::string_view Summary() const override {
    return "Check block checksums and that every table agrees with the documents; exit 1 if "
           "not.";
  }
  std::vector<std::string> Synopsis() const override {
    return {"--db DIR [--threads N] [--quiet]"};
  }
  std::vector<Example> Examples() const override {
    return {{"--db crawl.fps || echo damaged", "Verify; on a problem, list it and exit 1."}};
  }

  void DefineOptions(OptionTable& table) override {
    store_.Define(table, ReadOnlyStore());
    DefineScanThreads(table, &threads_);
    DefineQuiet(table, &quiet_);
  }

  int Run() override {
    OpenedStore opened = store_.Open(StoreAccess::kReadOnly, nullptr);
    const Store& store = *opened.store;
    const StoreStats stats = ValueOrThrow(store.Stats());
    Status verified;
    {
      WorkProgress progress(Progress::AutoStyle(quiet_, err()), kTool, "verifying", err());
      ScanOptions scan;
      scan.progress = progress.Callback();
      scan.threads = threads_;
      verified = store.Verify(scan);
    }
    if (verified.IsCorruption()) throw RuntimeError("verify failed: " + verified.message());
    ThrowIfError(verified);
    std::fprintf(out(), "ok: %s: %s documents, %zu tables, every entry consistent\n",
                 store_.db().c_str(), WithCommas(stats.documents).c_str(),
                 store.plan().table_count());
    return 0;
  }

 protected:
  void Check(const po::variables_map& vm) override {
    store_.Check(vm);
    CheckThreads(threads_);
  }

 private:
  StoreFlags store_;
  int threads_ = 0;
  bool quiet_ = false;
};

// ---- insert ----------------------------------------------------------------------

class InsertCommand final : public Command {
 public:
  static constexpr std::size_t kDefaultBatch = 10'000;

  std::string_view Name() const override { return "insert"; }
  std::string_view Summary() const override {
    return "Insert documents from a file into an existing store, in atomic, durable batches.";
  }
  std::vector<std::string> Synopsis() const override {
    return {
        "--db DIR --input FILE [--format jsonl|tsv|hash] [--text-column KEY] "
        "[--id-column KEY] [--meta-column KEY] [--batch-size N] [--durability MODE] "
        "[--skip-bad FILE]"};
  }
  std::vector<Example> Examples() const override {
    return {{"--db crawl.fps --input new.jsonl --meta-column url",
             "Fingerprint and insert JSONL documents, keeping each one's url."},
            {"--db crawl.fps --input hashes.tsv --format tsv --durability sync",
             "Insert id<TAB>hash lines, each batch fsync'd on its own."}};
  }

  void DefineOptions(OptionTable& table) override {
    store_.Define(table, WritableStore(/*durability=*/true));
    input_.Define(table,
                  "The documents to insert: JSONL documents, or fingerprints with --format tsv "
                  "or hash; - reads standard input. e.g. --input new.jsonl");
    fingerprint_.Define(table);
    table.Add(kStoreGroup, "batch-size", po::value(&batch_size_)->value_name("N"),
              "Documents per batch. Each batch is one atomic write, durable (as --durability "
              "says) when it returns. Default: " +
                  WithCommas(kDefaultBatch) + ". e.g. --batch-size 1000");
    pipeline_.Define(table, kInputGroup, "insert");
    DefineQuiet(table, &quiet_);
  }

  int Run() override {
    // The input and --skip-bad's file are opened before the store, so that
    // they fail with the store untouched.
    ReaderOptions reader_options = input_.reader_options();
    std::unique_ptr<BadLineFile> bad;
    // Bad lines go to the file and are counted in the progress, which
    // needs the reader (for the input's size) first.
    std::function<void(std::uint64_t, std::string_view, const std::string&)> on_bad_line;
    if (!pipeline_.skip_bad().empty()) {
      bad = std::make_unique<BadLineFile>(pipeline_.skip_bad());
      reader_options.allow_empty = true;  // said below, with the skipped lines counted
      reader_options.on_bad_line = [&on_bad_line](std::uint64_t line, std::string_view text,
                                                  const std::string& reason) {
        on_bad_line(line, text, reason);
      };
    }
    std::unique_ptr<RecordReader> reader = RecordReader::Open(reader_options);

    OpenedStore opened = store_.Open(StoreAccess::kWrite, &fingerprint_);
    Store& store = *opened.store;

    Progress::Options options;
    options.style = Progress::AutoStyle(quiet_, err());
    options.label = kTool;
    options.total_bytes = reader->total_bytes();
    options.stream = err();
    Progress progress(options);
    if (bad != nullptr) on_bad_line = bad->Callback(&progress);

    std::vector<InputDocument> pending;
    pending.reserve(batch_size_);
    std::vector<NewDocument> docs;
    const auto commit = [&] {
      docs.clear();
      for (const InputDocument& d : pending) docs.push_back({d.id, d.fingerprint, d.metadata});
      if (Status s = store.InsertBatch(docs); !s.ok()) {
        throw RuntimeError("inserting lines " + std::to_string(pending.front().line) + "-" +
                           std::to_string(pending.back().line) + " of " + reader->name() + ": " +
                           s.message() + Committed());
      }
      inserted_ += pending.size();
      ++batches_;
      last_line_ = pending.back().line;
      pending.clear();
    };

    InterruptGuard interrupts;
    try {
      ReadDocuments(*reader, store.fingerprinter(),
                    {.threads = pipeline_.threads(),
                     .limit = pipeline_.sample(),
                     .progress = &progress,
                     .stop = interrupts.Poll()},
                    [&](InputDocument& doc) {
                      pending.push_back(std::move(doc));
                      if (pending.size() == batch_size_) commit();
                    });
      if (!pending.empty()) commit();
    } catch (const InputError& e) {
      throw InputError(e.file(), e.line(), e.reason() + Committed());
    } catch (const Interrupted& e) {
      progress.Finish("read");  // not all of them inserted: see below
      std::fprintf(err(), "%s: %s%s\n", kTool, e.what(), Committed().c_str());
      return 128 + e.signal();
    }
    progress.Finish("inserted");
    const std::uint64_t skipped = bad != nullptr ? bad->count() : 0;
    if (bad != nullptr) bad->Close();
    if (inserted_ == 0) {
      throw InputError(reader->name(), 0,
                       "no valid records (" + WithCommas(skipped) + " bad lines written to " +
                           pipeline_.skip_bad() + ")");
    }

    const StoreStats stats = ValueOrThrow(store.Stats());
    CloseStore(store);
    std::fprintf(out(), "inserted %s documents from %s in %s %s; %s now holds %s documents\n",
                 WithCommas(inserted_).c_str(), reader->name().c_str(),
                 WithCommas(batches_).c_str(), batches_ == 1 ? "batch" : "batches",
                 store_.db().c_str(), WithCommas(stats.documents).c_str());
    if (skipped > 0) {
      std::fprintf(out(), "skipped %s malformed %s, written to %s\n", WithCommas(skipped).c_str(),
                   skipped == 1 ? "line" : "lines", pipeline_.skip_bad().c_str());
    }
    return 0;
  }

 protected:
  void Check(const po::variables_map& vm) override {
    store_.Check(vm);
    input_.Check(vm);
    fingerprint_.Check(vm);
    if (!input_.given()) throw UsageError("insert needs --input FILE (- for standard input)");
    if (fingerprint_.given() && input_.reader_options().format != InputFormat::kJsonl) {
      throw UsageError(
          "--window and --weighting apply to --format jsonl only; tsv and hash hold "
          "fingerprints already");
    }
    if (batch_size_ == 0) throw UsageError("--batch-size: must be at least 1");
    pipeline_.Check(vm);
  }

 private:
  // What was committed before an error, for its message: each batch is
  // atomic, so the documents of whole batches, up to a line.
  std::string Committed() const {
    if (batches_ == 0) return " (nothing was inserted)";
    return " (committed before it: " + WithCommas(inserted_) + " documents, lines 1-" +
           std::to_string(last_line_) + ", in " + WithCommas(batches_) +
           (batches_ == 1 ? " batch" : " batches") + "; nothing after line " +
           std::to_string(last_line_) + " was inserted)";
  }

  StoreFlags store_;
  InputFlags input_;
  FingerprintFlags fingerprint_;
  std::size_t batch_size_ = kDefaultBatch;
  PipelineFlags pipeline_;
  bool quiet_ = false;

  std::uint64_t inserted_ = 0;
  std::uint64_t batches_ = 0;
  std::uint64_t last_line_ = 0;
};

// ---- remove ----------------------------------------------------------------------

class RemoveCommand final : public Command {
 public:
  // Ids listed as not found on standard error, at most.
  static constexpr std::size_t kMaxListed = 10;

  std::string_view Name() const override { return "remove"; }
  std::string_view Summary() const override {
    return "Remove documents by id; exit 1 if some were not stored (unless --missing-ok).";
  }
  std::vector<std::string> Synopsis() const override {
    return {"--db DIR ID... [--missing-ok] [--durability MODE]",
            "--db DIR --ids-file FILE [--missing-ok] [--durability MODE]"};
  }
  std::vector<Example> Examples() const override {
    return {{"--db crawl.fps 17 42", "Remove documents 17 and 42."},
            {"--db crawl.fps --ids-file gone.txt --missing-ok",
             "Remove the ids listed one per line, ignoring ids that are not stored."}};
  }

  void DefineOptions(OptionTable& table) override {
    store_.Define(table, WritableStore(/*durability=*/true));
    table.AllowPositional(&args_);
    table.Add(kSourceGroup, "ids-file", po::value(&ids_file_)->value_name("FILE"),
              "A file of ids, one decimal id per line (blank lines are skipped); - reads "
              "standard input. Ids may also be given as arguments. e.g. --ids-file gone.txt");
    table.AddSwitch(kStoreGroup, "missing-ok", &missing_ok_,
                    "Exit 0 even if some ids were not stored. e.g. --missing-ok");
  }

  int Run() override {
    if (!ids_file_.empty()) ReadIdsFile();
    if (ids_.empty()) throw InputError(ids_file_ == "-" ? "<stdin>" : ids_file_, 0, "no ids");

    OpenedStore opened = store_.Open(StoreAccess::kWrite, nullptr);
    Store& store = *opened.store;
    std::uint64_t removed = 0;
    std::vector<DocumentId> missing;
    for (DocumentId id : ids_) {
      const Status s = store.Remove(id);
      if (s.IsNotFound()) {
        missing.push_back(id);
      } else {
        ThrowIfError(s, "removing document " + std::to_string(id) + " (after removing " +
                            WithCommas(removed) + ")");
        ++removed;
      }
    }
    CloseStore(store);
    std::fprintf(out(), "removed %s %s; %s not found\n", WithCommas(removed).c_str(),
                 removed == 1 ? "document" : "documents", WithCommas(missing.size()).c_str());
    if (missing.empty()) return 0;
    std::string list;
    for (std::size_t i = 0; i < std::min(missing.size(), kMaxListed); ++i) {
      list += (i == 0 ? "" : ", ") + std::to_string(missing[i]);
    }
    if (missing.size() > kMaxListed) {
      list += " and " + WithCommas(missing.size() - kMaxListed) + " more";
    }
    std::fprintf(err(), "%s: not in %s: %s\n", kTool, store_.db().c_str(), list.c_str());
    return missing_ok_ ? 0 : 1;
  }

 protected:
  void Check(const po::variables_map& vm) override {
    store_.Check(vm);
    if (vm.count("ids-file") > 0 && ids_file_.empty()) {
      throw UsageError("--ids-file: empty file name (use - for standard input)");
    }
    if (args_.empty() && ids_file_.empty()) {
      throw UsageError("remove needs ids as arguments or --ids-file FILE");
    }
    for (const std::string& arg : args_) {
      Result<std::uint64_t> id = ParseId(arg);
      if (!id.ok()) throw UsageError(id.status().message());
      Add(*id);
    }
  }

 private:
  // A repeated id is removed once.
  void Add(DocumentId id) {
    if (seen_.insert(id).second) ids_.push_back(id);
  }

  // The whole file is read before anything is removed, so that a malformed
  // line changes nothing.
  void ReadIdsFile() {
    LineReader lines(ids_file_);
    std::string_view line;
    while (lines.Next(&line)) {
      if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
      Result<std::uint64_t> id = ParseId(line);
      if (!id.ok()) throw InputError(lines.name(), lines.line_number(), id.status().message());
      Add(*id);
    }
  }

  StoreFlags store_;
  std::vector<std::string> args_;
  std::string ids_file_;
  bool missing_ok_ = false;
  std::vector<DocumentId> ids_;
  std::unordered_set<DocumentId> seen_;
};

// ---- find-all and clusters ---------------------------------------------------------

// What find-all and clusters share: the read-only store, --distance,
// --output, --threads and --quiet; Run opens the store, scans it into the
// output file and says what it wrote.
class ScanCommand : public Command {
 public:
  void DefineOptions(OptionTable& table) final {
    store_.Define(table, ReadOnlyStore());
    DefineScanDistance(table, &distance_);
    DefineOutput(table, &output_, OutputHelp());
    DefineMoreOptions(table);
    DefineScanThreads(table, &threads_);
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
    CheckThreads(threads_);
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

  // With --threads, reporting to `progress`.
  ScanOptions Options(WorkProgress& progress) const {
    ScanOptions scan;
    scan.progress = progress.Callback();
    scan.threads = threads_;
    return scan;
  }

 private:
  StoreFlags store_;
  int distance_ = 0;
  std::optional<int> asked_;
  std::string output_ = "-";
  int threads_ = 0;
  bool quiet_ = false;
};

class FindAllCommand final : public ScanCommand {
 public:
  std::string_view Name() const override { return "find-all"; }
  std::string_view Summary() const override {
    return "Write every pair of documents within a distance: id_a<TAB>id_b<TAB>distance.";
  }
  std::vector<std::string> Synopsis() const override {
    return {"--db DIR [--distance K] [--output FILE] [--threads N] [--quiet]"};
  }
  std::vector<Example> Examples() const override {
    return {{"--db crawl.fps --distance 2 --output pairs.tsv",
             "Write the pairs within 2 bits to pairs.tsv."},
            {"--db crawl.fps --quiet | sort -n | head", "The first pairs, in id order."}};
  }

 protected:
  std::string OutputHelp() const override {
    return "Where to write the pairs: id_a<TAB>id_b<TAB>distance per line, id_a < id_b, "
           "in no particular order.";
  }

  std::string Scan(const Store& store, int k, std::FILE* file) override {
    std::uint64_t pairs = 0;
    {
      WorkProgress progress = NewProgress("finding pairs");
      ThrowIfError(store.FindAll(
          k,
          [&](const NearPair& p) {
            std::fprintf(file, "%llu\t%llu\t%d\n", static_cast<unsigned long long>(p.first),
                         static_cast<unsigned long long>(p.second), p.distance);
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
    return {"--db DIR [--distance K] [--output FILE] [--min-size N] [--threads N] [--quiet]"};
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
    table.Add(kScanGroup, "min-size", po::value(&min_size_)->value_name("N"),
              "The smallest cluster to write; 1 also writes each document without a "
              "near-duplicate, as a cluster of its own. Default: 2. e.g. --min-size 5");
  }

  void Check(const po::variables_map& vm) override {
    ScanCommand::Check(vm);
    if (min_size_ == 0) throw UsageError("--min-size: must be at least 1");
  }

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

// ---- dump ------------------------------------------------------------------------

class DumpCommand final : public Command {
 public:
  std::string_view Name() const override { return "dump"; }
  std::string_view Summary() const override {
    return "Write every document, id<TAB>fingerprint<TAB>metadata, in id order.";
  }
  std::vector<std::string> Synopsis() const override {
    return {"--db DIR [--output FILE] [--quiet]"};
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
                 "Where to write the documents: id<TAB>fingerprint<TAB>metadata per line, ids "
                 "ascending, fingerprints as 0x and 16 hex digits, metadata as stored except "
                 "that line breaks are written as \\n and \\r.");
    DefineQuiet(table, &quiet_);
  }

  int Run() override {
    OpenedStore opened = store_.Open(StoreAccess::kReadOnly, nullptr);
    const Store& store = *opened.store;
    OutputFile output(output_, out());
    std::FILE* file = output.get();
    std::uint64_t documents = 0, escaped = 0;
    std::string metadata;
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
            std::fprintf(file, "%llu\t%s\t", static_cast<unsigned long long>(doc.id),
                         FormatFingerprint(doc.fingerprint).c_str());
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
    return "Write a consistent copy of the store to a new directory (hard links where possible).";
  }
  std::vector<std::string> Synopsis() const override {
    return {"--db DIR --output DIR2", "--db DIR DIR2"};
  }
  std::vector<Example> Examples() const override {
    return {{"--db crawl.fps --output backup/crawl-2024-06-01.fps",
             "Back up the store; the copy opens as a store of its own."}};
  }

  void DefineOptions(OptionTable& table) override {
    store_.Define(table, WritableStore());
    table.Add(kOutputGroup, "output,o", po::value(&output_)->value_name("DIR2"),
              "The directory to create, which must not exist; may also be given as an "
              "argument. e.g. --output backup.fps");
    table.AllowPositional(&args_);
  }

  int Run() override {
    OpenedStore opened = store_.Open(StoreAccess::kWrite, nullptr);
    Store& store = *opened.store;
    const StoreStats stats = ValueOrThrow(store.Stats());
    ThrowIfError(store.Checkpoint(output_));
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
    if (output_.empty()) throw UsageError("checkpoint needs --output DIR2");
  }

 private:
  StoreFlags store_;
  std::string output_;
  std::vector<std::string> args_;
};

}  // namespace

CommandRegistry AdminTool() {
  CommandRegistry tool(kTool, "Operations on an fpstore: create, inspect, change, scan, back up.",
                       ExitPolicy::Standard(), CommandRegistry::Dispatch::kSubcommand);
  tool.Register([] { return std::make_unique<CreateCommand>(); });
  tool.Register([] { return std::make_unique<StatsCommand>(); });
  tool.Register([] { return std::make_unique<CompactCommand>(); });
  tool.Register([] { return std::make_unique<VerifyCommand>(); });
  tool.Register([] { return std::make_unique<InsertCommand>(); });
  tool.Register([] { return std::make_unique<RemoveCommand>(); });
  tool.Register([] { return std::make_unique<FindAllCommand>(); });
  tool.Register([] { return std::make_unique<ClustersCommand>(); });
  tool.Register([] { return std::make_unique<DumpCommand>(); });
  tool.Register([] { return std::make_unique<CheckpointCommand>(); });
  return tool;
}

}  // namespace fpstore::cli
