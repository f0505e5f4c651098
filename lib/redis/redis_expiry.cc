// Expiry of a store in Redis (docs/design.md, "Times and expiry"): Expire, the background sweep
// and Repair's pass go through the times sets, lock the ids found before the time, and remove the
// documents whose records say they are past it, as Remove does.

#include <algorithm>

#include "redis/redis_store.h"

namespace fpstore::internal::redis {

namespace {

// The times sets each sweep takes: every one in times_count() / kSweepSets periods.
constexpr std::uint64_t kSweepSets = 2048;
// Times sets read per pipelined round of an expiry.
constexpr std::uint64_t kExpireSetsPerRound = 256;

}  // namespace

Result<std::uint64_t> RedisStore::Expire(DocumentTime before) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  if (Status s = CheckTime(before, "the time to expire before"); !s.ok()) return s;
  Result<ClientPool::Lease> client = Client();
  if (!client.ok()) return client.status();
  const std::atomic<bool> never{false};
  Result<std::uint64_t> removed = ExpireSets(**client, before, AllTimesSets(), never);
  if (!removed.ok()) return removed;
  if (Status s = Settle(**client); !s.ok()) return s;
  return removed;
}

Status RedisStore::SweepSome(const std::atomic<bool>& stopping) {
  Result<DocumentTime> before = ExpiredBefore();
  if (!before.ok()) return before.status();
  Result<ClientPool::Lease> client = Client();
  if (!client.ok()) return client.status();
  const std::uint64_t count = layout_.times_count();
  std::vector<std::uint64_t> sets;
  for (std::uint64_t i = 0; i < std::min(count, kSweepSets); ++i) {
    sets.push_back((sweep_next_ + i) % count);
  }
  Result<std::uint64_t> removed = ExpireSets(**client, *before, std::move(sets), stopping);
  if (!removed.ok()) return removed.status();  // the same sets again next time
  if (stopping.load(std::memory_order_relaxed)) return Status::OK();
  if (Status s = Settle(**client); !s.ok()) return s;
  sweep_next_ = (sweep_next_ + std::min(count, kSweepSets)) % count;
  return Status::OK();
}

std::vector<std::uint64_t> RedisStore::AllTimesSets() const {
  std::vector<std::uint64_t> sets(layout_.times_count());
  for (std::uint64_t i = 0; i < sets.size(); ++i) sets[i] = i;
  return sets;
}

Result<std::uint64_t> RedisStore::ExpireSets(ClusterClient& client, DocumentTime before,
                                             std::vector<std::uint64_t> sets,
                                             const std::atomic<bool>& stopping) {
  std::uint64_t removed = 0;
  if (before <= 0) return removed;
  const std::string below = "(" + std::to_string(before);
  const std::string limit = std::to_string(kWriteChunk);
  // Rounds over the sets left: a set that gave a full chunk is read again.
  while (!sets.empty()) {
    std::vector<std::uint64_t> again;
    for (std::size_t begin = 0; begin < sets.size(); begin += kExpireSetsPerRound) {
      if (stopping.load(std::memory_order_relaxed)) return removed;
      const std::size_t round_end = std::min(sets.size(), begin + kExpireSetsPerRound);
      std::vector<Command> reads;
      for (std::size_t i = begin; i < round_end; ++i) {
        const std::string key = layout_.TimesKey(sets[i]);
        reads.push_back({key, {"ZRANGE", key, "-inf", below, "BYSCORE", "LIMIT", "0", limit}});
      }
      Result<std::vector<Reply>> got = client.Run(reads);
      if (!got.ok()) return got.status();
      for (std::size_t i = begin; i < round_end; ++i) {
        if (stopping.load(std::memory_order_relaxed)) return removed;
        const Reply& r = (*got)[i - begin];
        const std::string& key = reads[i - begin].key;
        if (r.type == Reply::Type::kError) return ReplyError(r, "reading " + key);
        std::vector<DocumentId> ids;
        std::vector<Command> malformed;  // no write puts one there: it only goes
        for (const Reply& member : r.elements) {
          DocumentId id = 0;
          if (Layout::DecodeIdField(member.str, &id)) {
            ids.push_back(id);
          } else {
            malformed.push_back({key, {"ZREM", key, member.str}});
          }
        }
        if (Status s = client.RunAll(malformed, "removing malformed times"); !s.ok()) return s;
        if (!ids.empty()) {
          Result<std::uint64_t> expired = ExpireIds(client, key, ids, before);
          if (!expired.ok()) return expired;
          removed += *expired;
        }
        if (r.elements.size() == kWriteChunk) again.push_back(sets[i]);
      }
    }
    sets = std::move(again);
  }
  return removed;
}

