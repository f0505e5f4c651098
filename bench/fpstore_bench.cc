// fpstore-bench: the macro benchmark. Builds a seeded synthetic corpus with
// planted near-duplicates, loads it with the real fpstore-load, and times
// every path of the store in one run, next to two baselines measured on the
// same data in the same run (a brute-force popcount scan, and the in-memory
// sorted-tables reference). Prints a Markdown table for docs/performance.md.
//
// Not a test: nothing here passes or fails on speed. It does stop if the
// store's answers disagree with brute force, since a fast wrong answer is
// not worth timing.

#include <fcntl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/program_options.hpp>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include "brute_force.h"
#include "fpstore/store.h"
#include "plan/pair_finder.h"

namespace fs = std::filesystem;
namespace po = boost::program_options;

namespace fpstore::bench {
namespace {

using Clock = std::chrono::steady_clock;
using internal::IdFingerprint;
using testing::Random;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

struct Config {
  std::uint64_t n = 1'000'000;
  int blocks = 6;
  int distance = 3;
  std::uint64_t seed = 1;
  std::string dir;
  std::string load_tool;
  std::size_t queries = 50'000;
  std::size_t cold_queries = 2'000;
  std::size_t jsonl_docs = 100'000;
  double insert_seconds = 2.0;
  double sustained_seconds = 30.0;
  // Beside the sustained inserts on 2 cores, 1,000 a second fell behind
  // (half of them waited 2 s from when they were due).
  double sustained_queries_per_second = 200;
  bool keep = false;
  // The 128-bit store's plan ("wide" phase).
  int wide_blocks = 8;
  int wide_distance = 6;
  // Phases left out (--skip): a run at a size where the unsigned and the
  // signed store do not fit on the disk together takes them in two runs.
  std::set<std::string> skip;
  bool Runs(const std::string& phase) const { return skip.count(phase) == 0; }
};

// What --skip accepts. "unsigned" is the main store and every row on it.
const std::set<std::string> kPhases = {"jsonl",   "unsigned",  "scans",   "signed",
                                       "inserts", "sustained", "replace", "wide"};

[[noreturn]] void Die(const std::string& message) {
  std::cerr << "fpstore-bench: " << message << "\n";
  std::exit(1);
}

template <typename T>
T Must(Result<T> r, const char* what) {
  if (!r.ok()) Die(std::string(what) + ": " + r.status().ToString());
  return std::move(r).value();
}

void Must(const Status& s, const char* what) {
  if (!s.ok()) Die(std::string(what) + ": " + s.ToString());
}

// ---- Results ----

std::string Fixed(double v, int digits) {
  std::ostringstream out;
  out.setf(std::ios::fixed);
  out.precision(digits);
  out << v;
  return out.str();
}

std::string Grouped(double v) {
  std::string digits = std::to_string(static_cast<std::uint64_t>(v + 0.5));
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(i, ",");
  return digits;
}

struct Row {
  std::string path;
  std::string result;
};

class Report {
 public:
  void Add(std::string path, std::string result) {
    std::cerr << "  " << path << ": " << result << "\n";
    rows_.push_back({std::move(path), std::move(result)});
  }
  void Print(std::ostream& out) const {
    out << "| path | result |\n|---|---|\n";
    for (const Row& r : rows_) out << "| " << r.path << " | " << r.result << " |\n";
  }

 private:
  std::vector<Row> rows_;
};

// ---- Memory ----

// Peak resident bytes of this process since the last ResetPeakResident.
std::uint64_t PeakResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  }
  return 0;
}

// Linux resets VmHWM when "5" is written to clear_refs; without it the peak
// would include the corpus this program holds while it generates data.
void ResetPeakResident() { std::ofstream("/proc/self/clear_refs") << "5"; }

std::string Gib(std::uint64_t bytes) { return Fixed(bytes / double(1 << 30), 2) + " GiB"; }

// Evicts the store's files from the page cache, so that the next reads come
// from the device (a cold start after a reboot, without needing root).
void EvictFromPageCache(const std::string& dir) {
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    const int fd = ::open(entry.path().c_str(), O_RDONLY);
    if (fd < 0) continue;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
}

std::uint64_t DirectoryBytes(const std::string& dir) {
  std::uint64_t total = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file()) total += entry.file_size();
  }
  return total;
}

// ---- Data ----

// 85% random fingerprints of `bits` bits, 10% within 1..3 bits of an
// earlier one and 5% at 4..6 bits (twice that at 128 bits, the distances
// that correspond: docs/quality.md); ids are 0..n-1 in shuffled order.
std::vector<IdFingerprint> MakeFingerprints(const Config& c, int bits = 64) {
  const auto share = [&](double f) { return static_cast<int>(c.n * f / 3); };
  const int scale = bits / 64;
  std::vector<testing::Plant> plants;
  for (int d = 1; d <= 3; ++d) plants.push_back({scale * d, share(0.10)});
  for (int d = 4; d <= 6; ++d) plants.push_back({scale * d, share(0.05)});
  std::uint64_t planted = 0;
  for (const testing::Plant& p : plants) planted += p.count;
  return testing::MakeCorpus(c.seed, c.n - planted, plants, bits);
}

