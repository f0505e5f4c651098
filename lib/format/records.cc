#include "format/records.h"

#include <array>
#include <chrono>
#include <memory>
#include <string>

#include "format/families.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

namespace {

Status Malformed(DocumentId id) {
  return Status::Corruption("document " + std::to_string(id) + " has a malformed record");
}

}  // namespace

Result<DocumentTime> Now(const std::function<DocumentTime()>& clock) {
  const DocumentTime now = clock ? clock()
                                 : std::chrono::duration_cast<std::chrono::seconds>(
                                       std::chrono::system_clock::now().time_since_epoch())
                                       .count();
  if (Status s = CheckTime(now, "the store's clock's time"); !s.ok()) return s;
  return now;
}

Result<DocumentTime> RetentionCutoffNow(const std::function<DocumentTime()>& clock,
                                        std::int64_t retention_seconds) {
  if (retention_seconds == 0) return DocumentTime{0};
  Result<DocumentTime> now = Now(clock);
  if (!now.ok()) return now.status();
  return RetentionCutoff(*now, retention_seconds);
}

Status MultiGet(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* family,
                const rocksdb::Snapshot* snapshot, std::span<const std::uint64_t> keys,
                const std::function<Status(std::size_t, std::string_view)>& found) {
  std::vector<std::array<char, 8>> bytes(keys.size());
  std::vector<rocksdb::Slice> slices;
  slices.reserve(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    PutBigEndian64(bytes[i].data(), keys[i]);
    slices.emplace_back(bytes[i].data(), 8);
  }
  std::vector<rocksdb::PinnableSlice> values(keys.size());
  std::vector<rocksdb::Status> statuses(keys.size());
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  db.MultiGet(ro, family, slices.size(), slices.data(), values.data(), statuses.data(),
              /*sorted_input=*/true);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (statuses[i].IsNotFound()) continue;
    if (!statuses[i].ok()) {
      return FromRocks(statuses[i],
                       "reading " + family->GetName() + " key " + std::to_string(keys[i]));
    }
    if (Status s = found(i, values[i].ToStringView()); !s.ok()) return s;
  }
  return Status::OK();
}

Result<Document> Documents::Get(DocumentId id) const {
  std::string value;
  const rocksdb::Status rs = db_.Get(rocksdb::ReadOptions(), family_, Key8(id).view(), &value);
  if (rs.IsNotFound()) return Status::NotFound("document " + std::to_string(id));
  if (!rs.ok()) return FromRocks(rs, "reading document " + std::to_string(id));
  Document doc;
  doc.id = id;
  if (!DecodeDocumentValue(value, width_, &doc.fingerprint, &doc.time, &doc.signature,
                           &doc.metadata)) {
    return Malformed(id);
  }
  return doc;
}

Status Documents::Read(const rocksdb::Snapshot* snapshot, std::span<const DocumentId> ids,
                       bool whole,
                       const std::function<void(std::size_t, const Document&)>& found) const {
  Document doc;
  return MultiGet(db_, family_, snapshot, ids, [&](std::size_t i, std::string_view value) {
    doc.id = ids[i];
    if (!DecodeDocumentValue(value, width_, &doc.fingerprint, &doc.time,
                             whole ? &doc.signature : nullptr, whole ? &doc.metadata : nullptr)) {
      return Malformed(ids[i]);
    }
    found(i, doc);
    return Status::OK();
  });
}

Status Documents::ForEach(const rocksdb::Snapshot* snapshot,
                          const std::function<Status(const Document&)>& sink) const {
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  ro.fill_cache = false;  // a scan: keep the queries' working set
  ro.readahead_size = 4 << 20;
  std::unique_ptr<rocksdb::Iterator> it(db_.NewIterator(ro, family_));
  Document doc;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (it->key().size() != 8 ||
        !DecodeDocumentValue(it->value().ToStringView(), width_, &doc.fingerprint, &doc.time,
                             &doc.signature, &doc.metadata)) {
      return Status::Corruption("documents: malformed record with key " + it->key().ToString(true));
    }
    doc.id = GetBigEndian64(it->key().data());
    if (Status s = sink(doc); !s.ok()) return s;
  }
  return FromRocks(it->status(), "scanning documents");
}

Result<std::uint64_t> Documents::Count(const rocksdb::Snapshot* snapshot) const {
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  std::string count;
  const rocksdb::Status rs = db_.Get(ro, meta_, kDocumentCountKey, &count);
  if (rs.IsNotFound()) return std::uint64_t{0};
  if (!rs.ok()) return FromRocks(rs, "reading the document count");
  if (count.size() != 8) return Status::Corruption("malformed document count record");
  return GetBigEndian64(count.data());
}

std::uint64_t Documents::Estimate() const {
  std::uint64_t n = 0;
  db_.GetIntProperty(family_, rocksdb::DB::Properties::kEstimateNumKeys, &n);
  return n;
}

void Documents::Put(rocksdb::WriteBatch& batch, const NewDocument& doc, DocumentTime time) const {
  if (!doc.signature.empty() && !signed_.load(std::memory_order_acquire)) {
    batch.Put(meta_, kSignedKey, "1").PermitUncheckedError();
  }
  batch
      .Put(family_, Key8(doc.id).view(),
           EncodeDocumentValue(doc.fingerprint,
                               EncodeDocumentTail(time, doc.signature.bytes(), doc.metadata),
                               width_))
      .PermitUncheckedError();
}

Status Documents::LoadSigned() {
  Result<bool> there = AnySigned(nullptr);
  if (!there.ok()) return there.status();
  signed_.store(*there, std::memory_order_release);
  return Status::OK();
}

Status Documents::WriteSigned() const {
  if (signed_.load(std::memory_order_acquire)) return Status::OK();
  rocksdb::WriteOptions sync;
  sync.sync = true;
  if (Status s = FromRocks(db_.Put(sync, meta_, kSignedKey, "1"), "writing the signed record");
      !s.ok()) {
    return s;
  }
  WroteSigned();
  return Status::OK();
}

Result<bool> Documents::AnySigned(const rocksdb::Snapshot* snapshot) const {
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  std::string value;
  const rocksdb::Status rs = db_.Get(ro, meta_, kSignedKey, &value);
  if (rs.IsNotFound()) return false;
  if (!rs.ok()) return FromRocks(rs, "reading the signed record");
  return true;
}

void Documents::Delete(rocksdb::WriteBatch& batch, DocumentId id) const {
  batch.Delete(family_, Key8(id).view()).PermitUncheckedError();
}

void Documents::CountChange(rocksdb::WriteBatch& batch, std::int64_t delta) const {
  if (delta == 0) return;
  char value[8];
  PutBigEndian64(value, static_cast<std::uint64_t>(delta));
  batch.Merge(meta_, kDocumentCountKey, rocksdb::Slice(value, 8)).PermitUncheckedError();
}

}  // namespace fpstore::internal
