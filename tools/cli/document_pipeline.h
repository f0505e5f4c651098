// The input pipeline of the tools that read documents: it reads records,
// fingerprints them on several threads and hands them on in input order;
// with --skip-bad, --sample and --threads (PipelineFlags), malformed lines
// set aside (BadLineFile), and SIGINT/SIGTERM turned into a clean stop
// (InterruptGuard).
//
//   std::unique_ptr<RecordReader> reader = RecordReader::Open(reader_options);
//   ReadDocuments(*reader, opened.store->fingerprinter(), {.progress = &progress},
//                 [&](InputDocument& doc) { ... doc.id, doc.fingerprint ... });
//
// Thread safety: none of these objects is shared between threads, except
// that ReadDocuments runs worker threads of its own.

#ifndef FPSTORE_TOOLS_CLI_DOCUMENT_PIPELINE_H_
#define FPSTORE_TOOLS_CLI_DOCUMENT_PIPELINE_H_

#include <boost/program_options/variables_map.hpp>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cli/command.h"
#include "cli/options.h"
#include "cli/progress.h"
#include "cli/record_reader.h"
#include "fpstore/document.h"
#include "fpstore/fingerprinter.h"

namespace fpstore::cli {

// ---- Reading documents -------------------------------------------------------------

// One input document, ready for the store.
struct InputDocument {
  DocumentId id = 0;
  Fingerprint fingerprint = 0;
  std::string metadata;
  Signature signature;               // empty for a bare hash
  std::uint64_t line = 0;            // 1-based, in the input RecordReader::name() names
  std::optional<DocumentTime> time;  // none: the time it is written
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

  // Hand each record on before the next is read, fingerprinted on the calling thread: for input
  // from a pipe or a terminal, whose records should be acted on as they come.
  bool streaming = false;

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
// `cut -f3-` gives back the lines to fix and load again. The lines are
// written to a file beside `path` that Close renames over it: a run that
// fails before Close leaves `path` as it was, or absent. A `path` that is
// a link or not a regular file (/dev/stderr, a pipe) is written directly.
class BadLineFile {
 public:
  // Creates the file beside `path`. Throws RuntimeError if it cannot.
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

  // Flushes, closes and puts the file at path(); throws RuntimeError on a
  // write error.
  void Close();

 private:
  std::string path_;
  std::string partial_;  // where the lines go until Close; empty: path_ itself
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

#endif  // FPSTORE_TOOLS_CLI_DOCUMENT_PIPELINE_H_
