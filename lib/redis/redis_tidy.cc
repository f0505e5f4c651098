// Verify, Repair and Compact of a store in Redis (docs/design.md, "The Redis backend"): every
// record, and every entry of every table, read and compared. What looks wrong is checked again
// under the locks a writer would hold, so that a write in flight is not taken for damage:
//   - a table 0 entry whose record is missing or holds another fingerprint (a write cut short, or
//     a replacement's old entry not yet taken out): Repair removes it;
//   - a stored document missing an entry in some table (a failover that lost a write's entries
//     but not its record: a write in flight, or any with Durability::kNoSync): Repair adds it;
//   - a fingerprint in tables 1 and up that no document holds (left by removals and
//     replacements, which take fingerprints out of table 0 only): harmless, as queries pass it
//     by; Repair and Compact remove it;
//   - a shard's time that disagrees with its record (a write or a removal cut short): Repair
//     sets it to the record's time, or takes it out when there is no record.
// Repair then removes the documents past the store's retention, as the sweep does.

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "plan/table_entry.h"
#include "redis/redis_store.h"

namespace fpstore::internal::redis {

namespace {

// Suspects re-checked under their locks per round.
constexpr std::size_t kSuspectsPerRound = 256;

// What a table entry looks wrong for.
struct Suspect {
  enum class Kind { kNoRecord, kMissing, kUnheld } kind;
  std::size_t table;
  Word fingerprint;
  DocumentId id;  // kNoRecord, kMissing
};

// One Verify or Repair: what the records say the tables should hold, and what was found wrong.
class Tidier {
 public:
  Tidier(ClusterClient& client, const Layout& layout, const std::string& url, bool fix)
      : client_(client), layout_(layout), url_(url), fix_(fix) {}

  Status ReadRecords(const std::vector<std::string>& shards) {
    return ForEachRecord(client_, layout_, url_, shards, [&](DocumentId id, Document& doc) {
      records_.emplace(id, doc.fingerprint);
      record_times_.emplace(id, doc.time);
      held_.insert(doc.fingerprint);
    });
  }

  // The shards' times (their keys `times`) against the records' times; each that disagrees
  // rechecked under its id lock, and mended when fixing.
  Status Times(const std::vector<std::string>& times);

  // Table t's suspects, from its buckets' members and the records; malformed members are noted
  // and, when fixing, removed.
  Status Table(std::size_t t, const std::vector<std::uint64_t>& buckets) {
    std::vector<Suspect> suspects;
    if (Status s = ReadTable(t, buckets, suspects); !s.ok()) return s;
    for (std::size_t begin = 0; begin < suspects.size(); begin += kSuspectsPerRound) {
      const std::size_t end = std::min(suspects.size(), begin + kSuspectsPerRound);
      if (Status s = Recheck(std::span(suspects).subspan(begin, end - begin)); !s.ok()) return s;
    }
    Status s = fix_ ? client_.RunAll(malformed_, "removing malformed members") : Status::OK();
    malformed_.clear();
    return s;
  }

  // Verify's answer: OK, or Corruption describing what was found.
  Status Findings() const {
    if (no_record_ + missing_ + malformed_count_ + times_ == 0) return Status::OK();
    return Status::Corruption(
        url_ + ": " + std::to_string(missing_) + " entries that stored documents lack, " +
        std::to_string(no_record_) + " table 0 entries of writes that did not finish, " +
        std::to_string(times_) + " times that disagree with their records, " +
        std::to_string(malformed_count_) + " malformed members; the first: " + first_ +
        ". fpstore-admin repair (Store::Repair) mends them");
  }

 private:
  void Note(std::uint64_t& count, const std::string& what) {
    if (count++ == 0 && first_.empty()) first_ = what;
  }

