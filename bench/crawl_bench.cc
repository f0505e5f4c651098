// A crawl's life, compressed in time (docs/performance.md, "A crawl"): days of pages fetched at a
// steady rate by several threads through CheckAndInsert (drop near-copies, group commit), some
// fetched again, some near-copies of others, some dying each day, in a store with a retention.
// Per simulated day it writes a CSV row: documents stored, bytes on disk, documents past the
// retention not yet removed, documents removed, and CheckAndInsert's latency timed from when each
// call was due (p50, p99, p99.9, max). Run by hand (bench/README.md); never a pass/fail test.
//
// The store's clock is the simulated one: a call made at simulated time t gives its document time
// t, and the retention counts back from the latest call's time.

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/program_options.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "fpstore/store.h"

namespace po = boost::program_options;
using fpstore::DocumentId;
using fpstore::DocumentTime;
using fpstore::Fingerprint;

namespace {

struct Config {
  int days = 120;
  int pages_per_day = 5000;
  double refetch = 0.3;  // of a day's fetches: pages seen before
  double near = 0.1;     // of a day's fetches: near-copies of other pages
  double die = 0.03;     // of the live pages, each day: gone for good
  int retention_days = 30;
  int threads = 8;
  double rate = 2000;  // CheckAndInsert calls a second, wall time
  // Scaled down with the data, so that merges, flushes and compactions happen in a run as they do
  // in a crawl: a merge about every half simulated day, memtables that flush.
  std::size_t staged_documents = 2500;
  std::size_t write_buffer_mb = 16;
  std::string durability = "group";  // sync, group or none
  std::uint64_t seed = 1;
  std::string dir;
  std::string csv = "crawl.csv";
};

constexpr DocumentTime kStart = 1'767'225'600;  // 2026-01-01T00:00:00Z
constexpr DocumentTime kDay = 86'400;

// One call of a day: the page's id, its fingerprint, and when (simulated) it is fetched.
struct Fetch {
  DocumentId id;
  Fingerprint fingerprint;
  DocumentTime time;
};

Fingerprint FlipBits(Fingerprint fp, int bits, std::mt19937_64& rnd) {
  std::uint64_t low = fp.low();
  for (int i = 0; i < bits; ++i) low ^= std::uint64_t{1} << (rnd() % 64);
  return Fingerprint(low);
}

// The bytes of the store's table files (.sst) and of its write-ahead logs (.log): the logs hold
// what the memtables have not flushed yet, up to a cap of four times their budget, which in a
// store this small is most of its files.
std::pair<std::uint64_t, std::uint64_t> FileBytes(const std::string& dir) {
  std::uint64_t sst = 0, log = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string ext = entry.path().extension().string();
    const std::uint64_t size = entry.is_regular_file(ec) ? entry.file_size(ec) : 0;
    if (ext == ".sst") sst += size;
    if (ext == ".log") log += size;
  }
  return {sst, log};
}

double Percentile(std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const std::size_t at = std::min(sorted.size() - 1, static_cast<std::size_t>(p * sorted.size()));
  return sorted[at];
}

