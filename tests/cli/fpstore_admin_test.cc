// Runs the real fpstore-admin binary, as an operator would, and checks its
// answers against the library's on the same store.

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "../corrupt_file.h"
#include "../crashed_store.h"
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
using fpstore::testing::Lines;
using fpstore::testing::ReadFile;
using fpstore::testing::RunTool;
using fpstore::testing::ScratchDir;
using fpstore::testing::SortedLines;
using fpstore::testing::ToolResult;

ToolResult Admin(const std::vector<std::string>& args, const std::string& input = "") {
  return RunTool(FPSTORE_ADMIN_BINARY, args, input);
}

// A dump with each time (RFC 3339) written as "T".
std::string DropTimes(const std::string& dump) {
  static const std::regex kTime("\t[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\t");
  return std::regex_replace(dump, kTime, "\tT\t");
}

// A corpus with near-duplicates: `groups` random fingerprints, each with a
// few variants 1 to 5 bits away (so some pairs are within distance 3 and
// some are not). Ids count from 1; metadata is "doc-ID".
struct Corpus {
  std::vector<Document> docs;

  std::string Tsv() const {
    std::string tsv;
    for (const Document& d : docs) {
      tsv +=
          std::to_string(d.id) + "\t" + FormatFingerprint(d.fingerprint) + "\t" + d.metadata + "\n";
    }
    return tsv;
  }

  // What `dump` prints, documents in id order, with each time as "T" (DropTimes): they were
  // inserted at the time of the test.
  std::string Dump() const {
    std::map<DocumentId, const Document*> by_id;
    for (const Document& d : docs) by_id[d.id] = &d;
    std::string out = "id\tfingerprint\ttime\tsignature\tmetadata\n";
    for (const auto& [id, d] : by_id) {
      out += std::to_string(id) + "\t" + FormatFingerprint(d->fingerprint) + "\tT\t-\t" +
             d->metadata + "\n";  // loaded as hashes: no signature
    }
    return out;
  }
};

Corpus MakeCorpus(int groups, std::uint64_t seed = 42) {
  std::mt19937_64 rnd(seed);
  Corpus corpus;
  DocumentId id = 1;
  for (int g = 0; g < groups; ++g) {
    const Fingerprint base = rnd();
    const int variants = static_cast<int>(rnd() % 4);
    for (int v = 0; v <= variants; ++v) {
      Fingerprint fp = base;
      for (int flips = v == 0 ? 0 : static_cast<int>(1 + rnd() % 5); flips > 0; --flips) {
        fp ^= Fingerprint{1} << (rnd() % 64);
      }
      corpus.docs.push_back({id, fp, "doc-" + std::to_string(id)});
      ++id;
    }
  }
  return corpus;
}

