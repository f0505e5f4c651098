// Runs the real fpstore-query binary, as a user would.

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/parse.h"
#include "fpstore/fingerprinter.h"
#include "fpstore/store.h"
#include "scratch_dir.h"
#include "tool_runner.h"

namespace fpstore::cli {
namespace {

using fpstore::testing::Data;
using fpstore::testing::kData;
using fpstore::testing::ReadFile;
using fpstore::testing::RunTool;
using fpstore::testing::ScratchDir;
using fpstore::testing::ToolResult;

ToolResult Query(const std::vector<std::string>& args, const std::string& input = "") {
  return RunTool(FPSTORE_QUERY_BINARY, args, input);
}

// The library's fingerprint of `text`, formatted as the tool prints it.
std::string Expected(std::string_view text, FingerprintOptions options = {}) {
  Result<Fingerprinter> f = Fingerprinter::Create(options);
  EXPECT_TRUE(f.ok());
  Result<Fingerprint> fp = f->FromText(text);
  EXPECT_TRUE(fp.ok()) << fp.status().ToString();
  return FormatFingerprint(fp.ok() ? *fp : 0);
}

const char* const kFox = "The quick brown fox jumps over the lazy dog.";

// ---- --fingerprint ----------------------------------------------------------

TEST(FingerprintModeTest, TextMatchesTheLibrary) {
  for (const std::string& text :
       {std::string(kFox), std::string("été à Paris, 全角テキスト"), std::string("one")}) {
    const ToolResult r = Query({"--fingerprint", "--text", text});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, Expected(text) + "\n");
    EXPECT_EQ(r.err, "");
  }
}

TEST(FingerprintModeTest, WindowAndWeightingMatchTheLibrary) {
  const std::string text = "a rose is a rose is a rose, said Gertrude Stein";
  FingerprintOptions options;
  options.window = 1;
  options.weighting = FeatureWeighting::kPresence;
  const ToolResult r =
      Query({"--fingerprint", "--text", text, "--window", "1", "--weighting", "presence"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, Expected(text, options) + "\n");
  EXPECT_NE(r.out, Expected(text) + "\n") << "the options must make a difference here";
}

TEST(FingerprintModeTest, OneHundredTwentyEightBitsMatchTheLibrary) {
  FingerprintOptions options;
  options.bits = 128;
  const Fingerprint fp = *Fingerprinter::Create(options)->FromText(kFox);
  ToolResult r = Query({"--fingerprint", "--text", kFox, "--bits", "128"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, FormatFingerprint(fp, 128) + "\n");
  EXPECT_EQ(r.out.size(), 2 + 32 + 1u);
  // Two texts' distance at that width.
  const Fingerprint other = *Fingerprinter::Create(options)->FromText("The quick brown fox.");
  r = Query(
      {"--distance-between", "--text", kFox, "--text", "The quick brown fox.", "--bits", "128"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::to_string(HammingDistance(fp, other)) + "\n");
  r = Query({"--fingerprint", "--text", kFox, "--bits", "96"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--bits: 96 is neither 64 nor 128"), std::string::npos) << r.err;
}

TEST(FingerprintModeTest, FileAndStdinMatchText) {
  ScratchDir dir;
  const std::string path = dir.Write("fox.txt", kFox);
  const std::string expected = Expected(kFox) + "\n";
  ToolResult r = Query({"--fingerprint", "--file", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected);
  r = Query({"--fingerprint", "--file", "-"}, kFox);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, expected);
}

TEST(FingerprintModeTest, InputMatchesGoldenFileAndLibrary) {
  const ToolResult r = Query({"--fingerprint", "--input", Data("docs.jsonl"), "--window", "3"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // The golden file pins the fingerprints at window 3: they are persisted
  // in stores, so they must never change for the same text and options.
  EXPECT_EQ(r.out, ReadFile(Data("docs.expected")));
  EXPECT_EQ(r.err, "") << "no progress when stderr is not a terminal";

  // And each line is what the library computes for that document.
  const std::vector<std::pair<std::string, std::string>> docs = {
      {"1", "The quick brown fox jumps over the lazy dog."},
      {"2", "The quick brown fox jumped over the lazy dogs!"},
      {"3", "Simhash fingerprints: similar documents, nearby bits."},
      {"18446744073709551615", "Ünïcödé text, ﬁne ligatures and 全角 letters."},
      {"0", "été \"quoted\" and escaped\nnewline"}};
  std::string expected;
  for (const auto& [id, text] : docs) {
    expected += id + "\t" + Expected(text, {.window = 3}) + "\n";
  }
  EXPECT_EQ(r.out, expected);
}

TEST(FingerprintModeTest, CrLfLinesGiveTheSameFingerprints) {
  const ToolResult crlf = Query({"--fingerprint", "--input", Data("crlf.jsonl"), "--window", "3"});
  EXPECT_EQ(crlf.exit_code, 0) << crlf.err;
  const std::string golden = ReadFile(Data("docs.expected"));
  std::string first_three;
  std::istringstream lines(golden);
  std::string line;
  for (int i = 0; i < 3 && std::getline(lines, line); ++i) first_three += line + "\n";
  EXPECT_EQ(crlf.out, first_three);
}

TEST(FingerprintModeTest, InputFromStdin) {
  const ToolResult r =
      Query({"--fingerprint", "--input", "-", "--window", "3"}, ReadFile(Data("docs.jsonl")));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, ReadFile(Data("docs.expected")));
}

TEST(FingerprintModeTest, ColumnOptionsInBothSpellings) {
  const std::string expected = "5\t" + Expected("custom columns") + "\n";
  for (const auto& [text_flag, id_flag] : std::vector<std::pair<std::string, std::string>>{
           {"--text-column", "--id-column"}, {"--text_column", "--id_column"}}) {
    const ToolResult r = Query({"--fingerprint", "--input", Data("columns.jsonl"), text_flag,
                                "body", id_flag, "doc_id", "--format", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, expected);
  }
}

TEST(FingerprintModeTest, FiftyMegabyteLine) {
  std::string text;
  const char* const words[] = {"alpha ", "beta ", "gamma ", "delta ", "epsilon ", "zeta "};
  for (std::size_t i = 0; text.size() < 50'000'000; ++i) text += words[(i * 7 + i / 5) % 6];
  ScratchDir dir;
  const std::string path = dir.Write(
      "big.jsonl", "{\"id\": 1, \"text\": \"" + text + "\"}\r\n{\"id\": 2, \"text\": \"x\"}\n");
  const ToolResult r = Query({"--fingerprint", "--input", path});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1\t" + Expected(text) + "\n2\t" + Expected("x") + "\n");
}

// ---- Bad input: one clear message naming the file and line, exit 2 ----------

struct BadInput {
  std::string file;
  std::string message;  // after "fpstore-query: <dir>/"
};

void PrintTo(const BadInput& bad, std::ostream* os) { *os << bad.file; }

class BadInputTest : public ::testing::TestWithParam<BadInput> {};

TEST_P(BadInputTest, FailsWithFileLineAndReason) {
  const BadInput& bad = GetParam();
  const ToolResult r = Query({"--fingerprint", "--input", Data(bad.file)});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "fpstore-query: " + kData + "/" + bad.message + "\n");
}

const std::string kBadId =
    "\"id\" must be an integer from 0 to 18446744073709551615 or a string of its digits, got ";

INSTANTIATE_TEST_SUITE_P(
    Fixtures, BadInputTest,
    ::testing::Values(
        BadInput{"malformed.jsonl",
                 "malformed.jsonl:2: invalid JSON: The JSON document has an improper structure: "
                 "missing or superfluous commas, braces, missing keys, etc."},
        BadInput{"missing_text.jsonl", "missing_text.jsonl:3: missing \"text\" field"},
        BadInput{"missing_id.jsonl", "missing_id.jsonl:2: missing \"id\" field"},
        BadInput{"columns.jsonl", "columns.jsonl:1: missing \"id\" field"},
        BadInput{"negative_id.jsonl", "negative_id.jsonl:1: " + kBadId + "-5"},
        BadInput{"float_id.jsonl", "float_id.jsonl:2: " + kBadId + "2.5"},
        BadInput{"float_whole_id.jsonl", "float_whole_id.jsonl:1: " + kBadId + "7.0"},
        BadInput{"id_overflow.jsonl", "id_overflow.jsonl:2: " + kBadId + "18446744073709551616"},
        BadInput{"string_id.jsonl", "string_id.jsonl:1: " + kBadId + "\"12a\""},
        BadInput{"text_not_string.jsonl",
                 "text_not_string.jsonl:1: \"text\" must be a string, got 42"},
        BadInput{"empty_text.jsonl", "empty_text.jsonl:1: \"text\" is empty"},
        BadInput{"invalid_utf8.jsonl",
                 "invalid_utf8.jsonl:2: invalid UTF-8 at byte offset 23 of the line"},
        BadInput{"bad_escape.jsonl",
                 "bad_escape.jsonl:1: invalid JSON: a string has an invalid escape (e.g. a lone "
                 "\\ud800 surrogate)"},
        BadInput{"not_object.jsonl", "not_object.jsonl:1: expected a JSON object, got [1,2,3]"},
        BadInput{"empty.jsonl", "empty.jsonl: empty input (no records)"},
        BadInput{"blank.jsonl", "blank.jsonl: empty input (no records)"}),
    [](const ::testing::TestParamInfo<BadInput>& info) {
      std::string name = info.param.file.substr(0, info.param.file.find('.'));
      return name;
    });

TEST(BadQueryInputTest, MissingFileSaysCannotOpen) {
  const ToolResult r = Query({"--fingerprint", "--input", Data("missing.jsonl")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "fpstore-query: cannot open " + Data("missing.jsonl") +
                       ": No such file or directory\n");
  const ToolResult file = Query({"--fingerprint", "--file", Data("missing.txt")});
  EXPECT_EQ(file.exit_code, 2);
  EXPECT_EQ(file.err,
            "fpstore-query: cannot open " + Data("missing.txt") + ": No such file or directory\n");
}

TEST(BadQueryInputTest, RecordsBeforeTheBadLineAreStillPrinted) {
  const ToolResult r = Query({"--fingerprint", "--input", Data("missing_text.jsonl")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "1\t" + Expected("fine") + "\n2\t" + Expected("fine") + "\n");
}

TEST(BadQueryInputTest, InvalidUtf8InTextAndFile) {
  ToolResult r = Query({"--fingerprint", "--text", "bad \xFF byte"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "fpstore-query: --text: invalid UTF-8 at byte offset 4\n");
  ScratchDir dir;
  const std::string path = dir.Write("bad.txt", "ok\n\xC3\x28");
  r = Query({"--fingerprint", "--file", path});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "fpstore-query: " + path + ": invalid UTF-8 at byte offset 3\n");
  r = Query({"--fingerprint", "--file", dir.Write("empty.txt", "")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "fpstore-query: " + (dir.path() / "empty.txt").string() + ": empty text\n");
}

// ---- --distance-between -----------------------------------------------------

TEST(DistanceModeTest, BetweenTwoHashes) {
  ToolResult r = Query({"--distance-between", "0x0123456789abcdef", "0x0123456789abcdee"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "1\n");
  r = Query({"--distance-between", "0", "18446744073709551615"});
  EXPECT_EQ(r.out, "64\n");
  r = Query({"--distance-between", "81985529216486895", "0x0123456789ABCDEF"});
  EXPECT_EQ(r.out, "0\n");
  // 128-bit values, as 32 hex digits or unsigned decimal.
  r = Query({"--distance-between", "0xffffffffffffffffffffffffffffffff", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "128\n");
  r = Query({"--distance-between", "0x00000000000000010000000000000001", "18446744073709551617"});
  EXPECT_EQ(r.out, "0\n");
  r = Query({"--distance-between", "0x80000000000000000000000000000000", "0x1", "--distance", "2"});
  EXPECT_EQ(r.out, "2\n");
  EXPECT_EQ(r.exit_code, 0);
}

TEST(DistanceModeTest, ThresholdGivesGrepLikeStatus) {
  ToolResult r = Query({"--distance-between", "0x0", "0x7", "--distance", "3"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "3\n");
  r = Query({"--distance-between", "0x0", "0xf", "--distance", "3"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "4\n");
}

TEST(DistanceModeTest, BetweenTextsAndFiles) {
  const std::string other = "The quick brown fox jumped over the lazy dogs!";
  const int expected =
      HammingDistance(*ParseFingerprint(Expected(kFox)), *ParseFingerprint(Expected(other)));
  ScratchDir dir;
  const std::string a = dir.Write("a.txt", kFox);
  const std::string b = dir.Write("b.txt", other);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--distance-between", "--file", a, "--file", b},
        std::vector<std::string>{"--distance-between", "--text", kFox, "--text", other},
        std::vector<std::string>{"--text", kFox, "--distance-between", "--file", b},
        std::vector<std::string>{"--distance-between", Expected(kFox), "--file", b}}) {
    const ToolResult r = Query(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, std::to_string(expected) + "\n");
  }
}

// ---- Usage errors: exit 2 with a hint ---------------------------------------

struct Usage {
  std::vector<std::string> args;
  std::string message;
};

void PrintTo(const Usage& usage, std::ostream* os) {
  *os << "fpstore-query";
  for (const std::string& arg : usage.args) *os << " '" << arg << "'";
}

class UsageErrorTest : public ::testing::TestWithParam<Usage> {};

TEST_P(UsageErrorTest, Exit2WithOneLineAndAHint) {
  const ToolResult r = Query(GetParam().args);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "fpstore-query: " + GetParam().message +
                       "\nTry 'fpstore-query --help' for more information.\n");
}

INSTANTIATE_TEST_SUITE_P(
    CommandLines, UsageErrorTest,
    ::testing::Values(
        Usage{{},
              "nothing to do: give --db STORE and what to look for, or --fingerprint, or "
              "--distance-between"},
        Usage{{"--bogus"}, "unrecognised option \"--bogus\""},
        Usage{{"--finger", "--text", "x"}, "unrecognised option \"--finger\""},
        Usage{{"--fingerprint"}, "--fingerprint needs --text, --file or --input"},
        Usage{{"--fingerprint", "--text", "a", "--file", "b"},
              "--fingerprint takes one of --text, --file or --input"},
        Usage{{"--fingerprint", "--text", ""}, "--text: empty text"},
        Usage{{"--fingerprint", "--text", "a", "--window", "0"},
              "--window: \"0\" is not a whole number from 1 to 64"},
        Usage{{"--fingerprint", "--text", "a", "--window", "three"},
              "--window: \"three\" is not a whole number from 1 to 64"},
        Usage{{"--fingerprint", "--text", "a", "--weighting", "idf"},
              "--weighting: unknown weighting \"idf\" (expected tf or presence)"},
        Usage{{"--fingerprint", "--input", "x.tsv", "--format", "tsv"},
              "--fingerprint --input reads JSONL documents; --format tsv holds fingerprints "
              "already"},
        Usage{{"--fingerprint", "--input", "x", "--format", "xml"},
              "--format: unknown format \"xml\" (expected jsonl, tsv or hash)"},
        Usage{{"--fingerprint", "--text", "a", "--json"},
              "--json cannot be used with --fingerprint"},
        Usage{{"--fingerprint", "--distance-between", "1", "2"},
              "--fingerprint and --distance-between cannot be used together"},
        Usage{{"--fingerprint", "stray", "--text", "a"}, "unexpected argument \"stray\""},
        Usage{{"--distance-between", "0x1"},
              "--distance-between needs two fingerprints (hashes, --text or --file), got 1"},
        Usage{{"--distance-between", "1", "2", "3"},
              "--distance-between needs two fingerprints (hashes, --text or --file), got 3"},
        Usage{{"--distance-between", "0x1", "0x100000000000000000000000000000000"},
              "--distance-between: hash \"0x100000000000000000000000000000000\" does not fit in "
              "128 bits"},
        Usage{{"--distance-between", "0x1", "banana"},
              "--distance-between: hash \"banana\" is not a decimal or 0x-hexadecimal number"},
        Usage{{"--distance-between", "1", "2", "--window", "5"},
              "--window, --weighting and --bits only apply to --text and --file, not to hashes"},
        Usage{{"--distance-between", "1", "2", "--db", "store"},
              "--db only applies to --text and --file, not to hashes"},
        Usage{{"--distance-between", "1", "2", "--distance", "129"},
              "--distance: \"129\" is not a whole number from 0 to 128"},
        Usage{{"--text", "a"},
              "searching needs --db STORE (the store); to print a fingerprint, add --fingerprint"},
        Usage{{"--db", "store"}, "--db needs one of --hash, --text, --file or --input"},
        Usage{{"--db", "store", "--hash", "-1"},
              "--hash: hash \"-1\" has a sign; hashes are unsigned 64-bit integers"},
        Usage{{"--db", "store", "--hash", "0xzz"},
              "--hash: hash \"0xzz\" is not a hexadecimal number"},
        Usage{{"--db", "store", "--hash", "1", "--text", "a"},
              "give only one of --hash, --text, --file or --input"}));

// ---- Searching a store (--db) ------------------------------------------------

// A store made with the library: the fox texts and a few hashes.
class StoreModeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    db_ = (dir_.path() / "store").string();
    StoreOptions options;
    options.fingerprint = FingerprintOptions{};
    options.fingerprint->window = 2;  // not the default: the tool must use the store's
    options.clock = [] { return DocumentTime{1'764'576'000}; };  // 2025-12-01T08:00:00Z
    Result<std::unique_ptr<Store>> store = Store::Open(db_, options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    const Sketch fox = *(*store)->fingerprinter().SketchText(kFox);
    fox_ = fox.fingerprint;
    // The first is signed, as a text is; the others are bare fingerprints.
    const std::vector<NewDocument> docs = {
        {1, fox_, "https://example.com/fox", fox.signature},
        {2, fox_ ^ 0b101, "tab\there, line\nend, quote \" and \xff byte", {}, 1'764'576'005},
        {30, fox_ ^ 0xF000'0000'0000'0000u, ""},
        {4, ~fox_.low(), "far away"}};
    ASSERT_TRUE((*store)->InsertBatch(docs).ok());
    ASSERT_TRUE((*store)->Close().ok());
  }

  ToolResult Search(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {"--db", db_});
    return Query(args, input);
  }

  ScratchDir dir_;
  std::string db_;
  Fingerprint fox_ = 0;
};

TEST_F(StoreModeTest, TextIsFingerprintedWithTheStoresOptions) {
  const ToolResult r = Search({"--text", kFox});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out,
            "id  distance  similarity  fingerprint         time                  metadata\n"
            "1   0         1.000       " +
                FormatFingerprint(fox_) +
                "  2025-12-01T08:00:00Z  https://example.com/fox\n"
                "2   2         -           " +
                FormatFingerprint(fox_ ^ 0b101) +
                "  2025-12-01T08:00:05Z  tab\\there, line\\nend, quote \" and \xff byte\n");
}

TEST(SearchSimilarityTest, MinSimilarityRefusesCandidatesAndIsRangeChecked) {
  ScratchDir dir;
  const std::string db = (dir.path() / "store").string();
  {
    std::unique_ptr<Store> store = *Store::Open(db);
    const Sketch fox = *store->fingerprinter().SketchText(kFox);
    const Sketch other = *store->fingerprinter().SketchText("other words altogether, not a fox");
    // One bit from the fox, but signed as another text: a candidate that is no near-copy.
    const std::vector<NewDocument> docs = {{1, fox.fingerprint, "fox", fox.signature},
                                           {2, fox.fingerprint ^ 1, "impostor", other.signature}};
    ASSERT_TRUE(store->InsertBatch(docs).ok());
    ASSERT_TRUE(store->Close().ok());
  }
  ToolResult r = Query({"--db", db, "--text", kFox});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fox"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("impostor"), std::string::npos) << r.out;
  r = Query({"--db", db, "--text", kFox, "--min-similarity", "0", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"id\":2,\"distance\":1,\"similarity\":0."), std::string::npos) << r.out;
  // A hash has no signature: the impostor stands on its distance.
  r = Query({"--db", db, "--hash", FormatFingerprint(*ParseFingerprint(Expected(kFox)))});
  EXPECT_NE(r.out.find("impostor"), std::string::npos) << r.out;
  for (const char* bad : {"1.5", "-0.1", "x", "0.5x", ""}) {
    r = Query({"--db", db, "--text", kFox, "--min-similarity", bad});
    EXPECT_EQ(r.exit_code, 2) << bad;
    EXPECT_NE(r.err.find("--min-similarity"), std::string::npos) << r.err;
  }
}

TEST_F(StoreModeTest, HashFileAndJson) {
  ScratchDir dir;
  const std::string file = dir.Write("fox.txt", kFox);
  // A hash has no signature: nothing it matches has a similarity.
  auto expected = [&](const char* similarity) {
    return "{\"id\":1,\"distance\":0,\"similarity\":" + std::string(similarity) +
           ",\"fingerprint\":\"" + FormatFingerprint(fox_) +
           "\",\"time\":1764576000,\"metadata\":\"https://example.com/fox\"}\n"
           "{\"id\":2,\"distance\":2,\"similarity\":null,\"fingerprint\":\"" +
           FormatFingerprint(fox_ ^ 0b101) +
           "\",\"time\":1764576005,\"metadata\":\"tab\\there, line\\nend, quote \\\" and \\ufffd "
           "byte\"}\n";
  };
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--hash", FormatFingerprint(fox_), "--json"},
        std::vector<std::string>{"--hash", FormatFingerprintDecimal(fox_), "--json"},
        std::vector<std::string>{"--file", file, "--json"},
        std::vector<std::string>{"--file", "-", "--json"}}) {
    const ToolResult r = Search(args, kFox);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, expected(args[0] == "--hash" ? "null" : "1.000"));
  }
}

TEST_F(StoreModeTest, DistanceNarrowsTheSearch) {
  ToolResult r = Search({"--hash", FormatFingerprint(fox_), "--distance", "1", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  r = Search({"--hash", FormatFingerprint(fox_ ^ 0xF000'0000'0000'0000u), "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("{\"id\":30,\"distance\":0,", 0), 0u) << r.out;
}

// Driven as a coprocess through pipes: each line is answered, one JSON object per query, before
// the next is written, so a program knows where each answer ends.
TEST_F(StoreModeTest, AnswersEachLineOfAPipeBeforeTheNext) {
  fpstore::testing::Coprocess query(
      FPSTORE_QUERY_BINARY,
      {"--db", db_, "--input", "-", "--format", "tsv", "--json", "--per-query", "--quiet"});
  const std::vector<std::pair<std::string, std::string>> lines = {
      {"7\t" + FormatFingerprint(fox_ ^ 0xF000'0000'0000'0000u),
       "{\"query\":7,\"matches\":[{\"id\":30,\"distance\":0,\"similarity\":null,"
       "\"fingerprint\":\"" +
           FormatFingerprint(fox_ ^ 0xF000'0000'0000'0000u) +
           "\",\"time\":1764576000,\"metadata\":\"\"}]}"},
      {"8\t0x5555555555555555", "{\"query\":8,\"matches\":[]}"},
      {"9\t" + FormatFingerprint(~fox_.low()),
       "{\"query\":9,\"matches\":[{\"id\":4,\"distance\":0,\"similarity\":null,"
       "\"fingerprint\":\"" +
           FormatFingerprint(~fox_.low()) + "\",\"time\":1764576000,\"metadata\":\"far away\"}]}"}};
  for (const auto& [line, answer] : lines) {
    ASSERT_TRUE(query.Write(line + "\n"));
    EXPECT_EQ(query.ReadLine(), answer) << "no answer to " << line << " before the next line";
  }
  EXPECT_EQ(query.Wait(), 0);
}

TEST_F(StoreModeTest, TsvOutputIsStableAndEscaped) {
  const std::string input = "7\t" + FormatFingerprint(fox_ ^ 0b101) + "\n8\t0x5555555555555555\n";
  ToolResult r = Search({"--input", "-", "--format", "tsv", "--tsv", "--distance", "0"}, input);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "query\tid\tdistance\tsimilarity\tfingerprint\ttime\tmetadata\n7\t2\t0\t-\t" +
                       FormatFingerprint(fox_ ^ 0b101) +
                       "\t2025-12-01T08:00:05Z\ttab\\there, line\\nend, quote \" and \xff byte\n");
  const std::string expected = r.out;
  ScratchDir dir;
  const std::string file = (dir.path() / "matches.tsv").string();
  r = Search({"--input", "-", "--format", "tsv", "--tsv", "--distance", "0", "--output", file},
             input);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(fpstore::testing::ReadFile(file), expected);
  r = Search({"--hash", "0x5555555555555555", "--tsv"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "id\tdistance\tsimilarity\tfingerprint\ttime\tmetadata\n");
  r = Search({"--hash", "1", "--tsv", "--json"});
  EXPECT_EQ(r.exit_code, 2);
  r = Search({"--hash", "1", "--per-query"});
  EXPECT_EQ(r.exit_code, 2);
}

TEST_F(StoreModeTest, NothingFoundExit1) {
  const ToolResult r = Search({"--hash", "0x5555555555555555"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "");
}

TEST_F(StoreModeTest, BatchFromTsvAndJsonl) {
  ScratchDir dir;
  const std::string tsv =
      dir.Write("q.tsv", "7\t" + FormatFingerprint(fox_) + "\n8\t0x5555555555555555\n9\t" +
                             FormatFingerprint(~fox_.low()) + "\n");
  ToolResult r = Search({"--input", tsv, "--format", "tsv"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "query  id  distance  similarity  fingerprint         time                  metadata\n"
            "7      1   0         -           " +
                FormatFingerprint(fox_) +
                "  2025-12-01T08:00:00Z  https://example.com/fox\n"
                "7      2   2         -           " +
                FormatFingerprint(fox_ ^ 0b101) +
                "  2025-12-01T08:00:05Z  tab\\there, line\\nend, quote \" and \xff byte\n"
                "9      4   0         -           " +
                FormatFingerprint(~fox_.low()) + "  2025-12-01T08:00:00Z  far away\n");

  const std::string jsonl =
      dir.Write("q.jsonl", "{\"id\": 70, \"text\": \"" + std::string(kFox) + "\"}\n");
  r = Search({"--input", jsonl, "--json", "--distance", "0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "{\"query\":70,\"id\":1,\"distance\":0,\"similarity\":1.000,\"fingerprint\":\"" +
                       FormatFingerprint(fox_) +
                       "\",\"time\":1764576000,\"metadata\":\"https://example.com/fox\"}\n");

  r = Search({"--input", "-", "--format", "hash"}, "0x5555555555555555\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
}

TEST_F(StoreModeTest, BadBatchLineNamesTheFileAndLine) {
  const ToolResult r = Search({"--input", Data("missing_text.jsonl")});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "fpstore-query: " + Data("missing_text.jsonl") + ":3: missing \"text\" field\n");
}

TEST_F(StoreModeTest, DistanceAboveThePlannedDistance) {
  const ToolResult r = Search({"--hash", "0x1", "--distance", "4"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, "fpstore-query: --distance 4 is above the store's planned distance 3 (" + db_ +
                       " was created with --distance 3; it finds every near-duplicate within "
                       "that many bits, not beyond)\n"
                       "Try 'fpstore-query --help' for more information.\n");
}

TEST_F(StoreModeTest, WorksBesideAWriter) {
  Result<std::unique_ptr<Store>> writer = Store::Open(db_);
  ASSERT_TRUE(writer.ok()) << writer.status().ToString();
  ASSERT_TRUE((*writer)->Insert(5, fox_ ^ 1, "written meanwhile").ok());
  const ToolResult r = Search({"--text", kFox, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\"id\":1,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("written meanwhile"), std::string::npos) << r.out;
  ASSERT_TRUE((*writer)->Close().ok());
}

TEST_F(StoreModeTest, FingerprintAndDistanceBetweenUseTheStoresOptions) {
  FingerprintOptions options;
  options.window = 2;
  ToolResult r = Search({"--fingerprint", "--text", kFox});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, FormatFingerprint(fox_) + "\n");
  EXPECT_EQ(r.out, Expected(kFox, options) + "\n");
  EXPECT_NE(r.out, Expected(kFox) + "\n");

  r = Search({"--fingerprint", "--text", kFox, "--window", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = Search({"--fingerprint", "--text", kFox, "--window", "3"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "fpstore-query: " + db_ +
                       " was created with fingerprint options \"v2 window=2 weighting=tf "
                       "signature=64 signature_window=5\", not \"v2 window=3 weighting=tf "
                       "signature=64 signature_window=5\" (leave out the fingerprint options "
                       "--window, --weighting and --signature-* to use the store's)\n");

  r = Search({"--distance-between", "--text", kFox, "--text", "The quick brown fox"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::to_string(HammingDistance(
                       fox_, *ParseFingerprint(Expected("The quick brown fox", options)))) +
                       "\n");
}

TEST(StoreModeErrorTest, NoStore) {
  ScratchDir dir;
  const std::string db = (dir.path() / "none").string();
  const ToolResult r = Query({"--db", db, "--hash", "0x1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err, "fpstore-query: no store at " + db + "\n");
  EXPECT_FALSE(std::filesystem::exists(db)) << "a query creates nothing";
}

// ---- Help --------------------------------------------------------------------

TEST(HelpTest, ShowsEveryOptionWithAnExample) {
  const ToolResult r = Query({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "");
  for (const char* option : {"--db STORE",
                             "--fingerprint",
                             "--distance-between",
                             "--hash H",
                             "--text T",
                             "--file F",
                             "--input FILE",
                             "--format F",
                             "--text-column KEY",
                             "--id-column KEY",
                             "--meta-column KEY",
                             "--window N",
                             "--weighting W",
                             "--distance K",
                             "--json",
                             "--quiet",
                             "--help",
                             "--version",
                             "--text_column",
                             "--id_column"}) {
    EXPECT_NE(r.out.find(option), std::string::npos) << option;
  }
  EXPECT_NE(r.out.find("Examples:"), std::string::npos);
  EXPECT_NE(r.out.find("Exit status"), std::string::npos);
  // Every option line (but help and version) ends its description with an example.
  std::istringstream lines(r.out);
  std::string line;
  std::string description;
  int options = 0;
  auto check = [&] {
    if (description.empty()) return;
    ++options;
    if (description.find("--help") == std::string::npos &&
        description.find("--version") == std::string::npos) {
      EXPECT_NE(description.find("e.g. "), std::string::npos) << description;
    }
    description.clear();
  };
  bool in_options = false;
  while (std::getline(lines, line)) {
    if (line == "Examples:") break;
    if (line == "Mode:") in_options = true;
    if (!in_options) continue;
    if (line.starts_with("  -")) check();
    if (line.starts_with("  ")) description += line;
  }
  check();
  EXPECT_GE(options, 17);
}

TEST(HelpTest, Version) {
  const ToolResult r = Query({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(r.out.starts_with("fpstore-query (fpstore) ")) << r.out;
}

}  // namespace
}  // namespace fpstore::cli
