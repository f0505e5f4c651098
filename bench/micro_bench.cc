// Micro-benchmarks of the hot paths, each next to a baseline measured in the
// same run: fingerprinting against hashing the same bytes once with XXH3,
// permuting against copying, Hamming distance against a plain XOR, and one
// store query against a brute-force popcount scan of the same fingerprints,
// and so on: each section says what its baseline is.
// After Google Benchmark's table, the ratios are printed: on a shared, noisy
// machine the ratios are comparable between runs where the times are not.
#include <benchmark/benchmark.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "format/families.h"
#include "format/groups.h"
#include "format/records.h"
#include "fpstore/fingerprinter.h"
#include "fpstore/permutation.h"
#include "fpstore/store.h"
#include "ingest/sst_sink.h"
#include "open/store_impl.h"
#include "read/staging.h"

namespace {

std::string EnglishCorpus() {
  std::string all;
  for (const char* name : {"GPL-3", "Apache-2.0", "MPL-2.0", "Artistic", "LGPL-2.1"}) {
    std::ifstream in(std::string("/usr/share/common-licenses/") + name);
    std::stringstream ss;
    ss << in.rdbuf();
    all += ss.str();
  }
  return all;
}

std::string ChineseCorpus() {
  static const char* kWords[] = {"网络", "爬虫", "网页", "内容", "重复", "检测", "算法", "指纹",
                                 "数据", "存储", "系统", "用户", "搜索", "引擎", "文档", "相似"};
  std::mt19937 rng(1);
  std::string text;
  while (text.size() < 200000) {
    text += kWords[rng() % std::size(kWords)];
    if (rng() % 10 == 0) text += "，";
  }
  return text;
}

const std::string kEnglish = EnglishCorpus();
const std::string kChinese = ChineseCorpus();

std::vector<std::uint64_t> RandomFingerprints(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint64_t> fps(n);
  for (std::uint64_t& f : fps) f = rng();
  return fps;
}

// ---- Fingerprinting, against one pass of XXH3 over the same bytes ----

void BM_Fingerprint(benchmark::State& state, const std::string& text, int window) {
  auto f = fpstore::Fingerprinter::Create({.window = window});
  for (auto _ : state) benchmark::DoNotOptimize(*f->FromText(text));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

// std::uint64_t and signature in one pass (the text tools' path), against
// BM_Fingerprint at the same window.
void BM_Sketch(benchmark::State& state, const std::string& text, int signature_window) {
  auto f = fpstore::Fingerprinter::Create({.signature_window = signature_window});
  for (auto _ : state) benchmark::DoNotOptimize(*f->SketchText(text));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

// The same, one page of about 2 KB at a time, as a crawler's pages come:
// per text costs (the signature's densification) count here.
void BM_SketchPages(benchmark::State& state, const std::string& text) {
  auto f = fpstore::Fingerprinter::Create({});
  constexpr std::size_t kPage = 2048;
  for (auto _ : state) {
    for (std::size_t at = 0; at + kPage <= text.size(); at += kPage) {
      benchmark::DoNotOptimize(*f->SketchText(std::string_view(text).substr(at, kPage)));
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * (text.size() / kPage * kPage)));
}

void BM_Xxh3(benchmark::State& state, const std::string& text) {
  for (auto _ : state) benchmark::DoNotOptimize(XXH3_64bits(text.data(), text.size()));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

BENCHMARK_CAPTURE(BM_Fingerprint, english_window1, kEnglish, 1);
BENCHMARK_CAPTURE(BM_Fingerprint, english_window3, kEnglish, 3);
BENCHMARK_CAPTURE(BM_Fingerprint, chinese_window1, kChinese, 1);
BENCHMARK_CAPTURE(BM_Fingerprint, chinese_window3, kChinese, 3);
BENCHMARK_CAPTURE(BM_Sketch, english_signature_window3, kEnglish, 3);
BENCHMARK_CAPTURE(BM_Sketch, english_signature_window5, kEnglish, 5);
BENCHMARK_CAPTURE(BM_Sketch, chinese_signature_window5, kChinese, 5);
BENCHMARK_CAPTURE(BM_SketchPages, english, kEnglish);
BENCHMARK_CAPTURE(BM_Xxh3, english, kEnglish);
BENCHMARK_CAPTURE(BM_Xxh3, chinese, kChinese);

// ---- Permutation and distance, against copying and XOR ----

constexpr std::size_t kBatch = 4096;

void BM_PermuteAllTables(benchmark::State& state) {
  const fpstore::PermutationPlan plan = *fpstore::PermutationPlan::Create(6, 3);
  const std::vector<std::uint64_t> fps = RandomFingerprints(kBatch, 1);
  for (auto _ : state) {
    for (std::uint64_t f : fps) {
      for (const fpstore::TablePermutation& t : plan.tables())
        benchmark::DoNotOptimize(t.Apply64(f));
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBatch * plan.table_count()));
}

void BM_CopyBaseline(benchmark::State& state) {
  const std::vector<std::uint64_t> fps = RandomFingerprints(kBatch, 1);
  for (auto _ : state) {
    for (std::uint64_t f : fps) {
      for (int t = 0; t < 20; ++t) benchmark::DoNotOptimize(f);
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBatch * 20));
}

void BM_HammingDistance(benchmark::State& state) {
  const std::vector<std::uint64_t> fps = RandomFingerprints(kBatch + 1, 2);
  for (auto _ : state) {
    for (std::size_t i = 0; i < kBatch; ++i) {
      benchmark::DoNotOptimize(fpstore::HammingDistance(fps[i], fps[i + 1]));
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBatch));
}

void BM_XorBaseline(benchmark::State& state) {
  const std::vector<std::uint64_t> fps = RandomFingerprints(kBatch + 1, 2);
  for (auto _ : state) {
    for (std::size_t i = 0; i < kBatch; ++i) benchmark::DoNotOptimize(fps[i] ^ fps[i + 1]);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kBatch));
}

BENCHMARK(BM_PermuteAllTables);
BENCHMARK(BM_CopyBaseline);
BENCHMARK(BM_HammingDistance);
BENCHMARK(BM_XorBaseline);

// ---- One query, against a brute-force scan ----

constexpr std::size_t kStoreSize = 200'000;

[[noreturn]] void Die(const std::string& message) {
  std::fprintf(stderr, "micro_bench: %s\n", message.c_str());
  std::exit(1);
}

// Timing queries of a store whose load failed would flatter it.
void Check(const fpstore::Status& s) {
  if (!s.ok()) Die(s.ToString());
}
template <typename T>
T Check(fpstore::Result<T> r) {
  if (!r.ok()) Die(r.status().ToString());
  return std::move(r).value();
}

// A bulk-loaded store of random fingerprints in a temporary directory.
class QueryFixture {
 public:
  QueryFixture()
      : dir_(std::filesystem::temp_directory_path() /
             ("fpstore-micro-bench." + std::to_string(::getpid()))),
        fps_(RandomFingerprints(kStoreSize, 3)) {
    std::filesystem::remove_all(dir_);
    fpstore::StoreOptions options;
    options.durability = fpstore::Durability::kNoSync;
    store_ = Check(fpstore::Store::Open(dir_.string(), options));
    auto loader = Check(store_->NewBulkLoader({}));
    for (std::size_t i = 0; i < fps_.size(); ++i) Check(loader->Add(i, fps_[i]));
    if (Check(loader->Finish()).added != fps_.size()) Die("the bulk load lost documents");
  }
  ~QueryFixture() {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  const fpstore::Store& store() const { return *store_; }
  const std::vector<std::uint64_t>& fps() const { return fps_; }

 private:
  std::filesystem::path dir_;
  std::vector<std::uint64_t> fps_;
  std::unique_ptr<fpstore::Store> store_;
};

QueryFixture& Fixture() {
  static QueryFixture fixture;
  return fixture;
}

// Half the probes are a stored fingerprint with one bit flipped, half random.
std::vector<std::uint64_t> Probes() {
  std::vector<std::uint64_t> probes = RandomFingerprints(1024, 4);
  for (std::size_t i = 0; i < probes.size(); i += 2) {
    probes[i] = Fixture().fps()[probes[i] % kStoreSize] ^ (std::uint64_t{1} << (i % 64));
  }
  return probes;
}

void BM_StoreQuery(benchmark::State& state) {
  const std::vector<std::uint64_t> probes = Probes();
  // Warm: the first pass reads the freshly loaded files into the caches.
  for (std::uint64_t q : probes) benchmark::DoNotOptimize(*Fixture().store().Query(q, 3));
  std::size_t i = 0;
  for (auto _ : state)
    benchmark::DoNotOptimize(*Fixture().store().Query(probes[i++ % probes.size()], 3));
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

void BM_BruteForceQuery(benchmark::State& state) {
  const std::vector<std::uint64_t> probes = Probes();
  std::size_t i = 0;
  for (auto _ : state) {
    const std::uint64_t q = probes[i++ % probes.size()];
    std::size_t found = 0;
    for (std::uint64_t f : Fixture().fps()) found += fpstore::WithinDistance(f, q, 3);
    benchmark::DoNotOptimize(found);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()));
}

BENCHMARK(BM_StoreQuery);
BENCHMARK(BM_BruteForceQuery);

// ---- Staging inserts, against appending them to a vector ----
//
// Staging a merge's worth of inserts (the store's default, 512 Ki) in
// batches of 1,000, into an index made with room for twice as many, as the
// store makes it, and into one that grows as it fills; the baseline appends
// the same entries to a vector whose memory is reused from one round to the
// next (a fresh vector each round made it a measure of page faults: the
// index took 2.5x to 213x its time across sessions).
const std::vector<fpstore::internal::StagingIndex::Entry>& StagedEntries() {
  static const std::vector<fpstore::internal::StagingIndex::Entry> entries = [] {
    std::mt19937_64 rnd(11);
    std::vector<fpstore::internal::StagingIndex::Entry> e(std::size_t{1} << 19);
    for (auto& entry : e) entry = {rnd(), rnd()};
    return e;
  }();
  return entries;
}

template <typename AddBatch>
void StageInBatches(AddBatch&& add) {
  const auto& entries = StagedEntries();
  constexpr std::size_t kBatch = 1000;
  for (std::size_t i = 0; i < entries.size(); i += kBatch) {
    add(std::span(entries).subspan(i, std::min(kBatch, entries.size() - i)));
  }
}

void BM_StagingIndexAdd(benchmark::State& state, bool reserved) {
  for (auto _ : state) {
    fpstore::internal::StagingIndex index(3, 64, reserved ? 2 * StagedEntries().size() : 0);
    StageInBatches([&](auto batch) { index.Add(batch); });
    benchmark::DoNotOptimize(index.size());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * StagedEntries().size()));
}

void BM_StagingEntriesAppend(benchmark::State& state) {
  std::vector<fpstore::internal::StagingIndex::Entry> appended;
  appended.reserve(StagedEntries().size());
  for (auto _ : state) {
    appended.clear();
    StageInBatches(
        [&](auto batch) { appended.insert(appended.end(), batch.begin(), batch.end()); });
    benchmark::DoNotOptimize(appended.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * StagedEntries().size()));
}

BENCHMARK_CAPTURE(BM_StagingIndexAdd, reserved, true)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_StagingIndexAdd, growing, false)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_StagingEntriesAppend)->Unit(benchmark::kMillisecond);

// ---- Staged inserts, against writing every table's entry at once ----
//
// 100,000 new documents in batches of 1,000, unsynced, into a new store of plan (6, 3) made for
// them: staged (a record and a staging mark each), then moved into the tables by Flush, the work
// staging defers, which counts here. The baseline writes what an insert would without staging,
// into a RocksDB of the same families and options: the record and a group operand in each of the
// 20 tables, one WriteBatch a batch, then flushes every family, as the staged side's Flush leaves
// its tables in files.
constexpr std::size_t kInserted = 100'000;
constexpr std::size_t kInsertBatch = 1'000;

std::filesystem::path InsertDir() {
  return std::filesystem::temp_directory_path() /
         ("fpstore-micro-bench-insert." + std::to_string(::getpid()));
}

void BM_InsertStagedThenMerged(benchmark::State& state) {
  const std::vector<std::uint64_t> fps = RandomFingerprints(kInserted, 5);
  for (auto _ : state) {
    state.PauseTiming();
    std::filesystem::remove_all(InsertDir());
    fpstore::StoreOptions options;
    options.durability = fpstore::Durability::kNoSync;
    options.expected_documents = kInserted;
    std::unique_ptr<fpstore::Store> store =
        Check(fpstore::Store::Open(InsertDir().string(), options));
    state.ResumeTiming();
    std::vector<fpstore::NewDocument> batch;
    for (std::size_t i = 0; i < fps.size(); i += kInsertBatch) {
      batch.clear();
      for (std::size_t j = i; j < std::min(fps.size(), i + kInsertBatch); ++j) {
        batch.push_back({j, fps[j], {}, {}, {}});
      }
      Check(store->InsertBatch(batch).status());
    }
    Check(store->Flush());
    state.PauseTiming();
    Check(store->Close());
    store.reset();
    std::filesystem::remove_all(InsertDir());
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kInserted));
}

