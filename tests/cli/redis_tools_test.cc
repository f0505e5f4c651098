// The three tools on a store in the test Redis Cluster (FPSTORE_REDIS_SEED; ctest starts it, see
// tests/CMakeLists.txt): the sample corpus loaded into redis://SEED/NAME answers every query,
// scan and dump exactly as the same load into a directory does; stats, verify, repair and compact
// speak of Redis; what Redis cannot do is refused clearly; a failed first load leaves no store;
// and addresses that name no store fail with one clear line.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "cli/record_reader.h"
#include "fpstore/store.h"
#include "scratch_dir.h"
#include "tool_runner.h"

namespace fpstore::cli {
namespace {

namespace fs = std::filesystem;
using fpstore::testing::Contains;
using fpstore::testing::Lines;
using fpstore::testing::ReadFile;
using fpstore::testing::RunTool;
using fpstore::testing::ScratchDir;
using fpstore::testing::SortedLines;
using fpstore::testing::ToolResult;

const std::string kSample = std::string(FPSTORE_SAMPLE_DATA) + "/sample.jsonl";

ToolResult Load(std::vector<std::string> args) { return RunTool(FPSTORE_LOAD_BINARY, args); }
ToolResult Query(std::vector<std::string> args) { return RunTool(FPSTORE_QUERY_BINARY, args); }
ToolResult Admin(std::vector<std::string> args, const std::string& input = "") {
  return RunTool(FPSTORE_ADMIN_BINARY, args, input);
}

// The text of the sample's document `id`.
std::string SampleText(std::uint64_t id) {
  ReaderOptions options;
  options.path = kSample;
  std::unique_ptr<RecordReader> reader = RecordReader::Open(options);
  Record record;
  while (reader->Next(&record)) {
    if (record.id == id) return record.text;
  }
  return "";
}

// The seed node of the test cluster, as tests/CMakeLists.txt passes it.
std::string Seed() {
  const char* seed = std::getenv("FPSTORE_REDIS_SEED");
  return seed != nullptr ? seed : "127.0.0.1:7400";
}

// Each test has a scratch directory, whose name (mkdtemp's) is unique on this machine, and stores
// named after it: an embedded one in the directory and any number in the cluster, which it
// removes at the end.
class RedisToolsTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const std::string& store : redis_stores_) (void)DestroyStore(store);
  }

  // The store `name` of this test in the cluster.
  std::string Redis(const std::string& name = "sample") {
    const std::string url =
        "redis://" + Seed() + "/" + dir_.path().filename().string() + "-" + name;
    redis_stores_.push_back(url);
    return url;
  }
  std::string Embedded(const std::string& name = "sample") const {
    return (dir_.path() / (name + ".fps")).string();
  }

  // Loads the sample corpus into `db`, each document with its url.
  static void LoadSample(const std::string& db, std::vector<std::string> more = {}) {
    std::vector<std::string> args = {"--db", db, "--input", kSample, "--meta-column", "url"};
    args.insert(args.end(), more.begin(), more.end());
    const ToolResult r = Load(args);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(Contains(r.err, "fpstore-load: loaded 323 documents (")) << r.err;
    EXPECT_TRUE(Contains(r.err, "fpstore-load: 323 new, 0 replaced\n")) << r.err;
  }

  // Runs `tool` with `command` (fpstore-admin's), --db and `args` on both stores: the same exit
  // status and output, in the same order unless `any_order`.
  static void ExpectSameAnswers(const std::string& tool, const std::vector<std::string>& command,
                                const std::string& redis, const std::string& embedded,
                                const std::vector<std::string>& args, bool any_order = false) {
    std::vector<std::string> on_redis = command, on_embedded = command;
    for (std::vector<std::string>* on : {&on_redis, &on_embedded}) {
      on->push_back("--db");
      on->push_back(on == &on_redis ? redis : embedded);
      on->insert(on->end(), args.begin(), args.end());
    }
    // The stores were loaded a moment apart: their documents' times may differ.
    const auto without_times = [](ToolResult r) {
      static const std::regex kTime(
          "[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z|\"time\":[0-9]+");
      r.out = std::regex_replace(r.out, kTime, "TIME");
      return r;
    };
    const ToolResult a = without_times(RunTool(tool, on_redis));
    const ToolResult b = without_times(RunTool(tool, on_embedded));
    const std::string what = ::testing::PrintToString(args);
    EXPECT_EQ(a.exit_code, b.exit_code) << what << "\n" << a.err << b.err;
    EXPECT_FALSE(a.out.empty()) << what << "\n" << a.err;
    if (any_order) {
      EXPECT_EQ(SortedLines(a.out), SortedLines(b.out)) << what;
    } else {
      EXPECT_EQ(a.out, b.out) << what;
    }
  }

  ScratchDir dir_;

 private:
  std::vector<std::string> redis_stores_;
};

