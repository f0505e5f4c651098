#include "quality/corpus.h"

#include <simdjson.h>
#include <unicode/uchar.h>
#include <unicode/utf8.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <unordered_map>

#include "quality/common.h"

namespace fpstore::quality {
namespace {

class LineParser {
 public:
  explicit LineParser(const std::string& path) : path_(path) {}

  // Parses one non-blank line into *doc; stops the program if it is bad.
  void Parse(const std::string& line, std::size_t line_number, Document* doc) {
    line_ = line_number;
    const simdjson::padded_string padded(line);
    simdjson::dom::element root;
    if (const simdjson::error_code error = parser_.parse(padded).get(root)) {
      Fail(std::string("invalid JSON: ") + simdjson::error_message(error));
    }
    simdjson::dom::object object;
    if (root.get(object) != simdjson::SUCCESS) Fail("expected a JSON object");
    doc->id = Id(object);
    doc->text = String(object, "text", true);
    doc->url = String(object, "url", false);
    doc->source = String(object, "source", false);
    if (doc->text.empty()) Fail("\"text\" is empty");
  }

  [[noreturn]] void Fail(const std::string& reason) const {
    Die(path_ + ":" + std::to_string(line_) + ": " + reason);
  }

 private:
  std::uint64_t Id(simdjson::dom::object object) const {
    simdjson::dom::element id;
    if (object.at_key("id").get(id) != simdjson::SUCCESS) Fail("missing \"id\" field");
    if (id.type() == simdjson::dom::element_type::UINT64) return id.get_uint64().value_unsafe();
    if (id.type() == simdjson::dom::element_type::INT64 && id.get_int64().value_unsafe() >= 0) {
      return static_cast<std::uint64_t>(id.get_int64().value_unsafe());
    }
    Fail("\"id\" must be an integer from 0 to 18446744073709551615, got " + simdjson::minify(id));
  }

  std::string String(simdjson::dom::object object, const char* key, bool required) const {
    simdjson::dom::element element;
    if (object.at_key(key).get(element) != simdjson::SUCCESS || element.is_null()) {
      if (required) Fail(std::string("missing \"") + key + "\" field");
      return {};
    }
    std::string_view value;
    if (element.get(value) != simdjson::SUCCESS) {
      Fail(std::string("\"") + key + "\" must be a string, got " + simdjson::minify(element));
    }
    return std::string(value);
  }

  const std::string& path_;
  std::size_t line_ = 0;
  simdjson::dom::parser parser_;
};

bool IsBlank(const std::string& line) {
  return std::all_of(line.begin(), line.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

void AppendUtf8(UChar32 c, std::string* out) {
  char buffer[U8_MAX_LENGTH];
  std::int32_t length = 0;
  U8_APPEND_UNSAFE(buffer, length, c);
  out->append(buffer, static_cast<std::size_t>(length));
}

}  // namespace

std::vector<Document> ReadCorpus(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Die("cannot open " + path + ": " + std::strerror(errno));
  LineParser parser(path);
  std::vector<Document> docs;
  std::unordered_map<std::uint64_t, std::size_t> line_of_id;
  std::string line;
  for (std::size_t number = 1; std::getline(in, line); ++number) {
    if (IsBlank(line)) continue;
    Document doc;
    parser.Parse(line, number, &doc);
    const auto [it, added] = line_of_id.emplace(doc.id, number);
    if (!added) {
      parser.Fail("id " + std::to_string(doc.id) + " repeats line " + std::to_string(it->second));
    }
    docs.push_back(std::move(doc));
  }
  if (in.bad()) Die("reading " + path + ": " + std::strerror(errno));
  if (docs.empty()) Die(path + ": empty input (no documents)");
  return docs;
}

std::vector<std::uint64_t> WordHashes(std::string_view utf8) {
  if (utf8.size() > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
    Die("a text of 2 GiB or more");
  }
  const auto* s = reinterpret_cast<const std::uint8_t*>(utf8.data());
  const auto length = static_cast<std::int32_t>(utf8.size());
  std::vector<std::uint64_t> hashes;
  std::string word;
  auto end_word = [&] {
    if (word.empty()) return;
    hashes.push_back(XXH3_64bits(word.data(), word.size()));
    word.clear();
  };
  for (std::int32_t i = 0; i < length;) {
    UChar32 c;
    U8_NEXT(s, i, length, c);
    if (c >= 0 && c < 0x80) {
      const bool lower = c >= 'a' && c <= 'z', upper = c >= 'A' && c <= 'Z';
      if (lower || upper || (c >= '0' && c <= '9')) {
        word.push_back(static_cast<char>(upper ? c + ('a' - 'A') : c));
        continue;
      }
    } else if (c >= 0 && u_isalnum(c)) {
      AppendUtf8(u_tolower(c), &word);
      continue;
    }
    end_word();
  }
  end_word();
  return hashes;
}

ShingleSet MakeShingles(std::string_view utf8, int width) {
  const std::vector<std::uint64_t> words = WordHashes(utf8);
  ShingleSet set;
  if (words.empty()) return set;
  const XXH128_hash_t digest = XXH3_128bits(words.data(), words.size() * sizeof(words[0]));
  set.words_digest = {digest.high64, digest.low64};
  const std::size_t w = std::min(words.size(), static_cast<std::size_t>(width));
  set.hashes.reserve(words.size() - w + 1);
  for (std::size_t i = 0; i + w <= words.size(); ++i) {
    set.hashes.push_back(XXH3_64bits(&words[i], w * sizeof(words[0])));
  }
  std::sort(set.hashes.begin(), set.hashes.end());
  set.hashes.erase(std::unique(set.hashes.begin(), set.hashes.end()), set.hashes.end());
  return set;
}

}  // namespace fpstore::quality
