// Records by id (docs/format.md): the documents family's values, the staging family's marks, and
// the documents family itself, each stored document's fingerprint, signature and metadata by id
// with the count of them kept beside, in the default family. Keys are ids, big-endian, so that
// bytewise order is numeric order. The Redis backend stores the same document values.

#ifndef FPSTORE_LIB_FORMAT_RECORDS_H_
#define FPSTORE_LIB_FORMAT_RECORDS_H_

#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "fpstore/document.h"
#include "fpstore/signature.h"
#include "fpstore/status.h"
#include "plan/table_entry.h"
#include "util/big_endian.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

// InvalidArgument naming `what` and `number` ("document 7", "query 0")
// unless `fp` fits the store's `bits`.
inline Status CheckWidth(Fingerprint fp, int bits, const char* what, std::uint64_t number) {
  if (bits == 128 || fp.fits_64()) [[likely]] {
    return Status::OK();
  }
  std::ostringstream text;
  text << what << " " << number << " has a 128-bit fingerprint (" << fp << "); this store holds "
       << bits << "-bit fingerprints";
  return Status::InvalidArgument(text.str());
}

// CheckWidth of every query's fingerprint.
inline Status CheckQueries(std::span<const Sketch> queries, int bits) {
  for (std::size_t i = 0; i < queries.size(); ++i) {
    if (Status s = CheckWidth(queries[i].fingerprint, bits, "query", i); !s.ok()) {
      return s;
    }
  }
  return Status::OK();
}

// InvalidArgument unless `doc`'s fingerprint fits the store's `bits` and its
// signature is empty or of `bytes` bytes (the store's).
// InvalidArgument unless `time` is a document's time (document.h), naming `what`.
inline Status CheckTime(DocumentTime time, const std::string& what) {
  if (time >= 0 && time <= kMaxDocumentTime) [[likely]] {
    return Status::OK();
  }
  return Status::InvalidArgument(what + " is " + std::to_string(time) +
                                 "; a time is seconds since the Unix epoch, from 0 to " +
                                 std::to_string(kMaxDocumentTime) + " (9999-12-31T23:59:59Z)");
}

// The time of a document written now: `clock`'s (StoreOptions::clock), else the system's.
Result<DocumentTime> Now(const std::function<DocumentTime()>& clock);

// The time before which a document is past a retention of `retention_seconds` at `now`: 0 (none)
// without a retention.
inline DocumentTime RetentionCutoff(DocumentTime now, std::int64_t retention_seconds) {
  return retention_seconds == 0 ? 0 : std::max<DocumentTime>(0, now - retention_seconds);
}
// The same by `clock` now (Now); without a retention 0, and the clock is not read.
Result<DocumentTime> RetentionCutoffNow(const std::function<DocumentTime()>& clock,
                                        std::int64_t retention_seconds);

// InvalidArgument unless `doc`'s fingerprint fits the store's `bits`, its time (if it has one)
// is a time, and its signature is empty or of `bytes` bytes (the store's).
inline Status CheckDocument(const NewDocument& doc, int bits, int bytes) {
  if (Status s = CheckWidth(doc.fingerprint, bits, "document", doc.id); !s.ok()) {
    return s;
  }
  if (doc.time) {
    if (Status s = CheckTime(*doc.time, "document " + std::to_string(doc.id) + "'s time");
        !s.ok()) {
      return s;
    }
  }
  if (doc.signature.empty() || doc.signature.size() == static_cast<std::size_t>(bytes)) {
    return Status::OK();
  }
  return Status::InvalidArgument("document " + std::to_string(doc.id) + " has a signature of " +
                                 std::to_string(doc.signature.size()) +
                                 " bytes; this store's fingerprint options make " +
                                 (bytes == 0 ? std::string("none") : std::to_string(bytes)));
}

// A fingerprint of `width` bits as records store it: 8 or 16 bytes, big-endian.
constexpr std::size_t FingerprintBytes(int width) { return static_cast<std::size_t>(width) / 8; }
inline void PutFingerprint(char* out, Fingerprint fp, int width) {
  if (width == 128) {
    PutBigEndian64(out, fp.high());
    out += 8;
  }
  PutBigEndian64(out, fp.low());
}
inline Fingerprint GetFingerprint(const char* in, int width) {
  if (width == 128) return {GetBigEndian64(in), GetBigEndian64(in + 8)};
  return GetBigEndian64(in);
}

// A documents-family value: the fingerprint (FingerprintBytes), then its "tail": the document's
// time (8 bytes, big-endian), the signature's length in bytes (2, big-endian; 0 for none), the
// signature, and the metadata bytes.
constexpr std::size_t kTimeBytes = 8;
inline std::string EncodeDocumentTail(DocumentTime time, std::string_view signature,
                                      std::string_view metadata) {
  std::string tail(kTimeBytes + 2 + signature.size() + metadata.size(), '\0');
  PutBigEndian64(tail.data(), static_cast<std::uint64_t>(time));
  char* out = tail.data() + kTimeBytes;
  out[0] = static_cast<char>(signature.size() >> 8);
  out[1] = static_cast<char>(signature.size() & 0xff);
  // An empty string_view may hold a null pointer, which memcpy must not get.
  if (!signature.empty()) std::memcpy(out + 2, signature.data(), signature.size());
  if (!metadata.empty()) std::memcpy(out + 2 + signature.size(), metadata.data(), metadata.size());
  return tail;
}

