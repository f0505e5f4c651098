#include "cli/record_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/command.h"
#include "cli/document_pipeline.h"
#include "scratch_dir.h"

namespace fpstore::cli {
namespace {

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

using fpstore::testing::ScratchDir;

class RecordReaderTest : public ::testing::Test {
 protected:
  // Every record of `content`, read as `options` say (path aside).
  std::vector<Record> ReadAll(const std::string& content, ReaderOptions options = {}) {
    options.path = dir_.Write("input", content);
    std::unique_ptr<RecordReader> reader = RecordReader::Open(options);
    std::vector<Record> records;
    Record record;
    while (reader->Next(&record)) records.push_back(record);
    return records;
  }

  // The message of the InputError that reading `content` ends with, with
  // the directory taken out: "input:2: missing ...".
  std::string ErrorOf(const std::string& content, ReaderOptions options = {}) {
    try {
      ReadAll(content, options);
    } catch (const InputError& e) {
      std::string message = e.what();
      const std::string prefix = (dir_.path() / "").string();
      if (message.starts_with(prefix)) message.erase(0, prefix.size());
      EXPECT_EQ(e.file(), dir_.path() / "input");
      return message;
    }
    ADD_FAILURE() << "no error reading: " << content;
    return "";
  }

  static ReaderOptions Format(InputFormat format) {
    ReaderOptions options;
    options.format = format;
    return options;
  }

  ScratchDir dir_;
};

TEST_F(RecordReaderTest, JsonlReadsIdTextAndMetadata) {
  ReaderOptions options;
  options.meta_column = "url";
  const std::vector<Record> records = ReadAll(
      "{\"id\": 1, \"text\": \"one\", \"url\": \"https://a\"}\n"
      "\n"
      "  \t \n"
      "{\"url\": \"https://b\", \"text\": \"two \\\"quoted\\\"\\n\", \"id\": "
      "18446744073709551615}\n"
      "{\"id\": \"0042\", \"text\": \"string id\"}\r\n"
      "{\"id\": 9, \"text\": \"t\\u00e9\\ud83d\\ude00\", \"url\": null, \"other\": [1, {\"x\": "
      "2}]}\n",
      options);
  ASSERT_EQ(records.size(), 4u);
  EXPECT_EQ(records[0].id, 1u);
  EXPECT_EQ(records[0].text, "one");
  EXPECT_EQ(records[0].metadata, "https://a");
  EXPECT_FALSE(records[0].fingerprint.has_value());
  EXPECT_EQ(records[0].line, 1u);
  EXPECT_EQ(records[1].id, 18446744073709551615u);
  EXPECT_EQ(records[1].text, "two \"quoted\"\n");
  EXPECT_EQ(records[1].line, 4u);  // blank lines count
  EXPECT_EQ(records[2].id, 42u);
  EXPECT_EQ(records[2].metadata, "");  // no "url"
  EXPECT_EQ(records[3].text, "té😀");
  EXPECT_EQ(records[3].metadata, "");  // null
  EXPECT_EQ(records[3].line, 6u);
}

TEST_F(RecordReaderTest, JsonlColumnsAreConfigurable) {
  ReaderOptions options;
  options.id_column = "doc_id";
  options.text_column = "body";
  options.meta_column = "meta";
  const std::vector<Record> records = ReadAll(
      "{\"doc_id\": 5, \"body\": \"b\", \"text\": 3, \"meta\": {\"a\": [1, 2]}}\n"
      "{\"doc_id\": 6, \"body\": \"c\", \"meta\": 12.5}\n",
      options);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].id, 5u);
  EXPECT_EQ(records[0].text, "b");
  EXPECT_EQ(records[0].metadata, "{\"a\":[1,2]}");  // non-strings as compact JSON
  EXPECT_EQ(records[1].metadata, "12.5");
}

TEST_F(RecordReaderTest, JsonlFirstOfRepeatedKeysCounts) {
  const std::vector<Record> records = ReadAll("{\"id\": 1, \"id\": 2, \"text\": \"a\"}\n");
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].id, 1u);
}