Result<std::uint64_t> RedisStore::ExpireIds(ClusterClient& client, const std::string& times_key,
                                            std::span<const DocumentId> given,
                                            DocumentTime before) {
  // A member of another shard's document was not put there by a write: it only goes.
  std::vector<DocumentId> ids;
  std::vector<Command> misplaced;
  for (const DocumentId id : given) {
    if (layout_.TimesKeyOf(id) == times_key) {
      ids.push_back(id);
    } else {
      misplaced.push_back({times_key, {"ZREM", times_key, Layout::IdField(id)}});
    }
  }
  if (Status s = client.RunAll(misplaced, "removing misplaced times"); !s.ok()) return s;
  if (ids.empty()) return std::uint64_t{0};
  std::vector<std::string> keys;
  std::vector<Command> reads;
  for (const DocumentId id : ids) {
    keys.push_back(layout_.IdLockKey(id));
    reads.push_back(layout_.ReadRecord(id));
  }
  LockSet locks;
  std::vector<Reply> replies;
  if (Status s = locks.Acquire(client, std::move(keys), reads, &replies); !s.ok()) return s;
  // Read under the locks: a document written since has a new time, and stays.
  Grouped records("HDEL"), times_out("ZREM"), times_fixed("ZADD"), entries("ZREM");
  std::uint64_t removed = 0;
  Status s;
  for (std::size_t i = 0; i < ids.size() && s.ok(); ++i) {
    const DocumentId id = ids[i];
    Result<std::optional<Document>> stored = layout_.RecordOf(id, replies[i], url_);
    if (!stored.ok()) {
      s = stored.status();
    } else if (!*stored) {
      times_out.Add(times_key, {Layout::IdField(id)});  // a removal cut short
    } else if ((*stored)->time >= before) {
      // A write cut short left an earlier score: the record's time decides.
      times_fixed.Add(times_key, {std::to_string((*stored)->time), Layout::IdField(id)});
    } else {
      const Word fp = (*stored)->fingerprint;
      records.Add(layout_.ShardKeyOf(id), {Layout::IdField(id)});
      times_out.Add(times_key, {Layout::IdField(id)});
      entries.Add(layout_.BucketKeyOf(0, fp), {layout_.Member(0, fp, id)});
      ++removed;
    }
  }
  // As Remove's: the records first, then, once they are as durable as asked, the entries and
  // the times, before the locks are given back.
  if (s.ok()) s = locks.Check();
  if (s.ok()) s = client.RunAll(std::move(records).Commands(), "removing expired records");
  if (s.ok()) s = Settle(client);
  // As Remove's, only while the locks surely hold.
  if (s.ok() && locks.Check().ok()) {
    std::vector<Command> after = std::move(entries).Commands();
    std::vector<Command> out = std::move(times_out).Commands();
    std::vector<Command> fixed = std::move(times_fixed).Commands();
    after.insert(after.end(), std::make_move_iterator(out.begin()),
                 std::make_move_iterator(out.end()));
    after.insert(after.end(), std::make_move_iterator(fixed.begin()),
                 std::make_move_iterator(fixed.end()));
    s = client.RunAll(after, "removing expired entries and times");
  }
  (void)locks.Release(client);
  if (!s.ok()) return s;
  return removed;
}

}  // namespace fpstore::internal::redis
