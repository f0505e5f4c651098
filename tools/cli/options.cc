#include "cli/options.h"

#include <algorithm>
#include <boost/make_shared.hpp>
#include <boost/program_options/parsers.hpp>
#include <boost/program_options/positional_options.hpp>
#include <charconv>
#include <sstream>
#include <utility>

#include "cli/command.h"
#include "cli/progress.h"

namespace fpstore::cli {
namespace po = boost::program_options;
namespace {

// The hidden option that collects positional arguments.
constexpr const char* kPositionalName = "positional-arguments";

// Width of --help, and the least width left for descriptions.
constexpr unsigned kHelpWidth = 100;
constexpr unsigned kHelpDescriptionWidth = 60;

// "quiet,q" -> "quiet".
std::string LongName(const char* name) {
  std::string_view view(name);
  return std::string(view.substr(0, view.find(',')));
}

}  // namespace

std::uint64_t ParseWholeNumber(std::string_view option, std::string_view text, std::uint64_t min,
                               std::uint64_t max) {
  std::uint64_t value = 0;
  const char* end = text.data() + text.size();
  const bool digits = !text.empty() && text.front() >= '0' && text.front() <= '9';
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (!digits || error != std::errc() || stop != end || value < min || value > max) {
    throw UsageError("--" + std::string(option) + ": " + QuoteForMessage(text) +
                     " is not a whole number from " + WithCommas(min) + " to " + WithCommas(max));
  }
  return value;
}

std::string FractionText(double value) {
  char text[32];
  const auto [end, error] = std::to_chars(text, text + sizeof text, value);
  return error == std::errc() ? std::string(text, end) : std::to_string(value);
}

double ParseFraction(std::string_view option, std::string_view text) {
  double value = 0;
  const char* end = text.data() + text.size();
  const bool digit_first = !text.empty() && text.front() >= '0' && text.front() <= '9';
  const auto [stop, error] = std::from_chars(text.data(), end, value, std::chars_format::fixed);
  if (!digit_first || error != std::errc() || stop != end || !(value >= 0 && value <= 1)) {
    throw UsageError("--" + std::string(option) + ": " + QuoteForMessage(text) +
                     " is not a number from 0 to 1");
  }
  return value;
}

double ParseNumber(std::string_view option, std::string_view text) {
  // As Boost's lexical_cast read these options before: a leading + is allowed.
  std::string_view number = text;
  if (number.starts_with('+') && !number.substr(1).starts_with('-')) number.remove_prefix(1);
  double value = 0;
  const char* end = number.data() + number.size();
  const auto [stop, error] = std::from_chars(number.data(), end, value);
  if (number.empty() || error != std::errc() || stop != end) {
    throw UsageError("--" + std::string(option) + ": " + QuoteForMessage(text) +
                     " is not a number");
  }
  return value;
}

void DefineMinSimilarity(OptionTable& table, std::string_view group, const std::string& what,
                         std::optional<double>* target) {
  table.Add(group, "min-similarity", Fraction("min-similarity", target)->value_name("S"),
            "The least estimated similarity (0 to 1) of " + what +
                " whose documents both have a signature; 0 keeps everything within the "
                "distance. Hashes, and documents stored as hashes, have none: they match by "
                "distance alone, with similarity - (null in JSON). Default: the store's, set "
                "when it was made. e.g. --min-similarity 0.8");
}

OptionTable& OptionTable::Add(std::string_view group, const char* name,
                              const po::value_semantic* semantic, std::string help,
                              const std::vector<std::string>& aliases) {
  if (!aliases.empty()) {
    // "... Default: text. Also --text_column. e.g. --text-column body"
    std::string also = " Also --" + aliases.front();
    for (std::size_t i = 1; i < aliases.size(); ++i) also += ", --" + aliases[i];
    also += ".";
    const std::size_t example = help.rfind(" e.g. ");
    help.insert(example == std::string::npos ? help.size() : example, also);
  }
  // Built first in any case, so that Boost owns `semantic` even when the
  // definition is dropped.
  auto option = boost::make_shared<po::option_description>(name, semantic, help.c_str());
  const std::string long_name = LongName(name);
  if (!long_names_.insert(long_name).second) return *this;
  for (const std::string& alias : aliases) aliases_.emplace(alias, long_name);

  auto it = std::find_if(groups_.begin(), groups_.end(),
                         [&](const Group& g) { return g.caption == group; });
  if (it == groups_.end()) it = groups_.insert(groups_.end(), Group{std::string(group), {}});
  it->options.push_back(std::move(option));
  return *this;
}

OptionTable& OptionTable::AddSwitch(std::string_view group, const char* name, bool* flag,
                                    std::string help) {
  return Add(group, name, po::bool_switch(flag), std::move(help));
}

bool OptionTable::Has(std::string_view name) const {
  return long_names_.contains(name) || aliases_.contains(name);
}

po::variables_map OptionTable::Parse(std::vector<std::string> args) const {
  // Old spellings become the canonical ones before Boost sees them.
  for (std::string& arg : args) {
    if (arg == "--") break;
    if (!arg.starts_with("--")) continue;
    const std::size_t equals = arg.find('=');
    const std::string_view name = std::string_view(arg).substr(2, equals - 2);
    if (auto alias = aliases_.find(name); alias != aliases_.end()) {
      arg = "--" + alias->second + (equals == std::string::npos ? "" : arg.substr(equals));
    }
  }

  po::options_description all;
  for (const Group& group : groups_) {
    for (const auto& option : group.options) all.add(option);
  }
  std::vector<std::string> positional;
  all.add_options()(kPositionalName, po::value(&positional));
  po::positional_options_description positional_spec;
  positional_spec.add(kPositionalName, -1);

  constexpr int kStyle =
      po::command_line_style::default_style & ~po::command_line_style::allow_guessing;
  po::variables_map vm;
  po::store(
      po::command_line_parser(args).options(all).positional(positional_spec).style(kStyle).run(),
      vm);
  po::notify(vm);

  if (!positional.empty()) {
    if (positional_ == nullptr) {
      throw UsageError("unexpected argument " + QuoteForMessage(positional[0]));
    }
    *positional_ = std::move(positional);
  }
  return vm;
}

std::string OptionTable::Help() const {
  // One parent description, so that every group's descriptions start in
  // the same column.
  po::options_description all(kHelpWidth, kHelpDescriptionWidth);
  for (const Group& group : groups_) {
    po::options_description description(group.caption, kHelpWidth, kHelpDescriptionWidth);
    for (const auto& option : group.options) description.add(option);
    all.add(description);
  }
  std::ostringstream out;
  out << all;
  // Boost leaves a space at the end of wrapped lines.
  std::string text;
  std::string line;
  std::istringstream lines(out.str());
  while (std::getline(lines, line)) {
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (text.empty() && line.empty()) continue;
    text += line + "\n";
  }
  return text + "\n";
}

void FingerprintFlags::Define(OptionTable& table, bool offer_bits) {
  const FingerprintOptions defaults;
  if (offer_bits) {
    table.Add(kFingerprintGroup, "bits", WholeNumber("bits", &bits_, 64, 128)->value_name("B"),
              "Width of the fingerprints, 64 or 128 (features hashed with XXH3-128). Default: " +
                  std::to_string(defaults.bits) + ", or the store's with --db. e.g. --bits 128");
  }
  table.Add(kFingerprintGroup, "window", WholeNumber("window", &window_, 1, 64)->value_name("N"),
            "Tokens per feature (shingle), 1 to 64. Default: " + std::to_string(defaults.window) +
                ", or the store's with --db. e.g. --window 5");
  table.Add(kFingerprintGroup, "weighting", po::value(&weighting_)->value_name("W"),
            "How often a feature counts: tf (once per occurrence) or presence (once). "
            "Default: tf, or the store's with --db. e.g. --weighting presence");
  table.Add(
      kFingerprintGroup, "signature-bytes",
      WholeNumber("signature-bytes", &signature_bytes_, 0, Signature::kMaxBytes)->value_name("B"),
      "Bytes of each text's verification signature: 0 (none: matches by distance alone) "
      "or 16, 32, 64, 128 or 256. Default: " +
          std::to_string(defaults.signature_bytes) +
          ", or the store's with --db. e.g. --signature-bytes 128");
  table.Add(kFingerprintGroup, "signature-window",
            WholeNumber("signature-window", &signature_window_, 1, 64)->value_name("N"),
            "Tokens per shingle of the signature, 1 to 64. Default: " +
                std::to_string(defaults.signature_window) +
                ", or the store's with --db. e.g. --signature-window 4");
}

void FingerprintFlags::Check(const po::variables_map& vm) {
  window_given_ = vm.count("window") > 0;
  weighting_given_ = vm.count("weighting") > 0;
  signature_bytes_given_ = vm.count("signature-bytes") > 0;
  signature_window_given_ = vm.count("signature-window") > 0;
  bits_given_ = vm.count("bits") > 0;
  if (bits_given_ && bits_ != 64 && bits_ != 128) {
    throw UsageError("--bits: " + std::to_string(bits_) + " is neither 64 nor 128");
  }
  if (signature_bytes_given_) {
    FingerprintOptions options;
    options.signature_bytes = signature_bytes_;
    if (Status s = options.Validate(); !s.ok()) {
      throw UsageError("--signature-bytes: " + s.message());
    }
  }
  if (window_given_) {
    FingerprintOptions options;
    options.window = window_;
    if (Status s = options.Validate(); !s.ok()) throw UsageError("--window: " + s.message());
  }
  if (weighting_given_) {
    if (weighting_ == "tf") {
      weighting_value_ = FeatureWeighting::kTermFrequency;
    } else if (weighting_ == "presence") {
      weighting_value_ = FeatureWeighting::kPresence;
    } else {
      throw UsageError("--weighting: unknown weighting " + QuoteForMessage(weighting_) +
                       " (expected tf or presence)");
    }
  }
}

FingerprintOptions FingerprintFlags::Apply(FingerprintOptions base) const {
  if (window_given_) base.window = window_;
  if (weighting_given_) base.weighting = weighting_value_;
  if (signature_bytes_given_) base.signature_bytes = signature_bytes_;
  if (signature_window_given_) base.signature_window = signature_window_;
  if (bits_given_) base.bits = bits_;
  return base;
}

void InputFlags::Define(OptionTable& table, std::string input_help) {
  const ReaderOptions defaults;
  table.Add(kSourceGroup, "input", po::value(&path_)->value_name("FILE"), std::move(input_help));
  table.Add(kInputGroup, "format", po::value(&format_)->value_name("F"),
            "Format of --input: jsonl (documents, one JSON object per line; also json), tsv "
            "(id<TAB>hash[<TAB>metadata], or id and hash between spaces; a header line such "
            "as \"id hash\" is skipped) or hash (one per line, id = line number). "
            "Default: jsonl. e.g. --format tsv",
            {});
  table.Add(kInputGroup, "hash-encoding", po::value(&hash_encoding_)->value_name("E"),
            "tsv and hash: how the hashes are written: unsigned (decimal or 0x-hexadecimal), "
            "signed (decimal, negative for the top bit set, as a Java long) or hex (with or "
            "without 0x). Default: unsigned. e.g. --hash-encoding signed",
            {"hash_encoding"});
  table.Add(kInputGroup, "text-column", po::value(&options_.text_column)->value_name("KEY"),
            "jsonl: the key of each document's text. Default: " + defaults.text_column +
                ". e.g. --text-column body",
            {"text_column"});
  table.Add(kInputGroup, "id-column", po::value(&options_.id_column)->value_name("KEY"),
            "jsonl: the key of each document's id, an integer from 0 to 2^64-1 (or a string of "
            "its digits). Default: " +
                defaults.id_column + ". e.g. --id-column doc_id",
            {"id_column"});
  table.Add(kInputGroup, "meta-column", po::value(&options_.meta_column)->value_name("KEY"),
            "jsonl: the key of each document's metadata, kept with it. Default: none. "
            "e.g. --meta-column url",
            {"meta_column"});
  table.Add(kInputGroup, "time-column", po::value(&options_.time_column)->value_name("KEY"),
            "jsonl: the key of each document's time, seconds since the Unix epoch or an RFC "
            "3339 string (2025-12-06T05:46:40Z); a document without one takes the time it is "
            "written. Default: " +
                defaults.time_column + ". e.g. --time-column fetched_at",
            {"time_column"});
}

void InputFlags::Check(const po::variables_map& vm) {
  Result<InputFormat> format = ParseInputFormat(format_);
  if (!format.ok()) throw UsageError("--format: " + format.status().message());
  options_.format = *format;
  Result<HashEncoding> encoding = ParseHashEncoding(hash_encoding_);
  if (!encoding.ok()) throw UsageError("--hash-encoding: " + encoding.status().message());
  options_.hash_encoding = *encoding;
  if (vm.count("hash-encoding") > 0 && options_.format == InputFormat::kJsonl) {
    throw UsageError("--hash-encoding applies to --format tsv and hash only");
  }
  for (const char* column : {"text-column", "id-column", "meta-column"}) {
    if (vm.count(column) == 0) continue;
    if (options_.format != InputFormat::kJsonl) {
      throw UsageError(std::string("--") + column + " applies to --format jsonl only");
    }
  }
  if (options_.text_column.empty()) throw UsageError("--text-column: empty key");
  if (options_.id_column.empty()) throw UsageError("--id-column: empty key");
  if (vm.count("meta-column") > 0 && options_.meta_column.empty()) {
    throw UsageError("--meta-column: empty key");
  }
  options_.path = path_;
  if (vm.count("input") > 0 && path_.empty()) {
    throw UsageError("--input: empty file name (use - for standard input)");
  }
  if (vm.count("format") > 0 && !given()) throw UsageError("--format applies to --input only");
}

void TextFlags::Define(OptionTable& table) {
  table.Add(kSourceGroup, "text", po::value(&texts)->value_name("T")->composing(),
            "A UTF-8 text, given on the command line. e.g. --text 'the quick brown fox'");
  table.Add(kSourceGroup, "file", po::value(&files)->value_name("F")->composing(),
            "A file whose whole content is one UTF-8 text; - reads standard input. "
            "e.g. --file page.txt");
}

void TextFlags::Check() const {
  for (const std::string& text : texts) {
    if (text.empty()) throw UsageError("--text: empty text");
  }
  for (const std::string& file : files) {
    if (file.empty()) throw UsageError("--file: empty file name (use - for standard input)");
  }
}

}  // namespace fpstore::cli