void Must(const fpstore::Status& s, const char* what) {
  if (s.ok()) return;
  std::cerr << "crawl-bench: " << what << ": " << s.ToString() << "\n";
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  Config c;
  po::options_description options(
      "crawl-bench: a crawl's life compressed in time (docs/performance.md, \"A crawl\")");
  options.add_options()("help,h", "Print this help.")(
      "days", po::value(&c.days)->default_value(c.days), "Simulated days.")(
      "pages-per-day", po::value(&c.pages_per_day)->default_value(c.pages_per_day),
      "Fetches a simulated day.")("refetch", po::value(&c.refetch)->default_value(c.refetch),
                                  "Share of fetches that are pages seen before.")(
      "near", po::value(&c.near)->default_value(c.near),
      "Share of fetches that are near-copies of other pages.")(
      "die", po::value(&c.die)->default_value(c.die),
      "Share of the live pages that die each day, never fetched again.")(
      "retention-days", po::value(&c.retention_days)->default_value(c.retention_days),
      "The store's retention.")("threads", po::value(&c.threads)->default_value(c.threads),
                                "Threads calling CheckAndInsert.")(
      "rate", po::value(&c.rate)->default_value(c.rate), "CheckAndInsert calls a second.")(
      "staged-documents", po::value(&c.staged_documents)->default_value(c.staged_documents),
      "The store's staged_documents: how many inserts gather before a merge.")(
      "write-buffer-mb", po::value(&c.write_buffer_mb)->default_value(c.write_buffer_mb),
      "The store's write_buffer_bytes, in MiB.")(
      "durability", po::value(&c.durability)->default_value(c.durability),
      "sync, group (group commit) or none: what a CheckAndInsert waits for.")(
      "seed", po::value(&c.seed)->default_value(c.seed), "Seed of the simulated crawl.")(
      "dir", po::value(&c.dir),
      "The store's directory, kept afterwards (default: a new one under /tmp, removed).")(
      "csv", po::value(&c.csv)->default_value(c.csv), "Where to write the rows.");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, options), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "crawl-bench: " << e.what() << "\n";
    return 2;
  }
  if (vm.count("help") > 0) {
    std::cout << options << "\n";
    return 0;
  }
  if (c.days < 1 || c.pages_per_day < 1 || c.threads < 1 || !(c.rate > 0) || c.refetch < 0 ||
      c.near < 0 || c.refetch + c.near > 1 || c.die < 0 || c.die > 1 || c.retention_days < 1 ||
      c.staged_documents < 1 || c.write_buffer_mb < 1 ||
      (c.durability != "sync" && c.durability != "group" && c.durability != "none")) {
    std::cerr << "crawl-bench: an option is out of range (see --help)\n";
    return 2;
  }
  const bool own_dir = c.dir.empty();  // removed at the end; a --dir is kept, to look at
  if (own_dir) {
    c.dir = (std::filesystem::temp_directory_path() / ("crawl-bench-" + std::to_string(::getpid())))
                .string();
  }
  std::filesystem::remove_all(c.dir);
  std::FILE* csv = std::fopen(c.csv.c_str(), "w");
  if (csv == nullptr) {
    std::cerr << "crawl-bench: cannot write " << c.csv << "\n";
    return 1;
  }

  std::atomic<DocumentTime> now{kStart};
  fpstore::StoreOptions store_options;
  store_options.retention_seconds = std::int64_t{c.retention_days} * kDay;
  store_options.durability = c.durability == "sync"   ? fpstore::Durability::kSync
                             : c.durability == "none" ? fpstore::Durability::kNoSync
                                                      : fpstore::Durability::kGroupCommit;
  store_options.expected_documents = static_cast<std::uint64_t>(c.pages_per_day) * c.retention_days;
  store_options.clock = [&now] { return now.load(std::memory_order_relaxed); };
  store_options.staged_documents = c.staged_documents;
  store_options.write_buffer_bytes = c.write_buffer_mb << 20;
  fpstore::Result<std::unique_ptr<fpstore::Store>> opened =
      fpstore::Store::Open(c.dir, store_options);
  Must(opened.status(), "opening the store");
  fpstore::Store& store = **opened;

  std::mt19937_64 rnd(c.seed);
  std::vector<DocumentId> live;                              // pages that may be fetched again
  std::unordered_map<DocumentId, Fingerprint> page;          // every page's fingerprint
  std::unordered_map<DocumentId, DocumentTime> last_stored;  // by the model: its last insert
  DocumentId next_id = 1;
  std::uint64_t documents_before = 0;
  std::fprintf(csv,
               "day,documents,bytes_on_disk,sst_bytes,log_bytes,expired_not_removed,removed,calls,"
               "inserted,near_copies_dropped,p50_ms,p99_ms,p999_ms,max_ms\n");
  std::printf("%4s %10s %9s %8s %8s %8s %8s %8s %8s\n", "day", "documents", "disk MB", "sst MB",
              "removed", "p50 ms", "p99 ms", "p99.9 ms", "max ms");

  for (int day = 0; day < c.days; ++day) {
    // The day's fetches, drawn before it starts.
    std::vector<Fetch> fetches;
    fetches.reserve(c.pages_per_day);
    std::uniform_real_distribution<double> coin(0, 1);
    for (int i = 0; i < c.pages_per_day; ++i) {
      const DocumentTime time = kStart + day * kDay + i * kDay / c.pages_per_day;
      const double r = coin(rnd);
      if (r < c.refetch && !live.empty()) {
        const DocumentId id = live[rnd() % live.size()];
        // A page fetched again has changed a little, or not at all.
        Fingerprint& fp = page[id];
        if (coin(rnd) < 0.3) fp = FlipBits(fp, 1, rnd);
        fetches.push_back({id, fp, time});
      } else if (r < c.refetch + c.near && !live.empty()) {
        const Fingerprint original = page[live[rnd() % live.size()]];
        const DocumentId id = next_id++;
        page[id] = FlipBits(original, 1 + static_cast<int>(rnd() % 3), rnd);
        fetches.push_back({id, page[id], time});
      } else {
        const DocumentId id = next_id++;
        page[id] = Fingerprint(rnd());
        live.push_back(id);
        fetches.push_back({id, page[id], time});
      }
    }

    std::atomic<std::size_t> next{0};
    std::atomic<std::uint64_t> inserted{0}, dropped{0}, fresh{0};
    std::mutex mu;
    std::vector<double> latencies;
    latencies.reserve(fetches.size());
    const double seconds_per_call = 1.0 / c.rate;
    // The day's schedule: a call every 1/rate seconds from now (the day's own setup and the last
    // day's statistics are not the calls' time).
    const auto day_start = std::chrono::steady_clock::now();
    std::vector<std::thread> workers;
    std::mutex model_mu;
    for (int t = 0; t < c.threads; ++t) {
      workers.emplace_back([&] {
        std::vector<double> mine;
        while (true) {
          const std::size_t i = next.fetch_add(1);
          if (i >= fetches.size()) break;
          const auto due = day_start + std::chrono::duration_cast<std::chrono::nanoseconds>(
                                           std::chrono::duration<double>(i * seconds_per_call));
          std::this_thread::sleep_until(due);
          const Fetch& f = fetches[i];
          DocumentTime seen = now.load(std::memory_order_relaxed);
          while (seen < f.time && !now.compare_exchange_weak(seen, f.time)) {
          }
          fpstore::Result<fpstore::CheckResult> result =
              store.CheckAndInsert(fpstore::NewDocument{f.id, f.fingerprint, {}, {}, f.time},
                                   fpstore::InsertPolicy::kIfNoMatch);
          const auto done = std::chrono::steady_clock::now();
          Must(result.status(), "CheckAndInsert");
          mine.push_back(std::chrono::duration<double, std::milli>(done - due).count());
          if (result->inserted) {
            ++inserted;
            std::lock_guard lock(model_mu);
            auto [it, first] = last_stored.try_emplace(f.id, f.time);
            if (first || it->second < f.time - std::int64_t{c.retention_days} * kDay) ++fresh;
            it->second = f.time;
          } else {
            ++dropped;
          }
        }
        std::lock_guard lock(mu);
        latencies.insert(latencies.end(), mine.begin(), mine.end());
      });
    }
    for (std::thread& w : workers) w.join();

    // Some pages die: never fetched again, they pass the retention in time.
    std::shuffle(live.begin(), live.end(), rnd);
    live.resize(live.size() - static_cast<std::size_t>(c.die * live.size()));

    fpstore::Result<fpstore::StoreStats> stats = store.Stats();
    Must(stats.status(), "Stats");
    std::sort(latencies.begin(), latencies.end());
    const std::uint64_t removed = documents_before + fresh.load() - stats->documents;
    documents_before = stats->documents;
    const double p50 = Percentile(latencies, 0.5), p99 = Percentile(latencies, 0.99),
                 p999 = Percentile(latencies, 0.999), max = latencies.back();
    const auto [sst, log] = FileBytes(c.dir);
    std::fprintf(csv, "%d,%llu,%llu,%llu,%llu,%llu,%lld,%zu,%llu,%llu,%.3f,%.3f,%.3f,%.3f\n",
                 day + 1, static_cast<unsigned long long>(stats->documents),
                 static_cast<unsigned long long>(stats->bytes_on_disk),
                 static_cast<unsigned long long>(sst), static_cast<unsigned long long>(log),
                 static_cast<unsigned long long>(stats->expired_documents),
                 static_cast<long long>(removed), fetches.size(),
                 static_cast<unsigned long long>(inserted.load()),
                 static_cast<unsigned long long>(dropped.load()), p50, p99, p999, max);
    std::fflush(csv);
    std::printf("%4d %10llu %9.1f %8.1f %8lld %8.2f %8.2f %8.2f %8.1f\n", day + 1,
                static_cast<unsigned long long>(stats->documents),
                static_cast<double>(stats->bytes_on_disk) / 1e6, static_cast<double>(sst) / 1e6,
                static_cast<long long>(removed), p50, p99, p999, max);
    std::fflush(stdout);
  }
  std::fclose(csv);
  Must(store.Close(), "closing the store");
  if (own_dir) std::filesystem::remove_all(c.dir);
  return 0;
}
