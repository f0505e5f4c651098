#include "cli/command.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cli/options.h"

namespace fpstore::cli {
namespace {

namespace po = boost::program_options;

// A command whose Run does what the test says.
class FakeCommand : public Command {
 public:
  FakeCommand(std::string name, std::function<int()> run) : name_(std::move(name)), run_(run) {}

  std::string_view Name() const override { return name_; }
  std::string_view Summary() const override { return "A fake command."; }
  std::vector<std::string> Synopsis() const override { return {"[--count N]"}; }
  std::vector<Example> Examples() const override { return {{"--count 3", "Count to three."}}; }
  void DefineOptions(OptionTable& table) override {
    table.Add("Options", "count", po::value(&count_)->value_name("N"), "How many. e.g. --count 3");
    table.AddSwitch(kModeGroup, name_.c_str(), &mode_, "This mode. e.g. --" + name_);
  }
  int Run() override {
    std::fprintf(out(), "%s ran with %d\n", name_.c_str(), count_);
    return run_();
  }

 protected:
  void Check(const po::variables_map&) override {
    if (count_ < 0) throw UsageError("--count must not be negative");
  }

 private:
  std::string name_;
  std::function<int()> run_;
  int count_ = 0;
  bool mode_ = false;
};

struct Outcome {
  int status;
  std::string out;
  std::string err;
};

Outcome RunRegistry(const CommandRegistry& registry, std::vector<std::string> args) {
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  const int status = registry.Run(std::move(args), out, err);
  auto contents = [](std::FILE* file) {
    std::fflush(file);
    std::rewind(file);
    std::string text;
    char buffer[4096];
    while (std::size_t n = std::fread(buffer, 1, sizeof(buffer), file)) text.append(buffer, n);
    std::fclose(file);
    return text;
  };
  return {status, contents(out), contents(err)};
}

CommandRegistry::Factory Fake(std::string name, std::function<int()> run) {
  return [name, run] { return std::make_unique<FakeCommand>(name, run); };
}

CommandRegistry SubcommandTool(ExitPolicy policy = ExitPolicy::Standard()) {
  CommandRegistry tool("fake-admin", "Fake administration.", policy,
                       CommandRegistry::Dispatch::kSubcommand);
  tool.Register(Fake("ok", [] { return 0; }));
  tool.Register(Fake("fails", []() -> int { throw RuntimeError("disk on fire"); }));
  tool.Register(Fake("bad-input",
                     []() -> int { throw InputError("in.jsonl", 17, "missing \"text\" field"); }));
  tool.Register(Fake("late-usage", []() -> int { throw UsageError("not available yet"); }));
  tool.Register(Fake("throws-std", []() -> int { throw std::logic_error("oops"); }));
  tool.Register(Fake("no-match", [] { return 1; }));
  return tool;
}

TEST(CommandRegistryTest, SubcommandRunsAndKeepsItsStatus) {
  Outcome o = RunRegistry(SubcommandTool(), {"ok", "--count", "3"});
  EXPECT_EQ(o.status, 0);
  EXPECT_EQ(o.out, "ok ran with 3\n");
  EXPECT_EQ(o.err, "");
  EXPECT_EQ(RunRegistry(SubcommandTool(), {"no-match"}).status, 1);
}

TEST(CommandRegistryTest, ExceptionsBecomeExitStatusesInOnePlace) {
  const CommandRegistry tool = SubcommandTool();
  Outcome o = RunRegistry(tool, {"fails"});
  EXPECT_EQ(o.status, 1);
  EXPECT_EQ(o.err, "fake-admin: disk on fire\n");

  o = RunRegistry(tool, {"bad-input"});
  EXPECT_EQ(o.status, 1);
  EXPECT_EQ(o.err, "fake-admin: in.jsonl:17: missing \"text\" field\n");

  o = RunRegistry(tool, {"throws-std"});
  EXPECT_EQ(o.status, 1);
  EXPECT_EQ(o.err, "fake-admin: oops\n");

  const std::string hint = "Try 'fake-admin --help' for more information.\n";
  o = RunRegistry(tool, {"late-usage"});
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(o.err, "fake-admin: not available yet\n" + hint);

  o = RunRegistry(tool, {"ok", "--count", "-1"});  // Check's UsageError
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(o.out, "") << "Run must not run after a usage error";

  o = RunRegistry(tool, {"ok", "--count=-1"});
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(o.err, "fake-admin: --count must not be negative\n" + hint);

  o = RunRegistry(tool, {"ok", "--count", "many"});  // a Boost error
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(o.err, "fake-admin: the argument ('many') for option '--count' is invalid\n" + hint);

  o = RunRegistry(tool, {"ok", "--cnt", "1"});
  EXPECT_EQ(o.err, "fake-admin: unrecognised option \"--cnt\"\n" + hint);

  o = RunRegistry(tool, {"frobnicate"});
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(o.err, "fake-admin: unknown command \"frobnicate\"\n" + hint);

  o = RunRegistry(tool, {});
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(o.err, "fake-admin: no command given\n" + hint);
}

TEST(CommandRegistryTest, GrepLikePolicyMakesEveryError2) {
  const CommandRegistry tool = SubcommandTool(ExitPolicy::GrepLike());
  EXPECT_EQ(RunRegistry(tool, {"ok"}).status, 0);
  EXPECT_EQ(RunRegistry(tool, {"no-match"}).status, 1);
  EXPECT_EQ(RunRegistry(tool, {"fails"}).status, 2);
  EXPECT_EQ(RunRegistry(tool, {"bad-input"}).status, 2);
  EXPECT_EQ(RunRegistry(tool, {"ok", "--bogus"}).status, 2);
}

TEST(CommandRegistryTest, HelpAndVersionWinWhereverTheyAre) {
  const CommandRegistry tool = SubcommandTool();
  Outcome o = RunRegistry(tool, {"--help"});
  EXPECT_EQ(o.status, 0);
  EXPECT_EQ(o.err, "");
  EXPECT_NE(o.out.find("Commands:\n  ok "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("fake-admin ok --count 3\n      Count to three."), std::string::npos);

  o = RunRegistry(tool, {"ok", "--bogus", "-h"});
  EXPECT_EQ(o.status, 0);
  EXPECT_NE(o.out.find("  fake-admin ok [--count N]"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("--count N"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("e.g. --count 3"), std::string::npos) << o.out;

  o = RunRegistry(tool, {"--version"});
  EXPECT_EQ(o.status, 0);
  EXPECT_TRUE(o.out.starts_with("fake-admin (fpstore) ")) << o.out;

  // After "--", --help is an argument, not a request for help.
  EXPECT_EQ(RunRegistry(tool, {"ok", "--", "--help"}).status, 2);
}

CommandRegistry ModeFlagTool() {
  CommandRegistry tool("fake-query", "Fake queries.", ExitPolicy::GrepLike(),
                       CommandRegistry::Dispatch::kModeFlag);
  tool.Register(Fake("search", [] { return 1; }), /*is_default=*/true);
  tool.Register(Fake("alpha", [] { return 0; }));
  tool.Register(Fake("beta", [] { return 0; }));
  return tool;
}

TEST(CommandRegistryTest, ModeFlagsChooseTheCommand) {
  const CommandRegistry tool = ModeFlagTool();
  Outcome o = RunRegistry(tool, {"--count", "2"});
  EXPECT_EQ(o.status, 1);
  EXPECT_EQ(o.out, "search ran with 2\n");
  o = RunRegistry(tool, {"--count", "2", "--alpha"});
  EXPECT_EQ(o.status, 0);
  EXPECT_EQ(o.out, "alpha ran with 2\n");
  o = RunRegistry(tool, {"--alpha", "--beta"});
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(o.err,
            "fake-query: --alpha and --beta cannot be used together\n"
            "Try 'fake-query --help' for more information.\n");
  // A mode's flag is unknown to the others, and the message says why.
  o = RunRegistry(tool, {"--alpha", "--search"});
  EXPECT_EQ(o.status, 2);
  EXPECT_EQ(o.err,
            "fake-query: --search cannot be used with --alpha\n"
            "Try 'fake-query --help' for more information.\n");
}

TEST(CommandRegistryTest, OneCommandToolListsNoModes) {
  CommandRegistry tool("fake-load", "Fake loads.", ExitPolicy::Standard(),
                       CommandRegistry::Dispatch::kModeFlag);
  tool.Register(Fake("load", [] { return 0; }), /*is_default=*/true);
  const Outcome o = RunRegistry(tool, {"--help"});
  EXPECT_EQ(o.status, 0);
  EXPECT_EQ(o.out.find("Modes:"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("--count N"), std::string::npos) << o.out;
}

TEST(CommandRegistryTest, ModeFlagHelpIsOnePage) {
  Outcome o = RunRegistry(ModeFlagTool(), {"--beta", "--help"});
  EXPECT_EQ(o.status, 0);
  EXPECT_NE(o.out.find("Modes:\n  (default)"), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("  --alpha "), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("  --beta "), std::string::npos) << o.out;
  // --count is shared: its option line is shown once.
  const std::size_t first = o.out.find("  --count N  ");
  ASSERT_NE(first, std::string::npos) << o.out;
  EXPECT_EQ(o.out.find("  --count N  ", first + 1), std::string::npos) << o.out;
  EXPECT_NE(o.out.find("Exit status: 0 if something was found"), std::string::npos) << o.out;
}

TEST(CommandRegistryTest, WriteErrorsAreRuntimeErrors) {
  std::FILE* full = std::fopen("/dev/full", "w");
  if (full == nullptr) GTEST_SKIP() << "no /dev/full";
  std::FILE* err = std::tmpfile();
  EXPECT_EQ(SubcommandTool().Run({"ok"}, full, err), 1);
  std::fclose(full);
  std::rewind(err);
  char buffer[256] = {};
  ASSERT_GT(std::fread(buffer, 1, sizeof(buffer) - 1, err), 0u);
  EXPECT_EQ(std::string(buffer), "fake-admin: cannot write the output: No space left on device\n");
  std::fclose(err);
}

TEST(InputErrorTest, NamesFileAndLine) {
  EXPECT_EQ(std::string(InputError("data.jsonl", 17, "missing \"text\" field").what()),
            "data.jsonl:17: missing \"text\" field");
  EXPECT_EQ(std::string(InputError("data.jsonl", 0, "empty input (no records)").what()),
            "data.jsonl: empty input (no records)");
  const InputError e("f", 3, "why");
  EXPECT_EQ(e.file(), "f");
  EXPECT_EQ(e.line(), 3u);
  EXPECT_EQ(e.reason(), "why");
}

}  // namespace
}  // namespace fpstore::cli