// ---- The same answers as an embedded store -----------------------------------------

TEST_F(RedisToolsTest, QueriesAnswerAsTheSameLoadIntoADirectory) {
  const std::string redis = Redis(), embedded = Embedded();
  LoadSample(redis);
  LoadSample(embedded);

  // Texts and documents are fingerprinted with the store's options, in both.
  const std::string text = SampleText(200);
  ASSERT_FALSE(text.empty());
  const ToolResult fingerprint = Query({"--db", redis, "--fingerprint", "--input", kSample});
  ASSERT_EQ(fingerprint.exit_code, 0) << fingerprint.err;
  ASSERT_EQ(Lines(fingerprint.out).size(), 323u);
  const std::string hash = Lines(fingerprint.out).at(199).substr(4);  // "200\t0x..."
  ASSERT_EQ(hash.substr(0, 2), "0x") << fingerprint.out;
  const std::string hashes = dir_.Write("hashes.tsv", fingerprint.out);

  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--fingerprint", "--input", kSample},
           {"--input", kSample},
           {"--input", kSample, "--json"},
           {"--input", kSample, "--json", "--per-query"},
           {"--input", kSample, "--tsv", "--min-similarity", "0", "--distance", "2"},
           {"--input", hashes, "--format", "tsv", "--tsv"},
           {"--text", text},
           {"--text", text, "--json", "--min-similarity", "0"},
           {"--hash", hash},
           {"--hash", hash, "--json", "--distance", "1"}}) {
    ExpectSameAnswers(FPSTORE_QUERY_BINARY, {}, redis, embedded, args);
  }

  // The text of document 200 finds it, with its url.
  const ToolResult r = Query({"--db", redis, "--text", text, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "{\"id\":200,\"distance\":0,\"similarity\":1.000,")) << r.out;

  // Nothing near: exit 1 and no output, as grep, in both.
  const ToolResult none = Query({"--db", redis, "--hash", "0x0", "--distance", "0"});
  EXPECT_EQ(none.exit_code, 1) << none.err;
  EXPECT_EQ(none.out, "");
  EXPECT_EQ(Query({"--db", embedded, "--hash", "0x0", "--distance", "0"}).exit_code, 1);

  // A distance above the plan's is refused as for a directory.
  const ToolResult above = Query({"--db", redis, "--hash", hash, "--distance", "4"});
  EXPECT_EQ(above.exit_code, 2);
  EXPECT_TRUE(Contains(above.err, "--distance 4 is above the store's planned distance 3 (" + redis +
                                      " was created with --distance 3"))
      << above.err;
}

