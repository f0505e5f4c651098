#include "cli/line_reader.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "cli/command.h"
#include "scratch_dir.h"

namespace fpstore::cli {
namespace {

using fpstore::testing::ScratchDir;

// Every line of `content` read with `chunk_bytes`; also checks that each
// line has LineReader::kPadding readable bytes after it (ASan would catch
// a read past the allocation).
std::vector<std::string> ReadLines(const std::string& content, std::size_t chunk_bytes) {
  ScratchDir dir;
  LineReader reader(dir.Write("input", content), chunk_bytes);
  std::vector<std::string> lines;
  std::string_view line;
  volatile char sink = 0;
  while (reader.Next(&line)) {
    lines.emplace_back(line);
    EXPECT_EQ(reader.line_number(), lines.size());
    for (std::size_t i = 0; i < LineReader::kPadding; ++i)
      sink = sink + line.data()[line.size() + i];
  }
  EXPECT_EQ(reader.bytes_read(), content.size());
  EXPECT_EQ(reader.total_bytes(), content.size());
  EXPECT_FALSE(reader.Next(&line)) << "the end stays the end";
  return lines;
}

TEST(LineReaderTest, SplitsLinesWhateverTheChunkSize) {
  const std::string content = "first\nsecond line\n\nfourth\r\nlast without newline";
  const std::vector<std::string> expected = {"first", "second line", "", "fourth",
                                             "last without newline"};
  for (std::size_t chunk : {1, 2, 3, 5, 7, 16, 4096}) {
    EXPECT_EQ(ReadLines(content, chunk), expected) << "chunk " << chunk;
  }
}

TEST(LineReaderTest, CrLfIsANewline) {
  for (std::size_t chunk : {1, 2, 3, 4096}) {
    EXPECT_EQ(ReadLines("a\r\nb\r\n\r\nc\r\n", chunk),
              (std::vector<std::string>{"a", "b", "", "c"}))
        << "chunk " << chunk;
  }
  // Only the \r right before \n goes; others stay.
  EXPECT_EQ(ReadLines("a\rb\r\r\n", 4096), (std::vector<std::string>{"a\rb\r"}));
  EXPECT_EQ(ReadLines("last\r", 4096), (std::vector<std::string>{"last"}));
}

TEST(LineReaderTest, EmptyInputsHaveNoLines) {
  EXPECT_TRUE(ReadLines("", 4096).empty());
  EXPECT_EQ(ReadLines("\n", 4096), (std::vector<std::string>{""}));
  EXPECT_EQ(ReadLines("x\n", 1), (std::vector<std::string>{"x"}));
}

TEST(LineReaderTest, KeepsEveryByte) {
  std::string content;
  for (int c = 0; c < 256; ++c) {
    if (c != '\n' && c != '\r') content += static_cast<char>(c);
  }
  EXPECT_EQ(ReadLines(content + "\n" + content, 7), (std::vector<std::string>{content, content}));
}

TEST(LineReaderTest, VeryLongLinesTakeLinearTime) {
  // 50 MB in 4 KB reads: a reader that rescanned or recopied the line on
  // every read would do about 300 GB of work here.
  std::string line(50'000'000, 'x');
  for (std::size_t i = 0; i < line.size(); i += 997) line[i] = ' ';
  ScratchDir dir;
  const std::string path = dir.Write("long", "short\n" + line + "\nafter\n");
  const auto start = std::chrono::steady_clock::now();
  LineReader reader(path, 4096);
  std::string_view got;
  ASSERT_TRUE(reader.Next(&got));
  EXPECT_EQ(got, "short");
  ASSERT_TRUE(reader.Next(&got));
  EXPECT_EQ(got.size(), line.size());
  EXPECT_TRUE(got == line);
  ASSERT_TRUE(reader.Next(&got));
  EXPECT_EQ(got, "after");
  EXPECT_EQ(reader.line_number(), 3u);
  EXPECT_FALSE(reader.Next(&got));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
}

TEST(LineReaderTest, NamesStandardInput) {
  LineReader reader("-");
  EXPECT_EQ(reader.name(), "<stdin>");
}

TEST(LineReaderTest, MissingFileAndDirectoryAreErrors) {
  ScratchDir dir;
  const std::string missing = (dir.path() / "missing.jsonl").string();
  try {
    LineReader reader(missing);
    FAIL() << "opened a missing file";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot open " + missing + ": No such file or directory");
  }
  try {
    LineReader reader(dir.path().string());
    FAIL() << "opened a directory";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(std::string(e.what()), "cannot read " + dir.path().string() + ": Is a directory");
  }
}

TEST(ReadWholeFileTest, ReadsBytesVerbatim) {
  ScratchDir dir;
  const std::string content = std::string("a\r\nb\0c\n\n", 8) + std::string(200'000, 'z');
  EXPECT_EQ(ReadWholeFile(dir.Write("f", content)), content);
  EXPECT_EQ(ReadWholeFile(dir.Write("empty", "")), "");
  EXPECT_THROW(ReadWholeFile((dir.path() / "missing").string()), RuntimeError);
}

}  // namespace
}  // namespace fpstore::cli
