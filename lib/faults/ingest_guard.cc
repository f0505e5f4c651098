#include "faults/ingest_guard.h"

#include <algorithm>
#include <cctype>

#include "util/rocks_status.h"

namespace fpstore::internal {

namespace {

// RocksDB's name for a table file: its number, then ".sst".
bool IsTableFile(std::string_view path) {
  const std::string_view name = path.substr(path.find_last_of('/') + 1);
  constexpr std::string_view kSuffix = ".sst";
  if (name.size() <= kSuffix.size() || !name.ends_with(kSuffix)) return false;
  return std::all_of(name.begin(), name.end() - kSuffix.size(),
                     [](unsigned char c) { return std::isdigit(c) != 0; });
}

}  // namespace

void HeldDeletions::Begin() {
  MutexLock lock(mu_);
  ++running_;
}

void HeldDeletions::End(bool keep) {
  std::vector<std::string> deleting;
  {
    MutexLock lock(mu_);
    keep_ = keep_ || keep;
    if (--running_ > 0) return;
    if (!keep_) deleting = std::move(held_);
    held_.clear();
    keep_ = false;
  }
  for (const std::string& path : deleting) {
    // As RocksDB's own clean-up: a file that cannot be deleted is left for the next open.
    target()->DeleteFile(path, rocksdb::IOOptions(), nullptr).PermitUncheckedError();
  }
}

rocksdb::IOStatus HeldDeletions::DeleteFile(const std::string& path,
                                            const rocksdb::IOOptions& options,
                                            rocksdb::IODebugContext* dbg) {
  if (IsTableFile(path)) {
    MutexLock lock(mu_);
    if (running_ > 0) {
      held_.push_back(path);
      return rocksdb::IOStatus::OK();
    }
  }
  return target()->DeleteFile(path, options, dbg);
}

Status IngestGuard::Ingest(rocksdb::DB& db, const std::vector<rocksdb::IngestExternalFileArg>& args,
                           std::string_view context) const {
  if (Status s = errors_.Stopped(); !s.ok()) return s;
  if (held_ == nullptr) return FromRocks(db.IngestExternalFiles(args), context);
  const std::uint64_t reported = errors_.reported();
  held_->Begin();
  const rocksdb::Status rs = db.IngestExternalFiles(args);
  held_->End(/*keep=*/!rs.ok() && errors_.reported() != reported);
  return FromRocks(rs, context);
}

}  // namespace fpstore::internal
