// A directory for the sorted files that a bulk load, a merge or a rewrite
// of the lone bits writes before it ingests them.

#ifndef FPSTORE_LIB_INGEST_SCRATCH_DIR_H_
#define FPSTORE_LIB_INGEST_SCRATCH_DIR_H_

#include <string>

#include "fpstore/status.h"

namespace fpstore::internal {

// Removed with everything in it when destroyed; after a crash, by the next
// ScratchDir made in the same store whose process is gone.
class ScratchDir {
 public:
  // A fresh directory in `parent`, or by default in the store, so that
  // ingestion can move its files rather than copy them.
  static Result<ScratchDir> Make(const std::string& store_path, const std::string& parent = {});

  ScratchDir(ScratchDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  ScratchDir& operator=(ScratchDir&&) = delete;
  ~ScratchDir();

  std::string Path(const std::string& name) const { return path_ + "/" + name; }

 private:
  explicit ScratchDir(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_INGEST_SCRATCH_DIR_H_
