#include "cli/record_reader.h"

#include <simdjson.h>

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>

#include "cli/command.h"
#include "cli/line_reader.h"

namespace fpstore::cli {
namespace {

static_assert(LineReader::kPadding >= simdjson::SIMDJSON_PADDING,
              "lines must be padded for simdjson");

bool IsBlank(std::string_view line) {
  return line.find_first_not_of(" \t") == std::string_view::npos;
}

constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

// The first field of `line` and the rest after its separator: a tab, or in a line without tabs,
// a run of spaces (the original simhash tool's "id  hash").
std::pair<std::string_view, std::optional<std::string_view>> CutField(std::string_view line,
                                                                      bool tabs) {
  const std::size_t end = line.find(tabs ? '\t' : ' ');
  if (end == std::string_view::npos) return {line, std::nullopt};
  std::string_view rest = line.substr(end + 1);
  if (!tabs) rest.remove_prefix(std::min(rest.size(), rest.find_first_not_of(' ')));
  return {line.substr(0, end), rest};
}

// The reading loop shared by every format: blank lines, line numbers,
// errors, the empty input.
class LineRecordReader : public RecordReader {
 public:
  explicit LineRecordReader(const ReaderOptions& options)
      : lines_(options.path),
        allow_empty_(options.allow_empty),
        on_bad_line_(options.on_bad_line) {}

  bool Next(Record* record) final {
    std::string_view line;
    while (lines_.Next(&line)) {
      // A byte-order mark, as some Windows tools write: not part of the first record.
      if (lines_.line_number() == 1 && line.starts_with(kUtf8Bom)) {
        line.remove_prefix(kUtf8Bom.size());
      }
      if (IsBlank(line)) continue;
      const bool first = !seen_line_;
      seen_line_ = true;
      record->line = lines_.line_number();
      record->fingerprint.reset();
      record->text.clear();
      record->metadata.clear();
      record->signature.clear();
      record->time.reset();
      if (first && IsHeader(line)) continue;
      if (!on_bad_line_) {
        ParseLine(line, record);
      } else {
        try {
          ParseLine(line, record);
        } catch (const InputError& e) {
          on_bad_line_(record->line, line, e.reason());
          continue;
        }
      }
      ++records_;
      return true;
    }
    if (records_ == 0 && !allow_empty_) {
      throw InputError(lines_.name(), 0, "empty input (no records)");
    }
    return false;
  }

  const std::string& name() const final { return lines_.name(); }
  std::uint64_t bytes_read() const final { return lines_.bytes_read(); }
  std::optional<std::uint64_t> total_bytes() const final { return lines_.total_bytes(); }

 protected:
  // Fills the record's id, fingerprint or text, and metadata from a
  // non-blank line, or calls Fail. `line` has LineReader::kPadding readable
  // bytes after it.
  virtual void ParseLine(std::string_view line, Record* record) = 0;

  // Whether the first non-blank line is a header to skip rather than a record.
  virtual bool IsHeader(std::string_view) { return false; }

  [[noreturn]] void Fail(std::string reason) const {
    throw InputError(lines_.name(), lines_.line_number(), std::move(reason));
  }

  // The value or a failure naming the current line.
  template <typename T>
  T ValueOrFail(Result<T> result) const {
    if (!result.ok()) Fail(result.status().message());
    return *std::move(result);
  }

 private:
  LineReader lines_;
  bool allow_empty_;
  std::function<void(std::uint64_t, std::string_view, const std::string&)> on_bad_line_;
  std::uint64_t records_ = 0;
  bool seen_line_ = false;  // a non-blank line was read
};

class HashReader final : public LineRecordReader {
 public:
  explicit HashReader(const ReaderOptions& options)
      : LineRecordReader(options), encoding_(options.hash_encoding) {}