TEST_F(RecordReaderTest, JsonlErrorsNameFileAndLine) {
  const std::string ok = "{\"id\": 1, \"text\": \"fine\"}\n";
  EXPECT_EQ(ErrorOf(ok + "{\"id\": 2, \"text\": \"broken\"\n"),
            "input:2: invalid JSON: The JSON document has an improper structure: missing or "
            "superfluous commas, braces, missing keys, etc.");
  EXPECT_EQ(ErrorOf(ok + "{\"id\": 2, \"text\": \"x\"} trailing\n").substr(0, 21),
            "input:2: invalid JSON");
  EXPECT_EQ(ErrorOf(ok + ok + "{\"id\": 3}\n"), "input:3: missing \"text\" field");
  EXPECT_EQ(ErrorOf("{\"text\": \"no id\"}\n"), "input:1: missing \"id\" field");
  EXPECT_EQ(ErrorOf("[1, 2]\n"), "input:1: expected a JSON object, got [1,2]");
  EXPECT_EQ(ErrorOf("\"text\"\n"), "input:1: expected a JSON object, got \"text\"");
  EXPECT_EQ(ErrorOf("{\"id\": 1, \"text\": 42}\n"), "input:1: \"text\" must be a string, got 42");
  EXPECT_EQ(ErrorOf("{\"id\": 1, \"text\": null}\n"),
            "input:1: \"text\" must be a string, got null");
  EXPECT_EQ(ErrorOf("{\"id\": 1, \"text\": \"\"}\n"), "input:1: \"text\" is empty");
  EXPECT_EQ(ErrorOf(ok + "{\"id\": 2, \"text\": \"bad \xFF byte\"}\n"),
            "input:2: invalid UTF-8 at byte offset 23 of the line");
  EXPECT_EQ(ErrorOf("{\"id\": 1, \"text\": \"\\ud800\"}\n"),
            "input:1: invalid JSON: a string has an invalid escape (e.g. a lone \\ud800 "
            "surrogate)");
}

TEST_F(RecordReaderTest, JsonlIdsMustBeUnsigned64BitIntegers) {
  const std::string expected =
      "input:1: \"id\" must be an integer from 0 to 18446744073709551615 or a string of its "
      "digits, got ";
  for (const char* id : {"-5", "2.5", "7.0", "1e3", "-0.0", "true", "null", "\"12a\"", "\"-1\"",
                         "\"\"", "\" 1\"", "\"0x10\"", "[1]", "{}", "\"18446744073709551616\"",
                         "18446744073709551616", "123456789012345678901234567890"}) {
    const std::string error = ErrorOf(std::string("{\"id\": ") + id + ", \"text\": \"t\"}\n");
    EXPECT_TRUE(error.starts_with(expected)) << id << ": " << error;
  }
  EXPECT_EQ(ErrorOf("{\"id\": -5, \"text\": \"t\"}\n"), expected + "-5");
  EXPECT_EQ(ErrorOf("{\"id\": 18446744073709551616, \"text\": \"t\"}\n"),
            expected + "18446744073709551616");
  EXPECT_EQ(ErrorOf("{\"text\": \"t\", \"id\": 99999999999999999999 }\n"),
            expected + "99999999999999999999");
}

