// Queries of a store in Redis (docs/design.md, "The life of a query"): every table's bucket range
// in one pipelined round, table 0's entries of fingerprints found elsewhere in a second, and the
// records, which decide what counts, with them or in a third.

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "redis/redis_store.h"

namespace fpstore::internal::redis {

Result<std::vector<Match>> RedisStore::Query(const Sketch& query,
                                             const QueryOptions& options) const {
  Result<std::vector<std::vector<Match>>> all = QueryBatch(std::span(&query, 1), options);
  if (!all.ok()) return all.status();
  return std::move((*all)[0]);
}

Result<std::vector<std::vector<Match>>> RedisStore::QueryBatch(std::span<const Sketch> queries,
                                                               const QueryOptions& options) const {
  Result<Matching> matching = MatchingFor(options.distance, options.min_similarity);
  if (!matching.ok()) return matching.status();
  Result<ClientPool::Lease> client = Client();
  if (!client.ok()) return client.status();
  return Run(**client, queries, *matching);
}

Result<std::vector<std::vector<Match>>> RedisStore::Run(ClusterClient& client,
                                                        std::span<const Sketch> queries,
                                                        const Matching& matching) const {
  const PermutationPlan& p = plan();
  const std::size_t tables = p.table_count();
  // Round 1: each query's range in each table.
  std::vector<Command> probes;
  probes.reserve(queries.size() * tables);
  for (const Sketch& q : queries) {
    for (std::size_t t = 0; t < tables; ++t) probes.push_back(layout_.Probe(t, q.fingerprint));
  }
  Result<std::vector<Reply>> ranges = client.Run(probes);
  if (!ranges.ok()) return ranges.status();
  // Candidates: (query, fingerprint, id); a fingerprint found only in a table without ids waits
  // for its ids. Each counts in the first table it shares with the query.
  std::vector<std::vector<std::pair<Fingerprint, DocumentId>>> candidates(queries.size());
  std::set<Fingerprint> unresolved_set;
  std::vector<std::vector<Fingerprint>> unresolved(queries.size());
  for (std::size_t qi = 0; qi < queries.size(); ++qi) {
    const Fingerprint q = queries[qi].fingerprint;
    for (std::size_t t = 0; t < tables; ++t) {
      const Reply& r = (*ranges)[qi * tables + t];
      if (r.type == Reply::Type::kError) return Status::IOError("Redis, a table's range: " + r.str);
      const std::uint64_t bucket = layout_.BucketOf(t, q);
      for (const Reply& member : r.elements) {
        Fingerprint fp = 0;
        DocumentId id = 0;
        if (!layout_.DecodeMember(t, bucket, member.str, &fp, &id)) {
          return Status::Corruption(url_ + ": " + probes[qi * tables + t].key + " holds a member of " +
                                    std::to_string(member.str.size()) + " bytes");
        }
        if (!WithinDistance(fp, q, matching.k) || p.FirstSharedTable(q, fp) != static_cast<int>(t)) {
          continue;
        }
        if (t == 0) {
          candidates[qi].emplace_back(fp, id);
        } else {
          unresolved[qi].push_back(fp);
          unresolved_set.insert(fp);
        }
      }
    }
  }
  // Round 2: table 0's entries of the fingerprints found elsewhere, with the records of what is
  // known so far; round 3, the records of the rest.
  std::vector<Command> reads;
  const std::vector<Fingerprint> lookups(unresolved_set.begin(), unresolved_set.end());
  for (const Fingerprint fp : lookups) reads.push_back(layout_.IdsOf(fp));
  std::unordered_map<DocumentId, std::optional<Document>> records;
  std::vector<DocumentId> wanted;
  auto want = [&](DocumentId id) {
    if (records.try_emplace(id).second) wanted.push_back(id);
  };
  for (const auto& list : candidates) {
    for (const auto& [fp, id] : list) want(id);
  }
  auto read_records = [&](std::size_t first_reply) -> Status {
    Result<std::vector<Reply>> got = client.Run(reads);
    if (!got.ok()) return got.status();
    for (std::size_t i = 0; i < lookups.size() && first_reply == lookups.size(); ++i) {
      const Reply& r = (*got)[i];
      if (r.type == Reply::Type::kError) return Status::IOError("Redis, table 0's entries: " + r.str);
      const std::uint64_t bucket = layout_.BucketOf(0, lookups[i]);
      for (const Reply& member : r.elements) {
        Fingerprint fp = 0;
        DocumentId id = 0;
        if (layout_.DecodeMember(0, bucket, member.str, &fp, &id) && fp == lookups[i]) {
          for (std::size_t qi = 0; qi < queries.size(); ++qi) {
            if (std::find(unresolved[qi].begin(), unresolved[qi].end(), fp) != unresolved[qi].end()) {
              candidates[qi].emplace_back(fp, id);
            }
          }
        }
      }
    }
    for (std::size_t i = first_reply; i < got->size(); ++i) {
      const Reply& r = (*got)[i];
      const DocumentId id = wanted[i - first_reply];
      if (r.type == Reply::Type::kError) return Status::IOError("Redis, a record: " + r.str);
      if (r.type != Reply::Type::kString) continue;
      Document doc;
      if (!Layout::DecodeRecord(id, r.str, &doc)) {
        return Status::Corruption(url_ + ": the record of document " + std::to_string(id) +
                                  " in " + layout_.ShardKeyOf(id) + " is malformed");
      }
      records[id] = std::move(doc);
    }
    return Status::OK();
  };
  auto add_record_reads = [&](std::size_t from) {
    for (std::size_t i = from; i < wanted.size(); ++i) {
      const std::string shard = layout_.ShardKeyOf(wanted[i]);
      reads.push_back({shard, {"HGET", shard, Layout::IdField(wanted[i])}});
    }
  };
  add_record_reads(0);
  if (!reads.empty()) {
    if (Status s = read_records(lookups.size()); !s.ok()) return s;
  }
  const std::size_t known = wanted.size();
  for (const auto& list : candidates) {
    for (const auto& [fp, id] : list) want(id);
  }
  if (wanted.size() > known) {
    reads.clear();
    add_record_reads(known);
    // Only records this time: lookups are done.
    std::vector<DocumentId> rest(wanted.begin() + static_cast<std::ptrdiff_t>(known), wanted.end());
    wanted = std::move(rest);
    if (Status s = read_records(0); !s.ok()) return s;
  }
  // A candidate counts when its record holds the fingerprint it was found by, and is confirmed.
  std::vector<std::vector<Match>> results(queries.size());
  for (std::size_t qi = 0; qi < queries.size(); ++qi) {
    std::sort(candidates[qi].begin(), candidates[qi].end());
    candidates[qi].erase(std::unique(candidates[qi].begin(), candidates[qi].end()),
                         candidates[qi].end());
    for (const auto& [fp, id] : candidates[qi]) {
      const auto it = records.find(id);
      if (it == records.end() || !it->second || it->second->fingerprint != fp) continue;
      const Document& doc = *it->second;
      const std::optional<double> similarity =
          EstimateSimilarity(queries[qi].signature, doc.signature);
      if (similarity && *similarity < matching.min_similarity) continue;
      results[qi].push_back(
          {id, fp, HammingDistance(fp, queries[qi].fingerprint), doc.metadata, similarity});
    }
    std::sort(results[qi].begin(), results[qi].end(), [](const Match& a, const Match& b) {
      return a.distance != b.distance ? a.distance < b.distance : a.id < b.id;
    });
  }
  return results;
}

}  // namespace fpstore::internal::redis