// A store made with the binary: `create` with `create_args`, then `insert`
// of the corpus (if it has documents). Returns its path.
std::string MakeStore(const ScratchDir& dir, const Corpus& corpus,
                      const std::vector<std::string>& create_args = {}) {
  const std::string db = (dir.path() / "store").string();
  std::vector<std::string> args = {"create", "--db", db};
  args.insert(args.end(), create_args.begin(), create_args.end());
  ToolResult r = Admin(args);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (corpus.docs.empty()) return db;
  const std::string input = dir.Write("corpus.tsv", corpus.Tsv());
  r = Admin({"insert", "--db", db, "--input", input, "--format", "tsv", "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return db;
}

std::unique_ptr<Store> OpenReadOnly(const std::string& db) {
  StoreOptions options;
  options.read_only = true;
  options.create_if_missing = false;
  options.block_cache_bytes = 8 << 20;
  Result<std::unique_ptr<Store>> store = Store::Open(db, options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? *std::move(store) : nullptr;
}

// The count `name` that `stats --json` reports, or -1.
long long StatOf(const std::string& db, const std::string& name) {
  const ToolResult r = Admin({"stats", "--db", db, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string key = "\"" + name + "\":";
  const std::size_t at = r.out.find(key);
  if (at == std::string::npos) return -1;
  return std::stoll(r.out.substr(at + key.size()));
}

long long DocumentsOf(const std::string& db) { return StatOf(db, "documents"); }

void ExpectVerifies(const std::string& db) {
  const ToolResult r = Admin({"verify", "--db", db, "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
}

// ---- The tool as a whole -------------------------------------------------------

TEST(AdminToolTest, HelpListsEveryCommand) {
  const ToolResult r = Admin({"--help"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* command : {"create", "stats", "compact", "verify", "repair", "recover", "insert",
                              "remove", "find-all", "clusters", "dump", "checkpoint"}) {
    EXPECT_TRUE(Contains(r.out, std::string("\n  ") + command + " ")) << command << "\n" << r.out;
  }
  const ToolResult insert = Admin({"insert", "--help"});
  EXPECT_EQ(insert.exit_code, 0);
  EXPECT_TRUE(Contains(insert.out, "--batch-size")) << insert.out;
  EXPECT_TRUE(Contains(insert.out, "--durability")) << insert.out;
  EXPECT_TRUE(Contains(insert.out, "Examples:")) << insert.out;
}

// Numeric options out of their range stop before any work, naming the option and its range.
TEST(AdminToolTest, NumericOptionsOutOfRangeAreUsageErrors) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"insert", "--db", "x", "--input", "-", "--batch-size", "-1"},
       "--batch-size: \"-1\" is not a whole number from 1 to 10,000,000"},
      {{"insert", "--db", "x", "--input", "-", "--batch-size", "18446744073709551615"},
       "--batch-size: \"18446744073709551615\" is not a whole number from 1 to 10,000,000"},
      {{"insert", "--db", "x", "--input", "-", "--batch-size", "1000000000000"},
       "--batch-size: \"1000000000000\" is not a whole number from 1 to 10,000,000"},
      {{"clusters", "--db", "x", "--min-size", "-1"},
       "--min-size: \"-1\" is not a whole number from 1 to 18,446,744,073,709,551,615"},
      {{"find-all", "--db", "x", "--memory", "99999999999999"},
       "--memory: \"99999999999999\" is not a whole number from 0 to 16,777,216"},
      {{"verify", "--db", "x", "--threads", "100000"},
       "--threads: \"100000\" is not a whole number from 0 to 1,024"},
      {{"find-all", "--db", "x", "--distance", "-1"},
       "--distance: \"-1\" is not a whole number from 0 to 64"},
      {{"create", "--db", "x", "--distance", "64"},
       "--distance: \"64\" is not a whole number from 0 to 63"},
  };
  for (const auto& [args, message] : cases) {
    const ToolResult r = Admin(args);
    EXPECT_EQ(r.exit_code, 2) << ::testing::PrintToString(args);
    EXPECT_EQ(r.err,
              "fpstore-admin: " + message + "\nTry 'fpstore-admin --help' for more information.\n");
  }
}

TEST(AdminToolTest, UsageErrorsExitTwo) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {},
           {"frobnicate", "--db", "x"},
           {"stats"},
           {"create", "--db", "x", "--blocks", "3"},
           {"find-all", "--db", "x", "--distance", "-1"},
           {"clusters", "--db", "x", "--memory", "-5"},
           {"insert", "--db", "x"},
           {"insert", "--db", "x", "--input", "-", "--durability", "always"},
           {"remove", "--db", "x"},
           {"remove", "--db", "x", "12x"},
           {"checkpoint", "--db", "x"}}) {
    const ToolResult r = Admin(args);
    EXPECT_EQ(r.exit_code, 2) << ::testing::PrintToString(args) << "\n" << r.err;
    EXPECT_TRUE(Contains(r.err, "Try 'fpstore-admin --help'")) << r.err;
  }
}

// ---- create and stats --------------------------------------------------------------

TEST(AdminCreateTest, CreatesWithPlanAndOptionsThatStatsReports) {
  ScratchDir dir;
  const std::string db = (dir.path() / "store").string();
  ToolResult r = Admin({"create", "--db", db, "--blocks", "6", "--distance", "3", "--window", "5",
                        "--weighting", "presence", "--expected-documents", "1000000000"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "created " + db)) << r.out;
  EXPECT_TRUE(Contains(r.out, "blocks=6 distance=3: 20 tables, prefixes of 31 to 33 bits"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "v2 window=5 weighting=presence signature=64 signature_window=5"))
      << r.out;
  // 10^9 * (4 * 2^-31 + 12 * 2^-32 + 4 * 2^-33) = 5.12...
  EXPECT_TRUE(Contains(r.out, "candidates/query:   about 5.12 at 1,000,000,000 documents"))
      << r.out;

  r = Admin({"stats", "--db", db});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "documents:          0\n")) << r.out;
  int format_version = 0;
  if (std::unique_ptr<Store> store = OpenReadOnly(db)) {
    const Result<StoreStats> stats = store->Stats();
    ASSERT_TRUE(stats.ok()) << stats.status().ToString();
    format_version = stats->internals.format_version;
  }
  ASSERT_GT(format_version, 0);
  EXPECT_TRUE(Contains(r.out, "  format version:   " + std::to_string(format_version) + "\n"))
      << r.out;
  // Cut for the 10^9 documents expected: 22 bits, at most 256 a group.
  EXPECT_TRUE(Contains(r.out, "  group bits:       22\n")) << r.out;
  EXPECT_TRUE(Contains(
      r.out,
      "fingerprint:        v2 window=5 weighting=presence signature=64 signature_window=5\n"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "table  19  blocks 3,4,5")) << r.out;

  r = Admin({"stats", "--db", db, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "\"group_bits\":22,\"blocks\":6,\"distance\":3,")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\"window\":5,\"weighting\":\"presence\"")) << r.out;
  EXPECT_TRUE(Contains(r.out, "{\"table\":19,\"blocks\":[3,4,5],\"prefix_bits\":31,")) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "one JSON object, one line";

  // The store keeps its options: a second create fails and changes nothing.
  r = Admin({"create", "--db", db, "--blocks", "8", "--distance", "4"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "already holds a store")) << r.err;
  r = Admin({"stats", "--db", db});
  EXPECT_TRUE(Contains(r.out, "blocks=6 distance=3")) << r.out;
}