void WriteTsv(const std::vector<IdFingerprint>& docs, const std::string& path, int bits = 64) {
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (out == nullptr) Die("cannot write " + path);
  for (const IdFingerprint& d : docs) {
    if (bits == 64) {
      std::fprintf(out, "%llu\t0x%016llx\n", static_cast<unsigned long long>(d.id),
                   static_cast<unsigned long long>(d.fingerprint.low()));
    } else {
      std::fprintf(out, "%llu\t0x%016llx%016llx\n", static_cast<unsigned long long>(d.id),
                   static_cast<unsigned long long>(d.fingerprint.high()),
                   static_cast<unsigned long long>(d.fingerprint.low()));
    }
  }
  if (std::fclose(out) != 0) Die("cannot write " + path);
}

// Synthetic pages: words from a skewed vocabulary, 10% of pages an earlier
// page with a few words changed. Returns the bytes of text written.
std::uint64_t WriteJsonl(const Config& c, const std::string& path) {
  Random vocab_rnd(c.seed + 1);
  std::vector<std::string> vocabulary(30'000);
  for (std::string& w : vocabulary) {
    const int len = 2 + static_cast<int>(vocab_rnd.Uniform(8));
    for (int i = 0; i < len; ++i) w += static_cast<char>('a' + vocab_rnd.Uniform(26));
  }
  const auto page = [&](std::uint64_t source, std::uint64_t edit_seed) {
    Random rnd(c.seed * 1'000'003 + source);
    const std::size_t words = 250 + rnd.Uniform(150);
    std::vector<std::uint32_t> text(words);
    for (std::uint32_t& w : text) {
      // The product of two uniforms skews toward common words.
      w = static_cast<std::uint32_t>(rnd.Uniform(vocabulary.size()) *
                                     rnd.Uniform(vocabulary.size()) / vocabulary.size());
    }
    if (edit_seed != 0) {
      Random edit(edit_seed);
      for (std::uint64_t e = 1 + edit.Uniform(3); e > 0; --e) {
        text[edit.Uniform(words)] = static_cast<std::uint32_t>(edit.Uniform(vocabulary.size()));
      }
    }
    return text;
  };
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (out == nullptr) Die("cannot write " + path);
  Random rnd(c.seed + 2);
  std::uint64_t text_bytes = 0;
  std::string line;
  for (std::uint64_t id = 0; id < c.jsonl_docs; ++id) {
    const bool copy = id > 0 && rnd.Uniform(10) == 0;
    const std::vector<std::uint32_t> words = copy ? page(rnd.Uniform(id), id) : page(id, 0);
    line = "{\"id\": " + std::to_string(id) + ", \"text\": \"";
    const std::size_t text_start = line.size();
    for (std::size_t i = 0; i < words.size(); ++i) {
      if (i > 0) line += ' ';
      line += vocabulary[words[i]];
    }
    text_bytes += line.size() - text_start;
    line += "\"}\n";
    std::fwrite(line.data(), 1, line.size(), out);
  }
  if (std::fclose(out) != 0) Die("cannot write " + path);
  return text_bytes;
}

// Half hits (a stored fingerprint with 0..k bits flipped), half misses
// (random fingerprints, which have nothing within k with overwhelming odds).
struct QuerySet {
  std::vector<Fingerprint> hits;
  std::vector<Fingerprint> misses;
};

QuerySet MakeQueries(const std::vector<IdFingerprint>& docs, std::size_t count, int k,
                     std::uint64_t seed, int bits = 64) {
  Random rnd(seed + 3);
  QuerySet q;
  for (std::size_t i = 0; i < count / 2; ++i) {
    const Fingerprint stored = docs[rnd.Uniform(docs.size())].fingerprint;
    q.hits.push_back(stored ^ rnd.Bits(static_cast<int>(rnd.Uniform(k + 1)), bits));
    q.misses.push_back(rnd.Next(bits));
  }
  return q;
}

// ---- Timing ----

struct Latencies {
  std::vector<double> micros;  // sorted
  double wall_seconds = 0;

  // Nearest rank: the smallest latency that at least p of the queries meet.
  double Percentile(double p) const {
    if (micros.empty()) return 0;
    const auto rank = static_cast<std::size_t>(std::ceil(p * micros.size()));
    return micros[std::clamp<std::size_t>(rank, 1, micros.size()) - 1];
  }
  double PerSecond() const { return micros.size() / wall_seconds; }
  std::string Summary() const {
    return "p50 " + Fixed(Percentile(0.5), 0) + " µs, p99 " + Fixed(Percentile(0.99), 0) +
           " µs, p99.9 " + Fixed(Percentile(0.999), 0) + " µs, " + Grouped(PerSecond()) +
           " queries/s";
  }
};

// Runs `queries` spread over `threads` threads; every latency is recorded.
template <typename Q>
Latencies TimeQueries(const Store& store, const std::vector<Q>& queries, int k, int threads) {
  std::vector<std::vector<double>> per_thread(threads);
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      for (std::size_t i = t; i < queries.size(); i += threads) {
        const Clock::time_point q = Clock::now();
        Result<std::vector<Match>> r = [&] {
          if constexpr (std::is_same_v<Q, Sketch>) {
            return store.Query(queries[i], {k, std::nullopt});
          } else {
            return store.Query(queries[i], k);
          }
        }();
        per_thread[t].push_back(
            std::chrono::duration<double, std::micro>(Clock::now() - q).count());
        if (!r.ok()) Die("query: " + r.status().ToString());
      }
    });
  }
  for (std::thread& w : workers) w.join();
  Latencies l;
  l.wall_seconds = SecondsSince(start);
  for (const std::vector<double>& v : per_thread)
    l.micros.insert(l.micros.end(), v.begin(), v.end());
  std::sort(l.micros.begin(), l.micros.end());
  return l;
}

