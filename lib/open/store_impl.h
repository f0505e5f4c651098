// The embedded store (include/fpstore/store.h) over RocksDB: the reads (read/reader.h) and writes
// (write/writer.h), and here opening, creating and closing it (open.cc) and the calls over the
// whole store, each handed to the component that does it: scans (scan/scans.h), Verify
// (scan/verify.h), statistics, checkpoints and compaction.
//
// Thread safety: thread-safe.

#ifndef FPSTORE_LIB_OPEN_STORE_IMPL_H_
#define FPSTORE_LIB_OPEN_STORE_IMPL_H_

#include <rocksdb/db.h>

#include <atomic>
#include <memory>
#include <string>

#include "fpstore/store.h"
#include "scan/scans.h"
#include "scan/verify.h"
#include "write/writer.h"

namespace fpstore::internal {

class StoreImpl final : public Writer {
 public:
  // Opens the store at `path`. A writable store writes its LOG through `info_log` when given,
  // through one of its own otherwise.
  static Result<std::unique_ptr<StoreImpl>> Open(const std::string& path,
                                                 const StoreOptions& options,
                                                 std::shared_ptr<rocksdb::Logger> info_log = {});
  ~StoreImpl() override;

  Status Close() override;
  Status FindAll(int k, const std::function<void(const NearPair&)>& sink,
                 const ScanOptions& scan) const override;
  Status Clusters(int k, const std::function<void(std::span<const DocumentId>)>& sink,
                  const ScanOptions& scan) const override;
  Status ForEachDocument(const std::function<void(const Document&)>& sink,
                         const ScanOptions& scan) const override;
  Status Compact(const ScanOptions& scan) override;
  Result<StoreStats> Stats() const override;
  Status Verify(const ScanOptions& scan) const override;
  Status Checkpoint(const std::string& dir) const override;

 private:
  StoreImpl(OpenedStore opened, std::shared_ptr<const BackgroundErrors> background_errors,
            std::shared_ptr<HeldDeletions> held);
  // Loads the components from the families; starts a writable store's background work.
  Status Start();

  std::string writer_key_;       // the claim on path_ a writer gives back on Close (open.cc)
  std::string dropped_at_open_;  // what the open dropped from a damaged log (open.cc)
  // Set by Close: scans still running stop early.
  std::atomic<bool> closing_{false};
  Scanner scanner_;
  Verifier verifier_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_OPEN_STORE_IMPL_H_