// A value of any length is quoted to at most 40 bytes (then its length), as
// every message quotes input: a 3,000-digit id is not copied whole.
TEST_F(RecordReaderTest, MessagesQuoteAtMost40BytesOfAnyValue) {
  const std::string digits(3000, '1');
  const std::string forty(40, '1');
  std::string ones = "[1";
  for (int i = 1; i < 1500; ++i) ones += ",1";
  ones += "]";  // 3,001 bytes of JSON
  const std::string bad_id =
      "input:1: \"id\" must be an integer from 0 to 18446744073709551615 or a string of its "
      "digits, got ";
  const auto expect_short = [](const std::string& message) {
    EXPECT_LT(message.size(), 200u) << message;
    EXPECT_EQ(message.find(std::string(41, '1')), std::string::npos) << message;
  };
  const std::vector<std::pair<std::string, std::string>> jsonl = {
      // Beyond 64 bits the DOM parser fails; the lazy one finds the id.
      {"{\"id\": " + digits + ", \"text\": \"t\"}\n", bad_id + forty + "... (3000 bytes)"},
      {"{\"text\": \"t\", \"id\": " + digits + "}\n", bad_id + forty + "... (3000 bytes)"},
      {"{\"id\": \"" + digits + "\", \"text\": \"t\"}\n",
       bad_id + "\"" + std::string(39, '1') + "... (3002 bytes)"},
      {"{\"id\": " + ones + ", \"text\": \"t\"}\n",
       bad_id + ones.substr(0, 40) + "... (3001 bytes)"},
      {"{\"id\": 1, \"text\": " + ones + "}\n",
       "input:1: \"text\" must be a string, got " + ones.substr(0, 40) + "... (3001 bytes)"},
      {ones + "\n",
       "input:1: expected a JSON object, got " + ones.substr(0, 40) + "... (3001 bytes)"},
      {"{\"id\": 1, \"text\": \"t\", \"n\": " + digits + "}\n",
       "input:1: invalid JSON: a number is malformed or does not fit in 64 bits"},
  };
  for (const auto& [content, message] : jsonl) {
    const std::string error = ErrorOf(content);
    EXPECT_EQ(error, message);
    expect_short(error);
  }
  ReaderOptions long_key;
  long_key.id_column = std::string(3000, '1');
  EXPECT_EQ(ErrorOf("{\"id\": 1, \"text\": \"t\"}\n", long_key),
            "input:1: missing \"" + forty + "\"... (3000 bytes) field");

  const ReaderOptions tsv = Format(InputFormat::kTsv);
  const std::vector<std::pair<std::string, std::string>> tsvs = {
      {"1\t0x1\n" + digits + "\t0x2\n",
       "input:2: id \"" + forty + "\"... (3000 bytes) does not fit in 64 bits"},
      {"1\t" + digits + "\tmeta\n",
       "input:1: hash \"" + forty + "\"... (3000 bytes) does not fit in 64 bits"},
      {digits + "\n", "input:1: expected id<TAB>hash (or id and hash between spaces), found \"" +
                          forty + "\"... (3000 bytes)"},
  };
  for (const auto& [content, message] : tsvs) {
    const std::string error = ErrorOf(content, tsv);
    EXPECT_EQ(error, message);
    expect_short(error);
  }
  const std::string signature =
      ErrorOf("id\thash\tsignature\tmeta\n1\t0x1\t" + digits + "\tm\n", tsv);
  EXPECT_TRUE(signature.starts_with("input:2: signature \"" + forty + "\"... (3000 bytes) is not"))
      << signature;
  expect_short(signature);

  for (const HashEncoding encoding :
       {HashEncoding::kUnsigned, HashEncoding::kSigned, HashEncoding::kHex}) {
    ReaderOptions hash = Format(InputFormat::kHash);
    hash.hash_encoding = encoding;
    const std::string error = ErrorOf(digits + "\n", hash);
    EXPECT_TRUE(error.starts_with("input:1: hash \"" + forty + "\"... (3000 bytes) ")) << error;
    expect_short(error);
  }
}

TEST_F(RecordReaderTest, OtherBigNumbersAreInvalidJson) {
  EXPECT_EQ(ErrorOf("{\"id\": 1, \"text\": \"t\", \"n\": 18446744073709551616}\n"),
            "input:1: invalid JSON: a number is malformed or does not fit in 64 bits");
}

TEST_F(RecordReaderTest, EmptyInputIsAnErrorUnlessAllowed) {
  EXPECT_EQ(ErrorOf(""), "input: empty input (no records)");
  EXPECT_EQ(ErrorOf("\n \n\t\r\n"), "input: empty input (no records)");
  ReaderOptions allow;
  allow.allow_empty = true;
  EXPECT_TRUE(ReadAll("", allow).empty());
  EXPECT_EQ(ErrorOf("", Format(InputFormat::kTsv)), "input: empty input (no records)");
}

