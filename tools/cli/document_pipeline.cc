#include "cli/document_pipeline.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "cli/parse.h"

namespace fpstore::cli {
namespace po = boost::program_options;

// ---- Reading documents -------------------------------------------------------------

Interrupted::Interrupted(int signal)
    : RuntimeError(std::string("interrupted by ") + (signal == SIGINT ? "SIGINT"
                                                     : signal == SIGTERM
                                                         ? "SIGTERM"
                                                         : "signal " + std::to_string(signal))),
      signal_(signal) {}

namespace {

// Records read together and fingerprinted by one thread.
struct Batch {
  std::vector<Record> records;
  std::vector<Sketch> sketches;       // one per record
  std::optional<std::size_t> failed;  // the first record that could not be fingerprinted
  std::string failure;
  std::exception_ptr exception;  // from a worker, e.g. bad_alloc
  std::uint64_t bytes_end = 0;   // the reader's bytes_read() after the last record
  bool done = false;             // guarded by the pool's mutex when there is a pool
};

// A batch is cut at this many records or text bytes, whichever comes first:
// large enough to make the hand-offs cheap, small enough to keep the
// threads busy near the end of an input.
constexpr std::size_t kBatchRecords = 256;
constexpr std::size_t kBatchBytes = std::size_t{1} << 20;

void FingerprintBatch(const Fingerprinter& fingerprinter, Batch& batch) {
  batch.sketches.resize(batch.records.size());
  for (std::size_t i = 0; i < batch.records.size(); ++i) {
    Record& record = batch.records[i];
    if (record.fingerprint) {
      // A bare hash has no signature; a dump's line may carry one.
      batch.sketches[i] = {*record.fingerprint, {}};
      if (record.signature.empty()) continue;
      const int bytes = fingerprinter.options().signature_bytes;
      if (record.signature.size() != static_cast<std::size_t>(bytes)) {
        batch.failed = i;
        batch.failure = "a signature of " + std::to_string(record.signature.size()) +
                        " bytes, but the store's signatures have " + std::to_string(bytes) +
                        " (its --signature-bytes)";
        return;
      }
      batch.sketches[i].signature = *Signature::FromBytes(record.signature);
      continue;
    }
    Result<Sketch> sketch = fingerprinter.SketchText(record.text);
    if (!sketch.ok()) {
      batch.failed = i;
      batch.failure = sketch.status().message();
      return;
    }
    batch.sketches[i] = *std::move(sketch);
    std::string().swap(record.text);  // the text is no longer needed
  }
}

// Threads that fingerprint submitted batches; destruction stops them once
// their current batch is done.
class FingerprintPool {
 public:
  FingerprintPool(const Fingerprinter& fingerprinter, int threads) : fingerprinter_(fingerprinter) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Work(); });
  }

  ~FingerprintPool() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    work_ready_.notify_all();
    for (std::thread& thread : threads_) thread.join();
  }

  FingerprintPool(const FingerprintPool&) = delete;
  FingerprintPool& operator=(const FingerprintPool&) = delete;

  void Submit(Batch* batch) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(batch);
    }
    work_ready_.notify_one();
  }

  void Wait(Batch* batch) {
    std::unique_lock lock(mutex_);
    batch_done_.wait(lock, [batch] { return batch->done; });
  }

  bool IsDone(Batch* batch) {
    std::lock_guard lock(mutex_);
    return batch->done;
  }

 private:
  void Work() {
    for (;;) {
      Batch* batch = nullptr;
      {
        std::unique_lock lock(mutex_);
        work_ready_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        batch = queue_.front();
        queue_.pop_front();
      }
      try {
        FingerprintBatch(fingerprinter_, *batch);
      } catch (...) {
        batch->exception = std::current_exception();
      }
      {
        std::lock_guard lock(mutex_);
        batch->done = true;
      }
      batch_done_.notify_all();
    }
  }

  const Fingerprinter& fingerprinter_;
  std::mutex mutex_;
  std::condition_variable work_ready_;
  std::condition_variable batch_done_;
  std::deque<Batch*> queue_;  // guarded by mutex_
  bool stop_ = false;         // guarded by mutex_
  std::vector<std::thread> threads_;
};

}  // namespace

