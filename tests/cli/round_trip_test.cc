// The sample corpus end to end, as a user would run the tools: load it with
// fpstore-load, look documents up with fpstore-query, and check that the
// planted copies of data/sample_truth.tsv are found (or not) as the
// corpus promises (data/README.md).

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/record_reader.h"
#include "scratch_dir.h"
#include "tool_runner.h"

namespace fpstore::cli {
namespace {

using fpstore::testing::RunTool;
using fpstore::testing::ScratchDir;
using fpstore::testing::ToolResult;

const std::string kSample = std::string(FPSTORE_SAMPLE_DATA) + "/sample.jsonl";
const std::string kTruth = std::string(FPSTORE_SAMPLE_DATA) + "/sample_truth.tsv";

struct Planted {
  std::uint64_t copy = 0;
  std::uint64_t original = 0;
  std::string kind;  // exact, light, moderate, heavy, unrelated
};

std::vector<Planted> ReadTruth() {
  std::vector<Planted> truth;
  std::ifstream in(kTruth);
  Planted p;
  while (in >> p.copy >> p.original >> p.kind) truth.push_back(p);
  return truth;
}

std::map<std::uint64_t, Record> ReadSample() {
  ReaderOptions options;
  options.path = kSample;
  options.meta_column = "url";
  std::unique_ptr<RecordReader> reader = RecordReader::Open(options);
  std::map<std::uint64_t, Record> docs;
  Record record;
  while (reader->Next(&record)) docs[record.id] = record;
  return docs;
}

struct JsonMatch {
  std::uint64_t query = 0;
  std::uint64_t id = 0;
  int distance = -1;
};

// The leading fields of fpstore-query's JSON lines.
std::vector<JsonMatch> ParseMatches(const std::string& out, bool batch) {
  std::vector<JsonMatch> matches;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    JsonMatch m;
    unsigned long long query = 0, id = 0;
    const int fields =
        batch ? std::sscanf(line.c_str(), "{\"query\":%llu,\"id\":%llu,\"distance\":%d", &query,
                            &id, &m.distance)
              : std::sscanf(line.c_str(), "{\"id\":%llu,\"distance\":%d", &id, &m.distance);
    EXPECT_EQ(fields, batch ? 3 : 2) << line;
    m.query = query;
    m.id = id;
    matches.push_back(m);
  }
  return matches;
}

class RoundTripTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new ScratchDir;
    db_ = (dir_->path() / "sample.fps").string();
    load_ = RunTool(FPSTORE_LOAD_BINARY, {"--db", db_, "--input", kSample, "--meta-column", "url"});
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  static ToolResult Query(std::vector<std::string> args) {
    args.insert(args.begin(), {"--db", db_});
    return RunTool(FPSTORE_QUERY_BINARY, args);
  }

  static inline ScratchDir* dir_ = nullptr;
  static inline std::string db_;
  static inline ToolResult load_;
};

TEST_F(RoundTripTest, LoadsTheSampleCorpus) {
  ASSERT_EQ(load_.exit_code, 0) << load_.err;
  EXPECT_NE(load_.err.find("fpstore-load: loaded 323 documents ("), std::string::npos) << load_.err;
  EXPECT_NE(load_.err.find("fpstore-load: 323 new, 0 replaced\n"), std::string::npos) << load_.err;
}