// The stored answer must be brute force's, exactly.
void CheckAgainstBruteForce(const Store& store, const std::vector<IdFingerprint>& docs,
                            const std::vector<Fingerprint>& queries, int k) {
  for (Fingerprint q : queries) {
    std::vector<testing::IdDistance> found;
    for (const Match& m : Must(store.Query(q, k), "query")) found.push_back({m.id, m.distance});
    std::sort(found.begin(), found.end());
    if (found != testing::BruteForceQuery(docs, q, k)) {
      std::ostringstream text;
      text << q;
      Die("the store's answer for " + text.str() + " differs from brute force");
    }
  }
}

// Written by the scan below so that the compiler cannot drop it.
volatile std::uint64_t scan_result;

// Seconds per query of a popcount scan over every fingerprint.
double BruteForceSecondsPerQuery(const std::vector<IdFingerprint>& docs,
                                 const std::vector<Fingerprint>& queries, int k) {
  std::vector<Fingerprint> fps;
  fps.reserve(docs.size());
  for (const IdFingerprint& d : docs) fps.push_back(d.fingerprint);
  // Enough queries for about a second of scanning.
  const std::size_t count = std::clamp<std::size_t>(
      300'000'000 / std::max<std::size_t>(1, fps.size()), 3, queries.size());
  std::uint64_t found = 0;
  const Clock::time_point start = Clock::now();
  for (std::size_t i = 0; i < count; ++i) {
    for (Fingerprint f : fps) found += WithinDistance(f, queries[i], k);
  }
  const double seconds = SecondsSince(start);
  scan_result = found;
  return seconds / count;
}

// Queries asked at a steady rate on a thread of their own while inserts
// run, as a crawler asks before it inserts.
struct QueriesBeside {
  const std::vector<Fingerprint>* queries = nullptr;  // asked in turn
  double per_second = 0;
  int k = 0;
  Latencies* latencies = nullptr;  // out
};

// CPU seconds this process has used, all its threads.
double ProcessCpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  const auto seconds = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// CPU seconds the calling thread has used.
double ThreadCpuSeconds() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

// A timed run of inserts: documents a second, and the CPU the process used
// meanwhile, of which the writing threads' own. The rest went to merges,
// flushes, compactions, the lone bits' rewrite at low priority, and the
// queries beside, if any: a short run's rate depends on how much of the
// compactions that earlier runs started lands in it.
struct InsertRun {
  double rate = 0;
  double cpu_seconds = 0;
  double writer_cpu_seconds = 0;

  std::string Summary() const {
    return Grouped(rate) + " fingerprints/s; CPU " + Fixed(cpu_seconds, 1) + " core-s, " +
           Fixed(writer_cpu_seconds, 1) + " of it the writers'";
  }
};

// Inserts fresh documents for `seconds`, then flushes what is staged into
// the tables; the rate is over both, so that it is one the store can
// sustain, not just how fast staging fills.
InsertRun TimeInserts(Store& store, int threads, std::size_t batch, double seconds,
                      std::atomic<DocumentId>& next_id, const QueriesBeside& beside = {}) {
  std::atomic<std::uint64_t> inserted{0};
  std::mutex writer_cpu_mu;
  double writer_cpu = 0;
  const double cpu_before = ProcessCpuSeconds();
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> workers;
  if (beside.latencies != nullptr && !beside.queries->empty()) {
    workers.emplace_back([&] {
      const std::chrono::duration<double> interval(1 / beside.per_second);
      for (std::size_t i = 0;; ++i) {
        // Timed from when it was due, not from when it began: the queries
        // behind a stalled one count their wait too.
        const auto due = start + std::chrono::duration_cast<Clock::duration>(interval * i);
        // Queries still due when the inserts end are dropped: asked after,
        // they would lengthen the inserts' time and meet a quieter store.
        if (due - start >= std::chrono::duration<double>(seconds) ||
            SecondsSince(start) >= seconds) {
          break;
        }
        std::this_thread::sleep_until(due);
        Result<std::vector<Match>> r =
            store.Query((*beside.queries)[i % beside.queries->size()], beside.k);
        beside.latencies->micros.push_back(
            std::chrono::duration<double, std::micro>(Clock::now() - due).count());
        if (!r.ok()) Die("query: " + r.status().ToString());
      }
      beside.latencies->wall_seconds = SecondsSince(start);
      std::sort(beside.latencies->micros.begin(), beside.latencies->micros.end());
    });
  }
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      Random rnd(next_id.load() + t);
      std::vector<NewDocument> docs(batch);
      while (SecondsSince(start) < seconds) {
        const DocumentId first = next_id.fetch_add(batch);
        for (std::size_t i = 0; i < batch; ++i) docs[i] = {first + i, rnd.Next(), {}, {}, {}};
        Must(batch == 1 ? store.Insert(docs[0].id, docs[0].fingerprint)
                        : store.InsertBatch(docs).status(),
             "insert");
        inserted += batch;
      }
      std::lock_guard lock(writer_cpu_mu);
      writer_cpu += ThreadCpuSeconds();
    });
  }
  for (std::thread& w : workers) w.join();
  Must(store.Flush(), "flush");
  InsertRun run;
  run.rate = inserted / SecondsSince(start);
  run.cpu_seconds = ProcessCpuSeconds() - cpu_before;
  run.writer_cpu_seconds = writer_cpu;
  return run;
}

