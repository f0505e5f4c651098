// What the tools that touch a store share: opening it from --db DIR and the
// store options, turning fpstore::Status into the CLI's exceptions, and the
// input pipeline that reads documents, fingerprints them on several threads
// and hands them on in input order. fpstore-load, fpstore-query and
// fpstore-admin all go through here.
//
//   StoreFlags store;        // DefineOptions: store.Define(table, {.plan = true});
//   FingerprintFlags fp;     // Check:         store.Check(vm); fp.Check(vm);
//   ...
//   OpenedStore opened = store.Open(StoreAccess::kCreate, &fp);      // Run
//   std::unique_ptr<RecordReader> reader = RecordReader::Open(reader_options);
//   ReadDocuments(*reader, opened.store->fingerprinter(), {.progress = &progress},
//                 [&](InputDocument& doc) { ... doc.id, doc.fingerprint ... });
//
// Thread safety: none of these objects is shared between threads, except
// that ReadDocuments runs worker threads of its own.

#ifndef FPSTORE_TOOLS_CLI_STORE_ACCESS_H_
#define FPSTORE_TOOLS_CLI_STORE_ACCESS_H_

#include <boost/program_options/variables_map.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/record_reader.h"
#include "fpstore/store.h"

namespace fpstore::cli {

// ---- Status -> exceptions ------------------------------------------------------

// Throws RuntimeError with the status's message ("context: message" when
// `context` is given). A Busy status always says that the store is in use
// by another process. Does nothing for OK.
void ThrowIfError(const Status& status, std::string_view context = {});

template <typename T>
T ValueOrThrow(Result<T> result, std::string_view context = {}) {
  ThrowIfError(result.status(), context);
  return *std::move(result);
}

// ---- Opening a store -------------------------------------------------------------

// How a command uses its store.
enum class StoreAccess {
  // Queries and scans: never creates or changes anything, and works beside
  // a process that has the store open for writing.
  kReadOnly,
  // Writes to an existing store; "no store at DIR" if there is none.
  kWrite,
  // Writes, creating the store with the plan (--blocks, --distance) and
  // fingerprint options (--window, --weighting) given if it does not exist.
  kCreate,
};

struct OpenedStore {
  std::unique_ptr<Store> store;

  // The store did not exist before Open: DiscardCreatedStore may undo it.
  bool created = false;

  // For DiscardCreatedStore: whether --db was an existing empty directory.
  bool was_empty_dir = false;
  std::string path;
};

// Closes a store that StoreFlags::Open created and removes it again (its
// directory, or only its content if the directory existed before), so that
// a command that failed leaves the disk as it found it. Does nothing unless
// opened->created. Never throws.
void DiscardCreatedStore(OpenedStore* opened);

// The --help group of the store options.
inline constexpr std::string_view kStoreGroup = "Store";

// --db DIR and, as the command asks, the store options:
//   --blocks M, --distance K   the plan of a new store; checked against an
//                              existing store's when given
//   --durability MODE          sync, group (default) or none (options.h)
// --window and --weighting stay in FingerprintFlags; Open uses them.
//
// Tools whose --distance means something else (a query's distance) leave
// `plan` off and define their own.
class StoreFlags {
 public:
  struct Config {
    bool plan = false;        // define --blocks, --distance and --expected-documents
    bool durability = false;  // define --durability
    bool db_required = true;  // Check fails without --db
    std::string db_help;      // replaces --db's description; end it with an example
    std::string_view db_group = kStoreGroup;
  };

  void Define(OptionTable& table, Config config);

  // Throws UsageError: no --db (when required), an empty --db, an unknown
  // --durability, --blocks or --distance out of range, or both together
  // making no plan (PermutationPlan::Create's reason), a negative
  // --expected-documents.
  void Check(const boost::program_options::variables_map& vm);

  bool given() const { return !db_.empty(); }
  const std::string& db() const { return db_; }

  // The explicit plan options (unset when not given).
  std::optional<int> blocks() const { return blocks_; }
  std::optional<int> distance() const { return distance_; }
  std::optional<double> expected_documents() const { return expected_documents_; }

  // StoreOptions with what the user gave: durability, the plan and the
  // documents expected when given.
  StoreOptions Options() const;

  // Opens db() as `access` says. `fingerprint` (may be null): --window and
  // --weighting, used to create a store and, when given, checked against
  // an existing store's recorded options. Throws RuntimeError with the
  // library's message: "no store at DIR", "DIR was created with blocks 6,
  // not 8", "opening DIR: the store is in use by another process (pid 42)",
  // file system errors. A failed Open changes nothing on disk.
  OpenedStore Open(StoreAccess access, const FingerprintFlags* fingerprint) const;

