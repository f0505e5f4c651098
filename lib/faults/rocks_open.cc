#include "faults/rocks_open.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

#include "faults/damaged_log.h"

namespace fpstore::internal {

namespace fs = std::filesystem;

namespace {

// The write-ahead logs in the directory of the store at `path`, by number.
std::set<std::string> LogFiles(const std::string& path) {
  std::set<std::string> logs;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(path, ec)) {
    if (entry.path().extension() == ".log") logs.insert(entry.path().filename().string());
  }
  return logs;
}

}  // namespace

rocksdb::Status OpenForReadOnly(const rocksdb::DBOptions& options,
                                const std::vector<rocksdb::ColumnFamilyDescriptor>& families,
                                const std::string& path,
                                std::vector<rocksdb::ColumnFamilyHandle*>* handles,
                                rocksdb::DB** db) {
  rocksdb::Status rs;
  for (int attempt = 0;; ++attempt) {
    handles->clear();
    const std::set<std::string> logs_before = LogFiles(path);
    rs = rocksdb::DB::OpenForReadOnly(options, path, families, handles, db);
    const bool vanished = !rs.ok() &&
                          rs.ToString().find("No such file or directory") != std::string::npos &&
                          fs::exists(fs::path(path) / "CURRENT");
    bool log_deleted = false;
    if (rs.ok()) {
      const std::set<std::string> logs_after = LogFiles(path);
      log_deleted = !std::includes(logs_after.begin(), logs_after.end(), logs_before.begin(),
                                   logs_before.end());
    }
    if (log_deleted) {
      for (rocksdb::ColumnFamilyHandle* h : *handles) (*db)->DestroyColumnFamilyHandle(h);
      delete *db;
      *db = nullptr;
      handles->clear();
      rs = rocksdb::Status::Busy("the writer deleted logs during every attempt to open it");
    }
    if ((!vanished && !log_deleted) || attempt == 200) return rs;
    std::this_thread::sleep_for(std::chrono::milliseconds(attempt < 10 ? 1 : 10));
  }
}

void RemoveEmptyOldLogs(rocksdb::DB& db, const std::string& path) {
  std::unique_ptr<rocksdb::LogFile> current;
  if (!db.GetCurrentWalFile(&current).ok() || !current) return;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(path, ec)) {
    const std::optional<std::uint64_t> number = LogNumberOf(entry.path().filename().string());
    std::error_code size_ec;
    if (number && *number < current->LogNumber() && entry.file_size(size_ec) == 0 && !size_ec) {
      fs::remove(entry.path(), size_ec);
    }
  }
}

}  // namespace fpstore::internal
