#include "cli/options.h"

#include <gtest/gtest.h>

#include <boost/program_options/errors.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "cli/command.h"

namespace fpstore::cli {
namespace {

namespace po = boost::program_options;

// The message a parse fails with.
std::string ParseError(const OptionTable& table, std::vector<std::string> args) {
  try {
    table.Parse(std::move(args));
  } catch (const po::error& e) {
    return e.what();
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(parsed)";
}

TEST(OptionTableTest, ParsesIntoBoundVariables) {
  OptionTable table;
  int window = 3;
  std::string name;
  bool flag = false;
  table.Add("G", "window", po::value(&window), "Window. e.g. --window 5")
      .Add("G", "name", po::value(&name), "Name. e.g. --name x")
      .AddSwitch("G", "flag,f", &flag, "Flag. e.g. --flag");
  const po::variables_map vm = table.Parse({"--window", "7", "--name=abc", "-f"});
  EXPECT_EQ(window, 7);
  EXPECT_EQ(name, "abc");
  EXPECT_TRUE(flag);
  EXPECT_EQ(vm.count("window"), 1u);
}

TEST(OptionTableTest, AliasesAreOtherSpellings) {
  OptionTable table;
  std::string column = "text";
  table.Add("G", "text-column", po::value(&column), "Column. e.g. --text-column body",
            {"text_column"});
  EXPECT_TRUE(table.Has("text-column"));
  EXPECT_TRUE(table.Has("text_column"));
  EXPECT_FALSE(table.Has("text"));

  table.Parse({"--text_column", "body"});
  EXPECT_EQ(column, "body");
  table.Parse({"--text_column=content"});
  EXPECT_EQ(column, "content");
  const po::variables_map vm = table.Parse({"--text-column", "x"});
  EXPECT_EQ(column, "x");
  EXPECT_EQ(vm.count("text-column"), 1u);
  // Both spellings at once are one option given twice.
  EXPECT_EQ(ParseError(table, {"--text-column", "a", "--text_column", "b"}),
            "option '--text-column' cannot be specified more than once");
  // The help mentions the alias before the example.
  EXPECT_NE(table.Help().find("Also --text_column. e.g. --text-column body"), std::string::npos)
      << table.Help();
}

TEST(OptionTableTest, RejectsUnknownAbbreviatedRepeatedAndPositional) {
  OptionTable table;
  int window = 3;
  table.Add("G", "window", po::value(&window), "Window. e.g. --window 5");
  EXPECT_EQ(ParseError(table, {"--bogus"}), "unrecognised option '--bogus'");
  EXPECT_EQ(ParseError(table, {"--win", "5"}), "unrecognised option '--win'");
  EXPECT_EQ(ParseError(table, {"--window", "5", "--window", "6"}),
            "option '--window' cannot be specified more than once");
  EXPECT_EQ(ParseError(table, {"--window", "x"}),
            "the argument ('x') for option '--window' is invalid");
  EXPECT_EQ(ParseError(table, {"--window"}),
            "the required argument for option '--window' is missing");
  EXPECT_EQ(ParseError(table, {"stray"}), "unexpected argument \"stray\"");
  EXPECT_EQ(ParseError(table, {std::string(3000, 's')}),
            "unexpected argument \"" + std::string(40, 's') + "\"... (3000 bytes)");

  std::vector<std::string> words;
  table.AllowPositional(&words);
  table.Parse({"a", "--window", "4", "b", "--", "--window"});
  EXPECT_EQ(words, (std::vector<std::string>{"a", "b", "--window"}));
}

TEST(OptionTableTest, FirstDefinitionWins) {
  OptionTable table;
  std::string a, b;
  table.Add("G", "text", po::value(&a), "First. e.g. --text x");
  table.Add("H", "text", po::value(&b), "Second. e.g. --text y");
  table.Parse({"--text", "v"});
  EXPECT_EQ(a, "v");
  EXPECT_EQ(b, "");
  const std::string help = table.Help();
  EXPECT_NE(help.find("First."), std::string::npos);
  EXPECT_EQ(help.find("Second."), std::string::npos);
  EXPECT_EQ(help.find("H:"), std::string::npos) << "no empty group";
}

TEST(OptionTableTest, HelpHasNoTrailingSpaces) {
  OptionTable table;
  std::string s;
  table.Add("G", "long", po::value(&s),
            std::string(300, 'w').replace(50, 1, " ").replace(120, 1, " ") + " e.g. --long x");
  const std::string help = table.Help();
  EXPECT_EQ(help.find(" \n"), std::string::npos) << help;
}

TEST(FingerprintFlagsTest, AppliesOnlyWhatWasGiven) {
  FingerprintFlags flags;
  OptionTable table;
  flags.Define(table);
  flags.Check(table.Parse({}));
  EXPECT_FALSE(flags.given());
  EXPECT_EQ(flags.Apply(FingerprintOptions{}), FingerprintOptions{});
  FingerprintOptions store;  // what a store might have recorded
  store.window = 5;
  store.weighting = FeatureWeighting::kPresence;
  EXPECT_EQ(flags.Apply(store), store);

  FingerprintFlags given;
  OptionTable table2;
  given.Define(table2);
  given.Check(table2.Parse({"--window", "7", "--weighting", "presence"}));
  EXPECT_TRUE(given.given());
  const FingerprintOptions applied = given.Apply(FingerprintOptions{});
  EXPECT_EQ(applied.window, 7);
  EXPECT_EQ(applied.weighting, FeatureWeighting::kPresence);
}

TEST(WholeNumberTest, TakesDigitsWithinTheRangeOnly) {
  EXPECT_EQ(ParseWholeNumber("n", "1", 1, 10), 1u);
  EXPECT_EQ(ParseWholeNumber("n", "10", 1, 10), 10u);
  EXPECT_EQ(ParseWholeNumber("n", "007", 1, 10), 7u);
  EXPECT_EQ(ParseWholeNumber("n", "18446744073709551615", 0, UINT64_MAX), UINT64_MAX);
  for (const char* text : {"0", "11", "-1", "+5", " 5", "5 ", "5x", "0x5", "1e1", "2.5", "",
                           "18446744073709551615", "18446744073709551616"}) {
    try {
      ParseWholeNumber("batch-size", text, 1, 10);
      ADD_FAILURE() << "\"" << text << "\" accepted";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()),
                "--batch-size: \"" + std::string(text) + "\" is not a whole number from 1 to 10");
    }
  }
}

TEST(NumberTest, TakesDecimalNumbersAndQuotesAtMost40BytesOfTheRest) {
  EXPECT_EQ(ParseNumber("n", "40"), 40.0);
  EXPECT_EQ(ParseNumber("n", "2.5"), 2.5);
  EXPECT_EQ(ParseNumber("n", "1e8"), 1e8);
  EXPECT_EQ(ParseNumber("n", "+1e8"), 1e8);  // as Boost's lexical_cast read it
  EXPECT_EQ(ParseNumber("n", "-5"), -5.0);   // the command checks the range
  for (const char* text : {"", "x", "5x", " 5", "5 ", "1e", "+", "+-5", "0x5", "1e400"}) {
    try {
      ParseNumber("disk-budget", text);
      ADD_FAILURE() << "\"" << text << "\" accepted";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()),
                "--disk-budget: \"" + std::string(text) + "\" is not a number");
    }
  }
  // A value of any length: at most 40 bytes of it, as every message quotes input.
  try {
    ParseNumber("expected-documents", std::string(3000, '9') + "x");
    ADD_FAILURE() << "accepted";
  } catch (const UsageError& e) {
    EXPECT_EQ(std::string(e.what()), "--expected-documents: \"" + std::string(40, '9') +
                                         "\"... (3001 bytes) is not a number");
  }
}