void BM_InsertIntoEveryTable(benchmark::State& state) {
  namespace fi = fpstore::internal;
  const std::vector<std::uint64_t> fps = RandomFingerprints(kInserted, 5);
  const fpstore::PermutationPlan plan = *fpstore::PermutationPlan::Create(6, 3);
  const int group_bits = fi::GroupBitsFor(kInserted);
  fpstore::StoreOptions options;
  for (auto _ : state) {
    state.PauseTiming();
    std::filesystem::remove_all(InsertDir());
    fi::RocksConfig config = fi::MakeRocksConfig(options, plan, group_bits);
    config.db.create_if_missing = true;
    config.db.create_missing_column_families = true;
    std::vector<rocksdb::ColumnFamilyHandle*> families;
    rocksdb::DB* raw = nullptr;
    if (!rocksdb::DB::Open(config.db, InsertDir().string(), config.families, &families, &raw)
             .ok()) {
      Die("cannot open a database in " + InsertDir().string());
    }
    std::unique_ptr<rocksdb::DB> db(raw);
    state.ResumeTiming();
    for (std::size_t i = 0; i < fps.size(); i += kInsertBatch) {
      rocksdb::WriteBatch batch;
      for (std::size_t j = i; j < std::min(fps.size(), i + kInsertBatch); ++j) {
        const fi::Key8 id(j);
        batch.Put(families[1], id.view(),
                  fi::EncodeDocumentValue(fps[j], fi::EncodeDocumentTail(0, {}, {}), 64));
        for (std::size_t t = 0; t < plan.table_count(); ++t) {
          const fi::GroupLayout layout = fi::TableGroupLayout(plan, t, group_bits);
          const fpstore::Fingerprint permuted = plan.table(t).Apply(fps[j]);
          const fi::GroupLayout::Key key = layout.KeyOf(permuted);
          const std::string operand =
              t == 0 ? fi::EncodeGroupOperand(
                           layout, fi::IdGroupChange{{{layout.MemberBits(permuted), j}}, {}})
                     : fi::EncodeGroupOperand(layout,
                                              fi::GroupChange{{layout.MemberBits(permuted)}, {}});
          batch.Merge(families[3 + t], layout.KeyView(key), operand);
        }
      }
      if (!db->Write(rocksdb::WriteOptions(), &batch).ok()) Die("write failed");
    }
    if (!db->Flush(rocksdb::FlushOptions(), families).ok()) Die("flush failed");
    state.PauseTiming();
    for (rocksdb::ColumnFamilyHandle* h : families) db->DestroyColumnFamilyHandle(h);
    db.reset();
    std::filesystem::remove_all(InsertDir());
    state.ResumeTiming();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kInserted));
}

