// Whole-store work on a store in Redis: FindAll and Clusters (the documents read from their
// records, the tables sorted in memory, and the runs confirmed by the pair logic both backends
// share), ForEachDocument and Stats (docs/design.md, "The Redis backend"). Verify, Repair and
// Compact are in redis_tidy.cc.

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <unordered_set>

#include "plan/near_pairs.h"
#include "plan/pair_finder.h"
#include "plan/run_pairs.h"
#include "redis/redis_store.h"

namespace fpstore::internal::redis {

namespace {

// Entries in the runs that wait for their signatures before they are confirmed.
constexpr std::size_t kPendingEntries = 1 << 16;
// Keys read per pipelined round.
constexpr std::size_t kKeysPerRound = 512;
// Keys of a table (or of the documents) whose memory Stats measures; beyond, it estimates.
constexpr std::size_t kMemorySample = 1024;

}  // namespace

Status ForEachReply(ClusterClient& client, const std::vector<std::string>& keys,
                    const std::vector<std::string>& command,
                    const std::function<Status(const std::string&, Reply&)>& each,
                    std::size_t key_at) {
  for (std::size_t begin = 0; begin < keys.size(); begin += kKeysPerRound) {
    const std::size_t end = std::min(keys.size(), begin + kKeysPerRound);
    std::vector<Command> commands;
    for (std::size_t i = begin; i < end; ++i) {
      std::vector<std::string> args = command;
      args.insert(args.begin() + static_cast<std::ptrdiff_t>(key_at), keys[i]);
      commands.push_back({keys[i], std::move(args)});
    }
    Result<std::vector<Reply>> got = client.Run(commands);
    if (!got.ok()) return got.status();
    for (std::size_t i = begin; i < end; ++i) {
      Reply& r = (*got)[i - begin];
      if (r.type == Reply::Type::kError) return ReplyError(r, command[0] + " " + keys[i]);
      if (Status s = each(keys[i], r); !s.ok()) return s;
    }
  }
  return Status::OK();
}

Result<RedisStore::StoreKeys> RedisStore::ListKeys(ClusterClient& client) const {
  StoreKeys keys;
  keys.buckets.resize(plan().table_count());
  Status s = client.ScanKeys(layout_.KeyPattern(), [&](std::vector<std::string>& batch) {
    for (std::string& key : batch) {
      const Layout::KeyKind kind = layout_.Classify(key);
      if (kind.kind == Layout::KeyKind::kShard) {
        keys.shards.push_back(std::move(key));
      } else if (kind.kind == Layout::KeyKind::kTimes) {
        keys.times.push_back(std::move(key));
      } else if (kind.kind == Layout::KeyKind::kBucket) {
        keys.buckets[kind.table].push_back(kind.number);
      }
    }
    return Status::OK();
  });
  if (!s.ok()) return s;
  return keys;
}

Status ForEachRecord(ClusterClient& client, const Layout& layout, const std::string& url,
                     const std::vector<std::string>& shards,
                     const std::function<void(DocumentId, Document&)>& each) {
  return ForEachReply(client, shards, {"HGETALL"}, [&](const std::string& key, Reply& r) {
    for (std::size_t i = 0; i + 1 < r.elements.size(); i += 2) {
      DocumentId id = 0;
      Document doc;
      if (!Layout::DecodeIdField(r.elements[i].str, &id) ||
          !layout.DecodeRecord(id, r.elements[i + 1].str, &doc)) {
        return Status::Corruption(url + ": " + key + " holds a malformed record");
      }
      each(id, doc);
    }
    return Status::OK();
  });
}

Status RedisStore::ReadAll(ClusterClient& client, std::vector<IdFingerprint>& docs,
                           bool* any_signed) const {
  *any_signed = false;
  Result<DocumentTime> expired_before = ExpiredBefore();
  if (!expired_before.ok()) return expired_before.status();
  Result<StoreKeys> keys = ListKeys(client);
  if (!keys.ok()) return keys.status();
  return ForEachRecord(client, layout_, url_, keys->shards, [&](DocumentId id, Document& doc) {
    if (doc.time < *expired_before) return;  // past the retention
    docs.push_back({id, doc.fingerprint});
    *any_signed = *any_signed || !doc.signature.empty();
  });
}

Result<RunSignatures> RedisStore::SignaturesOf(ClusterClient& client,
                                               std::vector<DocumentId> ids) const {
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  RunSignatures signatures;
  for (std::size_t begin = 0; begin < ids.size(); begin += kKeysPerRound * 8) {
    const std::size_t end = std::min(ids.size(), begin + kKeysPerRound * 8);
    std::vector<Command> reads;
    for (std::size_t i = begin; i < end; ++i) reads.push_back(layout_.ReadRecord(ids[i]));
    Result<std::vector<Reply>> got = client.Run(reads);
    if (!got.ok()) return got.status();
    for (std::size_t i = begin; i < end; ++i) {
      const Reply& r = (*got)[i - begin];
      if (r.type == Reply::Type::kError) return ReplyError(r, "reading a record");
      Document doc;
      if (r.type == Reply::Type::kString && layout_.DecodeRecord(ids[i], r.str, &doc)) {
        signatures.Add(ids[i], std::move(doc.signature));
      }
    }
  }
  return signatures;
}

Status RedisStore::ScanLinkedRuns(int k, const RunBatchVisitor& visit) const {
  Result<ClientPool::Lease> client = Client();
  if (!client.ok()) return client.status();
  std::vector<IdFingerprint> docs;
  bool any_signed = false;
  if (Status s = ReadAll(**client, docs, &any_signed); !s.ok()) return s;
  InMemoryTables in_memory;
  std::vector<std::vector<TableEntry>> pending;
  std::size_t pending_entries = 0;
  Status failed;
  auto flush = [&](std::size_t t) {
    if (pending.empty() || !failed.ok()) return;
    std::vector<DocumentId> ids;
    for (const auto& run : pending) {
      for (const TableEntry& e : run) ids.push_back(e.id);
    }
    Result<RunSignatures> signatures =
        any_signed ? SignaturesOf(**client, std::move(ids)) : RunSignatures();
    if (!signatures.ok()) {
      failed = signatures.status();
      pending.clear();  // the scan has failed: what waits is not visited
      return;
    }
    visit(t, pending, *signatures);
    pending.clear();
    pending_entries = 0;
  };
  for (std::size_t t = 0; t < plan().table_count() && failed.ok(); ++t) {
    in_memory.ForEachRun(docs, plan(), t, [&](std::span<const TableEntry> run) {
      bool linked = false;
      ForEachLinkedCopies(
          run, plan(), t, k, [&](std::span<const TableEntry>) { linked = true; },
          [&](std::span<const TableEntry>, std::span<const TableEntry>, int) { linked = true; });
      if (!linked) return;
      pending.emplace_back(run.begin(), run.end());
      pending_entries += run.size();
      if (pending_entries >= kPendingEntries) flush(t);
    });
    flush(t);
  }
  return failed;
}

Status RedisStore::FindAll(int k, const std::function<void(const NearPair&)>& sink,
                           const ScanOptions& scan) const {
  Result<Matching> matching = MatchingFor(k, scan.min_similarity);
  if (!matching.ok()) return matching.status();
  return ScanLinkedRuns(k, [&](std::size_t t, const std::vector<std::vector<TableEntry>>& runs,
                               const RunSignatures& signatures) {
    for (const std::vector<TableEntry>& run : runs) {
      std::vector<NearPair> pairs;
      ForEachPairInRun(std::span<const TableEntry>(run), plan(), t, k,
                       [&](const NearPair& p) { pairs.push_back(p); });
      KeepConfirmed(pairs, signatures, matching->min_similarity);
      for (const NearPair& p : pairs) sink(p);
    }
  });
}

Status RedisStore::Clusters(int k, const std::function<void(std::span<const DocumentId>)>& sink,
                            const ScanOptions& scan) const {
  Result<Matching> matching = MatchingFor(k, scan.min_similarity);
  if (!matching.ok()) return matching.status();
  DisjointSets sets;
  Status s = ScanLinkedRuns(k, [&](std::size_t t, const std::vector<std::vector<TableEntry>>& runs,
                                   const RunSignatures& signatures) {
    std::vector<std::pair<DocumentId, DocumentId>> edges;
    for (const std::vector<TableEntry>& run : runs) {
      AddClusterEdges(
          run, plan(), t, k, matching->min_similarity,
          [&]() -> const RunSignatures* { return &signatures; }, edges);
    }
    for (const auto& [a, b] : edges) sets.Union(a, b);
  });
  if (!s.ok()) return s;
  sets.ForEachSet(sink);
  return Status::OK();
}

Status RedisStore::ForEachDocument(const std::function<void(const Document&)>& sink,
                                   const ScanOptions& scan) const {
  Result<ClientPool::Lease> client = Client();
  if (!client.ok()) return client.status();
  Result<DocumentTime> expired_before = ExpiredBefore();
  if (!expired_before.ok()) return expired_before.status();
  // The ids first, to give the documents in id order without holding them all.
  std::vector<DocumentId> ids;
  Result<StoreKeys> keys = ListKeys(**client);
  if (!keys.ok()) return keys.status();
  Status s = ForEachReply(**client, keys->shards, {"HKEYS"}, [&](const std::string& key, Reply& r) {
    for (const Reply& field : r.elements) {
      DocumentId id = 0;
      if (!Layout::DecodeIdField(field.str, &id)) {
        return Status::Corruption(url_ + ": " + key + " holds a malformed id");
      }
      ids.push_back(id);
    }
    return Status::OK();
  });
  if (!s.ok()) return s;
  std::sort(ids.begin(), ids.end());
  const std::uint64_t total = ids.size();
  for (std::size_t begin = 0; begin < ids.size(); begin += kKeysPerRound) {
    const std::size_t end = std::min(ids.size(), begin + kKeysPerRound);
    std::vector<Command> reads;
    for (std::size_t i = begin; i < end; ++i) reads.push_back(layout_.ReadRecord(ids[i]));
    Result<std::vector<Reply>> got = (*client)->Run(reads);
    if (!got.ok()) return got.status();
    for (std::size_t i = begin; i < end; ++i) {
      Result<std::optional<Document>> doc = layout_.RecordOf(ids[i], (*got)[i - begin], url_);
      if (!doc.ok()) return doc.status();
      // Else removed since the ids were read, or past the retention.
      if (*doc && (*doc)->time >= *expired_before) sink(**doc);
    }
    if (scan.progress) scan.progress(end, total);
  }
  return Status::OK();
}

Status RedisStore::TimesStats(ClusterClient& client, const std::vector<std::string>& times,
                              StoreStats& stats) const {
  Result<DocumentTime> expired_before = ExpiredBefore();
  if (!expired_before.ok()) return expired_before.status();
  auto first_score = [&](const char* at, auto&& keep) {
    return ForEachReply(client, times, {"ZRANGE", at, at, "WITHSCORES"},
                        [&](const std::string& key, Reply& r) {
                          if (r.elements.size() != 2) return Status::OK();  // empty
                          DocumentTime time = 0;
                          if (!ParseNumber(r.elements[1].str, time)) {
                            return Status::Corruption(url_ + ": " + key + " holds a time \"" +
                                                      r.elements[1].str + "\"");
                          }
                          keep(time);
                          return Status::OK();
                        });
  };
  Status s = first_score(
      "0", [&](DocumentTime t) { stats.oldest_time = std::min(stats.oldest_time.value_or(t), t); });
  if (s.ok()) {
    s = first_score("-1", [&](DocumentTime t) {
      stats.newest_time = std::max(stats.newest_time.value_or(t), t);
    });
  }
  if (s.ok() && *expired_before > 0) {
    s = ForEachReply(client, times, {"ZCOUNT", "-inf", "(" + std::to_string(*expired_before)},
                     [&](const std::string&, Reply& r) {
                       stats.expired_documents += static_cast<std::uint64_t>(r.integer);
                       return Status::OK();
                     });
  }
  return s;
}

Result<StoreStats> RedisStore::Stats() const {
  Result<ClientPool::Lease> client = Client();
  if (!client.ok()) return client.status();
  StoreStats stats;
  const LayoutParams& params = layout_.params();
  stats.blocks = params.recorded.blocks;
  stats.distance = params.recorded.distance;
  stats.fingerprint = params.recorded.fingerprint;
  stats.min_similarity = params.recorded.min_similarity;
  stats.retention_seconds = params.recorded.retention_seconds;
  stats.internals.format_version = kLayoutVersion;
  stats.internals.group_bits = params.bucket_bits;
  // The memory of `keys`: measured key by key up to kMemorySample keys, else estimated from an
  // even sample of that many, so that Stats stays quick on a store of millions of keys.
  auto memory = [&](const std::vector<std::string>& keys, std::uint64_t& bytes) {
    std::vector<std::string> sample;
    const std::size_t stride = std::max<std::size_t>(1, keys.size() / kMemorySample);
    for (std::size_t i = 0; i < keys.size(); i += stride) sample.push_back(keys[i]);
    std::uint64_t measured = 0;
    Status s = ForEachReply(
        **client, sample, {"MEMORY", "USAGE", "SAMPLES", "0"},
        [&](const std::string&, Reply& r) {
          measured += static_cast<std::uint64_t>(std::max(0LL, r.integer));
          return Status::OK();
        },
        /*key_at=*/2);
    if (!sample.empty()) bytes += measured * keys.size() / sample.size();
    return s;
  };
  Result<StoreKeys> keys = ListKeys(**client);
  if (!keys.ok()) return keys.status();
  Status s = ForEachReply(**client, keys->shards, {"HLEN"}, [&](const std::string&, Reply& r) {
    stats.documents += static_cast<std::uint64_t>(r.integer);
    return Status::OK();
  });
  if (s.ok()) s = memory(keys->shards, stats.bytes_on_disk);
  if (s.ok()) s = memory(keys->times, stats.bytes_on_disk);
  if (s.ok()) s = TimesStats(**client, keys->times, stats);
  stats.table_bytes.assign(plan().table_count(), 0);
  for (std::size_t t = 0; t < plan().table_count() && s.ok(); ++t) {
    std::vector<std::string> buckets;
    buckets.reserve(keys->buckets[t].size());
    for (const std::uint64_t b : keys->buckets[t]) buckets.push_back(layout_.BucketKey(t, b));
    s = memory(buckets, stats.table_bytes[t]);
  }
  if (!s.ok()) return s;
  for (const std::uint64_t bytes : stats.table_bytes) stats.bytes_on_disk += bytes;
  return stats;
}

}  // namespace fpstore::internal::redis
