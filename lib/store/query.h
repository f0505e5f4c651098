// Queries (docs/design.md, "The life of a query"): in each table, the group holding the query's
// prefix is read if the member filters allow, skipping tables where the filters show that a
// document already found is alone with the prefix; hits in tables without ids resolve through
// table 0, and staged documents within k are added. All at one snapshot.
//
// Thread safety: thread-safe.

#ifndef FPSTORE_LIB_STORE_QUERY_H_
#define FPSTORE_LIB_STORE_QUERY_H_

#include <rocksdb/db.h>

#include <memory>
#include <span>
#include <vector>

#include "fpstore/document.h"
#include "fpstore/signature.h"
#include "fpstore/status.h"
#include "store/documents.h"
#include "store/read_pool.h"
#include "store/staging.h"
#include "store/tables.h"

namespace fpstore::internal {

class QueryRunner {
 public:
  QueryRunner(const Tables& tables, const Staging& staging, const Documents& documents,
              ReadPool& read_pool)
      : tables_(tables),
        plan_(tables.plan()),
        staging_(staging),
        documents_(documents),
        read_pool_(read_pool) {}

  // Every document within k of each of `queries` at `at` whose estimated similarity to it is at
  // least `min_similarity` (or which either lacks a signature for), each once, nearest first (ties
  // by id).
  Result<std::vector<std::vector<Match>>> Run(std::span<const Sketch> queries, int k,
                                              double min_similarity,
                                              const Staging::ReadPoint& at) const;

 private:
  // A candidate found in one table, before its record is read.
  struct Hit {
    DocumentId id;
    Fingerprint fingerprint;
    int distance;
    // Found in a table without ids: its documents are still to be read.
    bool by_fingerprint = false;
  };
  using Hits = std::vector<std::vector<Hit>>;  // per query

  // Adds to hits[i] the hits of fingerprints[i] in table t; known[i]: its hits in earlier tables
  // (may be hits[i] itself).
  Status ProbeTable(std::size_t t, const TableFilters::View& filters,
                    const rocksdb::Snapshot* snapshot, std::span<const Fingerprint> fingerprints,
                    int k, const Hits& known, Hits& hits) const;
  // `query`'s hits in table t: a document is a hit only in the first table it shares with it. The
  // group is not read where `known` holds a fingerprint with the query's prefix that the filters
  // show alone with it: only that fingerprint is there.
  Status ProbeGroup(std::size_t t, const TableMemberFilter& filter,
                    const rocksdb::Snapshot* snapshot, Fingerprint query, int k,
                    const std::vector<Hit>& known, std::vector<Hit>& hits) const;
  // ProbeTable for the tables from `first` on in parallel on the read pool, while the caller warms
  // the records of the hits so far. REQUIRES: first > 0.
  Status ProbeTablesInParallel(std::size_t first, const TableFilters::View& filters,
                               const rocksdb::Snapshot* snapshot,
                               std::span<const Fingerprint> fingerprints, int k, Hits& hits) const;
  // Replaces each hit by fingerprint with one per document table 0 holds with it at `snapshot`,
  // read through `table0` (made if null).
  Status ResolveIds(std::vector<Hit>& hits, const rocksdb::Snapshot* snapshot,
                    std::unique_ptr<rocksdb::Iterator>& table0) const;
  // Reads the hits' records into the block cache; ToMatches reports failures.
  void WarmRecordsOf(const Hits& hits, const rocksdb::Snapshot* snapshot) const;
  // The matches of `hits`, their records read at `snapshot`, nearest first, each document once;
  // hits of versions whose removal is staged dropped, and those whose similarity to `signature` is
  // below `min_similarity`.
  Result<std::vector<Match>> ToMatches(std::vector<Hit> hits, const rocksdb::Snapshot* snapshot,
                                       const Signature& signature, double min_similarity) const;

  const Tables& tables_;
  const PermutationPlan& plan_;
  const Staging& staging_;
  const Documents& documents_;
  ReadPool& read_pool_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_QUERY_H_