std::uint64_t ReadDocuments(RecordReader& reader, const Fingerprinter& fingerprinter,
                            const PipelineOptions& options,
                            const std::function<void(InputDocument&)>& consume) {
  int threads = options.threads;
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (options.streaming) threads = 1;
  const std::size_t batch_records = options.streaming ? 1 : kBatchRecords;

  // Declared before the pool, so that the pool's threads are stopped and
  // joined before the batches they may be working on go away.
  std::deque<std::unique_ptr<Batch>> in_flight;
  std::unique_ptr<FingerprintPool> pool;  // made when the first text needs one
  const std::size_t max_in_flight = 2 * static_cast<std::size_t>(threads) + 2;

  std::uint64_t read = 0;
  std::uint64_t consumed = 0;
  std::uint64_t bytes_counted = 0;
  std::exception_ptr read_error;
  bool end = false;

  const auto check_stop = [&] {
    if (!options.stop) return;
    if (const int signal = options.stop(); signal != 0) throw Interrupted(signal);
  };

  const auto consume_front = [&] {
    Batch& batch = *in_flight.front();
    if (pool != nullptr) pool->Wait(&batch);
    if (batch.exception) std::rethrow_exception(batch.exception);
    for (std::size_t i = 0; i < batch.records.size(); ++i) {
      Record& record = batch.records[i];
      if (batch.failed && *batch.failed == i) {
        throw InputError(reader.name(), record.line, batch.failure);
      }
      InputDocument document{record.id,
                             batch.sketches[i].fingerprint,
                             std::move(record.metadata),
                             std::move(batch.sketches[i].signature),
                             record.line,
                             record.time};
      consume(document);
      ++consumed;
      if (options.progress != nullptr) options.progress->AddDocuments(1);
    }
    if (options.progress != nullptr) options.progress->AddBytes(batch.bytes_end - bytes_counted);
    bytes_counted = batch.bytes_end;
    in_flight.pop_front();
  };

  while (!end) {
    auto batch = std::make_unique<Batch>();
    batch->records.reserve(batch_records);  // not grown by doubling
    std::size_t text_bytes = 0;
    bool needs_fingerprints = false;
    try {
      while (batch->records.size() < batch_records && text_bytes < kBatchBytes) {
        if (options.limit != 0 && read == options.limit) {
          end = true;
          break;
        }
        check_stop();
        Record record;
        if (!reader.Next(&record)) {
          end = true;
          break;
        }
        ++read;
        text_bytes += record.text.size() + record.metadata.size();
        needs_fingerprints = needs_fingerprints || !record.fingerprint;
        batch->records.push_back(std::move(record));
      }
    } catch (const Interrupted&) {
      throw;
    } catch (...) {
      // The records before the bad line go on first, as they would have
      // without it.
      read_error = std::current_exception();
      end = true;
    }
    batch->bytes_end = reader.bytes_read();

    if (needs_fingerprints && threads > 1) {
      if (pool == nullptr) pool = std::make_unique<FingerprintPool>(fingerprinter, threads);
      pool->Submit(batch.get());
    } else {
      FingerprintBatch(fingerprinter, *batch);
      batch->done = true;
    }
    in_flight.push_back(std::move(batch));

    // Hand on what is ready, and wait when enough is in flight.
    while (!in_flight.empty() && (end || in_flight.size() > max_in_flight ||
                                  (pool == nullptr || pool->IsDone(in_flight.front().get())))) {
      check_stop();
      consume_front();
    }
  }
  if (read_error) std::rethrow_exception(read_error);
  return consumed;
}

// ---- --skip-bad ------------------------------------------------------------------

void PipelineFlags::Define(OptionTable& table, std::string_view group, std::string_view verb) {
  verb_ = verb;
  std::string capital = verb_;
  if (!capital.empty()) capital[0] = static_cast<char>(std::toupper(capital[0]));
  table.Add(group, "skip-bad", po::value(&skip_bad_)->value_name("FILE"),
            "Write malformed lines to FILE (LINE<TAB>REASON<TAB>LINE-TEXT) and " + verb_ +
                " the rest, instead of stopping at the first one. e.g. --skip-bad rejected.txt",
            {"skip_bad"});
  table.Add(
      group, "sample",
      WholeNumber("sample", &sample_, std::uint64_t{1}, std::numeric_limits<std::uint64_t>::max())
          ->value_name("N"),
      capital +
          " only the first N records of the input (malformed lines skipped with "
          "--skip-bad do not count). e.g. --sample 10000");
  table.Add(group, "threads", WholeNumber("threads", &threads_, 0, kMaxThreads)->value_name("N"),
            "Threads that fingerprint documents, 0 to 1,024; 0 means one per core. Default: 0. "
            "e.g. --threads 4");
}

