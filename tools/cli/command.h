// The command framework shared by fpstore's tools.
//
// A tool (fpstore-query, fpstore-load, fpstore-admin) is a CommandRegistry:
// a name, a summary, an ExitPolicy and the commands it can run. Its `main` is
//
//   int main(int argc, char** argv) {
//     return fpstore::cli::Main(argc, argv, fpstore::cli::QueryTool());
//   }
//
// Main picks a command from the arguments, calls its Setup (which parses the
// arguments and opens nothing), then its Run, and turns every exception into
// a message on standard error and an exit status, in that one place:
//
//   UsageError, boost::program_options::error  -> policy.usage_error, plus a
//                                                 hint to run --help
//   RuntimeError (InputError), std::exception  -> policy.runtime_error
//   Run returned normally                       -> Run's return value
//
// Boost exceptions never leave tools/: Main catches them.
//
// Thread safety: a Command is used by one thread; Run may start others.

#ifndef FPSTORE_TOOLS_CLI_COMMAND_H_
#define FPSTORE_TOOLS_CLI_COMMAND_H_

#include <boost/program_options/variables_map.hpp>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace fpstore::cli {

class OptionTable;

// The command line is wrong: an unknown option, a bad value, a missing or
// conflicting option, or a feature this build does not have.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The work failed: a file cannot be read, the input is malformed, the store
// refuses. The message is complete; Main only prefixes the tool's name.
class RuntimeError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Malformed input at a known place. what() is "FILE:LINE: reason", or
// "FILE: reason" when line is 0 (e.g. an empty input).
class InputError : public RuntimeError {
 public:
  InputError(std::string file, std::uint64_t line, std::string reason);

  const std::string& file() const { return file_; }
  std::uint64_t line() const { return line_; }  // 1-based; 0 = the whole input
  const std::string& reason() const { return reason_; }

 private:
  std::string file_;
  std::uint64_t line_;
  std::string reason_;
};

// The exit statuses of a tool. A successful Run chooses its own status
// (0, or e.g. 1 for "no match"); errors get these.
struct ExitPolicy {
  int usage_error = 2;
  int runtime_error = 1;

  // fpstore-load and fpstore-admin: 0 ok, 1 runtime error, 2 usage error.
  static constexpr ExitPolicy Standard() { return {.usage_error = 2, .runtime_error = 1}; }
  // fpstore-query, like grep: 0 found, 1 not found (Run's choice), 2 error.
  static constexpr ExitPolicy GrepLike() { return {.usage_error = 2, .runtime_error = 2}; }
};

// One command of a tool. Subclasses define their options, check them in
// Setup and do the work in Run.
class Command {
 public:
  virtual ~Command() = default;

  // The command's name: the subcommand ("stats"), or for a tool whose
  // commands are chosen by a flag, the flag without "--" ("fingerprint").
  virtual std::string_view Name() const = 0;

  // One line for the tool's --help.
  virtual std::string_view Summary() const = 0;

  // The ways to call the command, one per line, without the tool's name,
  // e.g. "--fingerprint (--text T | --file F)". Shown by --help.
  virtual std::vector<std::string> Synopsis() const = 0;

  // Example command lines, without the tool's name, each with a comment.
  struct Example {
    std::string command;
    std::string comment;
  };
  virtual std::vector<Example> Examples() const = 0;

  // Adds every option the command accepts to `table`. Called by Setup and
  // by --help; it must not look at values.
  virtual void DefineOptions(OptionTable& table) = 0;

  // Parses `args` (the arguments after the tool's name, and after the
  // subcommand's name for subcommand tools) against DefineOptions, then
  // calls Check. Opens nothing. Throws UsageError or a
  // boost::program_options::error.
  void Setup(const std::vector<std::string>& args);

  // Does the work and returns the exit status (0 unless the tool's policy
  // gives other successful outcomes a meaning). Throws RuntimeError (or
  // UsageError for a combination only found out now).
  // REQUIRES: Setup succeeded.
  virtual int Run() = 0;

  // Where Run writes results and messages. Default: stdout and stderr.
  void SetStreams(std::FILE* out, std::FILE* err) {
    out_ = out;
    err_ = err;
  }

 protected:
  // Called by Setup once the options are stored in the variables that
  // DefineOptions bound them to; validates them and their combination and
  // throws UsageError. `vm.count(name)` tells whether the user gave `name`.
  virtual void Check(const boost::program_options::variables_map& vm) = 0;

  std::FILE* out() const { return out_; }
  std::FILE* err() const { return err_; }

 private:
  std::FILE* out_ = stdout;
  std::FILE* err_ = stderr;
};

// A tool: its commands and how arguments choose among them.
//
// Thread safety: build it, then only read it.
class CommandRegistry {
 public:
  using Factory = std::function<std::unique_ptr<Command>()>;

  enum class Dispatch {
    // The first argument names the command: `fpstore-admin stats --db D`.
    kSubcommand,
    // A flag "--NAME" among the arguments chooses command NAME, and the
    // default command runs when there is none:
    // `fpstore-query --fingerprint --text T`. The flag stays in the
    // arguments, so the command must define it.
    kModeFlag,
  };

  CommandRegistry(std::string tool, std::string summary, ExitPolicy policy, Dispatch dispatch);

  // Adds a command. `is_default`: for kModeFlag, the command that runs when
  // no mode flag is given (exactly one should be).
  void Register(Factory factory, bool is_default = false);

  const std::string& tool() const { return tool_; }
  const ExitPolicy& policy() const { return policy_; }

  // The command the arguments ask for and the arguments it should parse.
  // Throws UsageError: no or unknown subcommand, two mode flags.
  std::unique_ptr<Command> Select(std::vector<std::string>* args) const;

  // Text for --help: the whole tool, or one subcommand when `command` is
  // non-empty (kSubcommand only).
  std::string Help(std::string_view command = {}) const;

  // "fpstore-query (fpstore) 1.0.0".
  std::string Version() const;

  // Runs the tool over `args` (argv without the program name), writing to
  // `out` and `err`, and returns the exit status. This is Main's body.
  int Run(std::vector<std::string> args, std::FILE* out, std::FILE* err) const;

 private:
  struct Entry {
    std::string name;
    Factory factory;
  };
  const Entry* Find(std::string_view name) const;
  // For kModeFlag: "--json cannot be used with --fingerprint" when
  // `option`, unknown to `command`, belongs to another mode.
  std::optional<std::string> OptionOfAnotherMode(const std::string& option,
                                                 const Command& command) const;
  std::string CommandHelp(Command& command) const;

  std::string tool_;
  std::string summary_;
  ExitPolicy policy_;
  Dispatch dispatch_;
  std::vector<Entry> commands_;
  int default_ = -1;
};

// The one place where a tool's exceptions become exit statuses (see the
// top of this file). Writes results to stdout, messages to stderr.
int Main(int argc, char** argv, const CommandRegistry& registry);

}  // namespace fpstore::cli

#endif  // FPSTORE_TOOLS_CLI_COMMAND_H_