BENCHMARK(BM_InsertStagedThenMerged)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_InsertIntoEveryTable)->Unit(benchmark::kMillisecond);

// ---- Packed tables' merge operator, against copying its input ----

// A compaction of four merges into a 10M store's packed table, per group:
// 16-bit groups of about 150 members, each merge adding about 8. The
// baseline copies the same bytes into the output, the least a fold does.
struct GroupFoldInput {
  fpstore::internal::GroupLayout layout{31, 16};
  std::vector<std::string> bases, operands;  // four operands a base
};

const GroupFoldInput& FoldInput() {
  static const GroupFoldInput input = [] {
    GroupFoldInput in;
    std::mt19937_64 rnd(12);
    const auto members = [&](std::size_t n) {
      std::vector<fpstore::Fingerprint> m(n);
      for (fpstore::Fingerprint& f : m) f = in.layout.MemberBits(rnd());
      std::sort(m.begin(), m.end());
      m.erase(std::unique(m.begin(), m.end()), m.end());
      return m;
    };
    for (int g = 0; g < 1024; ++g) {
      in.bases.push_back(fpstore::internal::EncodeGroupValue(in.layout, members(150)));
      for (int o = 0; o < 4; ++o) {
        in.operands.push_back(fpstore::internal::EncodeGroupOperand(
            in.layout, fpstore::internal::GroupChange{members(8), {}}));
      }
    }
    return in;
  }();
  return input;
}

