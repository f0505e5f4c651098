// Progress reports for long runs (loading, batch queries, scans), and for
// library calls that report their own (WorkProgress, at the end).
//
// Workers count what they did with Add*; a reporting thread shows it on
// standard error every interval: a bar redrawn in place on a terminal
// ("[=====>    ] 45%  120,000 docs  512.0/1130.2 MB  85.1 MB/s  ETA 0:07"),
// or plain lines otherwise, so that logs stay readable. Finish prints a
// summary. kNone shows nothing at all (--quiet).
//
// Thread safety: Add* may be called from any number of threads at once
// (relaxed atomic counters: a report may be a moment late, never wrong at
// Finish). Construction, Finish and destruction belong to one thread.

#ifndef FPSTORE_TOOLS_CLI_PROGRESS_H_
#define FPSTORE_TOOLS_CLI_PROGRESS_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>

namespace fpstore::cli {

// 1234567 -> "1,234,567": how the tools write counts.
std::string WithCommas(std::uint64_t n);

class Progress {
 public:
  enum class Style {
    kNone,   // nothing, not even the summary
    kBar,    // a bar redrawn in place, for a terminal
    kLines,  // one line per interval, for logs and pipes
  };

  // kNone if quiet; else kBar if `stream` is a terminal; else kLines, or
  // kNone when !lines_when_not_terminal (for tools whose normal output is
  // not a progress log, e.g. fpstore-query).
  static Style AutoStyle(bool quiet, std::FILE* stream = stderr,
                         bool lines_when_not_terminal = true);

  struct Options {
    Style style = Style::kNone;

    // The prefix of every line, e.g. "fpstore-load".
    std::string label;

    // The input's size when known, for the percentage and the ETA.
    std::optional<std::uint64_t> total_bytes;

    // How often to report. Default: 0.2 s for the bar, 10 s for lines.
    std::optional<std::chrono::milliseconds> interval;

    std::FILE* stream = stderr;
  };

  explicit Progress(Options options);
  ~Progress();  // stops reporting; no summary unless Finish was called

  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void AddDocuments(std::uint64_t n) { documents_.fetch_add(n, std::memory_order_relaxed); }
  void AddSkipped(std::uint64_t n) { skipped_.fetch_add(n, std::memory_order_relaxed); }
  void AddBytes(std::uint64_t n) { bytes_.fetch_add(n, std::memory_order_relaxed); }

  // Stops reporting, clears the bar and prints the summary, e.g.
  // "fpstore-load: loaded 323 documents (0.4 MB) in 0.21 s, 1,538 documents/s, 2.0 MB/s".
  // `verb` is "loaded", "fingerprinted", ... Does nothing for kNone or
  // when called again.
  void Finish(std::string_view verb);

  // What has been counted, and when.
  struct Snapshot {
    std::uint64_t documents = 0;
    std::uint64_t skipped = 0;
    std::uint64_t bytes = 0;
    std::optional<std::uint64_t> total_bytes;
    double seconds = 0;
  };
  Snapshot Now() const;

  // The texts shown; pure functions of a snapshot, for tests.
  static std::string FormatBar(const Snapshot& s, int width);
  static std::string FormatLine(const Snapshot& s);
  static std::string FormatSummary(const Snapshot& s, std::string_view verb);

 private:
  void Report();  // the reporting thread's body
  void Show(const Snapshot& s);

  Options options_;
  std::chrono::steady_clock::time_point start_;
  std::atomic<std::uint64_t> documents_{0};
  std::atomic<std::uint64_t> skipped_{0};
  std::atomic<std::uint64_t> bytes_{0};

  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;  // guarded by mutex_
  bool finished_ = false;
  std::thread reporter_;
};

// Progress of a library call that reports (done, total) work units, such as
// BulkLoader::Finish or Store::Verify: a bar on a terminal
// ("fpstore-load: writing tables [=====>    ] 45%  ETA 0:07"), a line every
// 10 seconds otherwise ("fpstore-load: writing tables: 45% done, ETA 0:07"),
// nothing for Progress::Style::kNone. Its callback may be called from any
// one thread at a time.
class WorkProgress {
 public:
  // `what` names the work: "writing tables", "verifying".
  WorkProgress(Progress::Style style, std::string label, std::string what,
               std::FILE* stream = stderr);
  ~WorkProgress();  // Finish()
  WorkProgress(const WorkProgress&) = delete;
  WorkProgress& operator=(const WorkProgress&) = delete;

  // For BulkLoadOptions::progress, ScanOptions::progress. The callback
  // refers to this object, which must outlive its use.
  std::function<void(std::uint64_t done, std::uint64_t total)> Callback();

  // Clears the bar. Idempotent.
  void Finish();

 private:
  void Update(std::uint64_t done, std::uint64_t total);

  Progress::Style style_;
  std::string label_;
  std::string what_;
  std::FILE* stream_;
  bool started_ = false;  // the first report starts the clock
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;
  bool shown_ = false;
};

}  // namespace fpstore::cli

#endif  // FPSTORE_TOOLS_CLI_PROGRESS_H_
