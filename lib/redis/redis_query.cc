// Queries of a store in Redis (docs/design.md, "The Redis backend", "Reads"): every table's bucket
// range in one pipelined round, table 0's entries of fingerprints found elsewhere in a second with
// the records known so far, and the rest of the records in a third. The records decide what counts.

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "plan/table_entry.h"
#include "redis/redis_store.h"

namespace fpstore::internal::redis {

namespace {

// What a query's rounds have found: per query, the documents by id (with the fingerprint they were
// found by), and the fingerprints found in tables without ids, with the queries that wait for
// their documents.
struct Candidates {
  std::vector<std::unordered_map<DocumentId, Word>> ids;
  std::unordered_map<Word, std::vector<std::size_t>> waiting;
};

// The records of `ids`, read through `client`, into `records` (absent: none stored). Their
// commands go after `before`, whose replies are handed to `before_replies` (may be empty) first.
Status ReadWith(ClusterClient& client, const Layout& layout, const std::string& url,
                std::vector<Command> before, const std::vector<DocumentId>& ids,
                const std::function<Status(std::span<const Reply>)>& before_replies,
                std::unordered_map<DocumentId, Document>& records) {
  const std::size_t first = before.size();
  for (const DocumentId id : ids) before.push_back(layout.ReadRecord(id));
  if (before.empty()) return Status::OK();
  Result<std::vector<Reply>> got = client.Run(before);
  if (!got.ok()) return got.status();
  if (before_replies) {
    if (Status s = before_replies(std::span(*got).first(first)); !s.ok()) return s;
  }
  for (std::size_t i = first; i < got->size(); ++i) {
    const DocumentId id = ids[i - first];
    Result<std::optional<Document>> doc = layout.RecordOf(id, (*got)[i], url);
    if (!doc.ok()) return doc.status();
    if (*doc) records[id] = **std::move(doc);
  }
  return Status::OK();
}

}  // namespace

Result<std::vector<Match>> RedisStore::Query(const Sketch& query,
                                             const QueryOptions& options) const {
  Result<std::vector<std::vector<Match>>> all = QueryBatch(std::span(&query, 1), options);
  if (!all.ok()) return all.status();
  return std::move((*all)[0]);
}

Result<std::vector<std::vector<Match>>> RedisStore::QueryBatch(std::span<const Sketch> queries,
                                                               const QueryOptions& options) const {
  if (Status s = CheckQueries(queries, plan().bits()); !s.ok()) return s;
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
  Result<DocumentTime> expired_before = ExpiredBefore();
  if (!expired_before.ok()) return expired_before.status();
  // Round 1: each query's range in each table. A document within k counts in the first table it
  // shares with the query; table 0's entries carry its id.
  std::vector<Command> probes;
  probes.reserve(queries.size() * tables);
  for (const Sketch& q : queries) {
    for (std::size_t t = 0; t < tables; ++t) probes.push_back(layout_.Probe(t, q.fingerprint));
  }
  Result<std::vector<Reply>> ranges = client.Run(probes);
  if (!ranges.ok()) return ranges.status();
  Candidates found;
  found.ids.resize(queries.size());
  for (std::size_t qi = 0; qi < queries.size(); ++qi) {
    const Word q = queries[qi].fingerprint;
    for (std::size_t t = 0; t < tables; ++t) {
      const Reply& r = (*ranges)[qi * tables + t];
      if (r.type == Reply::Type::kError) return ReplyError(r, "a table's range");
      const std::uint64_t bucket = layout_.BucketOf(t, q);
      for (const Reply& member : r.elements) {
        Word fp = 0;
        DocumentId id = 0;
        if (!layout_.DecodeMember(t, bucket, member.str, &fp, &id)) {
          return Status::Corruption(url_ + ": " + probes[qi * tables + t].key +
                                    " holds a member of " + std::to_string(member.str.size()) +
                                    " bytes");
        }
        if (!WithinDistance(fp, q, matching.distance) ||
            p.FirstSharedTable(q, fp) != static_cast<int>(t)) {
          continue;
        }
        if (t == 0) {
          found.ids[qi].emplace(id, fp);
        } else {
          found.waiting[fp].push_back(qi);
        }
      }
    }
  }
  // Round 2: table 0's entries of the fingerprints found elsewhere, and the records of the ids
  // known.
  std::vector<Word> lookups;
  std::vector<Command> ids_of;
  for (const auto& [fp, waiting] : found.waiting) {
    lookups.push_back(fp);
    ids_of.push_back(layout_.IdsOf(fp));
  }
  std::unordered_set<DocumentId> wanted;
  for (const auto& ids : found.ids) {
    for (const auto& [id, fp] : ids) wanted.insert(id);
  }
  std::vector<DocumentId> known(wanted.begin(), wanted.end());
  std::unordered_map<DocumentId, Document> records;
  std::vector<DocumentId> learnt;
  Status s = ReadWith(
      client, layout_, url_, std::move(ids_of), known,
      [&](std::span<const Reply> replies) {
        for (std::size_t i = 0; i < replies.size(); ++i) {
          if (replies[i].type == Reply::Type::kError) {
            return ReplyError(replies[i], "table 0's entries");
          }
          const std::uint64_t bucket = layout_.BucketOf(0, lookups[i]);
          for (const Reply& member : replies[i].elements) {
            Word fp = 0;
            DocumentId id = 0;
            if (!layout_.DecodeMember(0, bucket, member.str, &fp, &id) || fp != lookups[i]) {
              continue;
            }
            for (const std::size_t qi : found.waiting[fp]) found.ids[qi].emplace(id, fp);
            if (wanted.insert(id).second) learnt.push_back(id);
          }
        }
        return Status::OK();
      },
      records);
  // Round 3: the records of the documents learnt in round 2.
  if (s.ok()) s = ReadWith(client, layout_, url_, {}, learnt, nullptr, records);
  if (!s.ok()) return s;
  return Confirm(queries, found.ids, records, matching, *expired_before);
}

std::vector<std::vector<Match>> RedisStore::Confirm(
    std::span<const Sketch> queries, const std::vector<std::unordered_map<DocumentId, Word>>& found,
    const std::unordered_map<DocumentId, Document>& records, const Matching& matching,
    DocumentTime expired_before) const {
  // A document counts by its record: within k, confirmed, and not past the retention. An entry of a
  // version being replaced still finds the document, which then counts by the version its record
  // holds.
  std::vector<std::vector<Match>> results(queries.size());
  for (std::size_t qi = 0; qi < queries.size(); ++qi) {
    const Word q = queries[qi].fingerprint;
    for (const auto& [id, by] : found[qi]) {
      const auto it = records.find(id);
      if (it == records.end() || !WithinDistance(it->second.fingerprint, q, matching.distance) ||
          it->second.time < expired_before) {
        continue;
      }
      const Document& doc = it->second;
      const std::optional<double> similarity =
          EstimateSimilarity(queries[qi].signature, doc.signature);
      if (similarity && *similarity < matching.min_similarity) continue;
      results[qi].push_back({id, doc.fingerprint, HammingDistance(doc.fingerprint, q), doc.metadata,
                             similarity, doc.time});
    }
    std::sort(results[qi].begin(), results[qi].end(), [](const Match& a, const Match& b) {
      return a.distance != b.distance ? a.distance < b.distance : a.id < b.id;
    });
  }
  return results;
}

}  // namespace fpstore::internal::redis
