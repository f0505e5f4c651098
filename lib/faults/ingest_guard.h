// Ingestion that a failed MANIFEST write cannot turn into lost tables.
//
// When an ingestion fails, RocksDB 7.8 deletes the table files it had linked into the store, even
// when it failed writing the MANIFEST after the record naming those files went in (an append that
// landed and a sync that did not): the next open then finds the record and not the files, and the
// store does not open. So while an ingestion runs, HeldDeletions (the store's file system) holds
// back every deletion of a table file; when the ingestion ends, the held files are deleted, unless
// it failed with a background error reported meanwhile. Then they stay, and the next open deletes
// those that no version names. The same guard refuses to ingest into a stopped store
// (background_errors.h).
//
// RocksDB behaviour covered:
// RocksDbBehaviour.FailedManifestSyncOfIngestionDeletesTheFileTheManifestNames
// (tests/rocksdb_behaviour_test.cc). Retire when: a failed ingestion leaves the files a MANIFEST
// record may name, or RocksDB rolls the record back.
//
// Thread safety: thread-safe.

#ifndef FPSTORE_LIB_FAULTS_INGEST_GUARD_H_
#define FPSTORE_LIB_FAULTS_INGEST_GUARD_H_

#include <rocksdb/db.h>
#include <rocksdb/file_system.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "faults/background_errors.h"
#include "fpstore/status.h"
#include "util/mutex.h"

namespace fpstore::internal {

class HeldDeletions final : public rocksdb::FileSystemWrapper {
 public:
  explicit HeldDeletions(const std::shared_ptr<rocksdb::FileSystem>& base)
      : FileSystemWrapper(base) {}
  const char* Name() const override { return "fpstore.HeldDeletions"; }

  // From the first Begin to the last End, deletions of table files are held.
  void Begin() EXCLUDES(mu_);
  // `keep`: leave this ingestion's held files (and any other's) for the next open.
  void End(bool keep) EXCLUDES(mu_);

  rocksdb::IOStatus DeleteFile(const std::string& path, const rocksdb::IOOptions& options,
                               rocksdb::IODebugContext* dbg) override EXCLUDES(mu_);

 private:
  Mutex mu_;
  int running_ GUARDED_BY(mu_) = 0;
  bool keep_ GUARDED_BY(mu_) = false;
  std::vector<std::string> held_ GUARDED_BY(mu_);
};

class IngestGuard {
 public:
  // `held`: the file system the store's RocksDB was opened with; null for a read-only store.
  IngestGuard(const BackgroundErrors& errors, std::shared_ptr<HeldDeletions> held)
      : errors_(errors), held_(std::move(held)) {}

  // db.IngestExternalFiles(args), as above; `context` says what for, in an error.
  Status Ingest(rocksdb::DB& db, const std::vector<rocksdb::IngestExternalFileArg>& args,
                std::string_view context) const;

 private:
  const BackgroundErrors& errors_;
  const std::shared_ptr<HeldDeletions> held_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FAULTS_INGEST_GUARD_H_