// ---- Phases ----

void RunLoadTool(const Config& c, const std::string& args) {
  const std::string command = c.load_tool + " " + args + " --quiet";
  if (std::system(command.c_str()) != 0) Die("failed: " + command);
}

std::unique_ptr<Store> OpenStore(const std::string& path, Durability durability) {
  StoreOptions options;
  options.create_if_missing = false;
  options.durability = durability;
  // The benchmark closes and reopens the store in one process (for its
  // cold rows), the case this option is for (docs/design.md).
  options.release_memory_on_close = true;
  return Must(Store::Open(path, options), "open");
}

// A synthetic signature of the store's size for document `id`.
Signature SyntheticSignature(std::uint64_t id) {
  Random rnd(id * 0x9e3779b97f4a7c15ULL + 1);
  std::string bytes(static_cast<std::size_t>(FingerprintOptions{}.signature_bytes), '\0');
  for (char& b : bytes) b = static_cast<char>(rnd.Next());
  return *Signature::FromBytes(bytes);
}

// What confirmation costs: a store of the same documents, each with a
// signature, queried by the same fingerprints with signatures (every hit
// confirmed or refused by its similarity) and without (by distance alone,
// as the main store), alternately, on one thread.
void RunConfirmation(const Config& c, const QuerySet& queries, std::uint64_t bare_bytes,
                     Report& report) {
  const std::string path = c.dir + "/signed-store";
  const int k = c.distance;
  const Clock::time_point start = Clock::now();
  {
    StoreOptions options;
    options.blocks = c.blocks;
    options.distance = k;
    options.expected_documents = c.n;
    std::unique_ptr<Store> store = Must(Store::Open(path, options), "open");
    std::unique_ptr<BulkLoader> loader = Must(store->NewBulkLoader(), "bulk loader");
    for (const IdFingerprint& d : MakeFingerprints(c)) {
      Must(loader->Add({d.id, d.fingerprint, {}, SyntheticSignature(d.id), {}}), "add");
    }
    Must(loader->Finish().status(), "finish");
    Must(store->Close(), "close");
  }
  report.Add("bulk load with signatures, BulkLoader", Fixed(SecondsSince(start), 1) + " s");
  const std::uint64_t signed_bytes = DirectoryBytes(path);
  report.Add(
      "disk, per document, with signatures",
      Fixed(double(signed_bytes) / c.n, 1) + " bytes" +
          (bare_bytes == 0
               ? std::string()
               : " (" + Fixed(double(signed_bytes - std::min(signed_bytes, bare_bytes)) / c.n, 1) +
                     " more than without)"));
  std::unique_ptr<Store> store = OpenStore(path, Durability::kGroupCommit);
  // Hits carry the signature of their nearest document with a twentieth of
  // the slots changed, so that it is compared and confirmed; misses, a
  // random one, never compared.
  Random rnd(c.seed + 11);
  std::vector<Sketch> signed_hits, signed_misses;
  for (const Fingerprint q : queries.hits) {
    std::vector<Match> near = Must(store->Query(q, k), "query");
    Signature signature =
        near.empty() ? SyntheticSignature(rnd.Next()) : SyntheticSignature(near.front().id);
    std::string slots(signature.bytes());
    for (std::size_t i = 0; i < slots.size() / 20; ++i) slots[rnd.Uniform(slots.size())] ^= 1;
    signed_hits.push_back({q, *Signature::FromBytes(slots)});
  }
  for (const Fingerprint q : queries.misses) {
    signed_misses.push_back({q, SyntheticSignature(rnd.Next())});
  }
  TimeQueries(*store, signed_hits, k, 2);  // warm
  TimeQueries(*store, signed_misses, k, 2);
  double bare_hits = 0, confirmed_hits = 0, bare_misses = 0, confirmed_misses = 0;
  Latencies last_bare, last_confirmed;
  for (int round = 0; round < 2; ++round) {
    last_bare = TimeQueries(*store, queries.hits, k, 1);
    bare_hits += last_bare.PerSecond();
    last_confirmed = TimeQueries(*store, signed_hits, k, 1);
    confirmed_hits += last_confirmed.PerSecond();
    bare_misses += TimeQueries(*store, queries.misses, k, 1).PerSecond();
    confirmed_misses += TimeQueries(*store, signed_misses, k, 1).PerSecond();
  }
  report.Add("query, warm, hits, 1 thread, signed store, bare fingerprints", last_bare.Summary());
  report.Add("query, warm, hits, 1 thread, signed store, confirmed", last_confirmed.Summary());
  report.Add("confirmation: warm queries a second, confirmed / bare",
             "hits " + Fixed(confirmed_hits / bare_hits, 2) + ", misses " +
                 Fixed(confirmed_misses / bare_misses, 2) + " (means of 2 alternated runs)");
  store.reset();
  fs::remove_all(path);
}

