#include "open/writer_claim.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <set>
#include <system_error>
#include <utility>

#include "util/mutex.h"

namespace fpstore::internal {

namespace fs = std::filesystem;

namespace {

// The stores this process has open for writing, by canonical path.
class WriterRegistry {
 public:
  static WriterRegistry& Instance() {
    static WriterRegistry* const registry = new WriterRegistry;  // never destroyed
    return *registry;
  }
  // False if `key` is taken.
  bool Reserve(const std::string& key) {
    MutexLock lock(mu_);
    return keys_.insert(key).second;
  }
  void Release(const std::string& key) {
    MutexLock lock(mu_);
    keys_.erase(key);
  }

 private:
  Mutex mu_;
  std::set<std::string> keys_ GUARDED_BY(mu_);
};

// The pid of another process holding RocksDB's POSIX lock on the store's LOCK file, or 0; only
// asks. REQUIRES: this process holds no lock on it (WriterRegistry), as closing an fd drops them.
pid_t LockHolder(const std::string& path) {
  const int fd = ::open((fs::path(path) / "LOCK").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct flock lock = {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  const bool held = ::fcntl(fd, F_GETLK, &lock) == 0 && lock.l_type != F_UNLCK;
  ::close(fd);
  return held ? lock.l_pid : 0;
}

}  // namespace

WriterReservation::~WriterReservation() {
  if (!key_.empty()) ReleaseWriterClaim(key_);
}

Status WriterReservation::Reserve(const std::string& path) {
  std::error_code ec;
  fs::path canonical = fs::weakly_canonical(path, ec);
  if (ec) canonical = fs::absolute(path, ec);
  if (!canonical.has_filename()) canonical = canonical.parent_path();  // "dir/"
  if (!WriterRegistry::Instance().Reserve(canonical.string())) {
    return Status::Busy("opening " + path +
                        ": the store is in use by another Store object in this process");
  }
  key_ = canonical.string();
  if (const pid_t holder = LockHolder(path); holder != 0) {
    return Status::Busy("opening " + path + ": the store is in use by another process (pid " +
                        std::to_string(holder) + ")");
  }
  return Status::OK();
}

std::string WriterReservation::Keep() { return std::exchange(key_, {}); }

void ReleaseWriterClaim(const std::string& key) { WriterRegistry::Instance().Release(key); }

}  // namespace fpstore::internal