void PipelineFlags::Check(const po::variables_map& vm) const {
  if (vm.count("skip-bad") > 0 && skip_bad_.empty()) {
    throw UsageError("--skip-bad: empty file name");
  }
}

BadLineFile::BadLineFile(const std::string& path) : path_(path) {
  // A link (/dev/stderr, or one the user keeps) or a device is written
  // through, as it is: renaming over it would replace the link itself.
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    file_ = std::fopen(path.c_str(), "wb");
    if (file_ == nullptr) {
      throw RuntimeError("cannot create " + path + ": " + std::strerror(errno));
    }
    return;
  }
  // A name no other file has: one a killed run left behind is not ours to remove.
  const std::string stem = path + ".partial-" + std::to_string(::getpid());
  int fd = -1;
  for (int n = 0; fd < 0 && n < 100; ++n) {
    partial_ = n == 0 ? stem : stem + "-" + std::to_string(n);
    fd = ::open(partial_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    throw RuntimeError("cannot create " + partial_ + ": " + std::strerror(errno));
  }
  file_ = ::fdopen(fd, "wb");
  if (file_ == nullptr) {
    const int error = errno;
    ::close(fd);
    ::unlink(partial_.c_str());
    throw RuntimeError("cannot create " + partial_ + ": " + std::strerror(error));
  }
}

BadLineFile::~BadLineFile() {
  if (file_ == nullptr) return;
  std::fclose(file_);
  if (!partial_.empty()) ::unlink(partial_.c_str());
}

std::function<void(std::uint64_t, std::string_view, const std::string&)> BadLineFile::Callback(
    Progress* progress) {
  return [this, progress](std::uint64_t line, std::string_view text, const std::string& reason) {
    const std::string head = std::to_string(line) + "\t" + reason + "\t";
    if (std::fwrite(head.data(), 1, head.size(), file_) != head.size() ||
        std::fwrite(text.data(), 1, text.size(), file_) != text.size() ||
        std::fputc('\n', file_) == EOF) {
      throw RuntimeError("cannot write " + path_ + ": " + std::strerror(errno));
    }
    ++count_;
    if (progress != nullptr) progress->AddSkipped(1);
  };
}

void BadLineFile::Close() {
  if (file_ == nullptr) return;
  const bool failed = std::ferror(file_) != 0;
  const int closed = std::fclose(file_);
  file_ = nullptr;
  if (failed || closed != 0) {
    const int error = errno;
    if (!partial_.empty()) ::unlink(partial_.c_str());
    throw RuntimeError("cannot write " + path_ + ": " + std::strerror(error));
  }
  if (!partial_.empty() && std::rename(partial_.c_str(), path_.c_str()) != 0) {
    const int error = errno;
    ::unlink(partial_.c_str());
    throw RuntimeError("cannot rename " + partial_ + " to " + path_ + ": " + std::strerror(error));
  }
}

// ---- Signals ---------------------------------------------------------------------

namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "used in a signal handler");

struct sigaction g_previous_int;
struct sigaction g_previous_term;

extern "C" void OnInterrupt(int signal) {
  int expected = 0;
  g_signal.compare_exchange_strong(expected, signal);
}

}  // namespace

InterruptGuard::InterruptGuard() {
  g_signal.store(0);
  struct sigaction action = {};
  action.sa_handler = OnInterrupt;
  sigemptyset(&action.sa_mask);
  // SA_RESETHAND: a second signal ends the process, for an input that blocks.
  action.sa_flags = SA_RESTART | SA_RESETHAND;
  ::sigaction(SIGINT, &action, &g_previous_int);
  ::sigaction(SIGTERM, &action, &g_previous_term);
}

InterruptGuard::~InterruptGuard() {
  ::sigaction(SIGINT, &g_previous_int, nullptr);
  ::sigaction(SIGTERM, &g_previous_term, nullptr);
}

int InterruptGuard::signal() const { return g_signal.load(); }

void InterruptGuard::RestoreDefaults() {
  struct sigaction action = {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  ::sigaction(SIGINT, &action, nullptr);
  ::sigaction(SIGTERM, &action, nullptr);
}

}  // namespace fpstore::cli
