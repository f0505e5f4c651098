// Store::Verify: RocksDB's block checksums, then docs/format.md's invariants (tables vs documents
// and staging marks, member filters vs members, count vs documents), streamed;
// see docs/design.md, "Where CRoaring earns its place".
//
// Thread safety: thread-safe; holds no lock after taking its snapshot.

#ifndef FPSTORE_LIB_SCAN_VERIFY_H_
#define FPSTORE_LIB_SCAN_VERIFY_H_

#include <rocksdb/db.h>

#include <string>
#include <vector>

#include "format/records.h"
#include "fpstore/store.h"
#include "read/staging.h"
#include "read/tables.h"
#include "scan/scans.h"

namespace fpstore::internal {

class Verifier {
 public:
  // `families`: all of the store's, for the block checksums of their files.
  Verifier(rocksdb::DB& db, const Tables& tables, const Staging& staging,
           const Documents& documents, const TimeIndex& times, const Scanner& scanner,
           std::vector<rocksdb::ColumnFamilyHandle*> families, std::string path)
      : db_(db),
        tables_(tables),
        staging_(staging),
        documents_(documents),
        times_(times),
        scanner_(scanner),
        families_(std::move(families)),
        path_(std::move(path)) {}

  // OK, or Corruption describing the first problems found.
  Status Run(const ScanOptions& scan) const;

 private:
  class Verification;  // one verification's state

  // RocksDB's block checksums, file by file.
  Status VerifyBlockChecksums() const;

  rocksdb::DB& db_;
  const Tables& tables_;
  const Staging& staging_;
  const Documents& documents_;
  const TimeIndex& times_;
  const Scanner& scanner_;
  const std::vector<rocksdb::ColumnFamilyHandle*> families_;
  const std::string path_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_SCAN_VERIFY_H_
