// Command-line options: a table of Boost.Program_options options in
// captioned groups, and the option sets several tools share.
//
// Every option is defined once, by a shared helper where tools share it, so
// that `fpstore-load --text-column` and `fpstore-query --text-column` mean
// the same and accept the same old spellings (--text_column).
//
// Thread safety: none needed; options are parsed on the main thread.

#ifndef FPSTORE_TOOLS_CLI_OPTIONS_H_
#define FPSTORE_TOOLS_CLI_OPTIONS_H_

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/value_semantic.hpp>
#include <boost/program_options/variables_map.hpp>
#include <boost/shared_ptr.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "cli/record_reader.h"
#include "fpstore/fingerprinter.h"

namespace fpstore::cli {

// A whole-number option's value: decimal digits only (no sign, no fraction, no exponent) from `min`
// to `max`, stored in *target when the option is given. Anything else is a usage error naming the
// option and its range, e.g. "--batch-size: \"-1\" is not a whole number from 1 to 10,000,000".
std::uint64_t ParseWholeNumber(std::string_view option, std::string_view text, std::uint64_t min,
                               std::uint64_t max);

template <typename T>
boost::program_options::typed_value<std::string>* WholeNumber(const char* option, T* target, T min,
                                                              T max) {
  static_assert(std::is_integral_v<T>);
  return boost::program_options::value<std::string>()->notifier([=](const std::string& text) {
    *target = static_cast<T>(ParseWholeNumber(option, text, static_cast<std::uint64_t>(min),
                                              static_cast<std::uint64_t>(max)));
  });
}

// A similarity option's value: a decimal number from 0 to 1 (e.g. 0.9 or 1), stored in *target when
// the option is given; anything else is a usage error naming the option and its range.
double ParseFraction(std::string_view option, std::string_view text);

// "0.9": the shortest decimal that reads back as `value`.
std::string FractionText(double value);

inline boost::program_options::typed_value<std::string>* Fraction(const char* option,
                                                                  std::optional<double>* target) {
  return boost::program_options::value<std::string>()->notifier(
      [=](const std::string& text) { *target = ParseFraction(option, text); });
}

// A number option's value: a decimal number with an optional sign, fraction and exponent
// (e.g. 1e8, 40 or 2.5), stored in *target when the option is given; anything else is a usage
// error naming the option and quoting at most 40 bytes of the value. The command checks the range.
double ParseNumber(std::string_view option, std::string_view text);

inline boost::program_options::typed_value<std::string>* Number(const char* option,
                                                                double* target) {
  return boost::program_options::value<std::string>()->notifier(
      [=](const std::string& text) { *target = ParseNumber(option, text); });
}

// The largest --memory (megabytes: 16 TiB) and --threads any tool takes.
inline constexpr int kMaxMemoryMb = 1 << 24;
inline constexpr int kMaxThreads = 1024;

// Group captions, in the order --help usually shows them.
inline constexpr std::string_view kModeGroup = "Mode";
inline constexpr std::string_view kSourceGroup = "What to read";
inline constexpr std::string_view kInputGroup = "Input files (--input)";
inline constexpr std::string_view kFingerprintGroup = "Fingerprint options";
inline constexpr std::string_view kQueryGroup = "Search options";
inline constexpr std::string_view kGeneralGroup = "General";

class OptionTable {
 public:
  // Adds option `name` ("window", or "quiet,q" with a one-letter form) to
  // the group captioned `group`; groups are shown in the order they are
  // first used. The table owns `semantic`, as in Boost. `help` should end
  // with an example ("e.g. --window 5"). `aliases` are other long
  // spellings accepted for the option (e.g. "text_column").
  //
  // Adding an option that is already in the table keeps the first
  // definition, so that a tool's --help can merge the tables of all its
  // commands, whose shared options come from the same helpers.
  OptionTable& Add(std::string_view group, const char* name,
                   const boost::program_options::value_semantic* semantic, std::string help,
                   const std::vector<std::string>& aliases = {});

  // A flag without a value: *flag becomes true when it is given.
  OptionTable& AddSwitch(std::string_view group, const char* name, bool* flag, std::string help);