TEST_F(RedisToolsTest, ScansAndDumpsEqualTheEmbeddedStores) {
  const std::string redis = Redis(), embedded = Embedded();
  LoadSample(redis);
  LoadSample(embedded);
  // find-all's pairs come in no particular order; clusters are numbered by their least id.
  for (const char* distance : {"3", "1"}) {
    const std::vector<std::string> scan = {"--distance", distance, "--quiet"};
    ExpectSameAnswers(FPSTORE_ADMIN_BINARY, {"find-all"}, redis, embedded, scan, true);
    ExpectSameAnswers(FPSTORE_ADMIN_BINARY, {"clusters"}, redis, embedded, scan);
  }
  ExpectSameAnswers(FPSTORE_ADMIN_BINARY, {"find-all"}, redis, embedded,
                    {"--min-similarity", "0", "--quiet"}, true);
  ExpectSameAnswers(FPSTORE_ADMIN_BINARY, {"clusters"}, redis, embedded,
                    {"--min-size", "1", "--quiet"});
  EXPECT_GT(Lines(Admin({"find-all", "--db", redis, "--quiet"}).out).size(), 10u);
  EXPECT_EQ(Lines(Admin({"clusters", "--db", redis, "--min-size", "1", "--quiet"}).out).size(),
            323u);

  // The dump, in id order, is the same file; loaded into another store in Redis it dumps the same
  // again.
  const ToolResult dump = Admin({"dump", "--db", redis, "--quiet"});
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  EXPECT_EQ(Lines(dump.out).size(), 324u);  // and the header
  // The two loads ran a moment apart: their times may differ.
  const std::regex time("\t[-0-9T:]+Z\t");
  EXPECT_EQ(std::regex_replace(dump.out, time, "\tT\t"),
            std::regex_replace(Admin({"dump", "--db", embedded, "--quiet"}).out, time, "\tT\t"));
  const std::string copy = Redis("copy");
  const std::string file = dir_.Write("dump.tsv", dump.out);
  ToolResult r = Load({"--db", copy, "--input", file, "--format", "tsv", "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Admin({"dump", "--db", copy, "--quiet"}).out, dump.out);
}

TEST_F(RedisToolsTest, WritesLeaveWhatTheyLeaveInADirectory) {
  const std::string redis = Redis("written"), embedded = Embedded("written");
  for (const std::string& db : {redis, embedded}) {
    ToolResult r = Admin({"create", "--db", db, "--blocks", "5", "--distance", "2", "--window", "3",
                          "--expected-documents", "1e5"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(Contains(r.out, "created " + db + "\n")) << r.out;
    // JSONL documents, fingerprinted with the store's window; then hashes, some of them
    // replacing documents; then one more from a pipe, written as it comes.
    r = Admin({"insert", "--db", db, "--input", kSample, "--meta-column", "url", "--batch-size",
               "100", "--durability", "sync", "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(Contains(r.out, "inserted 323 documents from " + kSample + " in 4 batches; " + db +
                                    " now holds 323 documents\n"))
        << r.out;
    const std::string hashes = dir_.Write("more.tsv", "7\t0x1234\tseven\n400\t0xffff0000\t\n");
    r = Admin({"insert", "--db", db, "--input", hashes, "--format", "tsv", "--durability", "none",
               "--quiet"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = Admin({"insert", "--db", db, "--input", "-", "--format", "tsv", "--quiet"},
              "401\t0xffff0001\tpiped\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    r = Admin({"remove", "--db", db, "3", "5", "999"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.out, "removed 2 documents; 1 not found\n");
    EXPECT_EQ(r.err, "fpstore-admin: not in " + db + ": 999\n");
    // A malformed line stops the insert after the batches before it.
    const std::string bad = dir_.Write("bad.tsv", "500\t0x1\n501\t0x2\n502\tnot-a-hash\n");
    r = Admin({"insert", "--db", db, "--input", bad, "--format", "tsv", "--batch-size", "2"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(Contains(r.err, "bad.tsv:3: ")) << r.err;
    EXPECT_TRUE(Contains(r.err,
                         "(committed before it: 2 documents, lines 1-2, in 1 batch; "
                         "nothing after line 2 was inserted)"))
        << r.err;
  }
  ExpectSameAnswers(FPSTORE_ADMIN_BINARY, {"dump"}, redis, embedded, {"--quiet"});
  ExpectSameAnswers(FPSTORE_ADMIN_BINARY, {"find-all"}, redis, embedded, {"--quiet"}, true);
  const ToolResult dump = Admin({"dump", "--db", redis, "--quiet"});
  ASSERT_EQ(dump.exit_code, 0) << dump.err;
  // The header; the sample; 400, 401, 500 and 501; less 3 and 5 (7 was replaced).
  EXPECT_EQ(Lines(dump.out).size(), 1u + 323 + 4 - 2);
  EXPECT_TRUE(Contains(std::regex_replace(dump.out, std::regex("\t[-0-9T:]+Z\t"), "\tT\t"),
                       "\n7\t0x0000000000001234\tT\t-\tseven\n"))
      << dump.out;

  // The store keeps what it was created with: a load with other options is refused.
  const ToolResult r = Load({"--db", redis, "--input", kSample, "--blocks", "6"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "fpstore-load: " + redis + " was created with blocks 5, not 6\n");
  const ToolResult stats = Admin({"stats", "--db", redis});
  EXPECT_TRUE(Contains(stats.out, "plan:               blocks=5 distance=2: 10 tables"))
      << stats.out;
  EXPECT_TRUE(Contains(stats.out, "fingerprint:        v2 window=3 ")) << stats.out;
}

// ---- Looking after a store in Redis ------------------------------------------------------

TEST_F(RedisToolsTest, StatsVerifyRepairAndCompactSpeakOfRedis) {
  const std::string redis = Redis();
  LoadSample(redis, {"--blocks", "6", "--distance", "3", "--expected-documents", "1e6"});

  ToolResult r = Admin({"stats", "--db", redis});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "store:              " + redis + "\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "documents:          323\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\nRedis memory:       ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "MEMORY USAGE of the store's keys)\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "  format version:   3 (of the Redis layout")) << r.out;
  EXPECT_TRUE(Contains(r.out, "  bucket bits:      ")) << r.out;
  EXPECT_TRUE(Contains(r.out, "table  19  blocks 3,4,5")) << r.out;
  for (const char* embedded_only : {"bytes on disk", "staged", "group bits", "lone bits"}) {
    EXPECT_FALSE(Contains(r.out, embedded_only)) << embedded_only << "\n" << r.out;
  }
  r = Admin({"stats", "--db", redis, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "{\"path\":\"" + redis + "\",\"backend\":\"redis\",")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\"documents\":323,")) << r.out;
  EXPECT_TRUE(Contains(r.out, "\"staged_documents\":0,\"redis_memory_bytes\":")) << r.out;
  EXPECT_FALSE(Contains(r.out, "bytes_on_disk")) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << "one JSON object, one line";

  r = Admin({"verify", "--db", redis, "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok: " + redis + ": 323 documents, 20 tables, every entry consistent\n");
  EXPECT_EQ(r.err, "");
  r = Admin({"repair", "--db", redis, "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "repaired " + redis + ": 323 documents, 20 tables, every entry consistent\n");
  EXPECT_EQ(r.err, "");
  r = Admin({"compact", "--db", redis, "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "compacted " + redis + ": ")) << r.out;
  EXPECT_TRUE(Contains(r.out, " bytes of Redis memory before, ")) << r.out;
  r = Admin({"verify", "--db", redis, "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

// A failover that lost a table entry of a stored document: verify reports it and names repair,
// which adds it back. The damage is made with redis-cli on the seed node, where SCAN finds the
// keys that node holds.
TEST_F(RedisToolsTest, RepairMendsWhatVerifyReports) {
  const std::string redis_cli = FPSTORE_REDIS_CLI;
  if (redis_cli.empty()) GTEST_SKIP() << "no redis-cli to damage the store with";
  const std::string redis = Redis();
  LoadSample(redis);
  const std::string seed = Seed();
  const std::string host = seed.substr(0, seed.rfind(':'));
  const std::string port = seed.substr(seed.rfind(':') + 1);
  const std::string name = redis.substr(redis.rfind('/') + 1);
  const ToolResult keys =
      RunTool(redis_cli, {"-h", host, "-p", port, "--scan", "--pattern", "fps:{" + name + ":3:*"});
  ASSERT_EQ(keys.exit_code, 0) << keys.err;
  std::string bucket;
  for (const std::string& key : Lines(keys.out)) {
    if (!key.ends_with(":lock")) bucket = key;
  }
  ASSERT_FALSE(bucket.empty()) << "the seed node holds no bucket of table 3:\n" << keys.out;
  const ToolResult popped = RunTool(redis_cli, {"-c", "-h", host, "-p", port, "ZPOPMIN", bucket});
  ASSERT_EQ(popped.exit_code, 0) << popped.err;

  ToolResult r = Admin({"verify", "--db", redis, "--quiet"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(Contains(r.err, "fpstore-admin: verify failed: " + redis + ": ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "has no entry in table 3")) << r.err;
  EXPECT_TRUE(Contains(r.err, "fpstore-admin repair")) << r.err;

  r = Admin({"repair", "--db", redis, "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "repaired " + redis + ": 323 documents, 20 tables, every entry consistent\n");
  r = Admin({"verify", "--db", redis, "--quiet"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(RedisToolsTest, WhatRedisCannotDoIsRefusedClearly) {
  const std::string redis = Redis();
  LoadSample(redis);

  const std::string backup = (dir_.path() / "backup.fps").string();
  ToolResult r = Admin({"checkpoint", "--db", redis, backup});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "fpstore-admin: " + redis +
                       " lives in Redis, which keeps its own copies: use its persistence "
                       "(BGSAVE, append-only files) and replicas\n");
  EXPECT_FALSE(fs::exists(backup));

  r = Admin({"recover", "--db", redis});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "fpstore-admin: " + redis +
                       " lives in Redis, which keeps no write-ahead log of fpstore's to recover; "
                       "to mend what writes cut short left, use fpstore-admin repair\n");

  // Plans are not compared for a store in Redis, whose size is memory, not an embedded store's
  // disk; creating one says so.
  const std::string created = Redis("created");
  r = Admin({"create", "--db", created, "--expected-documents", "1e6"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "created " + created + "\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, "candidates/query:   about 0.00512 at 1,000,000 documents")) << r.out;
  EXPECT_TRUE(Contains(r.out, "no plans compared: ")) << r.out;
  EXPECT_FALSE(Contains(r.out, "suggested")) << r.out;
  EXPECT_FALSE(Contains(r.out, "chosen")) << r.out;
  r = Admin({"create", "--db", created});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "already holds a store")) << r.err;
  r = Admin({"create", "--db", Redis("budget"), "--expected-documents", "1e6", "--disk-budget", "9",
             "--dry-run"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(Contains(r.err,
                       "--disk-budget: the estimates are of an embedded store; a store in "
                       "Redis takes the cluster's memory instead"))
      << r.err;
}

// ---- Failures leave nothing behind ---------------------------------------------------------

TEST_F(RedisToolsTest, AFailedFirstLoadLeavesNoStore) {
  // Five good documents, then a line without a text: the load stops at it, after creating the
  // store, and removes the store again.
  const std::vector<std::string> lines = Lines(ReadFile(kSample));
  std::string input;
  for (int i = 0; i < 5; ++i) input += lines.at(i) + "\n";
  input += "{\"id\": 9999, \"url\": \"https://example.com/\"}\n";
  const std::string file = dir_.Write("bad.jsonl", input);
  const std::string redis = Redis("failed");
  ToolResult r = Load({"--db", redis, "--input", file, "--blocks", "7"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "fpstore-load: " + file + ":6: missing \"text\" field\n");

  StoreOptions options;
  options.create_if_missing = false;
  Result<std::unique_ptr<Store>> store = Store::Open(redis, options);
  EXPECT_TRUE(store.status().IsNotFound()) << store.status().ToString();
  r = Query({"--db", redis, "--hash", "0x1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "fpstore-query: no store at " + redis + "\n");
  r = Admin({"stats", "--db", redis});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "fpstore-admin: no store at " + redis + "\n");
  EXPECT_FALSE(fs::exists("redis:")) << "nothing named after the address on disk";

  // Into an existing store, a load that fails while reading changes nothing.
  const std::string loaded = Redis();
  LoadSample(loaded);
  r = Load({"--db", loaded, "--input", file});
  EXPECT_EQ(r.exit_code, 1);
  r = Admin({"stats", "--db", loaded, "--json"});
  EXPECT_TRUE(Contains(r.out, "\"documents\":323,")) << r.out;
}

TEST_F(RedisToolsTest, AddressesThatNameNoStoreFailWithOneClearLine) {
  const std::string not_an_address =
      "\"redis://nohost\" is not a Redis store's address "
      "(redis://[USER[:PASSWORD]@]HOST:PORT/NAME, e.g. "
      "redis://127.0.0.1:7000/crawl)\n";
  ToolResult r = Query({"--db", "redis://nohost", "--hash", "0x1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "fpstore-query: " + not_an_address);
  r = Admin({"stats", "--db", "redis://nohost"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "fpstore-admin: " + not_an_address);
  r = Load({"--db", "redis://nohost", "--input", kSample});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "fpstore-load: " + not_an_address);

  // Nothing listens on port 1.
  const std::string unreachable = "redis://127.0.0.1:1/crawl";
  r = Load({"--db", unreachable, "--input", kSample});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "fpstore-load: opening " + unreachable + ": ")) << r.err;
  EXPECT_TRUE(Contains(r.err, "127.0.0.1:1 did not answer")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  r = Admin({"verify", "--db", unreachable});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "fpstore-admin: opening " + unreachable + ": ")) << r.err;

  const std::string bad_name = "redis://" + Seed() + "/no spaces";
  r = Admin({"create", "--db", bad_name});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_TRUE(Contains(r.err, "\"no spaces\" cannot name a store in Redis")) << r.err;

  EXPECT_FALSE(fs::exists("redis:")) << "nothing named after the addresses on disk";
}

}  // namespace
}  // namespace fpstore::cli