  Status ReadTable(std::size_t t, const std::vector<std::uint64_t>& buckets,
                   std::vector<Suspect>& suspects);
  // Each suspect again, under the locks its writers hold (the table-0 bucket lock of its
  // fingerprint, and its document's id lock); fixed when fixing.
  Status Recheck(std::span<const Suspect> suspects);
  // Of the kUnheld suspects, those a record holds after all (their ids read from table 0 in
  // `replies`), by index.
  Result<std::unordered_set<std::size_t>> StillHeld(std::span<const Suspect> suspects,
                                                    std::span<const Reply> replies);

  ClusterClient& client_;
  const Layout& layout_;
  const std::string& url_;
  const bool fix_;
  // Each of `ids`' time again under its id lock: its record's and its shard's; mended when fixing.
  Status RecheckTimes(std::span<const DocumentId> ids);

  std::unordered_map<DocumentId, Word> records_;
  std::unordered_map<DocumentId, DocumentTime> record_times_;
  std::unordered_set<Word> held_;
  std::vector<Command> malformed_;
  std::uint64_t no_record_ = 0, missing_ = 0, malformed_count_ = 0, times_ = 0;
  std::string first_;  // the first problem, in words
};

Status Tidier::ReadTable(std::size_t t, const std::vector<std::uint64_t>& buckets,
                         std::vector<Suspect>& suspects) {
  std::unordered_set<DocumentId> entered;  // table 0: documents with their entry
  std::unordered_set<Word> present;        // other tables: fingerprints held
  std::vector<std::string> keys;
  keys.reserve(buckets.size());
  for (const std::uint64_t b : buckets) keys.push_back(layout_.BucketKey(t, b));
  std::size_t next = 0;
  Status s =
      ForEachReply(client_, keys, {"ZRANGE", "0", "-1"}, [&](const std::string& key, Reply& r) {
        const std::uint64_t bucket = buckets[next++];
        for (const Reply& member : r.elements) {
          Word fp = 0;
          DocumentId id = 0;
          if (!layout_.DecodeMember(t, bucket, member.str, &fp, &id)) {
            Note(malformed_count_, key + " holds a malformed member");
            malformed_.push_back({key, {"ZREM", key, member.str}});
          } else if (t != 0) {
            present.insert(fp);
            // Verify passes them by: they are allowed, and only Repair and Compact remove them.
            if (fix_ && held_.count(fp) == 0)
              suspects.push_back({Suspect::Kind::kUnheld, t, fp, 0});
          } else if (const auto it = records_.find(id); it != records_.end() && it->second == fp) {
            entered.insert(id);
          } else {
            suspects.push_back({Suspect::Kind::kNoRecord, t, fp, id});
          }
        }
        return Status::OK();
      });
  if (!s.ok()) return s;
  for (const auto& [id, fp] : records_) {
    if (t == 0 ? entered.count(id) == 0 : present.count(fp) == 0) {
      suspects.push_back({Suspect::Kind::kMissing, t, fp, id});
    }
  }
  return Status::OK();
}

Result<std::unordered_set<std::size_t>> Tidier::StillHeld(std::span<const Suspect> suspects,
                                                          std::span<const Reply> replies) {
  std::vector<Command> reads;
  std::vector<std::pair<std::size_t, DocumentId>> record_of;  // suspect, id
  for (std::size_t i = 0; i < suspects.size(); ++i) {
    if (suspects[i].kind != Suspect::Kind::kUnheld) continue;
    const std::uint64_t bucket = layout_.BucketOf(0, suspects[i].fingerprint);
    for (const Reply& member : replies[i].elements) {
      Word fp = 0;
      DocumentId id = 0;
      if (layout_.DecodeMember(0, bucket, member.str, &fp, &id)) {
        reads.push_back(layout_.ReadRecord(id));
        record_of.emplace_back(i, id);
      }
    }
  }
  Result<std::vector<Reply>> got = client_.Run(reads);
  if (!got.ok()) return got.status();
  std::unordered_set<std::size_t> held;
  for (std::size_t j = 0; j < record_of.size(); ++j) {
    Document doc;
    const Reply& r = (*got)[j];
    if (r.type == Reply::Type::kString && layout_.DecodeRecord(record_of[j].second, r.str, &doc) &&
        doc.fingerprint == suspects[record_of[j].first].fingerprint) {
      held.insert(record_of[j].first);
    }
  }
  return held;
}

Status Tidier::Recheck(std::span<const Suspect> suspects) {
  std::vector<std::string> keys;
  std::vector<Command> reads;
  for (const Suspect& x : suspects) {
    keys.push_back(Layout::BucketLockKey(layout_.BucketKeyOf(0, x.fingerprint)));
    if (x.kind == Suspect::Kind::kUnheld) {
      reads.push_back(layout_.IdsOf(x.fingerprint));
    } else {
      keys.push_back(layout_.IdLockKey(x.id));
      reads.push_back(layout_.ReadRecord(x.id));
    }
  }
  LockSet locks;
  std::vector<Reply> replies;
  if (Status s = locks.Acquire(client_, std::move(keys), reads, &replies); !s.ok()) return s;
  Result<std::unordered_set<std::size_t>> held = StillHeld(suspects, replies);
  std::vector<Command> fixes;
  for (std::size_t i = 0; held.ok() && i < suspects.size(); ++i) {
    const Suspect& x = suspects[i];
    const std::string key = layout_.BucketKeyOf(x.table, x.fingerprint);
    const std::string member = layout_.Member(x.table, x.fingerprint, x.id);
    Document doc;
    const Reply& r = replies[i];
    const bool recorded = x.kind != Suspect::Kind::kUnheld && r.type == Reply::Type::kString &&
                          layout_.DecodeRecord(x.id, r.str, &doc) &&
                          doc.fingerprint == x.fingerprint;
    if (x.kind == Suspect::Kind::kUnheld && held->count(i) == 0) {
      fixes.push_back({key, {"ZREM", key, member}});
    } else if (x.kind == Suspect::Kind::kNoRecord && !recorded) {
      Note(no_record_, "table 0 holds fingerprint " + FingerprintText(x.fingerprint) +
                           " for document " + std::to_string(x.id) +
                           ", whose record does not hold it");
      fixes.push_back({key, {"ZREM", key, member}});
    } else if (x.kind == Suspect::Kind::kMissing && recorded) {
      Note(missing_, "document " + std::to_string(x.id) + " (fingerprint " +
                         FingerprintText(x.fingerprint) + ") has no entry in table " +
                         std::to_string(x.table));
      fixes.push_back({key, {"ZADD", key, "0", member}});
    }
  }
  Status s = held.ok() ? Status::OK() : held.status();
  // The fixes only while the locks surely hold, confirmed before they are given back.
  if (fix_ && s.ok()) s = locks.Check();
  if (fix_ && s.ok()) s = client_.RunAll(fixes, "repairing table entries");
  (void)locks.Release(client_);
  return s;
}

Status Tidier::Times(const std::vector<std::string>& times) {
  std::vector<DocumentId> suspects;
  std::unordered_set<DocumentId> timed;
  Status s = ForEachReply(
      client_, times, {"ZRANGE", "0", "-1", "WITHSCORES"}, [&](const std::string& key, Reply& r) {
        for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2) {
          DocumentId id = 0;
          DocumentTime time = 0;
          if (!Layout::DecodeIdField(r.elements[i].str, &id) ||
              !ParseNumber(r.elements[i + 1].str, time) || layout_.TimesKeyOf(id) != key) {
            Note(malformed_count_, key + " holds a malformed member");
            malformed_.push_back({key, {"ZREM", key, r.elements[i].str}});
            continue;
          }
          timed.insert(id);
          const auto it = record_times_.find(id);
          if (it == record_times_.end() || it->second != time) suspects.push_back(id);
        }
        return Status::OK();
      });
  if (!s.ok()) return s;
  for (const auto& [id, time] : record_times_) {
    if (timed.count(id) == 0) suspects.push_back(id);
  }
  for (std::size_t begin = 0; begin < suspects.size(); begin += kSuspectsPerRound) {
    const std::size_t end = std::min(suspects.size(), begin + kSuspectsPerRound);
    if (Status r = RecheckTimes(std::span(suspects).subspan(begin, end - begin)); !r.ok()) {
      return r;
    }
  }
  s = fix_ ? client_.RunAll(malformed_, "removing malformed members") : Status::OK();
  malformed_.clear();
  return s;
}

Status Tidier::RecheckTimes(std::span<const DocumentId> ids) {
  std::vector<std::string> keys;
  std::vector<Command> reads;
  for (const DocumentId id : ids) {
    keys.push_back(layout_.IdLockKey(id));
    reads.push_back(layout_.ReadRecord(id));
    const std::string times = layout_.TimesKeyOf(id);
    reads.push_back({times, {"ZSCORE", times, Layout::IdField(id)}});
  }
  LockSet locks;
  std::vector<Reply> replies;
  if (Status s = locks.Acquire(client_, std::move(keys), reads, &replies); !s.ok()) return s;
  std::vector<Command> fixes;
  Status s;
  for (std::size_t i = 0; i < ids.size() && s.ok(); ++i) {
    const DocumentId id = ids[i];
    Result<std::optional<Document>> stored = layout_.RecordOf(id, replies[2 * i], url_);
    if (!stored.ok()) {
      s = stored.status();
      break;
    }
    const Reply& score = replies[2 * i + 1];
    DocumentTime time = 0;
    const bool has_time = score.type == Reply::Type::kString && ParseNumber(score.str, time);
    const std::string key = layout_.TimesKeyOf(id);
    if (!*stored && has_time) {
      Note(times_,
           "document " + std::to_string(id) + ", which is not stored, has a time in " + key);
      fixes.push_back({key, {"ZREM", key, Layout::IdField(id)}});
    } else if (*stored && (!has_time || time != (*stored)->time)) {
      Note(times_, "document " + std::to_string(id) + "'s time in " + key + " is " +
                       (has_time ? std::to_string(time) : "missing") + ", its record's " +
                       std::to_string((*stored)->time));
      fixes.push_back({key, {"ZADD", key, std::to_string((*stored)->time), Layout::IdField(id)}});
    }
  }
  if (fix_ && s.ok()) s = locks.Check();
  if (fix_ && s.ok()) s = client_.RunAll(fixes, "repairing times");
  (void)locks.Release(client_);
  return s;
}

}  // namespace