 private:
  void ParseLine(std::string_view line, Record* record) override {
    record->id = record->line;
    Result<Fingerprint> fp = ParseFingerprintAs(line, encoding_, bits());
    if (!fp.ok() && line.find_first_of(" \t") != std::string_view::npos) {
      Fail("expected one hash per line, found " + QuoteForMessage(line) +
           "; for an id and a hash per line (what the simhash tool's --format hash reads), "
           "use --format tsv");
    }
    record->fingerprint = ValueOrFail(std::move(fp));
  }

  HashEncoding encoding_;
};

// id, hash and metadata, separated by tabs, or in a line without tabs by runs of spaces. A first
// line whose id and hash are neither (such as "id<TAB>hash") is a header and skipped; the fields
// it names after the hash, "time" and "signature" (what `fpstore-admin dump` writes), come between
// hash and metadata in every line: a time (ParseTime) and a signature (hex, or "-").
class TsvReader final : public LineRecordReader {
 public:
  explicit TsvReader(const ReaderOptions& options)
      : LineRecordReader(options), encoding_(options.hash_encoding) {}

 private:
  enum class Column { kTime, kSignature };

  struct Fields {
    std::string_view id;
    std::optional<std::string_view> hash;
    std::string_view metadata;
  };

  static Fields Split(std::string_view line) {
    const bool tabs = line.find('\t') != std::string_view::npos;
    Fields fields;
    const auto [id, rest] = CutField(line, tabs);
    fields.id = id;
    if (rest) {
      const auto [hash, metadata] = CutField(*rest, tabs);
      fields.hash = hash;
      fields.metadata = metadata.value_or(std::string_view());
    }
    return fields;
  }

  bool IsHeader(std::string_view line) override {
    const Fields fields = Split(line);
    const bool header = fields.hash && !ParseId(fields.id).ok() &&
                        !ParseFingerprintAs(*fields.hash, encoding_, bits()).ok();
    if (header && line.find('\t') != std::string_view::npos) {
      std::optional<std::string_view> rest = fields.metadata;
      while (rest) {
        const auto [name, after] = CutField(*rest, /*tabs=*/true);
        if (name == "time") {
          columns_.push_back(Column::kTime);
        } else if (name == "signature") {
          columns_.push_back(Column::kSignature);
        } else {
          break;
        }
        rest = after;
      }
    }
    return header;
  }

  void ParseLine(std::string_view line, Record* record) override {
    const Fields fields = Split(line);
    if (!fields.hash) {
      Fail("expected id<TAB>hash (or id and hash between spaces), found " + QuoteForMessage(line));
    }
    record->id = ValueOrFail(ParseId(fields.id));
    record->fingerprint = ValueOrFail(ParseFingerprintAs(*fields.hash, encoding_, bits()));
    std::optional<std::string_view> rest = fields.metadata;
    for (const Column column : columns_) {
      const auto [field, after] =
          rest ? CutField(*rest, /*tabs=*/true)
               : std::pair<std::string_view, std::optional<std::string_view>>();
      if (!after) {
        Fail("expected id<TAB>hash<TAB>" + ColumnNames() +
             "<TAB>metadata (as the header names them), found " + QuoteForMessage(line));
      }
      if (column == Column::kTime) {
        record->time = ValueOrFail(ParseTime(field));
      } else {
        record->signature = ValueOrFail(ParseSignature(field));
      }
      rest = after;
    }
    record->metadata.assign(rest.value_or(std::string_view()));
  }

  std::string ColumnNames() const {
    std::string names;
    for (const Column column : columns_) {
      names += (names.empty() ? "" : "<TAB>") +
               std::string(column == Column::kTime ? "time" : "signature");
    }
    return names;
  }

  HashEncoding encoding_;
  std::vector<Column> columns_;  // named by the header, between hash and metadata
};

class JsonlReader final : public LineRecordReader {
 public:
  explicit JsonlReader(const ReaderOptions& options)
      : LineRecordReader(options),
        text_column_(options.text_column),
        id_column_(options.id_column),
        meta_column_(options.meta_column),
        time_column_(options.time_column) {}