  // Accept positional arguments (non-option words) into *values. Without
  // this, a positional argument is a usage error.
  void AllowPositional(std::vector<std::string>* values) { positional_ = values; }

  // Whether the table has the long option `name` (without "--"), aliases
  // included.
  bool Has(std::string_view name) const;

  // Parses `args` and stores the values in the bound variables. Rejects
  // unknown options, abbreviations (--win for --window: options are
  // spelled out, so that adding an option never changes the meaning of a
  // command line), repeated single-valued options and bad values by
  // throwing boost::program_options::error or UsageError. Returns what was
  // given, for variables_map::count.
  boost::program_options::variables_map Parse(std::vector<std::string> args) const;

  // The groups and their options as --help shows them.
  std::string Help() const;

 private:
  struct Group {
    std::string caption;
    std::vector<boost::shared_ptr<boost::program_options::option_description>> options;
  };

  std::vector<Group> groups_;
  std::set<std::string, std::less<>> long_names_;
  std::map<std::string, std::string, std::less<>> aliases_;  // alias -> canonical name
  std::vector<std::string>* positional_ = nullptr;
};

// --min-similarity S in `group` for a search or a scan: the least estimated
// similarity of `what` ("a match", "a pair"), overriding the store's.
void DefineMinSimilarity(OptionTable& table, std::string_view group, const std::string& what,
                         std::optional<double>* target);

// --window N, --weighting tf|presence, --signature-bytes B and
// --signature-window N: how texts are fingerprinted and signed.
class FingerprintFlags {
 public:
  // `offer_bits`: --bits too, for the modes that make fingerprints without
  // storing them.
  void Define(OptionTable& table, bool offer_bits = false);

  // Throws UsageError for an out-of-range window or unknown weighting.
  void Check(const boost::program_options::variables_map& vm);

  // Whether the user gave any of them.
  bool given() const { return text_options_given() || bits_given_; }
  // Whether the user gave any but --bits: how texts become fingerprints.
  bool text_options_given() const {
    return window_given_ || weighting_given_ || signature_bytes_given_ || signature_window_given_;
  }

  // `base` with the options the user gave put in. `base` is
  // FingerprintOptions{} without a store, and the options a store recorded
  // when it was created with one.
  FingerprintOptions Apply(FingerprintOptions base) const;

 private:
  int window_ = FingerprintOptions{}.window;
  std::string weighting_;
  bool window_given_ = false;
  bool weighting_given_ = false;
  FeatureWeighting weighting_value_ = FingerprintOptions{}.weighting;
  int signature_bytes_ = FingerprintOptions{}.signature_bytes;
  int signature_window_ = FingerprintOptions{}.signature_window;
  bool signature_bytes_given_ = false;
  bool signature_window_given_ = false;
  int bits_ = FingerprintOptions{}.bits;
  bool bits_given_ = false;
};

// --input FILE, --format and the JSONL column options (with the original
// simhash tool's spellings --text_column and --id_column, and
// --format json).
class InputFlags {
 public:
  // `input_help` says what --input does in this tool.
  void Define(OptionTable& table, std::string input_help);

  // Throws UsageError for an unknown format, an empty column name, or a
  // column option with a format other than jsonl.
  void Check(const boost::program_options::variables_map& vm);

  bool given() const { return !path_.empty(); }

  // REQUIRES: Check succeeded.
  const ReaderOptions& reader_options() const { return options_; }

 private:
  std::string path_;  // empty: no --input
  std::string format_ = "jsonl";
  std::string hash_encoding_ = "unsigned";
  ReaderOptions options_;
};

// --text T and --file F (repeatable): texts given on the command line or
// read whole from files ("-" = standard input).
struct TextFlags {
  std::vector<std::string> texts;
  std::vector<std::string> files;

  void Define(OptionTable& table);

  // Throws UsageError for an empty --text or --file.
  void Check() const;

  std::size_t count() const { return texts.size() + files.size(); }
};

}  // namespace fpstore::cli

#endif  // FPSTORE_TOOLS_CLI_OPTIONS_H_
