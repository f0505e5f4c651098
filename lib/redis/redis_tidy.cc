// Verify, Repair and Compact of a store in Redis (docs/design.md, "The Redis backend"): every
// record, and every entry of every table, read and compared. What looks wrong is checked again
// under the locks a writer would hold, so that a write in flight is not taken for damage:
//   - a table 0 entry whose record is missing or holds another fingerprint (a write cut short, or
//     a replacement's old entry not yet taken out): Repair removes it;
//   - a stored document missing an entry in some table (a failover that lost acknowledged
//     writes): Repair adds it;
//   - a fingerprint in tables 1 and up that no document holds (left by removals and
//     replacements, which take fingerprints out of table 0 only): harmless, as queries pass it
//     by; Repair and Compact remove it.

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "redis/redis_store.h"

namespace fpstore::internal::redis {

namespace {

// Suspects re-checked under their locks per round.
constexpr std::size_t kSuspectsPerRound = 256;

// What a table entry looks like wrong for.
struct Suspect {
  enum class Kind { kNoRecord, kMissing, kUnheld } kind;
  std::size_t table;
  Fingerprint fingerprint;
  DocumentId id;  // kNoRecord, kMissing
};

struct Findings {
  std::uint64_t no_record = 0, missing = 0, unheld = 0, malformed = 0;
  std::string first;  // the first problem, in words
};

}  // namespace

Status RedisStore::Tidy(bool fix, const ScanOptions& scan) const {
  Result<ClientPool::Lease> lease = Client();
  if (!lease.ok()) return lease.status();
  ClusterClient& client = **lease;
  const PermutationPlan& p = plan();
  const std::uint64_t tables = p.table_count();
  if (scan.progress) scan.progress(0, tables);
  // The records: what the tables should hold.
  std::unordered_map<DocumentId, Fingerprint> records;
  std::unordered_set<Fingerprint> held;
  Result<StoreKeys> store_keys = ListKeys(client);
  if (!store_keys.ok()) return store_keys.status();
  Status s = ForEachReply(client, store_keys->shards, {"HGETALL"}, [&](const std::string& key,
                                                                      Reply& r) {
      for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2) {
        DocumentId id = 0;
        Document doc;
        if (!Layout::DecodeIdField(r.elements[i].str, &id) ||
            !Layout::DecodeRecord(id, r.elements[i + 1].str, &doc)) {
          return Status::Corruption(url_ + ": " + key + " holds a malformed record");
        }
        records.emplace(id, doc.fingerprint);
        held.insert(doc.fingerprint);
      }
      return Status::OK();
  });
  if (!s.ok()) return s;

