#include "faults/info_log.h"

#include <fcntl.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <utility>

namespace fpstore::internal {

std::shared_ptr<InfoLog> InfoLog::ForWriter(const std::string& dir) {
  return std::shared_ptr<InfoLog>(new InfoLog(dir));
}

std::shared_ptr<InfoLog> InfoLog::Discarding() {
  return std::shared_ptr<InfoLog>(new InfoLog(std::string()));
}

InfoLog::~InfoLog() {
  MutexLock lock(mu_);
  if (fd_ >= 0) ::close(fd_);
}

void InfoLog::OpenLocked() {
  if (fd_ >= 0 || dir_.empty()) return;
  // A new store's first lines come before RocksDB makes its directory, which is made here as
  // RocksDB would; a parent that is missing too drops the line.
  std::error_code ec;
  std::filesystem::create_directory(dir_, ec);
  if (!std::filesystem::is_directory(dir_, ec)) return;
  const std::filesystem::path path = std::filesystem::path(dir_) / "LOG";
  if (!rotated_) {
    rotated_ = true;
    if (std::filesystem::exists(path, ec)) {
      std::filesystem::rename(path, std::filesystem::path(dir_) / "LOG.old", ec);
    }
  }
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

void InfoLog::Logv(const char* format, va_list ap) {
  if (dir_.empty()) return;
  // "2026/11/27-18:45:01.123456 140245 message", as RocksDB writes its lines.
  char line[4096];
  struct timeval now;
  gettimeofday(&now, nullptr);
  struct tm t;
  localtime_r(&now.tv_sec, &t);
  int n = std::snprintf(line, sizeof line, "%04d/%02d/%02d-%02d:%02d:%02d.%06ld %ld ",
                        t.tm_year + 1900, t.tm_mon + 1, t.tm_mday, t.tm_hour, t.tm_min, t.tm_sec,
                        static_cast<long>(now.tv_usec), static_cast<long>(::gettid()));
  va_list copy;
  va_copy(copy, ap);
  const int body =
      std::vsnprintf(line + n, sizeof line - static_cast<std::size_t>(n), format, copy);
  va_end(copy);
  if (body < 0) return;
  n = std::min<int>(n + body, static_cast<int>(sizeof line) - 2);
  if (line[n - 1] != '\n') line[n++] = '\n';

  MutexLock lock(mu_);
  OpenLocked();
  if (fd_ < 0) {
    ++dropped_;
    return;
  }
  if (dropped_ > 0) {
    char note[96];
    const int m = std::snprintf(note, sizeof note, "fpstore: %llu lines of this log were lost\n",
                                static_cast<unsigned long long>(dropped_));
    if (::write(fd_, note, static_cast<std::size_t>(m)) != m) {
      ++dropped_;
      return;
    }
    size_ += static_cast<std::uint64_t>(m);
    dropped_ = 0;
  }
  const ssize_t written = ::write(fd_, line, static_cast<std::size_t>(n));
  if (written != n) {
    ++dropped_;
    return;
  }
  size_ += static_cast<std::uint64_t>(n);
}

std::size_t InfoLog::GetLogFileSize() const {
  MutexLock lock(mu_);
  return static_cast<std::size_t>(size_);
}

std::uint64_t InfoLog::dropped() const {
  MutexLock lock(mu_);
  return dropped_;
}

}  // namespace fpstore::internal
