// The permutation tables of a plan (fpstore/permutation.h) in a Redis Cluster: each table cut
// into 2^bucket_bits sorted sets by the leading bucket_bits of the permuted fingerprint, so that
// the sets spread over every slot (each key's hash tag is its own) and stay small enough for
// Redis's compact listpack encoding. A member is the permuted fingerprint's remaining bits and
// the document's id, big-endian, at score 0, so a set's lexicographic order is the table's order
// and a table's prefix range is one ZRANGEBYLEX.
//
// Writes are idempotent (ZADD and ZREM of exact members), so a write repeated after a broken
// connection changes nothing.
//
// Thread safety: as the ClusterClient it is given, one thread at a time.

#ifndef FPSTORE_LIB_REDIS_TABLES_H_
#define FPSTORE_LIB_REDIS_TABLES_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "fpstore/document.h"
#include "fpstore/permutation.h"
#include "fpstore/status.h"
#include "plan/table_entry.h"
#include "redis/cluster_client.h"

namespace fpstore::internal::redis {

class Tables {
 public:
  // The tables of `plan` under the key prefix `name`, cut by the leading `bucket_bits` (1 to the
  // plan's shortest prefix, at most 24). REQUIRES: both in range (Check).
  Tables(ClusterClient& client, std::string name, const PermutationPlan& plan, int bucket_bits);

  // InvalidArgument unless `bucket_bits` can cut every table of `plan`.
  static Status Check(const PermutationPlan& plan, int bucket_bits);

  // Adds or removes each document's entry in every table, in one pipelined call.
  Status Add(std::span<const IdFingerprint> docs);
  Status Remove(std::span<const IdFingerprint> docs);

  // Every stored document within `k` of each query (k <= the plan's distance), each once, in
  // no particular order: one pipelined call for all queries and tables.
  Result<std::vector<std::vector<IdFingerprint>>> Within(std::span<const Fingerprint> queries,
                                                             int k);

  // The set that holds `permuted` in table `t` (for tests and verify).
  std::string BucketKey(std::size_t t, Fingerprint permuted) const;

 private:
  // The member of `id` with permuted fingerprint `permuted`.
  std::string Member(Fingerprint permuted, DocumentId id) const;
  Status Write(bool add, std::span<const IdFingerprint> docs);

  ClusterClient& client_;
  const std::string name_;
  const PermutationPlan& plan_;
  const int bucket_bits_;
};

}  // namespace fpstore::internal::redis

#endif  // FPSTORE_LIB_REDIS_TABLES_H_