// Seconds FindAll takes at k; dies unless it finds `expected` pairs. `what` names the store.
double TimeFindAll(const Store& store, int k, std::size_t expected, const std::string& what) {
  std::uint64_t pairs = 0;
  const Clock::time_point start = Clock::now();
  Must(store.FindAll(k, [&](const NearPair&) { ++pairs; }, {}), "FindAll");
  const double seconds = SecondsSince(start);
  if (pairs != expected) {
    Die(what + "FindAll found " + std::to_string(pairs) + " pairs, the reference " +
        std::to_string(expected));
  }
  return seconds;
}

// What the wide phase compares with: the main store's rows, where it ran.
struct StoreRows {
  double load_rate = 0;    // fingerprints a second
  double table_bytes = 0;  // per fingerprint per table
  double cold_hits = 0, cold_misses = 0, warm_hits = 0, warm_misses = 0;  // queries a second
  double find_all_seconds = 0;
};

// "(0.85x the 64-bit store's)" where the main store measured `base`.
std::string RatioTo(double value, double base) {
  if (base <= 0) return "";
  return " (" + Fixed(value / base, 2) + "x the 64-bit store's)";
}

// A store of 128-bit fingerprints, as many as the main store's, made and measured as it is: its
// bulk load, disk, cold and warm queries on one thread and FindAll, each beside the main store's.
void RunWide(const Config& c, const StoreRows& narrow, Report& report) {
  const std::string path = c.dir + "/wide-store";
  const int k = c.wide_distance;
  std::cerr << "fpstore-bench: 128 bits: generating " << Grouped(c.n) << " fingerprints\n";
  std::vector<IdFingerprint> docs = MakeFingerprints(c, 128);
  const QuerySet queries = MakeQueries(docs, c.queries, k, c.seed, 128);
  const std::string tsv = c.dir + "/wide.tsv";
  WriteTsv(docs, tsv, 128);
  std::cerr << "fpstore-bench: 128 bits: bulk load\n";
  Clock::time_point start = Clock::now();
  RunLoadTool(c, "--db " + path + " --input " + tsv + " --format tsv --bits 128 --blocks " +
                     std::to_string(c.wide_blocks) + " --distance " + std::to_string(k) +
                     " --expected-documents " + std::to_string(c.n));
  const double load_rate = c.n / SecondsSince(start);
  fs::remove(tsv);
  const std::string plan = "(" + std::to_string(c.wide_blocks) + ", " + std::to_string(k) + ")";
  report.Add("128 bits " + plan + ": bulk load, fpstore-load tsv",
             Grouped(load_rate) + " fingerprints/s" + RatioTo(load_rate, narrow.load_rate));
  std::unique_ptr<Store> store = OpenStore(path, Durability::kGroupCommit);
  {
    const StoreStats stats = Must(store->Stats(), "stats");
    std::uint64_t table_bytes = 0;
    for (std::uint64_t b : stats.table_bytes) table_bytes += b;
    const double per = double(table_bytes) / c.n / stats.table_bytes.size();
    report.Add("128 bits " + plan + ": disk, per fingerprint per table",
               Fixed(per, 2) + " bytes (" + Gib(DirectoryBytes(path)) + " in all)" +
                   RatioTo(per, narrow.table_bytes));
  }
  const std::vector<Fingerprint> check_hits(
      queries.hits.begin(), queries.hits.begin() + std::min<std::size_t>(100, queries.hits.size()));
  CheckAgainstBruteForce(*store, docs, check_hits, k);
  const std::size_t pairs_expected =
      c.Runs("scans")
          ? internal::FindAllPairsInMemory(docs, *PermutationPlan::Create(c.wide_blocks, k, 128), k)
                .size()
          : 0;
  docs = {};
  docs.shrink_to_fit();
  std::cerr << "fpstore-bench: 128 bits: queries\n";
  const std::size_t cold = std::min(c.cold_queries / 2, queries.hits.size());
  const std::vector<Fingerprint> hits(queries.hits.begin(), queries.hits.begin() + cold);
  const std::vector<Fingerprint> misses(queries.misses.begin(), queries.misses.begin() + cold);
  for (const auto& [name, set, base] : {std::tuple{"hits", &hits, narrow.cold_hits},
                                        std::tuple{"misses", &misses, narrow.cold_misses}}) {
    store.reset();
    EvictFromPageCache(path);
    store = OpenStore(path, Durability::kGroupCommit);
    const Latencies l = TimeQueries(*store, *set, k, 1);
    report.Add(std::string("128 bits ") + plan + ": query, cold, " + name + ", 1 thread",
               l.Summary() + RatioTo(l.PerSecond(), base));
  }
  TimeQueries(*store, queries.hits, k, 2);
  TimeQueries(*store, queries.misses, k, 2);
  for (const auto& [name, set, base] :
       {std::tuple{"hits", &queries.hits, narrow.warm_hits},
        std::tuple{"misses", &queries.misses, narrow.warm_misses}}) {
    const Latencies l = TimeQueries(*store, *set, k, 1);
    report.Add(std::string("128 bits ") + plan + ": query, warm, " + name + ", 1 thread",
               l.Summary() + RatioTo(l.PerSecond(), base));
  }
  if (c.Runs("scans")) {
    std::cerr << "fpstore-bench: 128 bits: FindAll\n";
    const double seconds = TimeFindAll(*store, k, pairs_expected, "128 bits: ");
    report.Add(
        "128 bits " + plan + ": FindAll (" + Grouped(pairs_expected) + " pairs)",
        Fixed(seconds, 1) + " s" +
            (narrow.find_all_seconds > 0
                 ? " (" + Fixed(seconds / narrow.find_all_seconds, 2) + "x the 64-bit store's time)"
                 : std::string()));
  }
  store.reset();
  fs::remove_all(path);
}