template <typename Fold>
void FoldEachGroup(benchmark::State& state, Fold&& fold) {
  const GroupFoldInput& in = FoldInput();
  std::string out;
  for (auto _ : state) {
    for (std::size_t g = 0; g < in.bases.size(); ++g) {
      const rocksdb::Slice base(in.bases[g]);
      const std::vector<rocksdb::Slice> operands(in.operands.begin() + 4 * g,
                                                 in.operands.begin() + 4 * g + 4);
      fold(base, operands, out);
      benchmark::DoNotOptimize(out.data());
    }
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * in.bases.size()));
}

void BM_GroupFold(benchmark::State& state) {
  const fpstore::internal::GroupMergeOperator op(FoldInput().layout);
  FoldEachGroup(state, [&](const rocksdb::Slice& base, const std::vector<rocksdb::Slice>& operands,
                           std::string& out) {
    rocksdb::Slice existing;
    rocksdb::MergeOperator::MergeOperationOutput output(out, existing);
    const rocksdb::MergeOperator::MergeOperationInput input("k", &base, operands, nullptr);
    if (!op.FullMergeV2(input, &output)) std::abort();
  });
}

void BM_GroupCopyBaseline(benchmark::State& state) {
  FoldEachGroup(state, [](const rocksdb::Slice& base, const std::vector<rocksdb::Slice>& operands,
                          std::string& out) {
    out.assign(base.data(), base.size());
    for (const rocksdb::Slice& operand : operands) out.append(operand.data(), operand.size());
  });
}

