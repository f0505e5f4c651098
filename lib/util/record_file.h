// Sequential binary files of fixed-layout records (a bulk load's spills and
// changes): buffered, with errors as Status.

#ifndef FPSTORE_LIB_UTIL_RECORD_FILE_H_
#define FPSTORE_LIB_UTIL_RECORD_FILE_H_

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "util/big_endian.h"
#include "fpstore/status.h"

namespace fpstore::internal {

// Large, as one thread moves each file in 8-byte pieces (reads via unlocked stdio).
inline constexpr std::size_t kBufferBytes = std::size_t{1} << 20;

// Double-buffered: while a thread of its own writes one buffer out, the
// caller fills the other.
class RecordWriter {
 public:
  explicit RecordWriter(std::string path);
  // Without Close, what is still buffered is dropped.
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  void PutU64(std::uint64_t v) {
    char bytes[8];
    PutBigEndian64(bytes, v);
    PutBytes(std::string_view(bytes, 8));
  }
  void PutBytes(std::string_view bytes) {
    if (bytes.size() <= kBufferBytes - used_) {
      std::memcpy(buffers_[current_].get() + used_, bytes.data(), bytes.size());
      used_ += bytes.size();
      return;
    }
    PutSlowly(bytes);
  }
  // Every write so far, written and the file closed.
  Status Close();

 private:
  void PutSlowly(std::string_view bytes);
  // Hands the current buffer's bytes to the writing thread.
  void Hand();
  // Waits for the bytes handed last, and keeps their error.
  void Wait();
  Status Error(const char* what, int error) const;

  std::string path_;
  int fd_ = -1;
  Status status_;  // the caller's, updated by Wait
  std::unique_ptr<char[]> buffers_[2];
  int current_ = 0;
  std::size_t used_ = 0;
  std::thread writing_;
  Status written_;  // the writing thread's, read after it is joined
};

class RecordReader {
 public:
  explicit RecordReader(std::string path) : path_(std::move(path)) {
    file_ = std::fopen(path_.c_str(), "rb");
    if (file_ == nullptr) {
      status_ = Status::IOError("opening " + path_ + ": " + std::strerror(errno));
    } else {
      std::setvbuf(file_, nullptr, _IOFBF, kBufferBytes);
    }
  }
  ~RecordReader() {
    if (file_ != nullptr) std::fclose(file_);
  }
  RecordReader(const RecordReader&) = delete;
  RecordReader& operator=(const RecordReader&) = delete;

  // False at a clean end of file or on error (see status()).
  bool GetU64(std::uint64_t& v) {
    char bytes[8];
    if (!GetBytes(bytes, 8)) return false;
    v = GetBigEndian64(bytes);
    return true;
  }
  bool GetBytes(char* out, std::size_t n) {
    if (!status_.ok() || n == 0) return status_.ok();
    const std::size_t got = fread_unlocked(out, 1, n, file_);
    if (got == n) return true;
    if (got != 0 || std::ferror(file_)) {
      status_ = Status::IOError("reading " + path_ + ": truncated or unreadable");
    }
    return false;
  }
  const Status& status() const { return status_; }

 private:
  std::string path_;
  std::FILE* file_ = nullptr;
  Status status_;
};

// A whole file mapped read-only, for files every table's thread reads (a bulk
// load's changes): no copy out of the page cache per reader.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const Status& status() const { return status_; }
  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  void* data_ = nullptr;
  std::size_t size_ = 0;
  Status status_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_UTIL_RECORD_FILE_H_
