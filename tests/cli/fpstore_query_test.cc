// Runs the real fpstore-query binary, as a user would.

#include <gtest/gtest.h>

#include <fstream>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/parse.h"
#include "fpstore/fingerprinter.h"
#include "scratch_dir.h"
#include "tool_runner.h"

namespace fpstore::cli {
namespace {

using fpstore::testing::RunTool;
using fpstore::testing::ScratchDir;
using fpstore::testing::ToolResult;

const std::string kData = FPSTORE_CLI_TEST_DATA;

ToolResult Query(const std::vector<std::string>& args, const std::string& input = "") {
  return RunTool(FPSTORE_QUERY_BINARY, args, input);
}

std::string Data(const std::string& name) { return kData + "/" + name; }

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
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
  const ToolResult r = Query({"--fingerprint", "--input", Data("docs.jsonl")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // The golden file pins the fingerprints: they are persisted in stores,
  // so they must never change for the same text and options.
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
  for (const auto& [id, text] : docs) expected += id + "\t" + Expected(text) + "\n";
  EXPECT_EQ(r.out, expected);
}

TEST(FingerprintModeTest, CrLfLinesGiveTheSameFingerprints) {
  const ToolResult crlf = Query({"--fingerprint", "--input", Data("crlf.jsonl")});
  EXPECT_EQ(crlf.exit_code, 0) << crlf.err;
  const std::string golden = ReadFile(Data("docs.expected"));
  std::string first_three;
  std::istringstream lines(golden);
  std::string line;
  for (int i = 0; i < 3 && std::getline(lines, line); ++i) first_three += line + "\n";
  EXPECT_EQ(crlf.out, first_three);
}

TEST(FingerprintModeTest, InputFromStdin) {
  const ToolResult r = Query({"--fingerprint", "--input", "-"}, ReadFile(Data("docs.jsonl")));
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
              "nothing to do: give --db DIR and what to look for, or --fingerprint, or "
              "--distance-between"},
        Usage{{"--bogus"}, "unrecognised option '--bogus'"},
        Usage{{"--finger", "--text", "x"}, "unrecognised option '--finger'"},
        Usage{{"--fingerprint"}, "--fingerprint needs --text, --file or --input"},
        Usage{{"--fingerprint", "--text", "a", "--file", "b"},
              "--fingerprint takes one of --text, --file or --input"},
        Usage{{"--fingerprint", "--text", ""}, "--text: empty text"},
        Usage{{"--fingerprint", "--text", "a", "--window", "0"},
              "--window: window 0 out of range (1 to 64)"},
        Usage{{"--fingerprint", "--text", "a", "--window", "three"},
              "the argument ('three') for option '--window' is invalid"},
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
        Usage{{"--fingerprint", "stray", "--text", "a"}, "unexpected argument 'stray'"},
        Usage{{"--distance-between", "0x1"},
              "--distance-between needs two fingerprints (hashes, --text or --file), got 1"},
        Usage{{"--distance-between", "1", "2", "3"},
              "--distance-between needs two fingerprints (hashes, --text or --file), got 3"},
        Usage{{"--distance-between", "0x1", "0x10000000000000000"},
              "--distance-between: hash \"0x10000000000000000\" does not fit in 64 bits"},
        Usage{{"--distance-between", "0x1", "banana"},
              "--distance-between: hash \"banana\" is not a decimal or 0x-hexadecimal number"},
        Usage{{"--distance-between", "1", "2", "--window", "5"},
              "--window and --weighting only apply to --text and --file, not to hashes"},
        Usage{{"--distance-between", "1", "2", "--db", "store"},
              "--db only applies to --text and --file, not to hashes"},
        Usage{{"--distance-between", "1", "2", "--distance", "65"},
              "--distance: 65 is out of range (0 to 64)"},
        Usage{{"--text", "a"},
              "searching needs --db DIR (the store); to print a fingerprint, add --fingerprint"},
        Usage{{"--db", "store"}, "--db needs one of --hash, --text, --file or --input"},
        Usage{{"--db", "store", "--hash", "-1"},
              "--hash: hash \"-1\" has a sign; hashes are unsigned 64-bit integers"},
        Usage{{"--db", "store", "--hash", "0xzz"},
              "--hash: hash \"0xzz\" is not a hexadecimal number"},
        Usage{{"--db", "store", "--hash", "1", "--text", "a"},
              "give only one of --hash, --text, --file or --input"}));

// ---- Store modes: parsed, then refused until the store exists ---------------

TEST(StoreModeTest, NotAvailableYetExit2) {
  const std::string message =
      "fpstore-query: --db: searching a store is not available in this build yet; --fingerprint "
      "and --distance-between work without --db\n"
      "Try 'fpstore-query --help' for more information.\n";
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--db", "store", "--hash", "0x1"},
        std::vector<std::string>{"--db", "store", "--text", "a", "--distance", "3", "--json"},
        std::vector<std::string>{"--db", "store", "--input", Data("hashes.tsv"), "--format", "tsv"},
        std::vector<std::string>{"--db", "store", "--fingerprint", "--text", "a"}}) {
    const ToolResult r = Query(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err, message);
  }
}

// ---- Help --------------------------------------------------------------------

TEST(HelpTest, ShowsEveryOptionWithAnExample) {
  const ToolResult r = Query({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, "");
  for (const char* option : {"--db DIR",
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