void Run(const Config& c) {
  Report report;
  StoreRows narrow;
  const std::string store_path = c.dir + "/store";
  const int k = c.distance;

  std::cerr << "fpstore-bench: generating " << Grouped(c.n) << " fingerprints\n";
  std::vector<IdFingerprint> docs = MakeFingerprints(c);
  const QuerySet queries = MakeQueries(docs, c.queries, k, c.seed);
  const bool main_store = c.Runs("unsigned");
  const bool scans = main_store && c.Runs("scans");

  std::cerr << "fpstore-bench: baselines\n";
  // Both baselines are for rows on the main store.
  const double brute_seconds = main_store ? BruteForceSecondsPerQuery(docs, queries.misses, k) : 0;
  Clock::time_point start = Clock::now();
  const std::size_t reference_pairs =
      scans ? internal::FindAllPairsInMemory(docs, *PermutationPlan::Create(c.blocks, k), k).size()
            : 0;
  const double reference_find_all = SecondsSince(start);
  std::unique_ptr<Store> store;
  if (main_store) {
    const std::string tsv = c.dir + "/fingerprints.tsv";
    WriteTsv(docs, tsv);
    std::cerr << "fpstore-bench: bulk load\n";
    start = Clock::now();
    RunLoadTool(c, "--db " + store_path + " --input " + tsv + " --format tsv --blocks " +
                       std::to_string(c.blocks) + " --distance " + std::to_string(k) +
                       " --expected-documents " + std::to_string(c.n));
    const double load_seconds = SecondsSince(start);
    narrow.load_rate = c.n / load_seconds;
    report.Add("bulk load, fpstore-load tsv",
               Grouped(c.n / load_seconds) + " fingerprints/s (" + Fixed(load_seconds, 1) + " s)");
    fs::remove(tsv);

    if (c.Runs("jsonl")) {
      const std::string jsonl = c.dir + "/pages.jsonl";
      const std::uint64_t text_bytes = WriteJsonl(c, jsonl);
      start = Clock::now();
      RunLoadTool(c, "--db " + c.dir + "/text-store --input " + jsonl);
      const double seconds = SecondsSince(start);
      report.Add("bulk load, fpstore-load jsonl (" + Grouped(c.jsonl_docs) + " pages)",
                 Fixed(text_bytes / 1e6 / seconds, 1) + " MB/s of text, " +
                     Grouped(c.jsonl_docs / seconds) + " pages/s");
      fs::remove(jsonl);
      fs::remove_all(c.dir + "/text-store");
    }
    rusage children{};
    ::getrusage(RUSAGE_CHILDREN, &children);
    report.Add("peak resident, fpstore-load", Gib(std::uint64_t(children.ru_maxrss) * 1024));

    store = OpenStore(store_path, Durability::kGroupCommit);
    {
      const StoreStats stats = Must(store->Stats(), "stats");
      std::uint64_t table_bytes = 0;
      for (std::uint64_t b : stats.table_bytes) table_bytes += b;
      narrow.table_bytes = double(table_bytes) / c.n / stats.table_bytes.size();
      report.Add(
          "disk, per fingerprint per table",
          Fixed(narrow.table_bytes, 2) + " bytes (" + Gib(DirectoryBytes(store_path)) + " in all)");
    }

    std::cerr << "fpstore-bench: checking answers against brute force\n";
    const std::vector<Fingerprint> check_hits(
        queries.hits.begin(),
        queries.hits.begin() + std::min<std::size_t>(100, queries.hits.size()));
    CheckAgainstBruteForce(*store, docs, check_hits, k);
  }           // main_store
  docs = {};  // what follows measures the store, not this program's copy
  docs.shrink_to_fit();

  if (main_store) {
    std::cerr << "fpstore-bench: cold queries\n";
    ResetPeakResident();
    {
      const std::size_t cold = std::min(c.cold_queries / 2, queries.hits.size());
      const std::vector<Fingerprint> hits(queries.hits.begin(), queries.hits.begin() + cold);
      const std::vector<Fingerprint> misses(queries.misses.begin(), queries.misses.begin() + cold);
      // Each set starts from a closed store evicted from the page cache.
      for (const auto& [name, set] : {std::pair{"hits", &hits}, std::pair{"misses", &misses}}) {
        store.reset();
        EvictFromPageCache(store_path);
        store = OpenStore(store_path, Durability::kGroupCommit);
        const Latencies l = TimeQueries(*store, *set, k, 1);
        (set == &hits ? narrow.cold_hits : narrow.cold_misses) = l.PerSecond();
        report.Add(std::string("query, cold, ") + name + ", 1 thread", l.Summary());
      }
    }

    std::cerr << "fpstore-bench: warm queries\n";
    TimeQueries(*store, queries.hits, k, 2);
    TimeQueries(*store, queries.misses, k, 2);
    Latencies warm_misses;
    for (int threads : {1, 2}) {
      const std::string suffix = threads == 1 ? " thread" : " threads";
      const Latencies hits = TimeQueries(*store, queries.hits, k, threads);
      if (threads == 1) narrow.warm_hits = hits.PerSecond();
      report.Add("query, warm, hits, " + std::to_string(threads) + suffix, hits.Summary());
      Latencies misses = TimeQueries(*store, queries.misses, k, threads);
      if (threads == 1) narrow.warm_misses = misses.PerSecond();
      report.Add("query, warm, misses, " + std::to_string(threads) + suffix, misses.Summary());
      if (threads == 1) warm_misses = std::move(misses);
    }
    const double store_seconds = warm_misses.wall_seconds / warm_misses.micros.size();
    report.Add("baseline: brute-force scan per query", Fixed(brute_seconds * 1e3, 2) + " ms, " +
                                                           Fixed(brute_seconds / store_seconds, 0) +
                                                           "x fpstore's warm miss");
    report.Add("peak resident while querying", Gib(PeakResidentBytes()));
  }  // main_store

  if (scans) {
    std::cerr << "fpstore-bench: FindAll and Clusters\n";
    ResetPeakResident();
    {
      const std::uint64_t pairs = reference_pairs;
      const double seconds = TimeFindAll(*store, k, reference_pairs, "");
      narrow.find_all_seconds = seconds;
      report.Add("FindAll (" + Grouped(pairs) + " pairs)", Fixed(seconds, 1) + " s");
      report.Add("baseline: in-memory sorted tables, find-all",
                 Fixed(reference_find_all, 1) + " s; fpstore takes " +
                     Fixed(seconds / reference_find_all, 2) + "x as long");
      std::uint64_t clusters = 0;
      start = Clock::now();
      Must(store->Clusters(k, [&](std::span<const DocumentId>) { ++clusters; }, {}), "Clusters");
      report.Add("Clusters (" + Grouped(clusters) + " clusters)",
                 Fixed(SecondsSince(start), 1) + " s");
    }
    report.Add("peak resident through FindAll and Clusters", Gib(PeakResidentBytes()));
  }  // scans

  // After the scans, so that they run on the store the queries warmed. It builds a second store
  // of its own; the inserts below reopen this one.
  store.reset();  // one store's cache at a time
  if (c.Runs("wide")) RunWide(c, narrow, report);
  if (c.Runs("signed")) {
    std::cerr << "fpstore-bench: confirmation\n";
    RunConfirmation(c, queries, main_store ? DirectoryBytes(store_path) : 0, report);
  }

  // The modes run in this order on the same store, which grows as they go.
  const bool inserts = main_store && c.Runs("inserts");
  if (inserts) std::cerr << "fpstore-bench: inserts\n";
  std::atomic<DocumentId> next_id{c.n + 1'000'000'000};
  const std::pair<Durability, const char*> modes[] = {{Durability::kNoSync, "no sync"},
                                                      {Durability::kGroupCommit, "group commit"},
                                                      {Durability::kSync, "sync"}};
  for (const auto& [durability, name] : modes) {
    if (!inserts) break;
    store = OpenStore(store_path, durability);
    for (std::size_t batch : {std::size_t{1}, std::size_t{1000}}) {
      for (int threads : {1, 2}) {
        const InsertRun run = TimeInserts(*store, threads, batch, c.insert_seconds, next_id);
        report.Add(std::string("insert, ") + name + ", " +
                       (batch == 1 ? "one per call" : "batches of 1,000") + ", " +
                       std::to_string(threads) + (threads == 1 ? " thread" : " threads"),
                   run.Summary());
      }
    }
    Must(store->Close(), "close");
    store.reset();
  }

  // A crawler inserts without pause and queries meanwhile. The short runs
  // above end before compactions catch up; this one runs long enough for
  // them to matter, with queries at a steady rate beside it, then times
  // queries on the store as it is left (merged files waiting in level 0,
  // compactions running) and again after a full compaction.
  if (main_store && c.Runs("sustained") && c.sustained_seconds > 0) {
    std::cerr << "fpstore-bench: sustained inserts\n";
    store = OpenStore(store_path, Durability::kGroupCommit);
    // Hits and misses in turn.
    std::vector<Fingerprint> mixed;
    for (std::size_t i = 0; i < std::min(queries.hits.size(), queries.misses.size()); ++i) {
      mixed.push_back(queries.hits[i]);
      mixed.push_back(queries.misses[i]);
    }
    Latencies beside_latencies;
    QueriesBeside beside;
    if (c.sustained_queries_per_second > 0 && std::isfinite(c.sustained_queries_per_second)) {
      beside = {&mixed, c.sustained_queries_per_second, k, &beside_latencies};
    }
    const InsertRun run = TimeInserts(*store, 2, 1000, c.sustained_seconds, next_id, beside);
    std::string sustained = "sustained " + Fixed(c.sustained_seconds, 0) + " s";
    if (!beside_latencies.micros.empty()) {
      sustained += ", " + Grouped(c.sustained_queries_per_second) + " queries/s beside";
    }
    report.Add("insert, group commit, batches of 1,000, 2 threads, " + sustained, run.Summary());
    if (!beside_latencies.micros.empty()) {
      report.Add("query, hits and misses in turn, " + Grouped(c.sustained_queries_per_second) +
                     "/s on a third thread, beside them, from when each was due",
                 beside_latencies.Summary() + ", slowest " +
                     Fixed(beside_latencies.Percentile(1), 0) + " µs");
    }
    const auto time_queries = [&](const std::string& when) {
      report.Add("query, hits, 2 threads, " + when,
                 TimeQueries(*store, queries.hits, k, 2).Summary());
      report.Add("query, misses, 2 threads, " + when,
                 TimeQueries(*store, queries.misses, k, 2).Summary());
    };
    time_queries("right after them");
    const Clock::time_point start = Clock::now();
    Must(store->Compact(), "compact");
    report.Add("compaction after them", Fixed(SecondsSince(start), 1) + " s");
    // Warmed as the earlier warm queries were: compaction wrote new files.
    TimeQueries(*store, queries.hits, k, 2);
    time_queries("after that compaction, warm");
    Must(store->Close(), "close");
    store.reset();
  }

  // A crawler that revisits pages replaces their fingerprints under the
  // same ids: the loaded documents, from the first, get new ones. Last,
  // so that the rows above query the documents as loaded.
  if (main_store && c.Runs("replace")) {
    std::cerr << "fpstore-bench: replacements\n";
    store = OpenStore(store_path, Durability::kGroupCommit);
    std::atomic<DocumentId> recrawled_id{0};
    report.Add("replace, group commit, batches of 1,000, 2 threads (loaded ids, new fingerprints)",
               TimeInserts(*store, 2, 1000, c.insert_seconds, recrawled_id).Summary());
    Must(store->Close(), "close");
    store.reset();
  }

  std::cout << "fpstore-bench: N = " << Grouped(c.n) << ", blocks " << c.blocks << ", distance "
            << k << ", seed " << c.seed << ", " << std::thread::hardware_concurrency()
            << " cores\n\n";
  report.Print(std::cout);
}

}  // namespace
}  // namespace fpstore::bench