 private:
  Config config_;
  std::string db_;
  int blocks_value_ = 0;
  int distance_value_ = 0;
  std::optional<int> blocks_;
  std::optional<int> distance_;
  double expected_value_ = 0;
  std::optional<double> expected_documents_;
  std::string durability_ = "group";
  Durability durability_value_ = Durability::kGroupCommit;
};

// The distance to search at: `asked` (--distance), or the store's planned
// distance when unset. Throws UsageError when `asked` is above the planned
// distance, which the store cannot answer exactly: "--distance 5 is above
// the store's planned distance 3 (DIR was created with --distance 3)".
int SearchDistance(const Store& store, const std::string& db, std::optional<int> asked);

// ---- Reading documents -------------------------------------------------------------

// One input document, ready for the store.
struct InputDocument {
  DocumentId id = 0;
  Fingerprint fingerprint = 0;
  std::string metadata;
  std::uint64_t line = 0;  // 1-based, in the input RecordReader::name() names
};

// Raised by ReadDocuments when PipelineOptions::stop is set; what() is
// "interrupted by SIGINT" (or SIGTERM, ...).
class Interrupted : public RuntimeError {
 public:
  explicit Interrupted(int signal);
  int signal() const { return signal_; }

 private:
  int signal_;
};

struct PipelineOptions {
  // Threads that fingerprint JSONL texts; 0 means one per core. Records
  // that carry a fingerprint (tsv, hash) need none.
  int threads = 0;

  // Stop after this many documents (--sample N); 0 means all of them.
  std::uint64_t limit = 0;

  // Counts documents and input bytes as they are consumed; may be null.
  Progress* progress = nullptr;

  // Polled between records: when it returns a signal number (non-zero),
  // ReadDocuments stops its threads and throws Interrupted. May be empty.
  std::function<int()> stop;
};

// Reads `reader` to its end (or options.limit), fingerprints the texts of
// JSONL records with `fingerprinter` on options.threads threads, and calls
// `consume` with each document in input order, on the calling thread.
// Returns how many documents it consumed.
//
// Throws, once the documents before the failing line have been consumed:
// the reader's InputError; InputError "FILE:LINE: reason" for a text the
// fingerprinter refuses; Interrupted. Whatever `consume` throws is thrown
// on at once. The worker threads are joined before anything is thrown.
std::uint64_t ReadDocuments(RecordReader& reader, const Fingerprinter& fingerprinter,
                            const PipelineOptions& options,
                            const std::function<void(InputDocument&)>& consume);

// --skip-bad FILE, --sample N and --threads N: how a command that loads or
// inserts documents runs the input pipeline (ReadDocuments, BadLineFile).
class PipelineFlags {
 public:
  // Defines the three options in `group`. `verb` says what the command does
  // with the records, in lower case: "load", "insert".
  void Define(OptionTable& table, std::string_view group, std::string_view verb);

  // Throws UsageError for an empty --skip-bad, --sample 0 or a negative
  // --threads.
  void Check(const boost::program_options::variables_map& vm) const;

  // Empty without --skip-bad.
  const std::string& skip_bad() const { return skip_bad_; }
  std::uint64_t sample() const { return sample_; }  // 0: all of the input
  int threads() const { return threads_; }

 private:
  std::string verb_;
  std::string skip_bad_;
  std::uint64_t sample_ = 0;
  int threads_ = 0;
};

// --skip-bad FILE: where malformed lines go instead of stopping the run.
// Each becomes one line "LINE<TAB>REASON<TAB>ORIGINAL-LINE", so that
// `cut -f3-` gives back the lines to fix and load again.
class BadLineFile {
 public:
  // Creates or truncates `path`. Throws RuntimeError if it cannot.
  explicit BadLineFile(const std::string& path);
  ~BadLineFile();
  BadLineFile(const BadLineFile&) = delete;
  BadLineFile& operator=(const BadLineFile&) = delete;

  // For ReaderOptions::on_bad_line. Also counts the line in `progress`
  // (may be null). Throws RuntimeError on a write error.
  std::function<void(std::uint64_t, std::string_view, const std::string&)> Callback(
      Progress* progress = nullptr);

  std::uint64_t count() const { return count_; }
  const std::string& path() const { return path_; }

  // Flushes and closes; throws RuntimeError on a write error.
  void Close();

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  std::uint64_t count_ = 0;
};

// Catches SIGINT and SIGTERM while it lives, so that a long command can
// stop cleanly at the next record instead of dying mid-way: signal() is then
// the signal's number. A second signal of the same kind gets the default
// action (the process ends), for an input that blocks. Restores the previous
// handlers on destruction. One at a time per process.
class InterruptGuard {
 public:
  InterruptGuard();
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;

  // The first signal caught, or 0.
  int signal() const;

  // For PipelineOptions::stop.
  std::function<int()> Poll() const {
    return [this] { return signal(); };
  }

  // From now on the signals end the process at once (their default
  // action), e.g. for a step that cannot stop part-way, such as an atomic
  // ingestion that is either done or not.
  void RestoreDefaults();
};

}  // namespace fpstore::cli

#endif  // FPSTORE_TOOLS_CLI_STORE_ACCESS_H_
