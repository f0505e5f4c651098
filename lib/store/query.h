// The query algorithm (docs/design.md, "The life of a query"): for each
// table of the plan, read the group that holds the query's prefix, if the
// member filters say it may hold the prefix, and keep the members within k
// whose first shared table is this one; skip the tables where a document
// already found is alone with the query's prefix (skip_hints.h); resolve
// fingerprints found in tables without ids to their documents through
// table 0; add the staged documents within k; read the matches' records.
// Everything is read at one snapshot.
//
// Thread safety: thread-safe.

#ifndef FPSTORE_LIB_STORE_QUERY_H_
#define FPSTORE_LIB_STORE_QUERY_H_

#include <rocksdb/db.h>

#include <memory>
#include <span>
#include <vector>

#include "fpstore/document.h"
#include "fpstore/status.h"
#include "store/documents.h"
#include "store/read_pool.h"
#include "store/skip_hints.h"
#include "store/staging.h"
#include "store/tables.h"

namespace fpstore::internal {

class QueryRunner {
 public:
  QueryRunner(const Tables& tables, const Staging& staging, const SkipHints& skip_hints,
              const Documents& documents, ReadPool& read_pool)
      : tables_(tables),
        plan_(tables.plan()),
        staging_(staging),
        skip_hints_(skip_hints),
        documents_(documents),
        read_pool_(read_pool) {}

  // Every stored document within k of each of `fingerprints` at
  // `snapshot`, each once, nearest first (ties by id). REQUIRES: the
  // caller holds the store's reader gate shared, from before it took the
  // snapshot until this returns.
  Result<std::vector<std::vector<Match>>> Run(std::span<const Fingerprint> fingerprints, int k,
                                              const rocksdb::Snapshot* snapshot) const;

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

  // The hits of each of `fingerprints` in table t, but for those whose
  // skip has bit t set, added to hits[i].
  Status ProbeTable(std::size_t t, const TableFilters::View& filters,
                    const rocksdb::Snapshot* snapshot, std::span<const Fingerprint> fingerprints,
                    int k, std::span<const LoneBits> skip, Hits& hits) const;
  // The hits of `query` in table t: a document is a hit in the first table
  // it shares with the query.
  Status ProbeGroup(std::size_t t, const TableMemberFilter& filter,
                    const rocksdb::Snapshot* snapshot, Fingerprint query, int k,
                    std::vector<Hit>& hits) const;
  // ProbeTable for every table from `first` on, side by side on the read
  // pool, while the calling thread reads the records of the documents
  // found so far into the block cache. REQUIRES: first > 0.
  Status ProbeTablesInParallel(std::size_t first, const TableFilters::View& filters,
                               const rocksdb::Snapshot* snapshot,
                               std::span<const Fingerprint> fingerprints, int k,
                               std::span<const LoneBits> skip, Hits& hits) const;
  // Adds to skip[i] the tables after t that the hits of query i from
  // `from[i]` on leave nothing to find in.
  Status MarkSkippable(std::size_t t, const rocksdb::Snapshot* snapshot,
                       std::span<const Fingerprint> fingerprints, const Hits& hits,
                       std::span<const std::size_t> from, std::span<LoneBits> skip) const;
  // Replaces each hit found by fingerprint by one hit per document that
  // table 0 holds with it at `snapshot`, read through `table0` (made if
  // null).
  Status ResolveIds(std::vector<Hit>& hits, const rocksdb::Snapshot* snapshot,
                    std::unique_ptr<rocksdb::Iterator>& table0) const;
  // Reads the records of the documents of `hits` into the block cache:
  // the answer reads them again from there, and reports any failure.
  void WarmRecordsOf(const Hits& hits, const rocksdb::Snapshot* snapshot) const;
  // The matches of `hits`, their records read at `snapshot`, nearest first,
  // each document once; hits of versions whose removal is staged dropped.
  Result<std::vector<Match>> ToMatches(std::vector<Hit> hits,
                                       const rocksdb::Snapshot* snapshot) const;

  const Tables& tables_;
  const PermutationPlan& plan_;
  const Staging& staging_;
  const SkipHints& skip_hints_;
  const Documents& documents_;
  ReadPool& read_pool_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_QUERY_H_