int main(int argc, char** argv) {
  fpstore::bench::Config c;
  po::options_description options(
      "fpstore-bench: times every path of the store (docs/performance.md)");
  // clang-format off
  options.add_options()
      ("help,h", "Print this help.")
      ("n", po::value(&c.n)->default_value(c.n), "Fingerprints in the store.")
      ("blocks", po::value(&c.blocks)->default_value(c.blocks), "The plan's blocks m.")
      ("distance", po::value(&c.distance)->default_value(c.distance), "The plan's distance k.")
      ("seed", po::value(&c.seed)->default_value(c.seed), "Seed of the synthetic data.")
      ("dir", po::value(&c.dir), "Working directory (created; default: a new one under /tmp).")
      ("queries", po::value(&c.queries)->default_value(c.queries), "Warm queries, half hits.")
      ("cold-queries", po::value(&c.cold_queries)->default_value(c.cold_queries),
       "Queries after evicting the store from the page cache.")
      ("jsonl-docs", po::value(&c.jsonl_docs)->default_value(c.jsonl_docs),
       "Synthetic pages for the JSONL load.")
      ("insert-seconds", po::value(&c.insert_seconds)->default_value(c.insert_seconds),
       "Seconds per insert configuration.")
      ("sustained-seconds", po::value(&c.sustained_seconds)->default_value(c.sustained_seconds),
       "Seconds of inserts on 2 threads before querying a store that takes inserts (0: skip).")
      ("sustained-queries-per-second",
       po::value(&c.sustained_queries_per_second)->default_value(c.sustained_queries_per_second),
       "Queries a second on a third thread during the sustained inserts (0: none).")
      ("keep", po::bool_switch(&c.keep), "Keep the working directory.")
      ("skip", po::value<std::vector<std::string>>()->multitoken()->value_name("PHASE..."),
       "Phases to leave out: jsonl, unsigned (the main store and every row on it, the "
       "JSONL load's included), scans, "
       "signed, inserts, sustained, replace, wide (a store of 128-bit fingerprints). "
       "e.g. --skip signed")
      ("wide-blocks", po::value(&c.wide_blocks)->default_value(c.wide_blocks),
       "The 128-bit store's blocks m.")
      ("wide-distance", po::value(&c.wide_distance)->default_value(c.wide_distance),
       "The 128-bit store's distance k.")
      ("load-tool", po::value(&c.load_tool)->default_value(FPSTORE_LOAD_TOOL),
       "The fpstore-load binary.");
  // clang-format on
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, options), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "fpstore-bench: " << e.what() << "\n";
    return 2;
  }
  if (vm.count("help") != 0) {
    std::cout << options << "\n";
    return 0;
  }
  if (vm.count("skip") != 0) {
    for (const std::string& phase : vm["skip"].as<std::vector<std::string>>()) {
      if (fpstore::bench::kPhases.count(phase) == 0) {
        std::cerr << "fpstore-bench: --skip: no phase " << phase << "\n";
        return 2;
      }
      c.skip.insert(phase);
    }
  }
  const bool own_dir = c.dir.empty();
  if (own_dir) c.dir = "/tmp/fpstore-bench." + std::to_string(::getpid());
  std::error_code ec;
  if (fs::exists(c.dir / fs::path("store"), ec)) {
    std::cerr << "fpstore-bench: " << c.dir << "/store exists; give an empty --dir\n";
    return 2;
  }
  fs::create_directories(c.dir);
  fpstore::bench::Run(c);
  if (!c.keep) fs::remove_all(own_dir ? fs::path(c.dir) : fs::path(c.dir) / "store", ec);
  return 0;
}