TEST_F(RoundTripTest, ADocumentsOwnTextFindsItAtDistanceZero) {
  ASSERT_EQ(load_.exit_code, 0) << load_.err;
  const std::map<std::uint64_t, Record> docs = ReadSample();
  for (const std::uint64_t id : {1, 200, 323}) {
    const Record& doc = docs.at(id);
    ToolResult r = Query({"--text", doc.text, "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    bool found = false;
    for (const JsonMatch& m : ParseMatches(r.out, /*batch=*/false)) {
      if (m.id == id) {
        found = true;
        EXPECT_EQ(m.distance, 0);
      }
      EXPECT_LE(m.distance, 3);
    }
    EXPECT_TRUE(found) << "document " << id << " not found by its own text:\n" << r.out;

    // The table shows the same, with the url.
    r = Query({"--text", doc.text});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.rfind("id", 0), 0u) << r.out;
    EXPECT_NE(r.out.find(doc.metadata), std::string::npos) << r.out;
  }
}

TEST_F(RoundTripTest, PlantedCopiesPairAsTheTruthFileSays) {
  ASSERT_EQ(load_.exit_code, 0) << load_.err;
  // One batch query: every document of the corpus against the store.
  const ToolResult r = Query({"--input", kSample, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::uint64_t, std::map<std::uint64_t, int>> found;  // query -> id -> distance
  for (const JsonMatch& m : ParseMatches(r.out, /*batch=*/true)) found[m.query][m.id] = m.distance;
  for (std::uint64_t id = 1; id <= 323; ++id) {
    ASSERT_EQ(found[id].count(id), 1u) << "document " << id << " must find itself";
    EXPECT_EQ(found[id][id], 0);
  }

  const std::vector<Planted> truth = ReadTruth();
  ASSERT_EQ(truth.size(), 123u);
  int must_pair = 0;
  int must_not = 0;
  for (const Planted& p : truth) {
    const auto& matches = found[p.copy];
    const bool paired = matches.count(p.original) > 0;
    if (p.kind == "exact" || p.kind == "light") {
      ++must_pair;
      EXPECT_TRUE(paired) << p.kind << " copy " << p.copy << " of " << p.original;
      if (paired) {
        EXPECT_LE(matches.at(p.original), 3);
      }
      if (p.kind == "exact" && paired) {
        EXPECT_EQ(matches.at(p.original), 0);
      }
    } else if (p.kind == "heavy" || p.kind == "unrelated") {
      ++must_not;
      EXPECT_FALSE(paired) << p.kind << " copy " << p.copy << " of " << p.original
                           << " at distance " << matches.at(p.original);
    }
  }
  EXPECT_EQ(must_pair, 75);
  EXPECT_EQ(must_not, 24);
}

// ---- fpstore-admin ------------------------------------------------------------
//
// ROUND TRIP, ADMIN STEPS (to be written with fpstore-admin): list clusters
// with `fpstore-admin clusters`, insert more with `fpstore-admin insert`,
// "restart" (a new process opens the store) and see the inserts still
// there with fpstore-query. The build defines FPSTORE_ADMIN_BINARY once the
// fpstore-admin target exists (tests/cli/CMakeLists.txt).
#ifdef FPSTORE_ADMIN_BINARY
std::string JsonQuoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The rest of the user's round trip: clusters over the loaded corpus, more
// documents through fpstore-admin insert, and every later process (a
// restart each time) still seeing them.
TEST_F(RoundTripTest, ClustersThenInsertsSurviveARestart) {
  ASSERT_EQ(load_.exit_code, 0) << load_.err;
  const ToolResult clusters =
      RunTool(FPSTORE_ADMIN_BINARY, {"clusters", "--db", db_, "--output", "-", "--quiet"});
  ASSERT_EQ(clusters.exit_code, 0) << clusters.err;
  std::map<std::uint64_t, std::uint64_t> cluster_of;
  std::istringstream lines(clusters.out);
  std::uint64_t cluster = 0, id = 0;
  while (lines >> cluster >> id) cluster_of[id] = cluster;
  for (const Planted& p : ReadTruth()) {
    if (p.kind != "exact" && p.kind != "light") continue;
    ASSERT_TRUE(cluster_of.contains(p.copy)) << "copy " << p.copy << " is in no cluster";
    EXPECT_EQ(cluster_of[p.copy], cluster_of[p.original]) << "copy " << p.copy;
  }

  // An exact copy of document 1 under a new id, and a page unlike any other.
  const std::map<std::uint64_t, Record> docs = ReadSample();
  const std::string& text = docs.at(1).text;
  const std::filesystem::path more = dir_->path() / "more.jsonl";
  {
    std::ofstream out(more);
    out << "{\"id\": 5000, \"url\": \"https://copy.example.net/1\", \"text\": " << JsonQuoted(text)
        << "}\n";
    out << "{\"id\": 5001, \"url\": \"https://other.example.net/\", \"text\": "
        << "\"zebra quantum harbour violin cactus meteor lantern\"}\n";
  }
  const ToolResult insert =
      RunTool(FPSTORE_ADMIN_BINARY, {"insert", "--db", db_, "--input", more.string(),
                                     "--meta-column", "url", "--durability", "sync", "--quiet"});
  ASSERT_EQ(insert.exit_code, 0) << insert.err;

  const ToolResult stats = RunTool(FPSTORE_ADMIN_BINARY, {"stats", "--db", db_, "--json"});
  ASSERT_EQ(stats.exit_code, 0) << stats.err;
  EXPECT_NE(stats.out.find("\"documents\":325"), std::string::npos) << stats.out;
  const ToolResult found = Query({"--text", text, "--json"});
  ASSERT_EQ(found.exit_code, 0) << found.err;
  bool copy_found = false;
  for (const JsonMatch& m : ParseMatches(found.out, false)) {
    copy_found |= m.id == 5000 && m.distance == 0;
  }
  EXPECT_TRUE(copy_found) << found.out;
  const ToolResult verify = RunTool(FPSTORE_ADMIN_BINARY, {"verify", "--db", db_, "--quiet"});
  EXPECT_EQ(verify.exit_code, 0) << verify.out << verify.err;
}
#endif

}  // namespace
}  // namespace fpstore::cli
