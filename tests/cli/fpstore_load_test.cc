// Runs the real fpstore-load binary, as a user would, and checks what it did
// through the store itself (opened read-only in this process).

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/parse.h"
#include "fpstore/fingerprinter.h"
#include "fpstore/store.h"
#include "scratch_dir.h"
#include "tool_runner.h"

namespace fpstore::cli {
namespace {

namespace fs = std::filesystem;
using fpstore::testing::Contains;
using fpstore::testing::Data;
using fpstore::testing::kData;
using fpstore::testing::ReadFile;
using fpstore::testing::RunTool;
using fpstore::testing::ScratchDir;
using fpstore::testing::ToolResult;

ToolResult Load(const std::vector<std::string>& args, const std::string& input = "") {
  return RunTool(FPSTORE_LOAD_BINARY, args, input);
}

ToolResult QueryTool(const std::vector<std::string>& args) {
  return RunTool(FPSTORE_QUERY_BINARY, args);
}

Fingerprint FingerprintOf(std::string_view text, FingerprintOptions options = {}) {
  Result<Fingerprinter> f = Fingerprinter::Create(options);
  EXPECT_TRUE(f.ok());
  Result<Fingerprint> fp = f->FromText(text);
  EXPECT_TRUE(fp.ok()) << fp.status().ToString();
  return fp.ok() ? *fp : 0;
}

// What a test can see of a store from outside: opened read-only, as
// another process would.
struct StoreView {
  bool exists = false;
  std::uint64_t documents = 0;
  Status verify;
  int blocks = 0;
  int distance = 0;
  int group_bits = 0;
  FingerprintOptions fingerprint;
};

StoreView View(const std::string& db) {
  StoreView view;
  StoreOptions options;
  options.read_only = true;
  options.create_if_missing = false;
  Result<std::unique_ptr<Store>> store = Store::Open(db, options);
  if (!store.ok()) {
    EXPECT_TRUE(store.status().IsNotFound()) << store.status().ToString();
    return view;
  }
  view.exists = true;
  Result<StoreStats> stats = (*store)->Stats();
  EXPECT_TRUE(stats.ok()) << stats.status().ToString();
  if (stats.ok()) {
    view.documents = stats->documents;
    view.blocks = stats->blocks;
    view.distance = stats->distance;
    view.group_bits = stats->internals.group_bits;
    view.fingerprint = stats->fingerprint;
  }
  view.verify = (*store)->Verify();
  return view;
}

// The stored document `id`, or nullopt.
std::optional<Document> Get(const std::string& db, DocumentId id) {
  StoreOptions options;
  options.read_only = true;
  options.create_if_missing = false;
  Result<std::unique_ptr<Store>> store = Store::Open(db, options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  if (!store.ok()) return std::nullopt;
  Result<Document> doc = (*store)->Get(id);
  if (!doc.ok()) {
    EXPECT_TRUE(doc.status().IsNotFound()) << doc.status().ToString();
    return std::nullopt;
  }
  return *doc;
}

// A store holding documents 100, 101 and 102, made with the library.
std::string SeededStore(const ScratchDir& dir, const std::string& name = "store") {
  const std::string db = (dir.path() / name).string();
  Result<std::unique_ptr<Store>> store = Store::Open(db);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  const std::vector<NewDocument> docs = {{100, 0x1111, "seed-a"},
                                         {101, 0x2222'0000'0000'0000, "seed-b"},
                                         {102, 0xffff'0000'ffff'0000, "seed-c"}};
  EXPECT_TRUE((*store)->InsertBatch(docs).ok());
  EXPECT_TRUE((*store)->Close().ok());
  return db;
}

// The seeded store is as SeededStore left it: checked through the store,
// as `fpstore-admin stats` and `verify` would.
void ExpectSeeded(const std::string& db) {
  StoreOptions options;
  options.read_only = true;
  options.create_if_missing = false;
  Result<std::unique_ptr<Store>> store = Store::Open(db, options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  Result<StoreStats> stats = (*store)->Stats();
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->documents, 3u);
  const Status verify = (*store)->Verify();
  EXPECT_TRUE(verify.ok()) << verify.ToString();
  Result<Document> b = (*store)->Get(101);
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->fingerprint, 0x2222'0000'0000'0000u);
  EXPECT_EQ(b->metadata, "seed-b");
}

// ---- Loading ------------------------------------------------------------------

TEST(LoadTest, JsonlCreatesTheStoreAndFingerprintsLikeTheLibrary) {
  ScratchDir dir;
  const std::string db = (dir.path() / "new.fps").string();
  const ToolResult r =
      Load({"--db", db, "--input", Data("docs.jsonl"), "--meta-column", "url", "--threads", "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("fpstore-load: loaded 5 documents ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fpstore-load: 5 new, 0 replaced\n"), std::string::npos) << r.err;

  const StoreView view = View(db);
  ASSERT_TRUE(view.exists);
  EXPECT_EQ(view.documents, 5u);
  EXPECT_TRUE(view.verify.ok()) << view.verify.ToString();
  EXPECT_EQ(view.blocks, 6);
  EXPECT_EQ(view.distance, 3);
  const std::optional<Document> fox = Get(db, 1);
  ASSERT_TRUE(fox.has_value());
  EXPECT_EQ(fox->fingerprint, FingerprintOf("The quick brown fox jumps over the lazy dog."));
  EXPECT_EQ(fox->metadata, "https://example.com/a");
  const std::optional<Document> last = Get(db, 18446744073709551615u);
  ASSERT_TRUE(last.has_value());
  EXPECT_EQ(last->metadata, "") << "a null metadata value is no metadata";
}

TEST(LoadTest, PlanAndFingerprintOptionsOfANewStore) {
  ScratchDir dir;
  const std::string db = (dir.path() / "s").string();
  const ToolResult r =
      Load({"--db", db, "--input", Data("docs.jsonl"), "--blocks", "5", "--distance", "2",
            "--window", "1", "--weighting", "presence", "--expected-documents", "5e7"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const StoreView view = View(db);
  EXPECT_EQ(view.blocks, 5);
  EXPECT_EQ(view.distance, 2);
  EXPECT_EQ(view.group_bits, 18);  // 5e7 documents: at most 256 a group
  FingerprintOptions expected;
  expected.window = 1;
  expected.weighting = FeatureWeighting::kPresence;
  EXPECT_EQ(view.fingerprint, expected);
  EXPECT_EQ(Get(db, 2)->fingerprint,
            FingerprintOf("The quick brown fox jumped over the lazy dogs!", expected));

  // Loading again uses the store's options without being told them; the
  // same values given again are fine.
  const ToolResult again = Load({"--db", db, "--input", Data("columns.jsonl"), "--text-column",
                                 "body", "--id-column", "doc_id", "--window", "1"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_EQ(Get(db, 5)->fingerprint, FingerprintOf("custom columns", expected));
}

// Without --blocks, a new store sized for N documents gets the plan that
// fpstore-admin create would choose for N; an existing store keeps its own.
TEST(LoadTest, ANewStoreGetsThePlanChosenForItsSize) {
  ScratchDir dir;
  const std::string db = (dir.path() / "s").string();
  ToolResult r = Load({"--db", db, "--input", Data("docs.jsonl"), "--expected-documents", "1e9"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(View(db).blocks, 5);  // (6,3)'s filters would not fit in 16 GB at 10^9
  EXPECT_EQ(View(db).distance, 3);
  r = Load({"--db", db, "--input", Data("docs.jsonl"), "--expected-documents", "1e7"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(View(db).blocks, 5);

  const std::string wide = (dir.path() / "wide").string();
  r = Load({"--db", wide, "--input", Data("docs.jsonl"), "--expected-documents", "1e9",
            "--memory-budget", "50"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(View(wide).blocks, 7);  // 47 GB at 10^9, and faster than (6,3)

  // tsv fingerprints come bare: costed without signatures, (5,3) takes 72 GB
  // at 10^9 (with them, no plan would fit in 100 GB).
  const std::string bare = (dir.path() / "bare").string();
  r = Load({"--db", bare, "--input", Data("hashes.tsv"), "--format", "tsv", "--expected-documents",
            "1e9", "--disk-budget", "100"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(View(bare).blocks, 5);

  const std::string none = (dir.path() / "none").string();
  r = Load({"--db", none, "--input", Data("docs.jsonl"), "--expected-documents", "1e9",
            "--memory-budget", "0.5"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("fits in 0.5 GB of memory"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(none));
}

TEST(LoadTest, TsvHashAndStandardInput) {
  ScratchDir dir;
  const std::string db = (dir.path() / "s").string();
  ToolResult r = Load({"--db", db, "--input", Data("hashes.tsv"), "--format", "tsv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Get(db, 2)->metadata, "https://example.com/x");
  EXPECT_EQ(Get(db, 2)->fingerprint, 0x0123456789abcdefu);

  // hash: ids are line numbers; blank line 3 counts.
  r = Load({"--db", db, "--input", "-", "--format", "hash", "--quiet"},
           ReadFile(Data("hashes.txt")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "") << "--quiet shows nothing";
  EXPECT_EQ(View(db).documents, 3u);
  EXPECT_EQ(Get(db, 4)->fingerprint, 0xffffffffffffffffu);
  EXPECT_EQ(Get(db, 2)->metadata, "") << "replaced by the hash line, which has none";
}

// 128-bit fingerprints end to end: a new store made by the load with
// --bits 128 reads them as hex or unsigned decimal (and a negative signed
// value as a 128-bit two's complement); the query tool finds them and
// prints them whole; a 64-bit store refuses them, naming the line.
// Times come from the input (--time-column, seconds or RFC 3339; a tsv time column), or are the
// load's; queries and dump show them, and a dump reloads them.
TEST(LoadTest, TimesFromTheInputOrTheLoad) {
  ScratchDir dir;
  const std::string db = (dir.path() / "store").string();
  const std::string jsonl =
      dir.Write("docs.jsonl",
                "{\"id\": 1, \"text\": \"the first page of the crawl\", \"fetched\": 1764576000}\n"
                "{\"id\": 2, \"text\": \"another page entirely\", \"fetched\": "
                "\"2025-12-01T09:00:05.250+01:00\"}\n"
                "{\"id\": 3, \"text\": \"a page with no time\", \"fetched\": null}\n"
                "{\"id\": 4, \"text\": \"a page whose time has another key\", \"time\": 5}\n");
  const auto before = std::chrono::system_clock::now();
  ToolResult r = Load({"--db", db, "--input", jsonl, "--time-column", "fetched"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto after = std::chrono::system_clock::now();
  EXPECT_EQ(Get(db, 1)->time, 1'764'576'000);
  EXPECT_EQ(Get(db, 2)->time, 1'764'576'005);
  const auto seconds = [](auto t) {
    return std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count();
  };
  for (const DocumentId id : {3, 4}) {
    EXPECT_GE(Get(db, id)->time, seconds(before)) << id;
    EXPECT_LE(Get(db, id)->time, seconds(after)) << id;
  }
  r = QueryTool({"--db", db, "--text", "another page entirely", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "\"time\":1764576005,")) << r.out;
  r = QueryTool({"--db", db, "--text", "another page entirely"});
  EXPECT_TRUE(Contains(r.out, "  2025-12-01T08:00:05Z\n")) << r.out;

  // A dump reloads with its times, and the default key is "time".
  r = RunTool(FPSTORE_ADMIN_BINARY, {"dump", "--db", db, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(
      r.out, "\n1\t" + FormatFingerprint(Get(db, 1)->fingerprint) + "\t2025-12-01T08:00:00Z\t"))
      << r.out;
  const std::string dump = dir.Write("dump.tsv", r.out);
  const std::string copy = (dir.path() / "copy").string();
  r = Load({"--db", copy, "--input", dump, "--format", "tsv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const DocumentId id : {1, 2, 3, 4}) EXPECT_EQ(Get(copy, id)->time, Get(db, id)->time) << id;
  r = Load({"--db", copy, "--input", jsonl});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Get(copy, 4)->time, 5);
}

TEST(LoadTest, A128BitStoreFromTsv) {
  ScratchDir dir;
  const std::string db = (dir.path() / "wide").string();
  const std::string tsv = (dir.path() / "wide.tsv").string();
  const Fingerprint one(0x0123456789abcdefULL, 0xfedcba9876543210ULL);
  const Fingerprint near = one ^ Fingerprint(1, 4);  // 2 bits away
  std::ofstream(tsv) << "1\t0x0123456789abcdeffedcba9876543210\tone\n"
                     << "2\t1512366075204170928885611295973585428\tnear\n";  // `near`, decimal
  ToolResult r = Load({"--db", db, "--input", tsv, "--format", "tsv", "--bits", "128"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The store's width is its own on the next load: --bits need not be given again.
  std::ofstream(tsv) << "3\t-1\tall ones\n";
  r = Load({"--db", db, "--input", tsv, "--format", "tsv", "--hash-encoding", "signed"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const StoreView view = View(db);
  EXPECT_EQ(view.fingerprint.bits, 128);
  EXPECT_EQ(view.blocks, 8);
  EXPECT_EQ(view.distance, 6);
  EXPECT_TRUE(view.verify.ok()) << view.verify.ToString();
  EXPECT_EQ(Get(db, 1)->fingerprint, one);
  EXPECT_EQ(Get(db, 2)->fingerprint, near);
  EXPECT_EQ(Get(db, 3)->fingerprint, ~Fingerprint());
  r = QueryTool({"--db", db, "--hash", "0x0123456789abcdeffedcba9876543210", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The times are the loads'.
  EXPECT_EQ(std::regex_replace(r.out, std::regex("\"time\":[0-9]+,"), ""),
            "{\"id\":1,\"distance\":0,\"similarity\":null,\"fingerprint\":"
            "\"0x0123456789abcdeffedcba9876543210\",\"metadata\":\"one\"}\n"
            "{\"id\":2,\"distance\":2,\"similarity\":null,\"fingerprint\":"
            "\"0x0123456789abcdeefedcba9876543214\",\"metadata\":\"near\"}\n");
  std::ofstream(tsv) << "4\t0x00000000000000000000000000000005\tsmall\n";
  r = Load({"--db", db, "--input", tsv, "--format", "tsv"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Get(db, 4)->fingerprint, Fingerprint(5));
  r = Load({"--db", db, "--input", tsv, "--format", "tsv", "--bits", "64"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bits=128"), std::string::npos) << r.err;

  const std::string narrow = (dir.path() / "narrow").string();
  std::ofstream(tsv) << "1\t0x0123456789abcdeffedcba9876543210\tone\n";
  r = Load({"--db", narrow, "--input", tsv, "--format", "tsv"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("wide.tsv:1:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("64 bits"), std::string::npos) << r.err;
  EXPECT_FALSE(View(narrow).exists);
}

TEST(LoadTest, OriginalToolSpellingsAndSample) {
  ScratchDir dir;
  const std::string db = (dir.path() / "s").string();
  ToolResult r = Load({"--db", db, "--input", Data("columns.jsonl"), "--format", "json",
                       "--text_column", "body", "--id_column", "doc_id"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Get(db, 5)->fingerprint, FingerprintOf("custom columns"));

  r = Load({"--db", db, "--input", Data("docs.jsonl"), "--sample", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(View(db).documents, 3u) << "document 5 and the first two of docs.jsonl";
  EXPECT_FALSE(Get(db, 3).has_value());
}

// The two command lines of the original simhash tool's README (docs/migrating.md): each flag is
// taken, or refused naming what fpstore does instead.
TEST(LoadTest, TheSimhashToolsCommandLines) {
  ScratchDir dir;
  const std::string records = (dir.path() / "records.jsonl").string();
  const std::string hashes = (dir.path() / "hashes.tsv").string();
  std::ofstream(records) << "{\"id\": 123, \"text\": \"hello world\"}\n"
                            "{\"id\": 124, \"text\": \"hello world!\"}\n";
  std::ofstream(hashes) << "\xEF\xBB\xBF"
                           "id  hash\n10  231231231231231\n11  -5\n";
  const std::string db = (dir.path() / "s").string();
  const std::vector<std::string> jsonl = {"--input",         records,
                                          "--blocks",        "5",
                                          "--distance",      "3",
                                          "--format",        "json",
                                          "--sample=100000", "--text_column=text",
                                          "--id_column=id",  "--window=5"};
  std::vector<std::string> args = {"--db", db, "--output", "clusters.tsv"};
  args.insert(args.end(), jsonl.begin(), jsonl.end());
  ToolResult r = Load(args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("fpstore-admin clusters --db STORE --output clusters.tsv"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(db));
  args.erase(args.begin() + 2, args.begin() + 4);  // without --output
  r = Load(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(View(db).documents, 2u);

  const std::string db2 = (dir.path() / "s2").string();
  r = Load({"--db", db2, "--input", hashes, "--blocks", "5", "--distance", "3", "--format", "hash",
            "--sample=100000"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("use --format tsv"), std::string::npos) << r.err;
  r = Load({"--db", db2, "--input", hashes, "--blocks", "5", "--distance", "3", "--format", "tsv",
            "--hash-encoding", "signed", "--sample=100000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(View(db2).documents, 2u);
  EXPECT_EQ(Get(db2, 10)->fingerprint, 231231231231231u);
  EXPECT_EQ(Get(db2, 11)->fingerprint, 0xfffffffffffffffbu);
}

TEST(LoadTest, CrLfLinesLoadLikeLfLines) {
  ScratchDir dir;
  const std::string crlf = (dir.path() / "crlf").string();
  const std::string lf = (dir.path() / "lf").string();
  ASSERT_EQ(Load({"--db", crlf, "--input", Data("crlf.jsonl")}).exit_code, 0);
  ASSERT_EQ(Load({"--db", lf, "--input", Data("docs.jsonl"), "--sample", "3"}).exit_code, 0);
  EXPECT_EQ(View(crlf).documents, 3u);
  for (DocumentId id : {1, 2, 3}) EXPECT_EQ(Get(crlf, id)->fingerprint, Get(lf, id)->fingerprint);
}

TEST(LoadTest, DuplicateIdTheLaterLineWins) {
  ScratchDir dir;
  const std::string db = SeededStore(dir);
  const ToolResult r =
      Load({"--db", db, "--input", Data("duplicate_id.jsonl"), "--meta-column", "url"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("fpstore-load: loaded 2 documents ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("fpstore-load: 2 new, 0 replaced, 1 duplicate id in the input (the "
                       "later line won)\n"),
            std::string::npos)
      << r.err;
  const std::optional<Document> seven = Get(db, 7);
  ASSERT_TRUE(seven.has_value());
  EXPECT_EQ(seven->fingerprint, FingerprintOf("the second version of page seven"));
  EXPECT_EQ(seven->metadata, "https://example.com/7b");
  EXPECT_EQ(View(db).documents, 5u);

  // Loading ids that are stored replaces them.
  const ToolResult again = Load({"--db", db, "--input", Data("duplicate_id.jsonl")});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.err.find("0 new, 2 replaced, 1 duplicate id"), std::string::npos) << again.err;
  EXPECT_EQ(View(db).documents, 5u);
}

TEST(LoadTest, FiftyMegabyteLine) {
  std::string text;
  const char* const words[] = {"alpha ", "beta ", "gamma ", "delta ", "epsilon ", "zeta "};
  for (std::size_t i = 0; text.size() < 50'000'000; ++i) text += words[(i * 7 + i / 5) % 6];
  ScratchDir dir;
  const std::string input = dir.Write(
      "big.jsonl", "{\"id\": 1, \"text\": \"" + text + "\"}\r\n{\"id\": 2, \"text\": \"x\"}\n");
  const std::string db = (dir.path() / "s").string();
  const ToolResult r = Load({"--db", db, "--input", input});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(View(db).documents, 2u);
  EXPECT_EQ(Get(db, 1)->fingerprint, FingerprintOf(text));
}

TEST(LoadTest, SpillsSortedRunsWhenOverTheMemoryBudget) {
  // 25,000 tsv lines with 40-byte metadata: a few 1 MB runs.
  std::string input;
  for (std::uint64_t i = 0; i < 25'000; ++i) {
    const std::uint64_t fp = (i * 0x9E3779B97F4A7C15u) ^ (i << 7);
    input += std::to_string(i) + "\t" + std::to_string(fp) + "\t" + std::string(40, 'm') + "\n";
  }
  ScratchDir dir;
  const std::string db = (dir.path() / "s").string();
  const ToolResult r = Load({"--db", db, "--input", dir.Write("many.tsv", input), "--format", "tsv",
                             "--memory", "1", "--temp-dir", dir.path().string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const StoreView view = View(db);
  EXPECT_EQ(view.documents, 25'000u);
  EXPECT_TRUE(view.verify.ok()) << view.verify.ToString();
  EXPECT_EQ(Get(db, 24'999)->fingerprint, (24'999 * 0x9E3779B97F4A7C15u) ^ (24'999u << 7));
  // The temporary files are gone.
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    left.push_back(entry.path().filename().string());
  }
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"many.tsv", "s"}));
}

TEST(LoadTest, SkipBadWritesRejectedLinesAndLoadsTheRest) {
  ScratchDir dir;
  const std::string db = SeededStore(dir);
  const std::string input = dir.Write("mixed.jsonl",
                                      "{\"id\": 1, \"text\": \"good one\"}\n"
                                      "{\"id\": 2, \"text\": \"broken\"\n"
                                      "\n"
                                      "{\"id\": -3, \"text\": \"negative\"}\r\n"
                                      "{\"id\": 4, \"text\": \"good four\"}\n");
  const std::string bad = (dir.path() / "bad.txt").string();
  const ToolResult r = Load({"--db", db, "--input", input, "--skip-bad", bad});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("; skipped 2\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("2 new, 0 replaced, 2 bad lines written to " + bad + "\n"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(ReadFile(bad),
            "2\tinvalid JSON: The JSON document has an improper structure: missing or "
            "superfluous commas, braces, missing keys, etc.\t{\"id\": 2, \"text\": \"broken\"\n"
            "4\t\"id\" must be an integer from 0 to 18446744073709551615 or a string of its "
            "digits, got -3\t{\"id\": -3, \"text\": \"negative\"}\n");
  EXPECT_EQ(View(db).documents, 5u);
  EXPECT_EQ(Get(db, 4)->fingerprint, FingerprintOf("good four"));
}

TEST(LoadTest, SkipBadWithOnlyBadLinesLoadsNothing) {
  ScratchDir dir;
  const std::string db = SeededStore(dir);
  const std::string bad = (dir.path() / "bad.txt").string();
  const ToolResult r = Load({"--db", db, "--input", Data("negative_id.jsonl"), "--skip-bad", bad});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "fpstore-load: " + Data("negative_id.jsonl") +
                       ": no valid records (1 bad line written to " + bad + ")\n");
  ExpectSeeded(db);
}

// A load that cannot open its store leaves --skip-bad's file as it was, and
// nothing beside it; links and devices are written through.
TEST(LoadTest, SkipBadFileIsUntouchedWhenTheStoreCannotBeOpened) {
  ScratchDir dir;
  const std::string input = dir.Write("mixed.jsonl",
                                      "{\"id\": 1, \"text\": \"good one\"}\n"
                                      "{\"id\": 2, \"text\": \"broken\"\n");
  const std::string bad = dir.Write("bad.txt", "an earlier run's report\n");
  const std::string not_a_store = dir.Write("file.txt", "not a store");
  const ToolResult r = Load({"--db", not_a_store, "--input", input, "--skip-bad", bad});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_EQ(ReadFile(bad), "an earlier run's report\n");
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"bad.txt", "file.txt", "mixed.jsonl"}));
  // Into /dev/null, which is no regular file, the lines go directly; through
  // a link, to the file it names, and the link stays.
  const std::string db = SeededStore(dir);
  const ToolResult direct = Load({"--db", db, "--input", input, "--skip-bad", "/dev/null"});
  EXPECT_EQ(direct.exit_code, 0) << direct.err;
  const std::string real = dir.Write("real.txt", "");
  const std::string link = (dir.path() / "link.txt").string();
  std::filesystem::create_symlink(real, link);
  const ToolResult linked = Load({"--db", db, "--input", input, "--skip-bad", link});
  ASSERT_EQ(linked.exit_code, 0) << linked.err;
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(ReadFile(real).substr(0, 2), "2\t");
}

// ---- Bad input: one message naming the file and line, exit 1, store unchanged ---

struct BadInput {
  std::string file;
  std::vector<std::string> extra_args;
  std::string message;  // after "fpstore-load: <data dir>/"
};

void PrintTo(const BadInput& bad, std::ostream* os) { *os << bad.file; }

class BadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputTest, StopsWithFileLineReasonAndLeavesTheStoreUnchanged) {
  const BadInput& bad = GetParam();
  ScratchDir dir;
  const std::string db = SeededStore(dir);
  std::vector<std::string> args = {"--db", db, "--input", Data(bad.file)};
  args.insert(args.end(), bad.extra_args.begin(), bad.extra_args.end());
  const ToolResult r = Load(args);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "fpstore-load: " + kData + "/" + bad.message + "\n");
  ExpectSeeded(db);
}

const std::string kBadId =
    "\"id\" must be an integer from 0 to 18446744073709551615 or a string of its digits, got ";

INSTANTIATE_TEST_SUITE_P(
    Fixtures, BadInputTest,
    ::testing::Values(
        BadInput{"malformed.jsonl",
                 {},
                 "malformed.jsonl:2: invalid JSON: The JSON document has an improper structure: "
                 "missing or superfluous commas, braces, missing keys, etc."},
        BadInput{"missing_text.jsonl", {}, "missing_text.jsonl:3: missing \"text\" field"},
        BadInput{"missing_id.jsonl", {}, "missing_id.jsonl:2: missing \"id\" field"},
        BadInput{"columns.jsonl",
                 {"--text-column", "body", "--id-column", "id"},
                 "columns.jsonl:1: missing \"id\" field"},
        BadInput{"negative_id.jsonl", {}, "negative_id.jsonl:1: " + kBadId + "-5"},
        BadInput{"float_id.jsonl", {}, "float_id.jsonl:2: " + kBadId + "2.5"},
        BadInput{"string_id.jsonl", {}, "string_id.jsonl:1: " + kBadId + "\"12a\""},
        BadInput{
            "id_overflow.jsonl", {}, "id_overflow.jsonl:2: " + kBadId + "18446744073709551616"},
        BadInput{"negative_id.tsv",
                 {"--format", "tsv"},
                 "negative_id.tsv:2: id \"-2\" has a sign; ids are unsigned 64-bit integers"},
        BadInput{"hash_overflow.tsv",
                 {"--format", "tsv"},
                 "hash_overflow.tsv:2: hash \"18446744073709551616\" does not fit in 64 bits"},
        BadInput{"hash_overflow.txt",
                 {"--format", "hash"},
                 "hash_overflow.txt:2: hash \"0x10000000000000000\" does not fit in 64 bits"},
        BadInput{"hash_not_number.tsv",
                 {"--format", "tsv"},
                 "hash_not_number.tsv:2: hash \"banana\" is not a decimal or 0x-hexadecimal "
                 "number"},
        BadInput{"invalid_utf8.jsonl",
                 {},
                 "invalid_utf8.jsonl:2: invalid UTF-8 at byte offset 23 of the line"},
        BadInput{"empty_text.jsonl", {}, "empty_text.jsonl:1: \"text\" is empty"},
        BadInput{"text_not_string.jsonl",
                 {},
                 "text_not_string.jsonl:1: \"text\" must be a string, got 42"},
        BadInput{"not_object.jsonl", {}, "not_object.jsonl:1: expected a JSON object, got [1,2,3]"},
        BadInput{"negative_time.jsonl",
                 {},
                 "negative_time.jsonl:2: \"time\" must be seconds since the Unix epoch, from 0 "
                 "to 253402300799, or an RFC 3339 string such as \"2025-12-06T05:46:40Z\", got -1"},
        BadInput{
            "float_time.jsonl",
            {},
            "float_time.jsonl:1: \"time\" must be seconds since the Unix epoch, from 0 "
            "to 253402300799, or an RFC 3339 string such as \"2025-12-06T05:46:40Z\", got 1.5"},
        BadInput{"zoneless_time.jsonl",
                 {},
                 "zoneless_time.jsonl:2: \"time\": time \"2025-12-01T08:00:00\" is neither "
                 "seconds since the Unix epoch nor an RFC 3339 time such as 2025-12-06T05:46:40Z"},
        BadInput{"bad_time.tsv",
                 {"--format", "tsv"},
                 "bad_time.tsv:3: time \"2025-02-30T00:00:00Z\" is neither seconds since the "
                 "Unix epoch nor an RFC 3339 time such as 2025-12-06T05:46:40Z"},
        BadInput{"empty.jsonl", {}, "empty.jsonl: empty input (no records)"},
        BadInput{"blank.jsonl", {}, "blank.jsonl: empty input (no records)"}),
    [](const ::testing::TestParamInfo<BadInput>& info) {
      std::string name = info.param.file;
      for (char& c : name) {
        if (c == '.') c = '_';
      }
      return name;
    });

TEST(BadLoadTest, FailedLoadIntoANewStoreLeavesNoStore) {
  ScratchDir dir;
  for (const std::vector<std::string>& input :
       {std::vector<std::string>{"--input", Data("malformed.jsonl")},
        std::vector<std::string>{"--input", Data("empty.jsonl")},
        std::vector<std::string>{"--input", Data("hash_overflow.tsv"), "--format", "tsv"}}) {
    // A store that did not exist is not left behind.
    const std::string fresh = (dir.path() / "fresh").string();
    std::vector<std::string> args = {"--db", fresh};
    args.insert(args.end(), input.begin(), input.end());
    EXPECT_EQ(Load(args).exit_code, 1);
    EXPECT_FALSE(fs::exists(fresh));
    // Nor is an empty directory given as a new store filled.
    fs::create_directory(fresh);
    EXPECT_EQ(Load(args).exit_code, 1);
    EXPECT_TRUE(fs::is_empty(fresh));
    fs::remove(fresh);
  }
}

TEST(BadLoadTest, FiftyMegabyteBadLine) {
  ScratchDir dir;
  const std::string db = SeededStore(dir);
  const std::string input =
      dir.Write("big.jsonl", "{\"id\": 1, \"text\": \"fine\"}\n{\"id\": 2, \"text\": \"" +
                                 std::string(50'000'000, 'a') + "\", \"url\": }\n");
  const ToolResult r = Load({"--db", db, "--input", input});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("fpstore-load: " + input + ":2: invalid JSON: ", 0), 0u) << r.err;
  EXPECT_LT(r.err.size(), 400u) << "the message does not quote the whole line";
  ExpectSeeded(db);
}

TEST(BadLoadTest, MissingInputFile) {
  ScratchDir dir;
  const std::string db = SeededStore(dir);
  const std::string missing = (dir.path() / "missing.jsonl").string();
  ToolResult r = Load({"--db", db, "--input", missing});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "fpstore-load: cannot open " + missing + ": No such file or directory\n");
  ExpectSeeded(db);
  const std::string fresh = (dir.path() / "fresh").string();
  r = Load({"--db", fresh, "--input", missing});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(fs::exists(fresh)) << "no store is created for an input that cannot be read";
}

TEST(BadLoadTest, UnwritableDb) {
  ScratchDir dir;
  const std::string file = dir.Write("a-file", "not a directory");
  ToolResult r = Load({"--db", file + "/store", "--input", Data("docs.jsonl")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err.rfind("fpstore-load: ", 0), 0u);
  EXPECT_NE(r.err.find(file + "/store"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(ReadFile(file), "not a directory");

  r = Load({"--db", "/proc/self/fpstore-store", "--input", Data("docs.jsonl")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("/proc/self/fpstore-store"), std::string::npos) << r.err;

  // A directory that holds something else.
  const std::string other = (dir.path() / "other").string();
  fs::create_directory(other);
  dir.Write("other/notes.txt", "mine");
  r = Load({"--db", other, "--input", Data("docs.jsonl")});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err,
            "fpstore-load: " + other + " is not an fpstore store (not empty, no store in it)\n");
  EXPECT_EQ(ReadFile(other + "/notes.txt"), "mine");

  // A read-only parent directory (meaningless for root, who may write anyway).
  const std::string locked = (dir.path() / "locked").string();
  fs::create_directory(locked);
  ::chmod(locked.c_str(), 0555);
  const bool enforced = ::access(locked.c_str(), W_OK) != 0;
  r = Load({"--db", locked + "/store", "--input", Data("docs.jsonl")});
  ::chmod(locked.c_str(), 0755);
  if (enforced) {
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(locked + "/store"), std::string::npos) << r.err;
    EXPECT_TRUE(fs::is_empty(locked));
  }
}

TEST(BadLoadTest, StoreOpenInAnotherProcess) {
  ScratchDir dir;
  const std::string db = SeededStore(dir);
  {
    // This process is the other process: it holds the store for writing.
    Result<std::unique_ptr<Store>> holder = Store::Open(db);
    ASSERT_TRUE(holder.ok()) << holder.status().ToString();
    const ToolResult r = Load({"--db", db, "--input", Data("docs.jsonl")});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, "fpstore-load: opening " + db +
                         ": the store is in use by another process (pid " +
                         std::to_string(::getpid()) + ")\n");
    EXPECT_TRUE((*holder)->Close().ok());
  }
  ExpectSeeded(db);
}

TEST(BadLoadTest, PlanOrFingerprintOptionsOtherThanTheStores) {
  ScratchDir dir;
  const std::string db = SeededStore(dir);
  ToolResult r = Load({"--db", db, "--input", Data("docs.jsonl"), "--blocks", "8"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "fpstore-load: " + db + " was created with blocks 6, not 8\n");
  r = Load({"--db", db, "--input", Data("docs.jsonl"), "--distance", "2"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "fpstore-load: " + db + " was created with distance 3, not 2\n");
  r = Load({"--db", db, "--input", Data("docs.jsonl"), "--window", "5"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "fpstore-load: " + db +
                       " was created with fingerprint options \"v2 window=1 weighting=tf "
                       "signature=64 signature_window=5\", not \"v2 window=5 weighting=tf "
                       "signature=64 signature_window=5\"\n");
  ExpectSeeded(db);
}

// ---- Interrupted loads ----------------------------------------------------------

// A running fpstore-load whose standard input the test writes.
class RunningLoad {
 public:
  explicit RunningLoad(const std::vector<std::string>& args) {
    int in[2];
    if (::pipe2(in, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    err_path_ = (fs::temp_directory_path() / ("fpstore-load-err-" + std::to_string(::getpid()) +
                                              "-" + std::to_string(counter_++)))
                    .string();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<std::string> all = {FPSTORE_LOAD_BINARY};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& arg : all) argv.push_back(arg.data());
    argv.push_back(nullptr);
    const int spawned =
        ::posix_spawn(&pid_, FPSTORE_LOAD_BINARY, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    if (spawned != 0) throw std::runtime_error("cannot run fpstore-load");
    in_ = in[1];
    ::signal(SIGPIPE, SIG_IGN);
  }

  ~RunningLoad() {
    CloseInput();
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      Wait();
    }
    std::error_code ignored;
    fs::remove(err_path_, ignored);
  }

  void Write(const std::string& data) {
    std::size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::write(in_, data.data() + done, data.size() - done);
      ASSERT_GT(n, 0) << "the load stopped reading";
      done += static_cast<std::size_t>(n);
    }
  }

  void CloseInput() {
    if (in_ >= 0) ::close(in_);
    in_ = -1;
  }

  void Signal(int signal) { ::kill(pid_, signal); }

  // The exit status, or 128 + signal.
  int Wait() {
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  std::string err() const { return ReadFile(err_path_); }

 private:
  static inline int counter_ = 0;
  pid_t pid_ = -1;
  int in_ = -1;
  std::string err_path_;
};

// Waits until the bulk loader working in `db` holds a directory (with a
// file in it, if `with_file`): the load is under way. False after 60 s.
bool WaitForBulkLoad(const std::string& db, bool with_file) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(db, ec)) {
      if (!entry.path().filename().string().starts_with("bulk-load.")) continue;
      if (!with_file) return true;
      for (const auto& file : fs::directory_iterator(entry.path(), ec)) {
        if (file.is_regular_file(ec)) return true;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// `n` tsv lines with ids from `first`.
std::string TsvLines(std::uint64_t first, std::uint64_t n) {
  std::string out;
  for (std::uint64_t i = first; i < first + n; ++i) {
    out += std::to_string(i) + "\t" + std::to_string(i * 0x9E3779B97F4A7C15u) + "\n";
  }
  return out;
}

TEST(InterruptedLoadTest, SigkillWhileReadingLeavesTheStoreAsBefore) {
  ScratchDir dir;
  const std::string db = SeededStore(dir);
  {
    RunningLoad load({"--db", db, "--input", "-", "--format", "tsv", "--memory", "1"});
    // Enough to spill sorted runs; then the load waits for more input.
    load.Write(TsvLines(1, 60'000));
    ASSERT_TRUE(WaitForBulkLoad(db, /*with_file=*/true)) << "no sorted run was spilled";
    load.Signal(SIGKILL);
    EXPECT_EQ(load.Wait(), 128 + SIGKILL);
  }
  ExpectSeeded(db);
  // The next load sweeps what the killed one left and works.
  const ToolResult r = Load({"--db", db, "--input", "-", "--format", "tsv"}, TsvLines(1000, 1000));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(View(db).documents, 1003u);
  std::vector<std::string> entries;
  for (const auto& entry : fs::directory_iterator(db)) {
    const std::string name = entry.path().filename().string();
    EXPECT_EQ(name.find("bulk"), std::string::npos) << name << " left in the store";
  }
}

TEST(InterruptedLoadTest, SigkillAtAnyTimeLeavesAllOrNothing) {
  // Killed at some point of reading, sorting, writing or ingesting: the
  // store holds the seed documents, and all or none of the load.
  ScratchDir dir;
  // Ids from 1,000, clear of the seeds', so that all of it is 30,003.
  const std::string input = dir.Write("many.tsv", TsvLines(1'000, 30'000));
  for (const int delay_ms : {50, 300, 800}) {
    const std::string db = SeededStore(dir, "store" + std::to_string(delay_ms));
    {
      RunningLoad load({"--db", db, "--input", input, "--format", "tsv"});
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      load.Signal(SIGKILL);
      load.Wait();
    }
    const StoreView view = View(db);
    EXPECT_TRUE(view.documents == 3 || view.documents == 30'003) << view.documents;
    EXPECT_TRUE(view.verify.ok()) << view.verify.ToString();
  }
}

TEST(InterruptedLoadTest, SigintAndSigtermStopCleanly) {
  for (const int signal : {SIGINT, SIGTERM}) {
    ScratchDir dir;
    const std::string db = SeededStore(dir);
    RunningLoad load({"--db", db, "--input", "-", "--format", "tsv"});
    load.Write(TsvLines(1, 5'000));
    ASSERT_TRUE(WaitForBulkLoad(db, /*with_file=*/false));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    load.Signal(signal);
    // Ctrl-C in a pipeline ends the writer too: the input ends.
    load.CloseInput();
    EXPECT_EQ(load.Wait(), 128 + signal);
    EXPECT_EQ(load.err(), std::string("fpstore-load: interrupted by ") +
                              (signal == SIGINT ? "SIGINT" : "SIGTERM") + ": nothing loaded, " +
                              db + " is unchanged\n");
    ExpectSeeded(db);
  }
}

TEST(InterruptedLoadTest, InterruptedLoadIntoANewStoreLeavesNoStore) {
  ScratchDir dir;
  const std::string db = (dir.path() / "fresh").string();
  RunningLoad load({"--db", db, "--input", "-", "--format", "tsv"});
  load.Write(TsvLines(1, 100));
  ASSERT_TRUE(WaitForBulkLoad(db, /*with_file=*/false));
  load.Signal(SIGINT);
  load.CloseInput();
  EXPECT_EQ(load.Wait(), 130);
  EXPECT_FALSE(fs::exists(db));
}

// ---- Query side ------------------------------------------------------------------

TEST(LoadThenQueryTest, DistanceAboveThePlannedDistanceIsRefused) {
  ScratchDir dir;
  const std::string db = SeededStore(dir);
  const ToolResult r = QueryTool({"--db", db, "--hash", "0x1111", "--distance", "4"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("--distance 4 is above the store's planned distance 3"), std::string::npos)
      << r.err;
  ExpectSeeded(db);
}

// ---- Usage ----------------------------------------------------------------------

TEST(LoadUsageTest, Errors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "--db STORE is required (a directory, or redis://HOST:PORT/NAME)"},
      {{"--db", "x"}, "--input FILE is required (- for standard input)"},
      {{"--db", "x", "--input", "y", "--format", "xml"},
       "--format: unknown format \"xml\" (expected jsonl, tsv or hash)"},
      {{"--db", "x", "--input", "y", "--format", "tsv", "--window", "5"},
       "--window and --weighting apply to --format jsonl only; tsv and hash hold fingerprints "
       "already"},
      {{"--db", "x", "--input", "y", "--blocks", "3", "--distance", "3"},
       "--blocks 3 --distance 3: blocks (3) must exceed distance (3)"},
      {{"--db", "x", "--input", "y", "--expected-documents", "-1"},
       "--expected-documents: must be a number of documents, 0 or more"},
      {{"--db", "x", "--input", "y", "--sample", "0"},
       "--sample: \"0\" is not a whole number from 1 to 18,446,744,073,709,551,615"},
      {{"--db", "x", "--input", "y", "--threads", "-1"},
       "--threads: \"-1\" is not a whole number from 0 to 1,024"},
      {{"--db", "x", "--input", "y", "--threads", "100000"},
       "--threads: \"100000\" is not a whole number from 0 to 1,024"},
      {{"--db", "x", "--input", "y", "--memory", "0"},
       "--memory: \"0\" is not a whole number from 1 to 16,777,216"},
      {{"--db", "x", "--input", "y", "--memory", "99999999999999"},
       "--memory: \"99999999999999\" is not a whole number from 1 to 16,777,216"},
      {{"--db", "x", "--input", "y", "--blocks", "99999999999"},
       "--blocks: \"99999999999\" is not a whole number from 1 to 64"},
      {{"--db", "x", "--input", "y", "stray"}, "unexpected argument \"stray\""},
  };
  for (const auto& [args, message] : cases) {
    const ToolResult r = Load(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err,
              "fpstore-load: " + message + "\nTry 'fpstore-load --help' for more information.\n");
  }
}

TEST(LoadUsageTest, HelpShowsEveryOptionWithAnExample) {
  const ToolResult r = Load({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* option :
       {"--db STORE",        "--input FILE",      "--format F",     "--blocks M",
        "--distance K",      "--window N",        "--weighting W",  "--text-column KEY",
        "--id-column KEY",   "--meta-column KEY", "--threads N",    "--skip-bad FILE",
        "--sample N",        "--memory MB",       "--temp-dir DIR", "--quiet",
        "--text_column",     "--id_column",       "Examples:",      "Exit status",
        "--hash-encoding E", "--output FILE"}) {
    EXPECT_NE(r.out.find(option), std::string::npos) << option;
  }
}

}  // namespace
}  // namespace fpstore::cli