// A store of `width` bits' value. REQUIRES: the fingerprint fits `width` bits.
inline std::string EncodeDocumentValue(Fingerprint fingerprint, std::string_view tail, int width) {
  const std::size_t f = FingerprintBytes(width);
  std::string value(f + tail.size(), '\0');
  PutFingerprint(value.data(), fingerprint, width);
  if (!tail.empty()) std::memcpy(value.data() + f, tail.data(), tail.size());
  return value;
}

// False if `value` is too short for its fingerprint (of `width` bits), time and signature, or the
// signature's length is not one a Signature can have. `signature` and `metadata` may be null.
inline bool DecodeDocumentValue(std::string_view value, int width, Fingerprint* fingerprint,
                                DocumentTime* time, Signature* signature, std::string* metadata) {
  const std::size_t f = FingerprintBytes(width);
  if (value.size() < f + kTimeBytes + 2) return false;
  *fingerprint = GetFingerprint(value.data(), width);
  *time = static_cast<DocumentTime>(GetBigEndian64(value.data() + f));
  const std::size_t at = f + kTimeBytes;  // the signature's length
  const std::size_t length =
      (static_cast<std::size_t>(static_cast<unsigned char>(value[at])) << 8) |
      static_cast<unsigned char>(value[at + 1]);
  if (value.size() < at + 2 + length) return false;
  if (signature != nullptr) {
    Result<Signature> decoded = Signature::FromBytes(value.substr(at + 2, length));
    if (!decoded.ok()) return false;
    *signature = *std::move(decoded);
  }
  if (metadata != nullptr) metadata->assign(value.substr(at + 2 + length));
  return true;
}

// A staging mark: the staged version's fingerprint, and that of the version
// the next merge takes out of the tables ("leaving"); a removal stages none.
struct StagingMark {
  std::optional<Word> staged;
  std::optional<Word> leaving;
};

// With F = FingerprintBytes(width): F bytes: staged alone; 2F: staged, then leaving; F + 1:
// leaving, then a zero byte.
inline std::string EncodeStagingMark(const StagingMark& mark, int width) {
  const std::size_t f = FingerprintBytes(width);
  std::string value(mark.staged && mark.leaving ? 2 * f : mark.staged ? f : f + 1, '\0');
  if (mark.staged) PutFingerprint(value.data(), *mark.staged, width);
  if (mark.leaving) PutFingerprint(value.data() + (mark.staged ? f : 0), *mark.leaving, width);
  return value;
}

// False if `value` is none of the above (or a mark that neither stages nor leaves).
inline bool DecodeStagingMark(std::string_view value, int width, StagingMark* mark) {
  const std::size_t f = FingerprintBytes(width);
  if (value.size() == f) {
    *mark = {GetFingerprint(value.data(), width), std::nullopt};
  } else if (value.size() == 2 * f) {
    *mark = {GetFingerprint(value.data(), width), GetFingerprint(value.data() + f, width)};
  } else if (value.size() == f + 1 && value[f] == '\0') {
    *mark = {std::nullopt, GetFingerprint(value.data(), width)};
  } else {
    return false;
  }
  return true;
}

// A staged document: its staged version, and the one leaving the tables.
struct StagedDocument {
  DocumentId id;
  Word fingerprint;  // the staged version's; 0 for a removal
  std::optional<Word> leaving;
  bool removal = false;  // nothing staged: the document was removed
};

// Looks up `keys` (ascending) in `family` at `snapshot` (null: the latest
// state), so that RocksDB reads each block once for all its keys; calls
// found(i, value) for each key present, in order, until it fails.
Status MultiGet(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* family,
                const rocksdb::Snapshot* snapshot, std::span<const std::uint64_t> keys,
                const std::function<Status(std::size_t, std::string_view)>& found);

// The documents family, and the count of its documents. Thread-safe.
class Documents {
 public:
  // Of a store of `width`-bit fingerprints.
  Documents(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* family, rocksdb::ColumnFamilyHandle* meta,
            int width)
      : db_(db), family_(family), meta_(meta), width_(width) {}

  int width() const { return width_; }

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

  // Adds to `batch` a document's record (with `time`, its own or the write's), its removal, or a
  // count change. A document with a signature also adds the signed record until Signed() is told
  // it is written.
  void Put(rocksdb::WriteBatch& batch, const NewDocument& doc, DocumentTime time) const;
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
  const int width_;
  mutable std::atomic<bool> signed_{false};  // the signed record is known to be written
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_FORMAT_RECORDS_H_
