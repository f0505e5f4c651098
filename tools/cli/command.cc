#include "cli/command.h"

#include <boost/program_options/errors.hpp>
#include <cerrno>
#include <cstring>
#include <new>
#include <optional>
#include <sstream>
#include <utility>

#include "cli/options.h"
#include "cli/parse.h"

#ifndef FPSTORE_VERSION_STRING
#error "the build defines FPSTORE_VERSION_STRING (tools/cli/CMakeLists.txt)"
#endif

namespace fpstore::cli {
namespace po = boost::program_options;
namespace {

std::string InputErrorText(const std::string& file, std::uint64_t line, const std::string& reason) {
  return line == 0 ? file + ": " + reason : file + ":" + std::to_string(line) + ": " + reason;
}

// Whether `args` asks for `flag` ("--help") before a "--".
bool HasFlag(const std::vector<std::string>& args, std::string_view flag,
             std::string_view short_flag = {}) {
  for (const std::string& arg : args) {
    if (arg == "--") return false;
    if (arg == flag || (!short_flag.empty() && arg == short_flag)) return true;
  }
  return false;
}

// Whether `args` holds the mode flag "--name", alone or as "--name=...".
bool HasModeFlag(const std::vector<std::string>& args, std::string_view name) {
  for (const std::string& arg : args) {
    if (arg == "--") return false;
    if (!arg.starts_with("--")) continue;
    const std::string_view given = std::string_view(arg).substr(2);
    if (given == name ||
        (given.starts_with(name) && given.size() > name.size() && given[name.size()] == '=')) {
      return true;
    }
  }
  return false;
}

// Shown by --help only: Run answers --help and --version before parsing.
void AppendGeneralOptions(OptionTable& table) {
  table.Add(kGeneralGroup, "help,h", po::bool_switch(), "Show this help and exit.");
  table.Add(kGeneralGroup, "version", po::bool_switch(), "Show the version and exit.");
}

std::string ExitStatusHelp(const ExitPolicy& policy) {
  if (policy.runtime_error == policy.usage_error) {
    return "Exit status: 0 if something was found (or the command succeeded), 1 if nothing was "
           "found, " +
           std::to_string(policy.usage_error) + " on any error.\n";
  }
  return "Exit status: 0 on success, " + std::to_string(policy.runtime_error) +
         " if the work failed (bad input, unreadable file), " + std::to_string(policy.usage_error) +
         " for a wrong command line.\n";
}

}  // namespace

InputError::InputError(std::string file, std::uint64_t line, std::string reason)
    : RuntimeError(InputErrorText(file, line, reason)),
      file_(std::move(file)),
      line_(line),
      reason_(std::move(reason)) {}

void Command::Setup(const std::vector<std::string>& args) {
  OptionTable table;
  DefineOptions(table);
  Check(table.Parse(args));
}

CommandRegistry::CommandRegistry(std::string tool, std::string summary, ExitPolicy policy,
                                 Dispatch dispatch)
    : tool_(std::move(tool)), summary_(std::move(summary)), policy_(policy), dispatch_(dispatch) {}

void CommandRegistry::Register(Factory factory, bool is_default) {
  std::string name(factory()->Name());
  if (is_default) default_ = static_cast<int>(commands_.size());
  commands_.push_back(Entry{std::move(name), std::move(factory)});
}

const CommandRegistry::Entry* CommandRegistry::Find(std::string_view name) const {
  for (const Entry& entry : commands_) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

std::unique_ptr<Command> CommandRegistry::Select(std::vector<std::string>* args) const {
  if (dispatch_ == Dispatch::kSubcommand) {
    if (args->empty() || args->front().starts_with("-")) {
      throw UsageError("no command given");
    }
    const Entry* entry = Find(args->front());
    if (entry == nullptr) throw UsageError("unknown command " + QuoteForMessage(args->front()));
    args->erase(args->begin());
    return entry->factory();
  }

  const Entry* chosen = nullptr;
  for (std::size_t i = 0; i < commands_.size(); ++i) {
    if (static_cast<int>(i) == default_ || !HasModeFlag(*args, commands_[i].name)) continue;
    if (chosen != nullptr) {
      throw UsageError("--" + chosen->name + " and --" + commands_[i].name +
                       " cannot be used together");
    }
    chosen = &commands_[i];
  }
  if (chosen == nullptr) {
    if (default_ < 0) throw UsageError("no mode given");
    chosen = &commands_[static_cast<std::size_t>(default_)];
  }
  return chosen->factory();
}

std::string CommandRegistry::CommandHelp(Command& command) const {
  std::ostringstream out;
  out << "Usage:\n";
  for (const std::string& line : command.Synopsis()) {
    out << "  " << tool_ << " " << command.Name() << " " << line << "\n";
  }
  out << "\n" << command.Summary() << "\n\n";
  OptionTable table;
  command.DefineOptions(table);
  AppendGeneralOptions(table);
  out << table.Help();
  out << "Examples:\n";
  for (const Command::Example& example : command.Examples()) {
    out << "  " << tool_ << " " << command.Name() << " " << example.command << "\n      "
        << example.comment << "\n";
  }
  out << "\n" << ExitStatusHelp(policy_);
  return out.str();
}

std::string CommandRegistry::Help(std::string_view command) const {
  if (!command.empty()) {
    const Entry* entry = Find(command);
    if (entry == nullptr) throw UsageError("unknown command " + QuoteForMessage(command));
    std::unique_ptr<Command> instance = entry->factory();
    return CommandHelp(*instance);
  }

  std::vector<std::unique_ptr<Command>> instances;
  for (const Entry& entry : commands_) instances.push_back(entry.factory());

  std::ostringstream out;
  out << "Usage:\n";
  for (const auto& instance : instances) {
    for (const std::string& line : instance->Synopsis()) {
      out << "  " << tool_ << " "
          << (dispatch_ == Dispatch::kSubcommand ? std::string(instance->Name()) + " " : "") << line
          << "\n";
    }
  }
  out << "\n" << summary_ << "\n\n";

  if (dispatch_ == Dispatch::kSubcommand) {
    out << "Commands:\n";
    for (const auto& instance : instances) {
      out << "  " << instance->Name()
          << std::string(instance->Name().size() < 18 ? 18 - instance->Name().size() : 1, ' ')
          << instance->Summary() << "\n";
    }
    out << "\nRun '" << tool_ << " COMMAND --help' for a command's options.\n\n";
    OptionTable table;
    AppendGeneralOptions(table);
    out << table.Help();
  } else {
    // One page: every mode's options, each shown once. A tool of one
    // command (fpstore-load) has no modes to list.
    if (instances.size() > 1) {
      out << "Modes:\n";
      for (std::size_t i = 0; i < instances.size(); ++i) {
        const std::string flag = static_cast<int>(i) == default_
                                     ? "(default)"
                                     : "--" + std::string(instances[i]->Name());
        out << "  " << flag << std::string(flag.size() < 22 ? 22 - flag.size() : 1, ' ')
            << instances[i]->Summary() << "\n";
      }
      out << "\n";
    }
    OptionTable table;
    for (const auto& instance : instances) instance->DefineOptions(table);
    AppendGeneralOptions(table);
    out << table.Help();
  }

  out << "Examples:\n";
  for (const auto& instance : instances) {
    for (const Command::Example& example : instance->Examples()) {
      out << "  " << tool_ << " "
          << (dispatch_ == Dispatch::kSubcommand ? std::string(instance->Name()) + " " : "")
          << example.command << "\n      " << example.comment << "\n";
    }
  }
  out << "\n" << ExitStatusHelp(policy_);
  return out.str();
}

std::optional<std::string> CommandRegistry::OptionOfAnotherMode(const std::string& option,
                                                                const Command& command) const {
  if (dispatch_ != Dispatch::kModeFlag || !option.starts_with("--")) return std::nullopt;
  if (default_ >= 0 && command.Name() == commands_[static_cast<std::size_t>(default_)].name) {
    return std::nullopt;  // the default mode has every option but the other modes' flags
  }
  OptionTable all;
  for (const Entry& entry : commands_) entry.factory()->DefineOptions(all);
  if (!all.Has(std::string_view(option).substr(2))) return std::nullopt;
  return option + " cannot be used with --" + std::string(command.Name());
}

std::string CommandRegistry::Version() const {
  return tool_ + " (fpstore) " FPSTORE_VERSION_STRING;
}

int CommandRegistry::Run(std::vector<std::string> args, std::FILE* out, std::FILE* err) const {
  const auto usage_error = [&](const std::string& message) {
    std::fprintf(err, "%s: %s\nTry '%s --help' for more information.\n", tool_.c_str(),
                 message.c_str(), tool_.c_str());
    return policy_.usage_error;
  };
  const auto runtime_error = [&](const std::string& message) {
    std::fprintf(err, "%s: %s\n", tool_.c_str(), message.c_str());
    return policy_.runtime_error;
  };

  try {
    if (HasFlag(args, "--help", "-h")) {
      const bool subcommand =
          dispatch_ == Dispatch::kSubcommand && !args.empty() && !args.front().starts_with("-");
      std::fputs(Help(subcommand ? args.front() : std::string()).c_str(), out);
      return std::fflush(out) == 0 ? 0 : runtime_error("cannot write the help");
    }
    if (HasFlag(args, "--version")) {
      std::fprintf(out, "%s\n", Version().c_str());
      return std::fflush(out) == 0 ? 0 : runtime_error("cannot write the version");
    }
    std::unique_ptr<Command> command = Select(&args);
    command->SetStreams(out, err);
    try {
      command->Setup(args);
    } catch (const po::unknown_option& e) {
      if (std::optional<std::string> message = OptionOfAnotherMode(e.get_option_name(), *command)) {
        throw UsageError(*message);
      }
      // Boost's message holds the whole word given; quote at most 40 bytes of it.
      throw UsageError("unrecognised option " + QuoteForMessage(e.get_option_name()));
    }
    const int status = command->Run();
    if (std::fflush(out) != 0 || std::ferror(out)) {
      return runtime_error(std::string("cannot write the output: ") + std::strerror(errno));
    }
    return status;
  } catch (const UsageError& e) {
    return usage_error(e.what());
  } catch (const po::error& e) {
    return usage_error(e.what());
  } catch (const RuntimeError& e) {
    return runtime_error(e.what());
  } catch (const std::bad_alloc&) {
    return runtime_error("out of memory");
  } catch (const std::exception& e) {
    return runtime_error(e.what());
  }
}

int Main(int argc, char** argv, const CommandRegistry& registry) {
  std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
  return registry.Run(std::move(args), stdout, stderr);
}

}  // namespace fpstore::cli