BENCHMARK(BM_GroupFold);
BENCHMARK(BM_GroupCopyBaseline);

// Google Benchmark's console table, then each benchmark's speed as a
// multiple of its baseline's.
class RatioReporter final : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type == Run::RT_Iteration) {
        const auto iterations = static_cast<double>(run.iterations);
        seconds_[run.benchmark_name()] = run.real_accumulated_time / iterations;
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }

  void PrintRatios() const {
    const std::pair<const char*, const char*> pairs[] = {
        {"BM_Fingerprint/english_window1", "BM_Xxh3/english"},
        {"BM_Fingerprint/english_window3", "BM_Xxh3/english"},
        {"BM_Fingerprint/chinese_window1", "BM_Xxh3/chinese"},
        {"BM_Fingerprint/chinese_window3", "BM_Xxh3/chinese"},
        {"BM_Sketch/english_signature_window5", "BM_Xxh3/english"},
        {"BM_SketchPages/english", "BM_Sketch/english_signature_window5"},
        {"BM_PermuteAllTables", "BM_CopyBaseline"},
        {"BM_HammingDistance", "BM_XorBaseline"},
        {"BM_StoreQuery", "BM_BruteForceQuery"},
        {"BM_StagingIndexAdd/reserved", "BM_StagingEntriesAppend"},
        {"BM_StagingIndexAdd/growing", "BM_StagingEntriesAppend"},
        {"BM_InsertStagedThenMerged", "BM_InsertIntoEveryTable"},
        {"BM_GroupFold", "BM_GroupCopyBaseline"}};
    std::printf("\nratios to the same-run baseline (time per item; >1 means slower):\n");
    for (const auto& [name, baseline] : pairs) {
      const auto a = seconds_.find(name), b = seconds_.find(baseline);
      if (a == seconds_.end() || b == seconds_.end()) continue;  // filtered out
      std::printf("  %-32s %8.2fx %s\n", name, a->second / b->second, baseline);
    }
  }

 private:
  std::map<std::string, double> seconds_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  reporter.PrintRatios();
  benchmark::Shutdown();
  return 0;
}
