// The documents family: each stored document's fingerprint, signature and metadata by id, and the
// count of them kept beside, in the default family.
//
// Thread safety: thread-safe.

#ifndef FPSTORE_LIB_FORMAT_DOCUMENTS_H_
#define FPSTORE_LIB_FORMAT_DOCUMENTS_H_

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <span>
#include <string_view>

#include "fpstore/document.h"
#include "fpstore/status.h"

namespace fpstore::internal {

class Documents {
 public:
  Documents(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* family, rocksdb::ColumnFamilyHandle* meta)
      : db_(db), family_(family), meta_(meta) {}

  rocksdb::ColumnFamilyHandle* family() const { return family_; }
  // The family of the count's record (the default one).
  rocksdb::ColumnFamilyHandle* count_family() const { return meta_; }

  // The document `id` at the latest state, or NotFound.
  Result<Document> Get(DocumentId id) const;

  // Calls found(i, document) for each of `ids` (ascending) present at `snapshot` (null: latest),
  // read in one batch; signature and metadata only if `whole`.
  Status Read(const rocksdb::Snapshot* snapshot, std::span<const DocumentId> ids, bool whole,
              const std::function<void(std::size_t, const Document&)>& found) const;

  // Calls sink(document) for every document at `snapshot`, in id order.
  Status ForEach(const rocksdb::Snapshot* snapshot,
                 const std::function<Status(const Document&)>& sink) const;

  // The recorded count at `snapshot`; 0 if there is no record.
  Result<std::uint64_t> Count(const rocksdb::Snapshot* snapshot) const;
  // RocksDB's estimate of the documents, for sizing work.
  std::uint64_t Estimate() const;

  // Adds to `batch` a document's record, its removal, or a count change. A document with a
  // signature also adds the signed record until Signed() is told it is written.
  void Put(rocksdb::WriteBatch& batch, const NewDocument& doc) const;
  void Delete(rocksdb::WriteBatch& batch, DocumentId id) const;
  void CountChange(rocksdb::WriteBatch& batch, std::int64_t delta) const;

  // The signed record says that some document was written with a signature (docs/format.md), so
  // that scans of a store of bare fingerprints need not read records to confirm pairs. Load reads
  // whether it is there; Wrote notes a written batch that held one; WriteSigned writes it, synced,
  // unless it is there (a bulk load's documents, before their ingestion).
  Status LoadSigned();
  void WroteSigned() const { signed_.store(true, std::memory_order_release); }
  Status WriteSigned() const;
  // Whether the record is there at `snapshot`.
  Result<bool> AnySigned(const rocksdb::Snapshot* snapshot) const;

 private:
  rocksdb::DB& db_;
  rocksdb::ColumnFamilyHandle* const family_;
  rocksdb::ColumnFamilyHandle* const meta_;
  mutable std::atomic<bool> signed_{false};  // the signed record is known to be written
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FORMAT_DOCUMENTS_H_