 private:
  void ParseLine(std::string_view line, Record* record) override {
    simdjson::dom::element document;
    // false: parse in place; LineReader guarantees the padding.
    if (const simdjson::error_code error =
            parser_.parse(line.data(), line.size(), false).get(document)) {
      Fail(DescribeParseError(error, line));
    }
    simdjson::dom::object object;
    if (document.get(object) != simdjson::SUCCESS) {
      Fail("expected a JSON object, got " + JsonForMessage(document));
    }

    simdjson::dom::element id;
    if (object.at_key(id_column_).get(id) != simdjson::SUCCESS) Fail(Missing(id_column_));
    record->id = IdOf(id);

    simdjson::dom::element text;
    if (object.at_key(text_column_).get(text) != simdjson::SUCCESS) Fail(Missing(text_column_));
    std::string_view text_value;
    if (text.get(text_value) != simdjson::SUCCESS) {
      Fail(QuoteForMessage(text_column_) + " must be a string, got " + JsonForMessage(text));
    }
    if (text_value.empty()) Fail(QuoteForMessage(text_column_) + " is empty");
    record->text.assign(text_value);

    simdjson::dom::element time;
    if (!time_column_.empty() && object.at_key(time_column_).get(time) == simdjson::SUCCESS &&
        !time.is_null()) {
      record->time = TimeOf(time);
    }

    simdjson::dom::element meta;
    if (!meta_column_.empty() && object.at_key(meta_column_).get(meta) == simdjson::SUCCESS) {
      std::string_view meta_string;
      if (meta.get(meta_string) == simdjson::SUCCESS) {
        record->metadata.assign(meta_string);
      } else if (!meta.is_null()) {
        record->metadata = simdjson::minify(meta);
      }
    }
  }

  // A JSON integer of seconds since the epoch, or a string ParseTime reads.
  DocumentTime TimeOf(simdjson::dom::element time) const {
    std::string_view text;
    if (time.get(text) == simdjson::SUCCESS) {
      Result<DocumentTime> parsed = ParseTime(text);
      if (!parsed.ok()) Fail(QuoteForMessage(time_column_) + ": " + parsed.status().message());
      return *parsed;
    }
    if (time.type() == simdjson::dom::element_type::UINT64 ||
        time.type() == simdjson::dom::element_type::INT64) {
      const bool negative =
          time.type() == simdjson::dom::element_type::INT64 && time.get_int64().value_unsafe() < 0;
      if (!negative &&
          time.get_uint64().value_unsafe() <= static_cast<std::uint64_t>(kMaxDocumentTime)) {
        return static_cast<DocumentTime>(time.get_uint64().value_unsafe());
      }
    }
    Fail(QuoteForMessage(time_column_) + " must be seconds since the Unix epoch, from 0 to " +
         std::to_string(kMaxDocumentTime) +
         ", or an RFC 3339 string such as \"2025-12-06T05:46:40Z\", got " + JsonForMessage(time));
  }

  static std::string Missing(const std::string& column) {
    return "missing " + QuoteForMessage(column) + " field";
  }

  // `json` is the id's JSON text: the message quotes at most 40 bytes of it,
  // cut as JsonForMessage cuts (a raw id token may be thousands of digits).
  std::string BadId(std::string json) const {
    return QuoteForMessage(id_column_) +
           " must be an integer from 0 to 18446744073709551615 or a string of its digits, got " +
           JsonForMessage(std::move(json));
  }

  std::uint64_t IdOf(simdjson::dom::element id) const {
    switch (id.type()) {
      case simdjson::dom::element_type::UINT64:
        return id.get_uint64().value_unsafe();
      case simdjson::dom::element_type::INT64:
        if (const std::int64_t value = id.get_int64().value_unsafe(); value >= 0) {
          return static_cast<std::uint64_t>(value);
        }
        break;
      case simdjson::dom::element_type::STRING:
        if (Result<std::uint64_t> value = ParseId(id.get_string().value_unsafe()); value.ok()) {
          return *value;
        }
        break;
      default:
        break;
    }
    Fail(BadId(simdjson::minify(id)));
  }