TEST_F(RecordReaderTest, OnBadLineSkipsMalformedLinesAndGoesOn) {
  struct Bad {
    std::uint64_t line;
    std::string text;
    std::string reason;
  };
  std::vector<Bad> bad;
  ReaderOptions options = Format(InputFormat::kTsv);
  options.on_bad_line = [&](std::uint64_t line, std::string_view text, const std::string& reason) {
    bad.push_back({line, std::string(text), reason});
  };
  const std::vector<Record> records = ReadAll("1\t0x1\nno tab\r\n\n3\tbanana\n4\t4\n", options);
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].id, 1u);
  EXPECT_EQ(records[1].id, 4u);
  EXPECT_EQ(records[1].line, 5u);
  ASSERT_EQ(bad.size(), 2u);
  EXPECT_EQ(bad[0].line, 2u);
  EXPECT_EQ(bad[0].text, "no tab");
  EXPECT_EQ(bad[0].reason, "id \"no\" is not a non-negative decimal integer");
  EXPECT_EQ(bad[1].line, 4u);
  EXPECT_EQ(bad[1].text, "3\tbanana");
  EXPECT_EQ(bad[1].reason, "hash \"banana\" is not a decimal or 0x-hexadecimal number");

  // Bad lines are no records: an input of only bad lines is empty.
  ReaderOptions jsonl;
  jsonl.on_bad_line = options.on_bad_line;
  EXPECT_EQ(ErrorOf("{\"id\": -1, \"text\": \"x\"}\n", jsonl), "input: empty input (no records)");
  EXPECT_EQ(bad.size(), 3u);
}

TEST_F(RecordReaderTest, JsonlHandlesAVeryLongLine) {
  std::string text;
  while (text.size() < 50'000'000) text += "lorem ipsum dolor sit amet ";
  const std::vector<Record> records =
      ReadAll("{\"id\": 1, \"text\": \"" + text + "\"}\n{\"id\": 2, \"text\": \"short\"}\n");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_TRUE(records[0].text == text);
  EXPECT_EQ(records[1].text, "short");
}

TEST_F(RecordReaderTest, TsvReadsIdHashAndOptionalMetadata) {
  const std::vector<Record> records =
      ReadAll("1\t0x0123456789abcdef\n\n2\t81985529216486895\thttps://x\tmore\r\n3\t0\n",
              Format(InputFormat::kTsv));
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].id, 1u);
  EXPECT_EQ(records[0].fingerprint, 0x0123456789abcdefULL);
  EXPECT_EQ(records[0].metadata, "");
  EXPECT_EQ(records[1].id, 2u);
  EXPECT_EQ(records[1].fingerprint, 0x0123456789abcdefULL);
  EXPECT_EQ(records[1].metadata, "https://x\tmore");  // the rest of the line
  EXPECT_EQ(records[1].line, 3u);
  EXPECT_EQ(records[2].fingerprint, 0u);
  EXPECT_TRUE(records[2].text.empty());
}

TEST_F(RecordReaderTest, TsvErrorsNameFileAndLine) {
  const ReaderOptions tsv = Format(InputFormat::kTsv);
  const std::string ok = "1\t0x1\n";
  EXPECT_EQ(ErrorOf(ok + "2\n", tsv),
            "input:2: expected id<TAB>hash (or id and hash between spaces), found \"2\"");
  EXPECT_EQ(ErrorOf(ok + "2\t\n", tsv), "input:2: empty hash");
  EXPECT_EQ(ErrorOf("\t0x1\n", tsv), "input:1: empty id");
  EXPECT_EQ(ErrorOf("-2\t0x1\n", tsv),
            "input:1: id \"-2\" has a sign; ids are unsigned 64-bit integers");
  EXPECT_EQ(ErrorOf("x\t0x1\n", tsv), "input:1: id \"x\" is not a non-negative decimal integer");
  EXPECT_EQ(ErrorOf("1\t0x1ffffffffffffffff\n", tsv),
            "input:1: hash \"0x1ffffffffffffffff\" does not fit in 64 bits");
  EXPECT_EQ(ErrorOf("1\tnan\n", tsv),
            "input:1: hash \"nan\" is not a decimal or 0x-hexadecimal number");
  EXPECT_EQ(ErrorOf("1\t0x1 \n", tsv), "input:1: hash \"0x1 \" is not a hexadecimal number");
}

