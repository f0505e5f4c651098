// fpstore-admin: insert, remove and expire.

#include <algorithm>
#include <chrono>

#include "cli/admin_common.h"

namespace fpstore::cli::admin {
namespace {

// ---- insert ----------------------------------------------------------------------

class InsertCommand final : public Command {
 public:
  static constexpr std::size_t kDefaultBatch = 10'000;
  static constexpr std::size_t kMaxBatch = 10'000'000;

  std::string_view Name() const override { return "insert"; }
  std::string_view Summary() const override {
    return "Insert documents from a file into an existing store, in atomic, durable batches.";
  }
  std::vector<std::string> Synopsis() const override {
    return {
        "--db STORE --input FILE [--format jsonl|tsv|hash] [--text-column KEY] "
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
    table.Add(kStoreGroup, "batch-size",
              WholeNumber("batch-size", &batch_size_, std::size_t{1}, kMaxBatch)->value_name("N"),
              "Documents per batch, 1 to 10,000,000. Each batch is one atomic write (in Redis, "
              "each document of it), durable (as --durability says) when it returns. Default: " +
                  WithCommas(kDefaultBatch) +
                  ", or 1 when --input is a pipe or a terminal, so that each record is durable "
                  "and seen by readers as it comes. e.g. --batch-size 1000");
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
    // From a pipe or a terminal: each record acted on as it comes.
    const bool streaming = !reader->total_bytes().has_value();
    if (streaming && !batch_size_given_) batch_size_ = 1;

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
      for (const InputDocument& d : pending) {
        docs.push_back({d.id, d.fingerprint, d.metadata, d.signature, d.time});
      }
      Result<InsertStats> wrote = store.InsertBatch(docs);
      if (!wrote.ok()) {
        throw RuntimeError("inserting lines " + std::to_string(pending.front().line) + "-" +
                           std::to_string(pending.back().line) + " of " + reader->name() + ": " +
                           wrote.status().message() +
                           Committed(pending.front().line, pending.back().line));
      }
      past_retention_ += wrote->past_retention;
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
                     .streaming = streaming,
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
    if (past_retention_ > 0) {
      std::fprintf(out(), "%s of them already past the retention: stored, never returned\n",
                   WithCommas(past_retention_).c_str());
    }
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
    batch_size_given_ = vm.count("batch-size") > 0;
    if (!input_.given()) throw UsageError("insert needs --input FILE (- for standard input)");
    if (fingerprint_.given() && input_.reader_options().format != InputFormat::kJsonl) {
      throw UsageError(
          "--window and --weighting apply to --format jsonl only; tsv and hash hold "
          "fingerprints already");
    }
    pipeline_.Check(vm);
  }

 private:
  // What was committed before an error, for its message: each batch is
  // atomic, so the documents of whole batches, up to a line. A store in
  // Redis writes a batch document by document, so of the batch whose write
  // failed, lines `failed_first` to `failed_last` (0 for none), any may be
  // stored.
  std::string Committed(std::uint64_t failed_first = 0, std::uint64_t failed_last = 0) const {
    const bool in_doubt = failed_last != 0 && store_.in_redis();
    const std::string doubt =
        in_doubt ? "lines " + std::to_string(failed_first) + "-" + std::to_string(failed_last) +
                       ", written to Redis document by document, may be stored in part; "
                 : "";
    const std::string after = "nothing after line " +
                              std::to_string(in_doubt ? failed_last : last_line_) +
                              " was inserted)";
    if (batches_ == 0) return in_doubt ? " (" + doubt + after : " (nothing was inserted)";
    return " (committed before it: " + WithCommas(inserted_) + " documents, lines 1-" +
           std::to_string(last_line_) + ", in " + WithCommas(batches_) +
           (batches_ == 1 ? " batch" : " batches") + "; " + doubt + after;
  }

  StoreFlags store_;
  InputFlags input_;
  FingerprintFlags fingerprint_;
  std::size_t batch_size_ = kDefaultBatch;
  bool batch_size_given_ = false;
  PipelineFlags pipeline_;
  bool quiet_ = false;

  std::uint64_t inserted_ = 0;
  std::uint64_t past_retention_ = 0;
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
    return {"--db STORE ID... [--missing-ok] [--durability MODE]",
            "--db STORE --ids-file FILE [--missing-ok] [--durability MODE]"};
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

// ---- expire ------------------------------------------------------------------------

class ExpireCommand final : public Command {
 public:
  std::string_view Name() const override { return "expire"; }
  std::string_view Summary() const override {
    return "Remove every document whose time is before a time, or older than an age.";
  }
  std::vector<std::string> Synopsis() const override {
    return {"--db STORE --before TIME [--durability MODE]",
            "--db STORE --older-than AGE [--durability MODE]"};
  }
  std::vector<Example> Examples() const override {
    return {{"--db crawl.fps --older-than 90d", "Remove the documents not seen for 90 days."},
            {"--db crawl.fps --before 2026-01-01T00:00:00Z",
             "Remove the documents fetched before 2026."}};
  }

  void DefineOptions(OptionTable& table) override {
    store_.Define(table, WritableStore(/*durability=*/true));
    table.Add(kStoreGroup, "before", po::value(&before_text_)->value_name("TIME"),
              "Remove the documents whose time is before TIME: seconds since the Unix epoch or "
              "RFC 3339. e.g. --before 2026-01-01T00:00:00Z");
    table.Add(kStoreGroup, "older-than", po::value(&older_text_)->value_name("AGE"),
              "Remove the documents whose time is more than AGE (a number and s, h or d) before "
              "now. e.g. --older-than 90d");
  }

  int Run() override {
    DocumentTime before = before_;
    if (older_than_) {
      const DocumentTime now = std::chrono::duration_cast<std::chrono::seconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count();
      before = std::max<DocumentTime>(0, now - *older_than_);
    }
    OpenedStore opened = store_.Open(StoreAccess::kWrite, nullptr);
    Store& store = *opened.store;
    Result<std::uint64_t> removed = store.Expire(before);
    ThrowIfError(removed.status(), "expiring the documents before " + FormatTime(before));
    CloseStore(store);
    std::fprintf(out(), "removed %s %s from before %s\n", WithCommas(*removed).c_str(),
                 *removed == 1 ? "document" : "documents", FormatTime(before).c_str());
    return 0;
  }

 protected:
  void Check(const po::variables_map& vm) override {
    store_.Check(vm);
    const bool before = vm.count("before") > 0, older = vm.count("older-than") > 0;
    if (before == older) throw UsageError("expire needs one of --before TIME and --older-than AGE");
    if (before) {
      Result<DocumentTime> time = ParseTime(before_text_);
      if (!time.ok()) throw UsageError("--before: " + time.status().message());
      before_ = *time;
    } else {
      Result<std::int64_t> age = ParseDuration(older_text_);
      if (!age.ok()) throw UsageError("--older-than: " + age.status().message());
      older_than_ = *age;
    }
  }

 private:
  StoreFlags store_;
  std::string before_text_;
  std::string older_text_;
  DocumentTime before_ = 0;
  std::optional<std::int64_t> older_than_;
};

}  // namespace

std::unique_ptr<Command> NewInsertCommand() { return std::make_unique<InsertCommand>(); }
std::unique_ptr<Command> NewExpireCommand() { return std::make_unique<ExpireCommand>(); }
std::unique_ptr<Command> NewRemoveCommand() { return std::make_unique<RemoveCommand>(); }

}  // namespace fpstore::cli::admin
