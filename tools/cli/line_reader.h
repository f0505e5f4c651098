// Reading an input file, or standard input, line by line.
//
// Lines of any length are read in time linear in their length: the reader
// scans each byte once with memchr and keeps a line that spans buffer
// refills in a growing buffer (amortised doubling), so a 50 MB line costs
// what 50 MB of short lines cost.
//
// Thread safety: one thread per LineReader.

#ifndef FPSTORE_TOOLS_CLI_LINE_READER_H_
#define FPSTORE_TOOLS_CLI_LINE_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fpstore::cli {

// An open input file, or standard input for "-".
class InputFile {
 public:
  // Throws RuntimeError ("cannot open FILE: reason") if the file cannot be
  // opened or is a directory.
  explicit InputFile(const std::string& path);
  ~InputFile();

  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // Reads up to `size` bytes; returns 0 at the end. Throws RuntimeError
  // ("FILE: read error: reason").
  std::size_t Read(char* data, std::size_t size);

  // The name for messages: the path, or "<stdin>" for "-".
  const std::string& name() const { return name_; }

  // The size of the input when it is a regular file, else nullopt.
  std::optional<std::uint64_t> size() const { return size_; }

 private:
  std::string name_;
  int fd_ = -1;
  bool owns_fd_ = false;
  std::optional<std::uint64_t> size_;
};

class LineReader {
 public:
  // Bytes readable past the end of every line returned by Next (their
  // content is unspecified), enough for simdjson's SIMDJSON_PADDING.
  static constexpr std::size_t kPadding = 64;

  // Default size of each read(2).
  static constexpr std::size_t kDefaultChunkBytes = std::size_t{1} << 20;

  // Opens `path`; "-" means standard input. Throws RuntimeError
  // ("cannot open FILE: reason") if the file cannot be opened or is a
  // directory. `chunk_bytes` is for tests.
  explicit LineReader(const std::string& path, std::size_t chunk_bytes = kDefaultChunkBytes);

  // Sets *line to the next line without its "\n" or "\r\n" and returns
  // true, or returns false at the end of the input. A last line without a
  // newline is still a line; an empty input has no lines. The view stays
  // valid, with kPadding readable bytes after it, until the next call.
  // Throws RuntimeError ("FILE: read error: reason").
  bool Next(std::string_view* line);

  // The name for messages: the path, or "<stdin>" for "-".
  const std::string& name() const { return file_.name(); }

  // The 1-based number of the line last returned by Next; 0 before.
  std::uint64_t line_number() const { return line_number_; }

  // Bytes consumed so far, newlines included.
  std::uint64_t bytes_read() const { return bytes_read_; }

  // The size of the input when it is a regular file, else nullopt.
  std::optional<std::uint64_t> total_bytes() const { return file_.size(); }

 private:
  // Reads more data into buffer_; returns false at the end of the input.
  bool Fill();

  InputFile file_;
  bool eof_ = false;
  std::size_t chunk_bytes_;
  std::vector<char> buffer_;  // chunk_bytes_ + kPadding bytes
  std::size_t begin_ = 0;     // unread data is buffer_[begin_, end_)
  std::size_t end_ = 0;
  std::string long_line_;  // a line that spans refills
  std::uint64_t line_number_ = 0;
  std::uint64_t bytes_read_ = 0;
};

// The whole content of `path` ("-" = standard input). Throws RuntimeError.
std::string ReadWholeFile(const std::string& path);

}  // namespace fpstore::cli

#endif  // FPSTORE_TOOLS_CLI_LINE_READER_H_
