#include "format/time_index.h"

#include <algorithm>
#include <memory>

#include "util/big_endian.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

namespace {

// Keys read and checked against their records at a time.
constexpr std::size_t kChunk = 4096;

}  // namespace

std::string TimeIndex::Key(DocumentTime time, DocumentId id) {
  std::string key(16, '\0');
  PutBigEndian64(key.data(), static_cast<std::uint64_t>(time));
  PutBigEndian64(key.data() + 8, id);
  return key;
}

bool TimeIndex::DecodeKey(std::string_view key, Entry* entry) {
  if (key.size() != 16) return false;
  entry->time = static_cast<DocumentTime>(GetBigEndian64(key.data()));
  entry->id = GetBigEndian64(key.data() + 8);
  return entry->time >= 0 && entry->time <= kMaxDocumentTime;
}

void TimeIndex::Put(rocksdb::WriteBatch& batch, DocumentTime time, DocumentId id) const {
  batch.Put(family_, Key(time, id), rocksdb::Slice()).PermitUncheckedError();
}

void TimeIndex::Delete(rocksdb::WriteBatch& batch, DocumentTime time, DocumentId id) const {
  batch.Delete(family_, Key(time, id)).PermitUncheckedError();
}

Status TimeIndex::ForEachKeyBefore(
    const rocksdb::Snapshot* snapshot, DocumentTime before,
    const std::function<Status(const Entry&, bool* more)>& fn) const {
  if (before <= 0) return Status::OK();
  const std::string end = Key(before, 0);
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  const rocksdb::Slice upper(end);
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db_.NewIterator(ro, family_));
  bool more = true;
  for (it->SeekToFirst(); it->Valid() && more; it->Next()) {
    Entry entry;
    if (!DecodeKey(it->key().ToStringView(), &entry)) {
      return Status::Corruption("times: malformed key " + it->key().ToString(true));
    }
    if (Status s = fn(entry, &more); !s.ok()) return s;
  }
  return FromRocks(it->status(), "reading times");
}

Result<std::vector<TimeIndex::Entry>> TimeIndex::KeysBefore(const rocksdb::Snapshot* snapshot,
                                                            DocumentTime before,
                                                            std::size_t limit) const {
  std::vector<Entry> entries;
  if (limit == 0) return entries;
  Status s = ForEachKeyBefore(snapshot, before, [&](const Entry& entry, bool* more) {
    entries.push_back(entry);
    *more = entries.size() < limit;
    return Status::OK();
  });
  if (!s.ok()) return s;
  return entries;
}

Status TimeIndex::FindMissing(const rocksdb::Snapshot* snapshot, std::span<const Entry> entries,
                              const std::function<void(const Entry&)>& missing) const {
  std::vector<std::string> keys;
  keys.reserve(entries.size());
  for (const Entry& e : entries) keys.push_back(Key(e.time, e.id));
  std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
  std::vector<rocksdb::PinnableSlice> values(keys.size());
  std::vector<rocksdb::Status> statuses(keys.size());
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  db_.MultiGet(ro, family_, slices.size(), slices.data(), values.data(), statuses.data());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (statuses[i].IsNotFound()) {
      missing(entries[i]);
    } else if (!statuses[i].ok()) {
      return FromRocks(statuses[i], "reading times");
    }
  }
  return Status::OK();
}

Result<std::vector<bool>> TimeIndex::Live(const rocksdb::Snapshot* snapshot,
                                          std::span<const Entry> entries) const {
  std::vector<DocumentId> ids;
  ids.reserve(entries.size());
  for (const Entry& e : entries) ids.push_back(e.id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<std::optional<DocumentTime>> times(ids.size());
  Status s = documents_.Read(snapshot, ids, /*whole=*/false,
                             [&](std::size_t i, const Document& doc) { times[i] = doc.time; });
  if (!s.ok()) return s;
  std::vector<bool> live(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::size_t at = std::lower_bound(ids.begin(), ids.end(), entries[i].id) - ids.begin();
    live[i] = times[at] == entries[i].time;
  }
  return live;
}

Result<std::vector<DocumentId>> TimeIndex::DocumentsBefore(const rocksdb::Snapshot* snapshot,
                                                           DocumentTime before) const {
  std::vector<DocumentId> ids;
  std::vector<Entry> chunk;
  const auto check = [&]() -> Status {
    Result<std::vector<bool>> live = Live(snapshot, chunk);
    if (!live.ok()) return live.status();
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      if ((*live)[i]) ids.push_back(chunk[i].id);
    }
    chunk.clear();
    return Status::OK();
  };
  Status s = ForEachKeyBefore(snapshot, before, [&](const Entry& entry, bool*) {
    chunk.push_back(entry);
    return chunk.size() == kChunk ? check() : Status::OK();
  });
  if (s.ok()) s = check();
  if (!s.ok()) return s;
  std::sort(ids.begin(), ids.end());
  return ids;
}

Result<std::optional<DocumentTime>> TimeIndex::FirstLive(const rocksdb::Snapshot* snapshot,
                                                         bool newest) const {
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  std::unique_ptr<rocksdb::Iterator> it(db_.NewIterator(ro, family_));
  newest ? it->SeekToLast() : it->SeekToFirst();
  while (it->Valid()) {
    std::vector<Entry> chunk;
    for (; it->Valid() && chunk.size() < kChunk; newest ? it->Prev() : it->Next()) {
      Entry entry;
      if (!DecodeKey(it->key().ToStringView(), &entry)) {
        return Status::Corruption("times: malformed key " + it->key().ToString(true));
      }
      chunk.push_back(entry);
    }
    Result<std::vector<bool>> live = Live(snapshot, chunk);
    if (!live.ok()) return live.status();
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      if ((*live)[i]) return std::optional<DocumentTime>(chunk[i].time);
    }
  }
  if (Status s = FromRocks(it->status(), "reading times"); !s.ok()) return s;
  return std::optional<DocumentTime>();
}

Result<std::optional<TimeIndex::Span>> TimeIndex::TimeSpan(
    const rocksdb::Snapshot* snapshot) const {
  Result<std::optional<DocumentTime>> oldest = FirstLive(snapshot, /*newest=*/false);
  if (!oldest.ok()) return oldest.status();
  if (!*oldest) return std::optional<Span>();
  Result<std::optional<DocumentTime>> newest = FirstLive(snapshot, /*newest=*/true);
  if (!newest.ok()) return newest.status();
  if (!*newest) return Status::Corruption("times: the newest document vanished from the snapshot");
  return std::optional<Span>(Span{**oldest, **newest});
}

}  // namespace fpstore::internal