Status RedisStore::Tidy(bool fix, const ScanOptions& scan) const {
  Result<ClientPool::Lease> lease = Client();
  if (!lease.ok()) return lease.status();
  ClusterClient& client = **lease;
  const std::uint64_t tables = plan().table_count();
  if (scan.progress) scan.progress(0, tables);
  Result<StoreKeys> keys = ListKeys(client);
  if (!keys.ok()) return keys.status();
  Tidier tidier(client, layout_, url_, fix);
  Status s = tidier.ReadRecords(keys->shards);
  if (s.ok()) s = tidier.Times(keys->times);
  for (std::size_t t = 0; t < tables && s.ok(); ++t) {
    s = tidier.Table(t, keys->buckets[t]);
    if (s.ok() && scan.progress) scan.progress(t + 1, tables);
  }
  if (!s.ok()) return s;
  return fix ? Settle(client) : tidier.Findings();
}

Status RedisStore::Verify(const ScanOptions& scan) const { return Tidy(false, scan); }

Status RedisStore::Repair(const ScanOptions& scan) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  if (Status s = Tidy(true, scan); !s.ok()) return s;
  Result<DocumentTime> before = ExpiredBefore();
  if (!before.ok()) return before.status();
  if (*before == 0) return Status::OK();
  Result<ClientPool::Lease> client = Client();
  if (!client.ok()) return client.status();
  const std::atomic<bool> never{false};
  Result<std::uint64_t> removed = ExpireSets(**client, *before, AllTimesSets(), never);
  if (!removed.ok()) return removed.status();
  return Settle(**client);
}

Status RedisStore::Compact(const ScanOptions& scan) { return Repair(scan); }

}  // namespace fpstore::internal::redis
