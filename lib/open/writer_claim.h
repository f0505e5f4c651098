// A writer's claim on a store's path, so that one Store object in one
// process writes a store at a time: Open turns a second writer away with
// Busy before RocksDB, which would rotate the live writer's info log before
// finding its LOCK file taken.

#ifndef FPSTORE_LIB_OPEN_WRITER_CLAIM_H_
#define FPSTORE_LIB_OPEN_WRITER_CLAIM_H_

#include <string>

#include "fpstore/status.h"

namespace fpstore::internal {

// A writer's claim on a store path until the store exists; given back if the open fails. A writer
// racing past these checks gets Busy from RocksDB.
class WriterReservation {
 public:
  WriterReservation() = default;
  WriterReservation(const WriterReservation&) = delete;
  WriterReservation& operator=(const WriterReservation&) = delete;
  ~WriterReservation();

  // Busy if another Store object or process has `path` open for writing.
  Status Reserve(const std::string& path);

  // The claim, kept until the store closes (StoreImpl::writer_key_), then given back by
  // ReleaseWriterClaim.
  std::string Keep();

 private:
  std::string key_;
};

void ReleaseWriterClaim(const std::string& key);

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_OPEN_WRITER_CLAIM_H_
