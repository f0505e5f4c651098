// The embedded store's reads (docs/design.md, "The life of a query"): Get, Query and QueryBatch,
// over the components that hold what a read sees: the tables with their member filters
// (tables.h), the staged documents (staging.h) and the documents' records (format/documents.h).
// Writer (write/writer.h) adds the writes, StoreImpl (open/store_impl.h) opening, closing, scans
// and checks.
//
// A query probes, in each table, the group holding the query's prefix if the member filters allow,
// skipping the tables where the filters show that a document already found is alone with the
// prefix; hits in tables without ids resolve through table 0, staged documents within k are added,
// and each is confirmed by its signature. All at one snapshot, without a store lock.
//
// Thread safety: thread-safe.

#ifndef FPSTORE_LIB_READ_READER_H_
#define FPSTORE_LIB_READ_READER_H_

#include <rocksdb/db.h>
#include <rocksdb/env.h>

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "format/recorded_options.h"
#include "format/records.h"
#include "format/time_index.h"
#include "fpstore/store.h"
#include "plan/table_entry.h"
#include "platform/freed_memory.h"
#include "read/staging.h"
#include "read/tables.h"
#include "util/mutex.h"

namespace fpstore::internal {

// Threads that wait on the device side by side for one query (docs/design.md, "Waiting on the
// device side by side"): once a table's probes wait on the device, which serves several reads at
// once far better than one at a time, a query hands its other tables to this pool.
// Threads a query may wait on the device with.
inline constexpr int kReadThreads = 8;

class ReadPool {
 public:
  // Threads start on the first Run: a store that never waits on the device never has them.
  explicit ReadPool(int threads) : thread_count_(threads) {}
  ReadPool(const ReadPool&) = delete;
  ReadPool& operator=(const ReadPool&) = delete;
  ~ReadPool();

  // Calls task(i) once for each i in [0, count), on the pool's threads and the caller's, and
  // returns when every call has returned. Several callers may run at once; each helps with its own
  // tasks until none is left to start. `task` must not throw.
  void Run(std::size_t count, const std::function<void(std::size_t)>& task) EXCLUDES(mu_);

 private:
  struct Job {
    const std::function<void(std::size_t)>* task;
    std::size_t count;
    std::size_t next = 0;  // the first task not started
    std::size_t done = 0;
  };

  // Takes job's next task; the job leaves the queue with its last one.
  // REQUIRES: job.next < job.count.
  std::size_t TakeTask(Job& job) REQUIRES(mu_);
  void WorkerLoop() EXCLUDES(mu_);

  const int thread_count_;
  Mutex mu_;                               // also guards the Jobs' next and done
  CondVar work_cv_;                        // a job waits, or the pool stops
  CondVar done_cv_;                        // a job's last task returned
  std::deque<Job*> jobs_ GUARDED_BY(mu_);  // jobs with tasks not started
  bool stopping_ GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ GUARDED_BY(mu_);
};

// Whether one table's probes for `queries` fingerprints, which took `took`, waited on the device:
// slower than several probes from memory, with the thread having read blocks from the device since
// it last asked (getrusage, asked only after a slow probe). Time alone does not tell: a preempted
// warm probe can be as slow. Where Linux keeps no such count, time alone decides; a file system
// bypassing the block layer (NFS, FUSE) counts nothing, so its queries stay on their threads.
bool ProbesWaitedOnDevice(std::chrono::nanoseconds took, std::size_t queries);
// Tests: 0 sends each query's tables after its first hit to the pool; < 0 restores the default.
void SetSlowProbeTimeForTesting(std::chrono::nanoseconds time);

// An open store's column families, in docs/format.md's order; destroyed by Close.
struct Families {
  rocksdb::ColumnFamilyHandle* meta;
  rocksdb::ColumnFamilyHandle* documents;
  rocksdb::ColumnFamilyHandle* staging;
  std::vector<rocksdb::ColumnFamilyHandle*> tables;
  rocksdb::ColumnFamilyHandle* times;
  // All of them, as RocksDB's open listed them.
  std::vector<rocksdb::ColumnFamilyHandle*> all;
};

// What an open store is made of: what it records, and RocksDB opened on it (open/open.cc).
struct OpenedStore {
  std::string path;
  StoreOptions options;
  PermutationPlan plan;
  Fingerprinter fingerprinter;
  double min_similarity;           // recorded at creation
  std::int64_t retention_seconds;  // recorded at creation; 0: none
  int group_bits;
  // The Env RocksDB was opened with, if the store's own (a writable store's:
  // faults/ingest_guard.h).
  std::unique_ptr<rocksdb::Env> env;
  std::unique_ptr<rocksdb::DB> db;
  Families families;
  std::shared_ptr<TableFilters> filters;  // attached to the tables' families as they opened
};

class Reader : public Store {
 public:
  const PermutationPlan& plan() const override { return plan_; }
  const Fingerprinter& fingerprinter() const override { return fingerprinter_; }
  using Store::Query;
  using Store::QueryBatch;
  Result<Document> Get(DocumentId id) const override;
  Result<std::vector<Match>> Query(const Sketch& query, const QueryOptions& options) const override;
  Result<std::vector<std::vector<Match>>> QueryBatch(std::span<const Sketch> queries,
                                                     const QueryOptions& options) const override;

