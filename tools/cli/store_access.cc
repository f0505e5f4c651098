#include "cli/store_access.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "cli/parse.h"
#include "fpstore/permutation.h"

namespace fpstore::cli {
namespace po = boost::program_options;
namespace fs = std::filesystem;

// ---- Status -> exceptions ------------------------------------------------------

void ThrowIfError(const Status& status, std::string_view context) {
  if (status.ok()) return;
  std::string message = status.message();
  if (message.empty()) message = status.ToString();
  if (status.IsBusy() && message.find("in use by") == std::string::npos) {
    message += ": the store is in use by another process";
  }
  if (!context.empty()) message = std::string(context) + ": " + message;
  throw RuntimeError(message);
}

// ---- Opening a store -------------------------------------------------------------

void DiscardCreatedStore(OpenedStore* opened) {
  if (!opened->created) return;
  if (opened->store != nullptr) (void)opened->store->Close();
  opened->store.reset();
  std::error_code ec;
  if (opened->was_empty_dir) {
    for (const fs::directory_entry& entry : fs::directory_iterator(opened->path, ec)) {
      fs::remove_all(entry.path(), ec);
    }
  } else {
    fs::remove_all(opened->path, ec);
  }
  opened->created = false;
}

void StoreFlags::Define(OptionTable& table, Config config) {
  config_ = std::move(config);
  std::string db_help = config_.db_help.empty()
                            ? "The store: a directory. e.g. --db /var/lib/crawl/dedup.fps"
                            : config_.db_help;
  table.Add(config_.db_group, "db", po::value(&db_)->value_name("DIR"), std::move(db_help));
  if (config_.plan) {
    table.Add(kStoreGroup, "blocks", WholeNumber("blocks", &blocks_value_, 1, 64)->value_name("M"),
              "Blocks each fingerprint is cut into, for a new store (more blocks: more tables, "
              "faster queries, more disk). Checked against an existing store's when given. "
              "Default: 6. e.g. --blocks 8");
    table.Add(kStoreGroup, "distance",
              WholeNumber("distance", &distance_value_, 0, 63)->value_name("K"),
              "The largest Hamming distance the new store answers exactly: its planned "
              "distance, below --blocks. Checked against an existing store's when given. "
              "Default: 3. e.g. --distance 4");
    table.Add(kStoreGroup, "expected-documents", po::value(&expected_value_)->value_name("N"),
              "About how many documents a new store will hold: its tables keep a key per "
              "group of fingerprints, cut for N (docs/format.md). Default: 100 million. "
              "e.g. --expected-documents 1e8");
  }
  if (config_.durability) {
    table.Add(kStoreGroup, "durability", po::value(&durability_)->value_name("MODE"),
              "What a finished write survives: sync (power loss, one fsync per write), group "
              "(power loss, concurrent writers share fsyncs) or none (a crash of the process, "
              "not of the machine). Default: group. e.g. --durability sync");
  }
}

void StoreFlags::Check(const po::variables_map& vm) {
  if (vm.count("db") > 0 && db_.empty()) throw UsageError("--db: empty directory name");
  if (config_.db_required && db_.empty()) throw UsageError("--db DIR is required (the store)");
  if (config_.plan) {
    if (vm.count("blocks") > 0) blocks_ = blocks_value_;
    if (vm.count("distance") > 0) distance_ = distance_value_;
    if (vm.count("expected-documents") > 0) {
      // Below 2^64, so that the conversion for StoreOptions is defined.
      if (!(expected_value_ >= 0 && expected_value_ < 0x1p64)) {
        throw UsageError("--expected-documents: must be a number of documents, 0 or more");
      }
      expected_documents_ = expected_value_;
    }
    if (blocks_ && distance_) {
      if (Result<PermutationPlan> plan = PermutationPlan::Create(*blocks_, *distance_);
          !plan.ok()) {
        throw UsageError("--blocks " + std::to_string(*blocks_) + " --distance " +
                         std::to_string(*distance_) + ": " + plan.status().message());
      }
    }
  }
  if (config_.durability) {
    if (durability_ == "sync") {
      durability_value_ = Durability::kSync;
    } else if (durability_ == "group") {
      durability_value_ = Durability::kGroupCommit;
    } else if (durability_ == "none") {
      durability_value_ = Durability::kNoSync;
    } else {
      throw UsageError("--durability: unknown mode " + QuoteForMessage(durability_) +
                       " (expected sync, group or none)");
    }
  }
}

StoreOptions StoreFlags::Options() const {
  StoreOptions options;
  options.blocks = blocks_;
  options.distance = distance_;
  if (expected_documents_) {
    options.expected_documents = static_cast<std::uint64_t>(*expected_documents_);
  }
  options.durability = durability_value_;
  return options;
}

OpenedStore StoreFlags::Open(StoreAccess access, const FingerprintFlags* fingerprint) const {
  StoreOptions options = Options();
  options.create_if_missing = false;
  const bool fingerprint_given = fingerprint != nullptr && fingerprint->given();
  OpenedStore opened;
  opened.path = db_;

  if (access == StoreAccess::kReadOnly) {
    options.read_only = true;
    opened.store = ValueOrThrow(Store::Open(db_, options));
    if (fingerprint_given) {
      const FingerprintOptions& recorded = opened.store->fingerprinter().options();
      const FingerprintOptions asked = fingerprint->Apply(recorded);
      if (!(asked == recorded)) {
        throw RuntimeError(db_ + " was created with fingerprint options \"" + recorded.ToString() +
                           "\", not \"" + asked.ToString() +
                           "\" (leave out --window and --weighting to use the store's)");
      }
    }
    return opened;
  }

  // An existing store is checked against the options given before it is
  // opened for writing: its recorded fingerprint options are the base that
  // --window and --weighting change.
  if (fingerprint_given) {
    StoreOptions probe = options;
    probe.read_only = true;
    FingerprintOptions base;
    Result<std::unique_ptr<Store>> existing = Store::Open(db_, probe);
    if (existing.ok()) {
      base = (*existing)->fingerprinter().options();
      (void)(*existing)->Close();
    } else if (!existing.status().IsNotFound()) {
      ThrowIfError(existing.status());
    }
    options.fingerprint = fingerprint->Apply(base);
  }

  Result<std::unique_ptr<Store>> store = Store::Open(db_, options);
  if (store.ok()) {
    opened.store = *std::move(store);
    return opened;
  }
  if (access != StoreAccess::kCreate || !store.status().IsNotFound()) {
    ThrowIfError(store.status());
  }
  std::error_code ec;
  opened.was_empty_dir = fs::is_directory(db_, ec);
  options.create_if_missing = true;
  opened.store = ValueOrThrow(Store::Open(db_, options));
  opened.created = true;
  return opened;
}

int SearchDistance(const Store& store, const std::string& db, std::optional<int> asked) {
  const int planned = store.plan().distance();
  if (!asked) return planned;
  if (*asked > planned) {
    throw UsageError("--distance " + std::to_string(*asked) +
                     " is above the store's planned distance " + std::to_string(planned) + " (" +
                     db + " was created with --distance " + std::to_string(planned) +
                     "; it finds every near-duplicate within that many bits, not beyond)");
  }
  return *asked;
}

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
  std::vector<Fingerprint> fingerprints;  // one per record
  std::optional<std::size_t> failed;      // the first record that could not be fingerprinted
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
  batch.fingerprints.resize(batch.records.size());
  for (std::size_t i = 0; i < batch.records.size(); ++i) {
    Record& record = batch.records[i];
    if (record.fingerprint) {
      batch.fingerprints[i] = *record.fingerprint;
      continue;
    }
    Result<Fingerprint> fp = fingerprinter.FromText(record.text);
    if (!fp.ok()) {
      batch.failed = i;
      batch.failure = fp.status().message();
      return;
    }
    batch.fingerprints[i] = *fp;
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
      InputDocument document{record.id, batch.fingerprints[i], std::move(record.metadata),
                             record.line};
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
    batch->records.reserve(kBatchRecords);  // not grown by doubling
    std::size_t text_bytes = 0;
    bool needs_fingerprints = false;
    try {
      while (batch->records.size() < kBatchRecords && text_bytes < kBatchBytes) {
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
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) {
    throw RuntimeError("cannot create " + path + ": " + std::strerror(errno));
  }
}

BadLineFile::~BadLineFile() {
  if (file_ != nullptr) std::fclose(file_);
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
    throw RuntimeError("cannot write " + path_ + ": " + std::strerror(errno));
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
