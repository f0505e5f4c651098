#include "util/record_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <system_error>
#include <utility>

namespace fpstore::internal {

RecordWriter::RecordWriter(std::string path)
    : path_(std::move(path)),
      // Before the file is opened: out of memory then leaks no descriptor.
      buffers_{std::make_unique_for_overwrite<char[]>(kBufferBytes),
               std::make_unique_for_overwrite<char[]>(kBufferBytes)} {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) status_ = Error("creating", errno);
}

RecordWriter::~RecordWriter() {
  if (writing_.joinable()) writing_.join();
  if (fd_ >= 0) ::close(fd_);
}

void RecordWriter::PutSlowly(std::string_view bytes) {
  while (!bytes.empty()) {
    const std::size_t n = std::min(bytes.size(), kBufferBytes - used_);
    std::memcpy(buffers_[current_].get() + used_, bytes.data(), n);
    used_ += n;
    bytes.remove_prefix(n);
    if (used_ == kBufferBytes) Hand();
  }
}

void RecordWriter::Hand() {
  Wait();
  const char* data = buffers_[current_].get();
  const std::size_t size = used_;
  current_ ^= 1;
  used_ = 0;
  if (!status_.ok()) return;  // nothing more reaches the file
  auto write_all = [this, data, size] {
    for (std::size_t done = 0; done < size;) {
      const ssize_t n = ::write(fd_, data + done, size - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        written_ = Error("writing", n < 0 ? errno : EIO);
        return;
      }
      done += static_cast<std::size_t>(n);
    }
  };
  try {
    writing_ = std::thread(write_all);
  } catch (const std::system_error&) {
    write_all();  // no thread to be had: written here
  }
}

void RecordWriter::Wait() {
  if (writing_.joinable()) writing_.join();
  if (status_.ok() && !written_.ok()) status_ = written_;
}

Status RecordWriter::Close() {
  if (fd_ < 0) return status_;
  if (used_ > 0) Hand();
  Wait();
  if (::close(std::exchange(fd_, -1)) != 0 && status_.ok()) status_ = Error("closing", errno);
  return status_;
}

Status RecordWriter::Error(const char* what, int error) const {
  return Status::IOError(std::string(what) + " " + path_ + ": " + std::strerror(error));
}

MappedFile::MappedFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    status_ = Status::IOError("opening " + path + ": " + std::strerror(errno));
    return;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    status_ = Status::IOError("reading " + path + ": " + std::strerror(errno));
  } else if (st.st_size > 0) {
    size_ = static_cast<std::size_t>(st.st_size);
    data_ = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (data_ == MAP_FAILED) {
      data_ = nullptr;
      size_ = 0;
      status_ = Status::IOError("mapping " + path + ": " + std::strerror(errno));
    }
  }
  ::close(fd);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(data_, size_);
}

}  // namespace fpstore::internal