  Findings findings;
  auto note = [&](std::uint64_t& count, const std::string& what) {
    if (count++ == 0 && findings.first.empty()) findings.first = what;
  };
  for (std::size_t t = 0; t < tables && s.ok(); ++t) {
    std::vector<Suspect> suspects;
    std::unordered_set<DocumentId> entered;      // table 0: documents with their entry
    std::unordered_set<Fingerprint> present;     // other tables: fingerprints held
    std::vector<Command> malformed;
    const std::vector<std::uint64_t>& buckets = store_keys->buckets[t];
    std::vector<std::string> keys;
    keys.reserve(buckets.size());
    for (const std::uint64_t b : buckets) keys.push_back(layout_.BucketKey(t, b));
    std::size_t next = 0;
    s = ForEachReply(client, keys, {"ZRANGE", "0", "-1"}, [&](const std::string& key, Reply& r) {
        const std::uint64_t bucket = buckets[next++];
        for (const Reply& member : r.elements) {
          Fingerprint fp = 0;
          DocumentId id = 0;
          if (!layout_.DecodeMember(t, bucket, member.str, &fp, &id)) {
            note(findings.malformed, key + " holds a malformed member");
            malformed.push_back({key, {"ZREM", key, member.str}});
          } else if (t != 0) {
            present.insert(fp);
            if (held.count(fp) == 0) suspects.push_back({Suspect::Kind::kUnheld, t, fp, 0});
          } else if (const auto it = records.find(id); it != records.end() && it->second == fp) {
            entered.insert(id);
          } else {
            suspects.push_back({Suspect::Kind::kNoRecord, t, fp, id});
          }
        }
        return Status::OK();
    });
    if (!s.ok()) break;
    for (const auto& [id, fp] : records) {
      if (t == 0 ? entered.count(id) == 0 : present.count(fp) == 0) {
        suspects.push_back({Suspect::Kind::kMissing, t, fp, id});
      }
    }
    // Each suspect again, under the locks its writers hold; fixed if asked.
    for (std::size_t begin = 0; begin < suspects.size() && s.ok(); begin += kSuspectsPerRound) {
      const std::size_t end = std::min(suspects.size(), begin + kSuspectsPerRound);
      std::vector<std::string> keys;
      std::vector<Command> reads;
      for (std::size_t i = begin; i < end; ++i) {
        const Suspect& x = suspects[i];
        keys.push_back(Layout::BucketLockKey(layout_.BucketKeyOf(0, x.fingerprint)));
        if (x.kind == Suspect::Kind::kUnheld) {
          reads.push_back(layout_.IdsOf(x.fingerprint));
        } else {
          keys.push_back(layout_.IdLockKey(x.id));
          const std::string shard = layout_.ShardKeyOf(x.id);
          reads.push_back({shard, {"HGET", shard, Layout::IdField(x.id)}});
        }
      }
      LockSet locks;
      std::vector<Reply> replies;
      s = locks.Acquire(client, std::move(keys), reads, &replies);
      if (!s.ok()) break;
      // A fingerprint with entries in table 0 is held if one of their records says so.
      std::vector<Command> record_reads;
      std::vector<std::pair<std::size_t, DocumentId>> record_of;  // suspect, id
      for (std::size_t i = begin; i < end; ++i) {
        if (suspects[i].kind != Suspect::Kind::kUnheld) continue;
        for (const Reply& member : replies[i - begin].elements) {
          Fingerprint fp = 0;
          DocumentId id = 0;
          if (layout_.DecodeMember(0, layout_.BucketOf(0, suspects[i].fingerprint), member.str, &fp,
                                   &id)) {
            const std::string shard = layout_.ShardKeyOf(id);
            record_reads.push_back({shard, {"HGET", shard, Layout::IdField(id)}});
            record_of.emplace_back(i, id);
          }
        }
      }
      std::unordered_set<std::size_t> still_held;
      Result<std::vector<Reply>> got = client.Run(record_reads);
      if (!got.ok()) s = got.status();
      for (std::size_t j = 0; s.ok() && j < record_of.size(); ++j) {
        Document doc;
        const Reply& r = (*got)[j];
        if (r.type == Reply::Type::kString &&
            Layout::DecodeRecord(record_of[j].second, r.str, &doc) &&
            doc.fingerprint == suspects[record_of[j].first].fingerprint) {
          still_held.insert(record_of[j].first);
        }
      }
      std::vector<Command> fixes;
      for (std::size_t i = begin; s.ok() && i < end; ++i) {
        const Suspect& x = suspects[i];
        const std::string key = layout_.BucketKeyOf(x.table, x.fingerprint);
        const std::string member = layout_.Member(x.table, x.fingerprint, x.id);
        Document doc;
        const Reply& r = replies[i - begin];
        const bool recorded = x.kind != Suspect::Kind::kUnheld && r.type == Reply::Type::kString &&
                              Layout::DecodeRecord(x.id, r.str, &doc) &&
                              doc.fingerprint == x.fingerprint;
        if (x.kind == Suspect::Kind::kUnheld && still_held.count(i) == 0) {
          ++findings.unheld;
          fixes.push_back({key, {"ZREM", key, member}});
        } else if (x.kind == Suspect::Kind::kNoRecord && !recorded) {
          note(findings.no_record, "table 0 holds fingerprint " + std::to_string(x.fingerprint) +
                                       " for document " + std::to_string(x.id) +
                                       ", whose record does not hold it");
          fixes.push_back({key, {"ZREM", key, member}});
        } else if (x.kind == Suspect::Kind::kMissing && recorded) {
          note(findings.missing, "document " + std::to_string(x.id) + " (fingerprint " +
                                     std::to_string(x.fingerprint) + ") has no entry in table " +
                                     std::to_string(x.table));
          fixes.push_back({key, {"ZADD", key, "0", member}});
        }
      }
      // The fixes only while the locks surely hold, confirmed before they are given back.
      if (fix && s.ok()) s = locks.Check();
      if (fix && s.ok()) s = client.RunAll(fixes, "repairing table entries");
      (void)locks.Release(client);
    }
    if (s.ok() && fix) s = client.RunAll(malformed, "removing malformed members");
    if (s.ok() && scan.progress) scan.progress(t + 1, tables);
  }
  if (!s.ok()) return s;
  if (fix) return Settle(client);
  const std::uint64_t damaged = findings.no_record + findings.missing + findings.malformed;
  if (damaged == 0) return Status::OK();
  return Status::Corruption(
      url_ + ": " + std::to_string(findings.missing) + " entries that stored documents lack, " +
      std::to_string(findings.no_record) + " table 0 entries of writes that did not finish, " +
      std::to_string(findings.malformed) + " malformed members; the first: " + findings.first +
      ". fpstore-admin repair (Store::Repair) mends them");
}

Status RedisStore::Verify(const ScanOptions& scan) const { return Tidy(false, scan); }

Status RedisStore::Repair(const ScanOptions& scan) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  return Tidy(true, scan);
}

Status RedisStore::Compact(const ScanOptions& scan) {
  if (Status s = CheckWritable(); !s.ok()) return s;
  return Tidy(true, scan);
}

}  // namespace fpstore::internal::redis
