// Translation of RocksDB's Status into fpstore's.

#ifndef FPSTORE_LIB_UTIL_ROCKS_STATUS_H_
#define FPSTORE_LIB_UTIL_ROCKS_STATUS_H_

#include <rocksdb/status.h>

#include <string>
#include <string_view>

#include "fpstore/status.h"

namespace fpstore::internal {

// `context` says what was being done, e.g. "opening /data/store".
inline Status FromRocks(const rocksdb::Status& s, std::string_view context) {
  if (s.ok()) return Status::OK();
  const std::string msg = std::string(context) + ": " + s.ToString();
  if (s.IsNotFound()) return Status::NotFound(msg);
  if (s.IsCorruption()) return Status::Corruption(msg);
  if (s.IsInvalidArgument()) return Status::InvalidArgument(msg);
  if (s.IsNotSupported()) return Status::NotSupported(msg);
  if (s.IsBusy() || s.IsTryAgain()) return Status::Busy(msg);
  // RocksDB reports a held LOCK file as an IO error, in words of its own for
  // each holder. Only those words count: a path may contain "lock" too, as
  // in ".../blocks/...", and its IO errors are no sign of another user.
  if (s.IsIOError()) {
    const std::string text = s.ToString();
    const char* holder = nullptr;
    if (text.find("While lock file") != std::string::npos) {
      holder = "another process";
    } else if (text.find("lock hold by current process") != std::string::npos) {
      holder = "another Store object in this process";
    }
    if (holder != nullptr) {
      return Status::Busy(std::string(context) + ": the store is in use by " + holder + " (" +
                          text + ")");
    }
  }
  return Status::IOError(msg);
}

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_UTIL_ROCKS_STATUS_H_
