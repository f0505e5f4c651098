#include "cli/line_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "cli/command.h"

namespace fpstore::cli {

InputFile::InputFile(const std::string& path) : name_(path == "-" ? "<stdin>" : path) {
  if (path == "-") {
    fd_ = STDIN_FILENO;
  } else {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw RuntimeError("cannot open " + name_ + ": " + std::strerror(errno));
    owns_fd_ = true;
  }
  struct stat st;
  if (::fstat(fd_, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      if (owns_fd_) ::close(fd_);
      throw RuntimeError("cannot read " + name_ + ": " + std::strerror(EISDIR));
    }
    if (S_ISREG(st.st_mode)) size_ = static_cast<std::uint64_t>(st.st_size);
  }
}

InputFile::~InputFile() {
  if (owns_fd_) ::close(fd_);
}

std::size_t InputFile::Read(char* data, std::size_t size) {
  for (;;) {
    const ssize_t n = ::read(fd_, data, size);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno != EINTR) throw RuntimeError(name_ + ": read error: " + std::strerror(errno));
  }
}

LineReader::LineReader(const std::string& path, std::size_t chunk_bytes)
    : file_(path),
      chunk_bytes_(chunk_bytes == 0 ? 1 : chunk_bytes),
      buffer_(chunk_bytes_ + kPadding) {}

bool LineReader::Fill() {
  if (eof_) return false;
  begin_ = 0;
  end_ = file_.Read(buffer_.data(), chunk_bytes_);
  eof_ = end_ == 0;
  return !eof_;
}

bool LineReader::Next(std::string_view* line) {
  long_line_.clear();
  bool spans = false;  // the line's start is in long_line_
  for (;;) {
    if (begin_ == end_ && !Fill()) {
      if (!spans) return false;  // nothing after the last newline
      break;                     // the last line has no newline
    }
    const char* start = buffer_.data() + begin_;
    const std::size_t available = end_ - begin_;
    const auto* newline = static_cast<const char*>(std::memchr(start, '\n', available));
    const std::size_t length =
        newline == nullptr ? available : static_cast<std::size_t>(newline - start);
    const std::size_t consumed = newline == nullptr ? length : length + 1;
    bytes_read_ += consumed;
    begin_ += consumed;
    if (newline != nullptr && !spans) {
      *line = std::string_view(start, length);  // buffer_ has kPadding spare bytes
      break;
    }
    long_line_.append(start, length);
    spans = true;
    if (newline != nullptr) break;
  }
  if (spans) {
    // Only reallocates when the padding does not fit; append()'s doubling
    // keeps the total copying linear.
    if (long_line_.capacity() < long_line_.size() + kPadding) {
      long_line_.reserve(long_line_.size() + kPadding);
    }
    *line = long_line_;
  }
  if (!line->empty() && line->back() == '\r') line->remove_suffix(1);
  ++line_number_;
  return true;
}

std::string ReadWholeFile(const std::string& path) {
  InputFile file(path);
  std::string content;
  if (file.size()) content.reserve(*file.size());
  char buffer[1 << 16];
  while (const std::size_t n = file.Read(buffer, sizeof(buffer))) content.append(buffer, n);
  return content;
}

}  // namespace fpstore::cli