// What the original simhash tool's users bring: a header line, ids and hashes between spaces,
// a byte-order mark, signed or bare-hex hashes.
TEST_F(RecordReaderTest, TsvReadsTheSimhashToolsTables) {
  const std::vector<Record> records = ReadAll(
      "\xEF\xBB\xBFid  hash\n10  231231231231231\n11 0x2a  a url\n", Format(InputFormat::kTsv));
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].id, 10u);
  EXPECT_EQ(records[0].fingerprint, 231231231231231u);
  EXPECT_EQ(records[0].line, 2u);
  EXPECT_EQ(records[1].fingerprint, 0x2au);
  EXPECT_EQ(records[1].metadata, "a url");
  // A header with tabs; a byte-order mark before a record.
  EXPECT_EQ(ReadAll("id\thash\tmeta\n1\t2\n", Format(InputFormat::kTsv)).size(), 1u);
  EXPECT_EQ(ReadAll("\xEF\xBB\xBF"
                    "1\t2\n",
                    Format(InputFormat::kTsv))[0]
                .id,
            1u);
  // Only the first line can be a header, and only when neither field is a value.
  EXPECT_EQ(ErrorOf("1\t2\nid\thash\n", Format(InputFormat::kTsv)),
            "input:2: id \"id\" is not a non-negative decimal integer");

  ReaderOptions signed_hashes = Format(InputFormat::kTsv);
  signed_hashes.hash_encoding = HashEncoding::kSigned;
  const std::vector<Record> signed_records =
      ReadAll("1\t-1\n2\t-9223372036854775808\n3\t9223372036854775807\n", signed_hashes);
  ASSERT_EQ(signed_records.size(), 3u);
  EXPECT_EQ(signed_records[0].fingerprint, 0xffffffffffffffffULL);
  EXPECT_EQ(signed_records[1].fingerprint, 0x8000000000000000ULL);
  EXPECT_EQ(signed_records[2].fingerprint, 0x7fffffffffffffffULL);
  EXPECT_EQ(ErrorOf("1\t9223372036854775808\n", signed_hashes),
            "input:1: hash \"9223372036854775808\" is outside the signed 64-bit range");

  ReaderOptions hex = Format(InputFormat::kHash);
  hex.hash_encoding = HashEncoding::kHex;
  const std::vector<Record> hex_records = ReadAll("ff\n0xFF\nffffffffffffffff\n", hex);
  ASSERT_EQ(hex_records.size(), 3u);
  EXPECT_EQ(hex_records[0].fingerprint, 255u);
  EXPECT_EQ(hex_records[1].fingerprint, 255u);
  EXPECT_EQ(hex_records[2].fingerprint, 0xffffffffffffffffULL);

  // The tool's --format hash is an id and a hash per line: fpstore's tsv.
  EXPECT_EQ(ErrorOf("id  hash\n10  231231231231231\n", Format(InputFormat::kHash)),
            "input:1: expected one hash per line, found \"id  hash\"; for an id and a hash per "
            "line (what the simhash tool's --format hash reads), use --format tsv");
}

TEST_F(RecordReaderTest, HashIdsAreLineNumbers) {
  const std::vector<Record> records = ReadAll(
      "0x0123456789abcdef\n81985529216486895\r\n\n0XFFFFFFFFFFFFFFFF", Format(InputFormat::kHash));
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].id, 1u);
  EXPECT_EQ(records[1].id, 2u);
  EXPECT_EQ(records[2].id, 4u);  // line 3 is blank
  EXPECT_EQ(records[2].fingerprint, 0xffffffffffffffffULL);
}