// The choice weighs probes (0.8 us each) against the data blocks that
// non-empty prefix ranges cost (13 us), among the plans within the disk
// budget and the memory budget (16 GB unless given): EstimateStoreBytes and
// EstimateStoreMemory.
TEST(FpstoreAdminTest, CreateChoosesThePlanThatFitsTheBudgets) {
  ToolResult r = Admin({"create", "--db", "unused", "--expected-documents", "1e7", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // (4,3): 610 candidates, 177 us; (5,3): 2 candidates, 33 us; (6,3): 17 us.
  EXPECT_TRUE(Contains(r.out, "memory GB  query us\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "  4       4       16")) << r.out;
  EXPECT_TRUE(Contains(r.out, "  5       10      25-26")) << r.out;
  EXPECT_TRUE(Contains(r.out, "* 6       20      31-33")) << r.out;
  EXPECT_TRUE(Contains(r.out, "  (this plan)")) << r.out;
  EXPECT_TRUE(Contains(r.out, "chosen: the fastest within the budgets (--blocks 6 --distance 3)\n"))
      << r.out;

  // At 10^6 documents, (5,3)'s ranges are mostly empty: 11 us against 16.
  r = Admin({"create", "--db", "unused", "--expected-documents", "1e6", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "plan:               blocks=5 distance=3: 10 tables")) << r.out;

  // At 10^9, (6,3)'s member filters alone take about 25 GB and (7,3)'s 44:
  // (5,3), whose 25-26-bit prefixes are all taken, keeps its filters near 1 GB.
  r = Admin({"create", "--db", "unused", "--expected-documents", "1e9", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "plan:               blocks=5 distance=3: 10 tables")) << r.out;
  EXPECT_TRUE(Contains(r.out, "candidates/query:   about 209 at 1,000,000,000")) << r.out;
  EXPECT_TRUE(Contains(r.out, "chosen: the fastest within the budgets (--blocks 5 --distance 3)\n"))
      << r.out;
  r = Admin({"create", "--db", "unused", "--expected-documents", "1e9", "--memory-budget", "30",
             "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "(--blocks 6 --distance 3)\n")) << r.out;
  // --blocks keeps its plan and shows what would be chosen.
  r = Admin(
      {"create", "--db", "unused", "--blocks", "6", "--expected-documents", "1e9", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "plan:               blocks=6 distance=3")) << r.out;
  EXPECT_TRUE(Contains(r.out, "suggested: --blocks 5 --distance 3\n")) << r.out;

  // Without signatures, (5,3) takes 0.91 GB at 10^7 documents, (4,3) 0.5 GB.
  r = Admin({"create", "--db", "unused", "--expected-documents", "1e7", "--disk-budget", "0.8",
             "--signature-bytes", "0", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "(--blocks 4 --distance 3)\n")) << r.out;

  r = Admin({"create", "--db", "unused", "--expected-documents", "1e7", "--disk-budget", "0.4",
             "--signature-bytes", "0", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out,
                       "no plan for distance 3 at 1e+07 documents fits in 0.4 GB of disk and 16 "
                       "GB of memory"))
      << r.out;

  // Signatures of 64 bytes add 0.66 GB at 10^7 documents: no plan fits in 0.8 GB then.
  r = Admin({"create", "--db", "unused", "--expected-documents", "1e7", "--disk-budget", "0.8",
             "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "plan:               none within the budgets (below)\n")) << r.out;
  EXPECT_FALSE(Contains(r.out, "(this plan)")) << r.out;
  EXPECT_TRUE(Contains(r.out, "fits in 0.8 GB of disk")) << r.out;
  // --distance without --blocks compares the plans for that distance.
  r = Admin(
      {"create", "--db", "unused", "--distance", "2", "--expected-documents", "1e7", "--dry-run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "plans for distance 2 at 10,000,000")) << r.out;
  EXPECT_TRUE(Contains(r.out, "distance=2")) << r.out;

  // Creating for real when nothing fits is a usage error that creates nothing.
  ScratchDir dir;
  const std::string db = (dir.path() / "store").string();
  r = Admin({"create", "--db", db, "--expected-documents", "1e9", "--memory-budget", "1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err,
                       "--expected-documents: no plan for distance 3 at 1e+09 documents "
                       "fits in 1 GB of memory"))
      << r.err;
  EXPECT_FALSE(fs::exists(db));
  // And when one fits, the store gets it.
  r = Admin({"create", "--db", db, "--expected-documents", "1e9"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Admin({"stats", "--db", db});
  EXPECT_TRUE(Contains(r.out, "blocks=5 distance=3")) << r.out;

  for (const char* budget : {"--disk-budget", "--memory-budget"}) {
    r = Admin({"create", "--db", "unused", budget, "1", "--dry-run"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_TRUE(Contains(r.err, std::string(budget) + " needs --expected-documents")) << r.err;
    r = Admin(
        {"create", "--db", "unused", "--expected-documents", "1e6", budget, "0", "--dry-run"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_TRUE(Contains(r.err, std::string(budget) + ": must be a number of gigabytes above 0"))
        << r.err;
  }
}

TEST(AdminCreateTest, DryRunCreatesNothing) {
  ScratchDir dir;
  const std::string db = (dir.path() / "store").string();
  const ToolResult r =
      Admin({"create", "--db", db, "--blocks", "8", "--distance", "4", "--dry-run"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "blocks=8 distance=4: 70 tables")) << r.out;
  EXPECT_FALSE(Contains(r.out, "created")) << r.out;
  EXPECT_FALSE(fs::exists(db));
}

TEST(AdminCreateTest, UnwritableOrWrongDbFails) {
  ScratchDir dir;
  const std::string file = dir.Write("file", "not a directory");
  // Tests may run as root, for whom permissions are no obstacle: a path
  // under a plain file is unwritable for everyone.
  ToolResult r = Admin({"create", "--db", file + "/store"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, file + "/store")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;

  r = Admin({"create", "--db", file});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "is not an fpstore store")) << r.err;

  for (const char* command : {"stats", "verify", "find-all", "clusters", "dump", "compact"}) {
    r = Admin({command, "--db", (dir.path() / "missing").string()});
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_TRUE(Contains(r.err, "no store at")) << command << ": " << r.err;
  }
  EXPECT_FALSE(fs::exists(dir.path() / "missing"));
}

// ---- insert ----------------------------------------------------------------------

TEST(AdminInsertTest, InsertedDocumentsAreDumpedAndPersist) {
  ScratchDir dir;
  const Corpus corpus = MakeCorpus(40);
  const std::string db = MakeStore(dir, corpus);
  EXPECT_EQ(DocumentsOf(db), static_cast<long long>(corpus.docs.size()));

  ToolResult r = Admin({"dump", "--db", db});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(DropTimes(r.out), corpus.Dump());

  // A dump reloads as tsv: inserting it again replaces each document with
  // itself.
  const std::string dumped = (dir.path() / "dump.tsv").string();
  r = Admin({"dump", "--db", db, "--output", dumped, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(DropTimes(ReadFile(dumped)), corpus.Dump());
  r = Admin({"insert", "--db", db, "--input", dumped, "--format", "tsv", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(DocumentsOf(db), static_cast<long long>(corpus.docs.size()));
  ExpectVerifies(db);
}

TEST(AdminInsertTest, JsonlIsFingerprintedWithTheStoreOptions) {
  ScratchDir dir;
  const std::string db = (dir.path() / "store").string();
  ASSERT_EQ(Admin({"create", "--db", db, "--window", "2"}).exit_code, 0);
  ToolResult r = Admin({"insert", "--db", db, "--input", Data("docs.jsonl"), "--meta-column",
                        "text", "--batch-size", "2", "--durability", "sync"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "inserted 5 documents from " + Data("docs.jsonl") +
                                  " in 3 batches; " + db + " now holds 5 documents"))
      << r.out;

  FingerprintOptions options;
  options.window = 2;
  Result<Fingerprinter> fingerprinter = Fingerprinter::Create(options);
  ASSERT_TRUE(fingerprinter.ok());
  const std::string zero_text = "été \"quoted\" and escaped\nnewline";
  r = Admin({"dump", "--db", db});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Each document with its signature; line breaks in metadata are escaped, with a warning.
  auto dumped = [&](const std::string& text) {
    const Result<Sketch> sketch = fingerprinter->SketchText(text);
    return FormatFingerprint(sketch->fingerprint) + "\tT\t" +
           FormatSignature(sketch->signature.bytes()) + "\t";
  };
  const std::string dump = DropTimes(r.out);
  EXPECT_TRUE(
      Contains(dump, "\n0\t" + dumped(zero_text) + "été \"quoted\" and escaped\\nnewline\n"))
      << r.out;
  EXPECT_TRUE(Contains(r.err, "the metadata of 1 document held line breaks")) << r.err;
  const std::string fox = "The quick brown fox jumps over the lazy dog.";
  EXPECT_TRUE(Contains(dump, "\n1\t" + dumped(fox) + fox)) << r.out;

  // Loaded from the dump, a store holds the same signatures.
  const std::string dump_path = dir.Write("dump.tsv", r.out);
  const std::string copy = (dir.path() / "copy").string();
  ASSERT_EQ(Admin({"create", "--db", copy, "--window", "2"}).exit_code, 0);
  r = Admin({"insert", "--db", copy, "--input", dump_path, "--format", "tsv", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Admin({"dump", "--db", copy});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, ReadFile(dump_path));

  // A signature the store cannot use is refused, naming the line.
  const std::string header = "id\tfingerprint\ttime\tsignature\tmetadata\n";
  const std::string short_signature =
      dir.Write("short.tsv", header + "7\t0x1\t5\t" + std::string(64, 'a') + "\tm\n");
  r = Admin({"insert", "--db", copy, "--input", short_signature, "--format", "tsv"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "short.tsv:2") && Contains(r.err, "a signature of 32 bytes"))
      << r.err;
  const std::string not_hex =
      dir.Write("not_hex.tsv", header + "7\t0x1\t5\t" + std::string(128, 'g') + "\tm\n");
  r = Admin({"insert", "--db", copy, "--input", not_hex, "--format", "tsv"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "not_hex.tsv:2") && Contains(r.err, "not a hex digit")) << r.err;

  // Options other than the store's are refused.
  r = Admin({"insert", "--db", db, "--input", Data("docs.jsonl"), "--window", "3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "window=2")) << r.err;
}

TEST(AdminInsertTest, MalformedLineStopsAfterTheCommittedBatches) {
  ScratchDir dir;
  const std::string db = MakeStore(dir, Corpus{});
  std::string input;
  for (int i = 1; i <= 25; ++i) input += std::to_string(i) + "\t" + std::to_string(i * 7) + "\n";
  input += "26\t0x12g4\n";  // line 26
  for (int i = 27; i <= 30; ++i) input += std::to_string(i) + "\t" + std::to_string(i) + "\n";
  const std::string path = dir.Write("bad.tsv", input);

  ToolResult r = Admin(
      {"insert", "--db", db, "--input", path, "--format", "tsv", "--batch-size", "10", "--quiet"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "fpstore-admin: " + path + ":26: ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "0x12g4")) << r.err;
  EXPECT_TRUE(Contains(r.err,
                       "committed before it: 20 documents, lines 1-20, in 2 batches; "
                       "nothing after line 20 was inserted"))
      << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(DocumentsOf(db), 20);
  ExpectVerifies(db);

  // In the first batch: nothing at all.
  const std::string db2 = (dir.path() / "store2").string();
  ASSERT_EQ(Admin({"create", "--db", db2}).exit_code, 0);
  r = Admin({"insert", "--db", db2, "--input", path, "--format", "tsv", "--quiet"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, path + ":26: ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "(nothing was inserted)")) << r.err;
  EXPECT_EQ(DocumentsOf(db2), 0);

  // --skip-bad: the other 29 lines go in.
  const std::string rejected = (dir.path() / "rejected.txt").string();
  r = Admin({"insert", "--db", db2, "--input", path, "--format", "tsv", "--skip-bad", rejected,
             "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "skipped 1 malformed line, written to " + rejected)) << r.out;
  EXPECT_TRUE(ReadFile(rejected).starts_with("26\t")) << ReadFile(rejected);
  EXPECT_EQ(DocumentsOf(db2), 29);
}

TEST(AdminInsertTest, MissingInputLeavesTheStoreAlone) {
  ScratchDir dir;
  const std::string db = MakeStore(dir, MakeCorpus(3));
  const long long before = DocumentsOf(db);
  const ToolResult r =
      Admin({"insert", "--db", db, "--input", (dir.path() / "nope.jsonl").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "nope.jsonl")) << r.err;
  EXPECT_EQ(DocumentsOf(db), before);
}

// ---- expire and retention ----------------------------------------------------------

TEST(AdminExpireTest, RemovesTheDocumentsBeforeATimeOrAnAge) {
  ScratchDir dir;
  const std::string db = (dir.path() / "store").string();
  ASSERT_EQ(Admin({"create", "--db", db}).exit_code, 0);
  const std::string input =
      dir.Write("docs.jsonl",
                "{\"id\": 1, \"text\": \"a page of 2020\", \"time\": \"2020-01-01T00:00:00Z\"}\n"
                "{\"id\": 2, \"text\": \"a page of 2021\", \"time\": 1609459200}\n"
                "{\"id\": 3, \"text\": \"a page of today\"}\n");
  ToolResult r = Admin({"insert", "--db", db, "--input", input, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Admin({"expire", "--db", db, "--before", "2020-06-01T00:00:00Z"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "removed 1 document from before 2020-06-01T00:00:00Z\n");
  r = Admin({"expire", "--db", db, "--before", "1590969600"});  // the same time
  EXPECT_EQ(r.out, "removed 0 documents from before 2020-06-01T00:00:00Z\n");
  r = Admin({"expire", "--db", db, "--older-than", "1d"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "removed 1 document from before ")) << r.out;
  EXPECT_EQ(DocumentsOf(db), 1);
  ExpectVerifies(db);
  // Bad options: exit 2, naming the option.
  for (const std::vector<std::string>& bad :
       {std::vector<std::string>{"expire", "--db", db},
        {"expire", "--db", db, "--before", "yesterday"},
        {"expire", "--db", db, "--before", "2020-13-01T00:00:00Z"},
        {"expire", "--db", db, "--older-than", "5x"},
        {"expire", "--db", db, "--older-than", "0d"},
        {"expire", "--db", db, "--before", "5", "--older-than", "1d"}}) {
    r = Admin(bad);
    EXPECT_EQ(r.exit_code, 2) << bad.back() << ": " << r.err;
    EXPECT_TRUE(Contains(r.err, bad.size() == 3 ? "expire needs one of" : "--")) << r.err;
  }
  EXPECT_EQ(DocumentsOf(db), 1);
}

TEST(AdminExpireTest, AStoreWithARetentionShowsNothingPastIt) {
  ScratchDir dir;
  const std::string db = (dir.path() / "store").string();
  ToolResult r = Admin({"create", "--db", db, "--retention", "30d"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string input =
      dir.Write("docs.jsonl",
                "{\"id\": 1, \"text\": \"a page fetched long ago\", \"time\": 1577836800}\n"
                "{\"id\": 2, \"text\": \"a page fetched today\"}\n");
  r = Admin({"insert", "--db", db, "--input", input, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Admin({"dump", "--db", db, "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Lines(r.out).size(), 2u) << r.out;  // the header and document 2
  EXPECT_TRUE(Contains(r.out, "\n2\t")) << r.out;
  r = Admin({"stats", "--db", db});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "times:              2020-01-01T00:00:00Z to ") ||
              Contains(r.out, "\nretention:          30d; 0 past it"))
      << r.out;
  EXPECT_TRUE(Contains(r.out, "\nretention:          30d; ")) << r.out;
  r = Admin({"stats", "--db", db, "--json"});
  EXPECT_TRUE(Contains(r.out, "\"retention_seconds\":2592000,")) << r.out;
  // A bad retention is a usage error.
  for (const char* bad : {"0d", "30", "30days", "-1d"}) {
    r = Admin({"create", "--db", (dir.path() / "other").string(), "--retention", bad});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_TRUE(Contains(r.err, "--retention")) << r.err;
  }
}

// ---- remove ----------------------------------------------------------------------

TEST(AdminRemoveTest, RemovesAndReportsUnknownIds) {
  ScratchDir dir;
  const Corpus corpus = MakeCorpus(10);
  const std::string db = MakeStore(dir, corpus);
  const long long n = static_cast<long long>(corpus.docs.size());

  ToolResult r = Admin({"remove", "--db", db, "1", "2", "2", "999999"});
  EXPECT_EQ(r.exit_code, 1) << "an unknown id is an error without --missing-ok";
  EXPECT_EQ(r.out, "removed 2 documents; 1 not found\n");
  EXPECT_TRUE(Contains(r.err, "not in " + db + ": 999999")) << r.err;
  EXPECT_EQ(DocumentsOf(db), n - 2);

  r = Admin({"remove", "--db", db, "1", "3", "--missing-ok"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "removed 1 document; 1 not found\n");
  EXPECT_EQ(DocumentsOf(db), n - 3);

  const std::string ids = dir.Write("ids.txt", "4\r\n\n5\n  \n6");
  r = Admin({"remove", "--db", db, "--ids-file", ids});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "removed 3 documents; 0 not found\n");
  r = Admin({"remove", "--db", db, "--ids-file", "-"}, "7\n8\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(DocumentsOf(db), n - 8);

  // A malformed line: FILE:LINE, and nothing removed.
  const std::string bad = dir.Write("bad.txt", "9\n10\n-11\n");
  r = Admin({"remove", "--db", db, "--ids-file", bad});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, bad + ":3: ")) << r.err;
  EXPECT_EQ(DocumentsOf(db), n - 8);
  ExpectVerifies(db);
}

// ---- find-all and clusters -----------------------------------------------------------

// The library's pairs, as the tool writes them.
std::vector<std::string> LibraryPairs(const std::string& db, int k) {
  std::unique_ptr<Store> store = OpenReadOnly(db);
  std::vector<std::string> lines;
  if (store == nullptr) return lines;
  EXPECT_TRUE(store
                  ->FindAll(k,
                            [&](const NearPair& p) {
                              char similarity[16] = "-";
                              if (p.similarity) {
                                std::snprintf(similarity, sizeof similarity, "%.3f", *p.similarity);
                              }
                              lines.push_back(std::to_string(p.first) + "\t" +
                                              std::to_string(p.second) + "\t" +
                                              std::to_string(p.distance) + "\t" + similarity);
                            })
                  .ok());
  std::sort(lines.begin(), lines.end());
  return lines;
}

// The library's clusters, numbered as the tool numbers them.
std::string LibraryClusters(const std::string& db, int k) {
  std::unique_ptr<Store> store = OpenReadOnly(db);
  std::string out;
  int cluster = 0;
  if (store == nullptr) return out;
  EXPECT_TRUE(store
                  ->Clusters(k,
                             [&](std::span<const DocumentId> ids) {
                               ++cluster;
                               for (DocumentId id : ids) {
                                 out += std::to_string(cluster) + "\t" + std::to_string(id) + "\n";
                               }
                             })
                  .ok());
  return out;
}

TEST(AdminScanTest, FindAllAndClustersEqualTheLibrary) {
  ScratchDir dir;
  const Corpus corpus = MakeCorpus(150);
  const std::string db = MakeStore(dir, corpus);

  for (int k : {3, 1}) {
    SCOPED_TRACE("k=" + std::to_string(k));
    const std::vector<std::string> expected = LibraryPairs(db, k);
    ASSERT_GT(expected.size(), 10u) << "the corpus must have near pairs";
    const std::string pairs = (dir.path() / "pairs.tsv").string();
    ToolResult r = Admin(
        {"find-all", "--db", db, "--distance", std::to_string(k), "--output", pairs, "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(SortedLines(ReadFile(pairs)), expected);
    // No memory to sort in: the tables are read from disk, same pairs.
    r = Admin(
        {"find-all", "--db", db, "--distance", std::to_string(k), "--memory", "0", "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(SortedLines(r.out), expected);

    const std::string clusters = (dir.path() / "clusters.tsv").string();
    r = Admin({"clusters", "--db", db, "--distance", std::to_string(k), "-o", clusters});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(ReadFile(clusters), LibraryClusters(db, k));
    EXPECT_TRUE(Contains(r.err, "within distance " + std::to_string(k) + " written to " + clusters))
        << r.err;
  }

  // Defaults: the planned distance, standard output.
  ToolResult r = Admin({"find-all", "--db", db});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(SortedLines(r.out), LibraryPairs(db, 3));
  EXPECT_TRUE(Contains(r.err, "pairs within distance 3 written to standard output")) << r.err;
}

TEST(AdminScanTest, ClustersWithMinSizeOneListEveryDocumentOnce) {
  ScratchDir dir;
  const Corpus corpus = MakeCorpus(30);
  const std::string db = MakeStore(dir, corpus);
  const ToolResult r = Admin({"clusters", "--db", db, "--min-size", "1", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  std::map<DocumentId, int> cluster_of;
  std::vector<std::pair<int, DocumentId>> rows;
  std::istringstream in(r.out);
  int cluster;
  DocumentId id;
  while (in >> cluster >> id) {
    EXPECT_TRUE(cluster_of.emplace(id, cluster).second) << id << " listed twice";
    rows.emplace_back(cluster, id);
  }
  EXPECT_EQ(cluster_of.size(), corpus.docs.size());
  // Clusters are numbered from 1 in the order of their smallest id.
  std::map<int, DocumentId> smallest;
  for (auto [c, i] : rows) smallest.emplace(c, i);
  int expected_cluster = 1;
  DocumentId previous = 0;
  for (auto [c, i] : smallest) {
    EXPECT_EQ(c, expected_cluster++);
    EXPECT_GT(i, previous);
    previous = i;
  }
  // The clusters of two or more are the library's.
  std::map<int, std::vector<DocumentId>> members;
  for (auto [c, i] : rows) members[c].push_back(i);
  std::string big;
  int number = 0;
  for (const auto& [c, ids] : members) {
    if (ids.size() < 2) continue;
    ++number;
    for (DocumentId i : ids) big += std::to_string(number) + "\t" + std::to_string(i) + "\n";
  }
  EXPECT_EQ(big, LibraryClusters(db, 3));
}

TEST(AdminScanTest, DistanceAboveThePlanIsAUsageError) {
  ScratchDir dir;
  const std::string db = MakeStore(dir, MakeCorpus(5), {"--blocks", "5", "--distance", "2"});
  const std::string output = (dir.path() / "out.tsv").string();
  for (const char* command : {"find-all", "clusters"}) {
    const ToolResult r = Admin({command, "--db", db, "--distance", "3", "--output", output});
    EXPECT_EQ(r.exit_code, 2) << command;
    EXPECT_TRUE(Contains(r.err, "--distance 3 is above the store's planned distance 2")) << r.err;
    EXPECT_FALSE(fs::exists(output));
  }
  for (const auto& entry : fs::directory_iterator(dir.path())) {
    EXPECT_FALSE(Contains(entry.path().filename().string(), ".tmp-")) << entry.path();
  }
}

// ---- verify, compact, checkpoint -------------------------------------------------------

// The largest SST file under `db`.
std::string LargestSst(const std::string& db) {
  std::string largest;
  std::uintmax_t size = 0;
  for (const auto& entry : fs::directory_iterator(db)) {
    if (entry.path().extension() == ".sst" && entry.file_size() > size) {
      size = entry.file_size();
      largest = entry.path().string();
    }
  }
  return largest;
}

TEST(AdminVerifyTest, CompactedStoreVerifiesAndCorruptionExitsOne) {
  ScratchDir dir;
  const Corpus corpus = MakeCorpus(800);
  const std::string db = MakeStore(dir, corpus);
  // The inserted documents wait staged; compact merges them.
  EXPECT_EQ(StatOf(db, "staged_documents"), static_cast<long long>(corpus.docs.size()));
  ToolResult r = Admin({"compact", "--db", db});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "compacted " + db)) << r.out;
  EXPECT_EQ(DocumentsOf(db), static_cast<long long>(corpus.docs.size()));
  EXPECT_EQ(StatOf(db, "staged_documents"), 0);

  r = Admin({"verify", "--db", db});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "ok: " + db + ": ")) << r.out;
  EXPECT_TRUE(Contains(r.out, " documents, 20 tables, every entry consistent\n")) << r.out;

  const std::string sst = LargestSst(db);
  ASSERT_FALSE(sst.empty());
  ASSERT_TRUE(fpstore::testing::FlipBytesInTheMiddle(sst));
  r = Admin({"verify", "--db", db, "--quiet"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "fpstore-admin: verify failed: ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "orrupt")) << r.err;
  EXPECT_EQ(r.out, "");
}

// An embedded store's writes are atomic: repair has nothing to mend, so it verifies, read-only,
// and fails as verify does.
TEST(AdminRepairTest, AnEmbeddedStoreIsVerified) {
  ScratchDir dir;
  const Corpus corpus = MakeCorpus(200);
  const std::string db = MakeStore(dir, corpus);
  ToolResult r = Admin({"repair", "--db", db, "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok: " + db + ": " + std::to_string(corpus.docs.size()) +
                       " documents, 20 tables, every entry consistent (its writes are atomic: "
                       "nothing to mend)\n");
  EXPECT_EQ(r.err, "");

  // Read-only, as verify: it works beside a process that has the store open for writing.
  {
    StoreOptions options;
    options.create_if_missing = false;
    Result<std::unique_ptr<Store>> writer = Store::Open(db, options);
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    r = Admin({"repair", "--db", db, "--quiet"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    ASSERT_TRUE((*writer)->Close().ok());
  }

  const std::string sst = LargestSst(db);
  ASSERT_FALSE(sst.empty());
  ASSERT_TRUE(fpstore::testing::FlipBytesInTheMiddle(sst));
  r = Admin({"repair", "--db", db, "--quiet"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "fpstore-admin: repair failed: ")) << r.err;
  EXPECT_EQ(r.out, "");

  r = Admin({"repair", "--db", (dir.path() / "missing").string()});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "no store at")) << r.err;
}

// From a pipe, each record is inserted, durable and seen by readers, as it comes, before the
// input ends.
TEST(AdminInsertTest, RecordsFromAPipeAreInsertedAsTheyCome) {
  ScratchDir dir;
  const std::string db = (dir.path() / "db").string();
  ASSERT_EQ(Admin({"create", "--db", db}).exit_code, 0);
  fpstore::testing::Coprocess insert(
      FPSTORE_ADMIN_BINARY, {"insert", "--db", db, "--input", "-", "--format", "tsv", "--quiet"});
  StoreOptions read_only;
  read_only.read_only = true;
  const auto seen = [&](DocumentId id) {
    for (int waited = 0; waited < 20'000; waited += 20) {
      Result<std::unique_ptr<Store>> reader = Store::Open(db, read_only);
      if (reader.ok() && (*reader)->Get(id).ok()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  };
  for (DocumentId id = 1; id <= 3; ++id) {
    ASSERT_TRUE(insert.Write(std::to_string(id) + "\t" + std::to_string(id * 977) + "\n"));
    EXPECT_TRUE(seen(id)) << "document " << id << " not inserted before the input ended";
  }
  EXPECT_EQ(insert.Wait(), 0);
  EXPECT_EQ(DocumentsOf(db), 3);
}

// A log damaged in its middle: every command refuses the store and names `recover`, which drops
// what cannot be replayed and says what it dropped.
TEST(AdminRecoverTest, DamagedLogIsRefusedUntilRecovered) {
  ScratchDir dir;
  const std::string db = (dir.path() / "db").string();
  fpstore::testing::InsertThenCrash(db, 40, 100);
  ToolResult r = Admin({"recover", "--db", db});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, db + ": no damaged log; nothing dropped\n");
  // The recovery flushed the log; a second crash leaves a new one to damage.
  fpstore::testing::InsertThenCrash(db, 40, 100);
  ASSERT_TRUE(fpstore::testing::FlipBytesInTheMiddle(fpstore::testing::TheLog(db)));
  const std::vector<std::vector<std::string>> commands = {
      {"stats", "--db", db},
      {"verify", "--db", db},
      {"insert", "--db", db, "--input", "-", "--format", "tsv"}};
  for (const std::vector<std::string>& command : commands) {
    r = Admin(command, "99\t0000000000000001\n");
    EXPECT_EQ(r.exit_code, 1) << command[0] << ": " << r.err;
    EXPECT_TRUE(Contains(r.err, " is damaged at bytes ")) << r.err;
    EXPECT_TRUE(Contains(r.err, "fpstore-admin recover --db " + db)) << r.err;
  }
  r = Admin({"recover", "--db", db});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "recovered " + db + ": ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "inserts or replacements of documents ")) << r.out;
  EXPECT_TRUE(Contains(r.out, db + "/lost")) << r.out;
  // Every dropped document is listed, the message naming the list.
  const std::string list_prefix = "every dropped document listed in " + db + "/lost/dropped-";
  ASSERT_TRUE(Contains(r.out, list_prefix)) << r.out;
  const std::size_t at = r.out.find(db + "/lost/dropped-");
  const std::string list = r.out.substr(at, r.out.find(".tsv", at) + 4 - at);
  std::ifstream in(list);
  std::string line;
  ASSERT_TRUE(std::getline(in, line)) << list;
  EXPECT_EQ(line, "document\tchange\tread_from");
  int listed = 0;
  while (std::getline(in, line)) ++listed;
  EXPECT_GT(listed, 8) << "more than the message names";
  r = Admin({"verify", "--db", db});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = Admin({"recover", "--db", db});
  EXPECT_EQ(r.out, db + ": no damaged log; nothing dropped\n");
}

// A synced last record damaged while the writer was idle: whole, failing its checksum, which a
// crash does not leave. Refused like damage in the middle; `recover` drops it and names its
// document.
TEST(AdminRecoverTest, DamagedLastRecordIsRefusedUntilRecovered) {
  ScratchDir dir;
  const std::string db = (dir.path() / "db").string();
  fpstore::testing::InsertThenCrash(db, 40, 100);
  const std::string log = fpstore::testing::TheLog(db);
  {
    std::fstream f(log, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(std::filesystem::file_size(log) - 40));
    f.write("\xff\xff\xff\xff\xff\xff\xff\xff", 8);
    ASSERT_TRUE(f.good());
  }
  ToolResult r = Admin({"stats", "--db", db});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(Contains(r.err, ", its last log record, whole but failing its checksum")) << r.err;
  EXPECT_TRUE(Contains(r.err, "fpstore-admin recover --db " + db)) << r.err;
  r = Admin({"recover", "--db", db});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "unverified: inserts or replacements of document 39;")) << r.out;
  EXPECT_TRUE(Contains(r.out, "listed in " + db + "/lost/dropped-")) << r.out;
  EXPECT_EQ(DocumentsOf(db), 39);
}

TEST(AdminCheckpointTest, CopyOpensAsAStoreOfItsOwn) {
  ScratchDir dir;
  const Corpus corpus = MakeCorpus(20);
  const std::string db = MakeStore(dir, corpus);
  const std::string copy = (dir.path() / "copy").string();
  ToolResult r = Admin({"checkpoint", "--db", db, "--output", copy});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "written to " + copy)) << r.out;

  // Changes to the original do not reach the copy.
  ASSERT_EQ(Admin({"remove", "--db", db, "1"}).exit_code, 0);
  EXPECT_EQ(DocumentsOf(copy), static_cast<long long>(corpus.docs.size()));
  ExpectVerifies(copy);
  r = Admin({"dump", "--db", copy, "--quiet"});
  EXPECT_EQ(DropTimes(r.out), corpus.Dump());

  // The target must not exist; the positional form works too.
  r = Admin({"checkpoint", "--db", db, copy});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, copy)) << r.err;
  r = Admin({"checkpoint", "--db", db, (dir.path() / "copy2").string()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(DocumentsOf((dir.path() / "copy2").string()),
            static_cast<long long>(corpus.docs.size()) - 1);
}

// ---- A store in use by another process ----------------------------------------------

// Whether another process holds the write lock of `db`'s LOCK file, as
// RocksDB takes it (fcntl) for a writer.
bool WriteLocked(const std::string& db) {
  const int fd = ::open((db + "/LOCK").c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock lock = {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  const bool held = ::fcntl(fd, F_GETLK, &lock) == 0 && lock.l_type != F_UNLCK;
  ::close(fd);
  return held;
}

// A real `fpstore-admin insert --input -` that holds the store open for
// writing while it waits for its standard input.
class WaitingInsert {
 public:
  explicit WaitingInsert(const std::string& db) : db_(db) {
    int in[2];
    if (::pipe2(in, O_CLOEXEC) != 0) return;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    const std::vector<std::string> args = {
        FPSTORE_ADMIN_BINARY, "insert", "--db", db, "--input", "-", "--format", "tsv"};
    std::vector<char*> argv;
    for (const std::string& arg : args) argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    if (::posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    ::close(in[0]);
    in_ = in[1];
  }

  ~WaitingInsert() {
    if (in_ >= 0) ::close(in_);
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  // True once the insert holds the store.
  bool WaitHeld() const {
    for (int i = 0; i < 3000 && pid_ > 0; ++i) {
      if (WriteLocked(db_)) return true;
      ::usleep(20'000);
    }
    return false;
  }

  // Feeds the insert `input`, ends it and returns its exit status.
  int Finish(const std::string& input) {
    ::signal(SIGPIPE, SIG_IGN);
    const bool written =
        ::write(in_, input.data(), input.size()) == static_cast<ssize_t>(input.size());
    ::close(in_);
    in_ = -1;
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
    return written && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  std::string db_;
  pid_t pid_ = -1;
  int in_ = -1;
};

TEST(AdminBusyTest, WritesAreRefusedWhileAnotherProcessWritesReadsWork) {
  ScratchDir dir;
  const Corpus corpus = MakeCorpus(10);
  const std::string db = MakeStore(dir, corpus);
  const long long n = static_cast<long long>(corpus.docs.size());
  const std::string input = dir.Write("more.tsv", "1001\t0x2\n");
  WaitingInsert writer(db);
  ASSERT_TRUE(writer.WaitHeld());

  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"insert", "--db", db, "--input", input, "--format", "tsv"},
           {"remove", "--db", db, "1"},
           {"compact", "--db", db},
           {"checkpoint", "--db", db, (dir.path() / "copy").string()}}) {
    const ToolResult r = Admin(args);
    EXPECT_EQ(r.exit_code, 1) << args[0];
    EXPECT_TRUE(Contains(r.err, "in use by another process")) << args[0] << ": " << r.err;
  }
  EXPECT_FALSE(fs::exists(dir.path() / "copy"));
  // Read-only commands work beside the writer.
  EXPECT_EQ(DocumentsOf(db), n);
  ExpectVerifies(db);
  const ToolResult dump = Admin({"dump", "--db", db, "--quiet"});
  EXPECT_EQ(dump.exit_code, 0) << dump.err;
  EXPECT_EQ(DropTimes(dump.out), corpus.Dump());

  // The writer's insert goes in once its input ends.
  EXPECT_EQ(writer.Finish("1000\t0x1\n"), 0);
  EXPECT_EQ(DocumentsOf(db), n + 1);
}

}  // namespace
}  // namespace fpstore::cli
