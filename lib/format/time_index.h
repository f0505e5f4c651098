// The times family (docs/format.md): a key for each stored document, its time then its id (8 bytes
// each, big-endian), so that the documents older than a time are the keys before it. Expiry reads
// them there rather than every record, and a scan learns which documents are past the store's
// retention from them.
//
// Every stored document has its key. A key may also outlive its document's version (a bulk load
// writes its documents' keys before it ingests them, and leaves the keys of the versions it
// replaces): such a stale key names an id whose record is gone or holds another time, and expiry
// deletes it when it passes it. Readers therefore check each key against its record.
//
// Thread safety: thread-safe.

#ifndef FPSTORE_LIB_FORMAT_TIME_INDEX_H_
#define FPSTORE_LIB_FORMAT_TIME_INDEX_H_

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "format/records.h"
#include "fpstore/document.h"
#include "fpstore/status.h"

namespace fpstore::internal {

class TimeIndex {
 public:
  TimeIndex(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* family, const Documents& documents)
      : db_(db), family_(family), documents_(documents) {}

  rocksdb::ColumnFamilyHandle* family() const { return family_; }

  // A key of the family, and back; false if `key` is none.
  static std::string Key(DocumentTime time, DocumentId id);
  struct Entry {
    DocumentTime time;
    DocumentId id;
  };
  static bool DecodeKey(std::string_view key, Entry* entry);

  // Adds to `batch` the key of document `id` at `time`, or its deletion.
  void Put(rocksdb::WriteBatch& batch, DocumentTime time, DocumentId id) const;
  void Delete(rocksdb::WriteBatch& batch, DocumentTime time, DocumentId id) const;

  // Up to `limit` keys of times before `before`, oldest first, at `snapshot` (null: the latest
  // state), stale ones included.
  Result<std::vector<Entry>> KeysBefore(const rocksdb::Snapshot* snapshot, DocumentTime before,
                                        std::size_t limit) const;

  // The ids, ascending, of the documents stored at `snapshot` whose time is before `before`.
  Result<std::vector<DocumentId>> DocumentsBefore(const rocksdb::Snapshot* snapshot,
                                                  DocumentTime before) const;

  // The times of the oldest and the newest document at `snapshot`; none in an empty store.
  struct Span {
    DocumentTime oldest;
    DocumentTime newest;
  };
  Result<std::optional<Span>> TimeSpan(const rocksdb::Snapshot* snapshot) const;

  // Calls missing(entry) for each of `entries` (a document's time and id) whose key is not there at
  // `snapshot`.
  Status FindMissing(const rocksdb::Snapshot* snapshot, std::span<const Entry> entries,
                     const std::function<void(const Entry&)>& missing) const;

  // Whether each of `entries` names a stored document of that time at `snapshot`.
  Result<std::vector<bool>> Live(const rocksdb::Snapshot* snapshot,
                                 std::span<const Entry> entries) const;

 private:
  // Calls fn(key, &more) for the keys before `before`, oldest first, until it fails or clears more.
  Status ForEachKeyBefore(const rocksdb::Snapshot* snapshot, DocumentTime before,
                          const std::function<Status(const Entry&, bool* more)>& fn) const;
  // The first live key from the oldest on (or from the newest back), if any.
  Result<std::optional<DocumentTime>> FirstLive(const rocksdb::Snapshot* snapshot,
                                                bool newest) const;

  rocksdb::DB& db_;
  rocksdb::ColumnFamilyHandle* const family_;
  const Documents& documents_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FORMAT_TIME_INDEX_H_