TEST_F(RecordReaderTest, HashErrorsNameFileAndLine) {
  const ReaderOptions hash = Format(InputFormat::kHash);
  EXPECT_EQ(ErrorOf("1\n18446744073709551616\n", hash),
            "input:2: hash \"18446744073709551616\" does not fit in 64 bits");
  EXPECT_EQ(ErrorOf("1\n2\nhello\n", hash),
            "input:3: hash \"hello\" is not a decimal or 0x-hexadecimal number");
  EXPECT_EQ(ErrorOf("-1\n", hash),
            "input:1: hash \"-1\" has a sign; hashes are unsigned 64-bit integers");
}

TEST_F(RecordReaderTest, FixturesInTheRepository) {
  // The same files the tool tests use.
  ReaderOptions options;
  options.path = FPSTORE_CLI_TEST_DATA "/docs.jsonl";
  options.meta_column = "url";
  std::unique_ptr<RecordReader> reader = RecordReader::Open(options);
  Record record;
  int count = 0;
  while (reader->Next(&record)) ++count;
  EXPECT_EQ(count, 5);
  EXPECT_EQ(reader->bytes_read(), reader->total_bytes());
}

TEST_F(RecordReaderTest, HashFixtures) {
  ReaderOptions options;
  options.path = FPSTORE_CLI_TEST_DATA "/hashes.txt";
  options.format = InputFormat::kHash;
  std::unique_ptr<RecordReader> reader = RecordReader::Open(options);
  std::vector<std::pair<std::uint64_t, Fingerprint>> got;
  Record record;
  while (reader->Next(&record)) got.emplace_back(record.id, *record.fingerprint);
  EXPECT_EQ(got, (std::vector<std::pair<std::uint64_t, Fingerprint>>{
                     {1, 0x0123456789abcdefULL}, {2, 0x0123456789abcdefULL}, {4, ~0ULL}}));

  options.path = FPSTORE_CLI_TEST_DATA "/hashes.tsv";
  options.format = InputFormat::kTsv;
  reader = RecordReader::Open(options);
  ASSERT_TRUE(reader->Next(&record));
  ASSERT_TRUE(reader->Next(&record));
  EXPECT_EQ(record.id, 2u);
  EXPECT_EQ(record.fingerprint, 0x0123456789abcdefULL);
  EXPECT_EQ(record.metadata, "https://example.com/x");
  EXPECT_FALSE(reader->Next(&record));
}

TEST_F(RecordReaderTest, MissingFileIsARuntimeError) {
  ReaderOptions options;
  options.path = (dir_.path() / "missing.jsonl").string();
  EXPECT_THROW(RecordReader::Open(options), RuntimeError);
}

// A partial file another process left under this one's name is not this
// one's to remove: the lines go to another name, and both stay.
TEST(BadLineFileTest, KeepsAPartialFileItDidNotMake) {
  ScratchDir dir;
  const std::string path = (dir.path() / "bad.txt").string();
  const std::string stranger =
      dir.Write("bad.txt.partial-" + std::to_string(::getpid()), "someone else's\n");
  {
    BadLineFile bad(path);
    bad.Callback()(3, "broken", "reason");
    bad.Close();
  }
  EXPECT_EQ(ReadWhole(path), "3\treason\tbroken\n");
  EXPECT_EQ(ReadWhole(stranger), "someone else's\n");
  // Not closed (the run failed): its partial file goes, the stranger's stays.
  {
    BadLineFile failed((dir.path() / "other.txt").string());
    failed.Callback()(1, "x", "y");
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "other.txt"));
  EXPECT_EQ(ReadWhole(stranger), "someone else's\n");
  std::size_t files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path())) {
    ++files;
  }
  EXPECT_EQ(files, 2u);  // bad.txt and the stranger's
}

}  // namespace
}  // namespace fpstore::cli