  // A message for a line simdjson rejects.
  std::string DescribeParseError(simdjson::error_code error, std::string_view line) const {
    if (error == simdjson::UTF8_ERROR) {
      if (std::optional<std::size_t> bad = FindInvalidUtf8(line)) {
        return "invalid UTF-8 at byte offset " + std::to_string(*bad) + " of the line";
      }
    }
    // The DOM parser rejects integers beyond 64 bits without saying where
    // (NUMBER_ERROR, or BIGINT_ERROR in simdjson 3.1+). The usual culprit
    // is an id, so look at the id lazily; an id too big is an error in any
    // case.
    if (std::optional<std::string> token = RawIdToken(line)) {
      if (token->find_first_not_of("0123456789") == std::string::npos && !ParseId(*token).ok()) {
        return BadId(*std::move(token));
      }
    }
    if (error == simdjson::NUMBER_ERROR || error == simdjson::NUMBER_OUT_OF_RANGE) {
      return "invalid JSON: a number is malformed or does not fit in 64 bits";
    }
    if (error == simdjson::STRING_ERROR) {
      return "invalid JSON: a string has an invalid escape (e.g. a lone \\ud800 surrogate)";
    }
    return std::string("invalid JSON: ") + simdjson::error_message(error);
  }

  // The id field's JSON text as simdjson's lazy parser finds it, without
  // parsing the value; nullopt if it cannot be found.
  std::optional<std::string> RawIdToken(std::string_view line) const {
    simdjson::ondemand::parser lazy;
    simdjson::ondemand::document document;
    simdjson::ondemand::value id;
    if (lazy.iterate(simdjson::padded_string_view(line.data(), line.size(),
                                                  line.size() + LineReader::kPadding))
                .get(document) != simdjson::SUCCESS ||
        document.find_field_unordered(id_column_).get(id) != simdjson::SUCCESS) {
      return std::nullopt;
    }
    std::string_view token = id.raw_json_token();
    while (!token.empty() && (token.back() == ' ' || token.back() == '\t' || token.back() == '\r' ||
                              token.back() == '\n')) {
      token.remove_suffix(1);
    }
    return std::string(token);
  }

  // Compact JSON text for a message, cut short.
  static std::string JsonForMessage(simdjson::dom::element element) {
    return JsonForMessage(simdjson::minify(element));
  }

  // JSON text (as minify writes it, or a raw token) for a message, cut to
  // at most 40 bytes at a character boundary, then "... (N bytes)".
  static std::string JsonForMessage(std::string json) {
    constexpr std::size_t kMaxBytes = 40;
    if (json.size() > kMaxBytes) {
      const std::size_t full = json.size();
      std::size_t cut = kMaxBytes;
      while (cut > 0 && (static_cast<unsigned char>(json[cut]) & 0xC0) == 0x80) --cut;
      json.resize(cut);
      json += "... (" + std::to_string(full) + " bytes)";
    }
    return json;
  }

  std::string text_column_;
  std::string id_column_;
  std::string meta_column_;
  std::string time_column_;
  simdjson::dom::parser parser_;
};

}  // namespace

std::unique_ptr<RecordReader> RecordReader::Open(const ReaderOptions& options) {
  switch (options.format) {
    case InputFormat::kJsonl:
      return std::make_unique<JsonlReader>(options);
    case InputFormat::kTsv:
      return std::make_unique<TsvReader>(options);
    case InputFormat::kHash:
      return std::make_unique<HashReader>(options);
  }
  throw UsageError("unknown input format");
}

}  // namespace fpstore::cli