 protected:
  explicit Reader(OpenedStore opened);

  Status CheckOpen() const;
  // The time before which a document is past the store's retention, by its clock now: 0 (none)
  // without a retention. InvalidArgument if the clock is out of range.
  Result<DocumentTime> ExpiredBefore() const;
  // What a call's options mean for this store: its defaults filled in, each checked.
  Result<Matching> MatchingFor(std::optional<int> distance,
                               std::optional<double> min_similarity) const;
  // Every document within k of each of `queries` at `at` whose estimated similarity to it is at
  // least `min_similarity` (or which either lacks a signature for), each once, nearest first (ties
  // by id).
  Result<std::vector<std::vector<Match>>> Run(std::span<const Sketch> queries, int k,
                                              double min_similarity,
                                              const Staging::ReadPoint& at) const;

  // First, so destroyed last (platform/freed_memory.h).
  FreedMemoryReturn freed_memory_;
  const std::string path_;
  const StoreOptions options_;
  const PermutationPlan plan_;
  const Fingerprinter fingerprinter_;
  const double min_similarity_;
  const std::int64_t retention_seconds_;
  // Before db_, which uses it until it is closed.
  const std::unique_ptr<rocksdb::Env> env_;
  std::unique_ptr<rocksdb::DB> db_;
  Families families_;
  bool closed_ = false;  // set by Close
  Documents documents_;
  TimeIndex times_;
  Tables tables_;
  Staging staging_;

 private:
  using Hit = Tables::Hit;
  using Hits = std::vector<std::vector<Hit>>;  // per query

  // Adds to hits[i] the hits of fingerprints[i] in table t; known[i]: its hits in earlier tables
  // (may be hits[i] itself).
  Status ProbeTable(std::size_t t, const TableFilters::View& filters,
                    const rocksdb::Snapshot* snapshot, std::span<const Word> fingerprints, int k,
                    const Hits& known, Hits& hits) const;
  // ProbeTable for the tables from `first` on in parallel on the read pool, while the caller warms
  // the records of the hits so far. REQUIRES: first > 0.
  Status ProbeTablesInParallel(std::size_t first, const TableFilters::View& filters,
                               const rocksdb::Snapshot* snapshot,
                               std::span<const Word> fingerprints, int k, Hits& hits) const;
  // Replaces each hit by fingerprint with one per document table 0 holds with it at `snapshot`,
  // read through `table0` (made if null).
  Status ResolveIds(std::vector<Hit>& hits, const rocksdb::Snapshot* snapshot,
                    std::unique_ptr<rocksdb::Iterator>& table0) const;
  // Reads the hits' records into the block cache; ToMatches reports failures.
  void WarmRecordsOf(const Hits& hits, const rocksdb::Snapshot* snapshot) const;
  // The matches of `hits`, their records read at `snapshot`, nearest first, each document once;
  // hits of versions whose removal is staged dropped, and those whose similarity to `signature` is
  // below `min_similarity`.
  // Documents whose time is before `expired_before` are past the retention: left out too.
  Result<std::vector<Match>> ToMatches(std::vector<Hit> hits, const rocksdb::Snapshot* snapshot,
                                       const Signature& signature, double min_similarity,
                                       DocumentTime expired_before) const;

  mutable ReadPool read_pool_{kReadThreads};
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_READ_READER_H_