TEST(FingerprintFlagsTest, RejectsBadValues) {
  for (const auto& [args, message] :
       std::initializer_list<std::pair<std::vector<std::string>, std::string>>{
           {{"--window", "0"}, "--window: \"0\" is not a whole number from 1 to 64"},
           {{"--window", "65"}, "--window: \"65\" is not a whole number from 1 to 64"},
           {{"--weighting", "idf"},
            "--weighting: unknown weighting \"idf\" (expected tf or presence)"}}) {
    FingerprintFlags flags;
    OptionTable table;
    flags.Define(table);
    try {
      flags.Check(table.Parse(args));
      ADD_FAILURE() << args[0] << " " << args[1] << " accepted";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
}

TEST(InputFlagsTest, ReaderOptionsFromTheOldAndNewSpellings) {
  InputFlags flags;
  OptionTable table;
  flags.Define(table, "Input. e.g. --input x");
  flags.Check(table.Parse({"--input", "-", "--format", "json", "--text_column", "body",
                           "--id_column", "doc", "--meta-column", "url"}));
  ASSERT_TRUE(flags.given());
  const ReaderOptions& options = flags.reader_options();
  EXPECT_EQ(options.path, "-");
  EXPECT_EQ(options.format, InputFormat::kJsonl);
  EXPECT_EQ(options.text_column, "body");
  EXPECT_EQ(options.id_column, "doc");
  EXPECT_EQ(options.meta_column, "url");
}

TEST(InputFlagsTest, RejectsInconsistentOptions) {
  for (const auto& [args, message] :
       std::initializer_list<std::pair<std::vector<std::string>, std::string>>{
           {{"--input", "f", "--format", "csv"},
            "--format: unknown format \"csv\" (expected jsonl, tsv or hash)"},
           {{"--input", "f", "--format", "tsv", "--text-column", "body"},
            "--text-column applies to --format jsonl only"},
           {{"--input", "f", "--id-column", ""}, "--id-column: empty key"},
           {{"--input", ""}, "--input: empty file name (use - for standard input)"},
           {{"--format", "tsv"}, "--format applies to --input only"}}) {
    InputFlags flags;
    OptionTable table;
    flags.Define(table, "Input. e.g. --input x");
    try {
      flags.Check(table.Parse(args));
      ADD_FAILURE() << message << ": accepted";
    } catch (const UsageError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
}

}  // namespace
}  // namespace fpstore::cli
