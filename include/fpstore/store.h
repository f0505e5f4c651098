// fpstore::Store: a persistent, embedded store of simhash fingerprints that
// finds every stored document within Hamming distance k of a query.
//
// Each permutation table of the store's plan (permutation.h) is a sorted,
// durable index; a query probes every table's equal-prefix range and
// confirms candidates with a popcount, so answers are exact: nothing within
// k is missed and nothing beyond k is returned. The on-disk layout is in
// docs/format.md, the design in docs/design.md.
//
//   StoreOptions options;
//   Result<std::unique_ptr<Store>> store = Store::Open("/var/lib/crawl/dedup", options);
//   if (!store.ok()) return store.status();
//   Result<CheckResult> seen = (*store)->CheckAndInsert(id, fingerprint, url);
//
// Thread safety: a Store is safe for concurrent use by any number of
// threads, readers and writers alike. Each query sees one consistent
// snapshot of the store. One process at a time may open a store for
// writing; another gets Busy. A store in Redis ("redis://" paths) may be
// written by many processes at once, and its queries see no snapshot
// (docs/design.md, "The Redis backend").

#ifndef FPSTORE_STORE_H_
#define FPSTORE_STORE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "fpstore/bulk_loader.h"
#include "fpstore/document.h"
#include "fpstore/export.h"
#include "fpstore/fingerprinter.h"
#include "fpstore/options.h"
#include "fpstore/permutation.h"
#include "fpstore/simhash.h"
#include "fpstore/status.h"

namespace fpstore {

// What CheckAndInsert does when it finds near-duplicates.
enum class InsertPolicy {
  kAlways,     // insert the document in any case
  kIfNoMatch,  // insert it only when no match is stored
};

// How a query decides what matches (docs/design.md, "Confirming candidates").
struct QueryOptions {
  // Candidates are the stored documents within this Hamming distance. From 0
  // to the plan's distance; default: the plan's distance.
  std::optional<int> distance;
  // A candidate matches when its estimated similarity to the query is at
  // least this, or when the query or the candidate has no signature. From 0
  // to 1; 0 keeps every candidate. Default: the store's min_similarity.
  std::optional<double> min_similarity;
};

struct CheckResult {
  std::vector<Match> matches;  // near-duplicates stored before, nearest first
  bool inserted = false;
  // Inserted with a time already past the store's retention (a backlog
  // replayed late): stored, and never returned.
  bool past_retention = false;
};

// What InsertBatch did, counting each id once.
struct InsertStats {
  std::uint64_t added = 0;     // documents new to the store
  std::uint64_t replaced = 0;  // documents whose id was stored before
  // Documents whose time was already past the store's retention when they
  // arrived (a backlog replayed late): stored, and never returned; the
  // sweep removes them. Not an error.
  std::uint64_t past_retention = 0;
};

// Options for the whole-store scans: FindAll, Clusters, Verify, Compact.
struct ScanOptions {
  // Called now and then from the scanning threads (serialised) with the
  // work done and the work expected, in index entries; may be empty.
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;

  // Threads to scan with; 0 means one per core.
  int threads = 0;

  // FindAll and Clusters: the least estimated similarity of a pair whose
  // documents both have signatures (QueryOptions::min_similarity). Default:
  // the store's min_similarity.
  std::optional<double> min_similarity;

  // Memory FindAll and Clusters may take to read every document once and
  // sort the tables in memory: 32 bytes per document for one thread, 16
  // more per further thread. A store too large for it is read from disk
  // table by table instead, in memory that does not grow with the store,
  // several times slower (docs/performance.md). Default: 1 GiB.
  std::size_t memory_bytes = std::size_t{1} << 30;
};

// What Stats reports.
struct StoreStats {
  // The plan and fingerprint options the store was created with.
  int blocks = 0;
  int distance = 0;
  FingerprintOptions fingerprint;
  double min_similarity = 0;           // the store's default threshold (StoreOptions)
  std::int64_t retention_seconds = 0;  // recorded at creation (StoreOptions); 0: none
  std::uint64_t documents = 0;         // stored, exactly, past the retention or not
  // The oldest and the newest stored document's times; absent when empty.
  std::optional<DocumentTime> oldest_time;
  std::optional<DocumentTime> newest_time;
  // Documents past the retention that the background sweep has not removed
  // yet; no call returns them.
  std::uint64_t expired_documents = 0;
  // Writes not yet merged into the tables (see Flush), exactly: inserted
  // or replaced documents, and removals. Queries find them all the same.
  std::uint64_t staged_documents = 0;
  // Each permutation table's files, and every file of the store. For a
  // store in Redis: bytes of Redis memory its keys take (MEMORY USAGE),
  // estimated from up to 1,024 keys of each table and of the documents.
  std::vector<std::uint64_t> table_bytes;
  std::uint64_t bytes_on_disk = 0;
  // What this handle's open dropped from a damaged write-ahead log
  // (StoreOptions::drop_damaged_log), in words; empty if nothing.
  std::string dropped_at_open;

  // How the store is laid out and tuned inside (docs/design.md,
  // docs/format.md): for diagnosis and benchmarks. A program should not
  // depend on these; they may change between releases.
  struct Internals {
    int format_version = 0;  // the on-disk format
    int group_bits = 0;      // where the tables cut their groups
  };
  Internals internals;
};

// About how many bytes a store with `plan`, created for `documents`
// documents and holding as many, takes on disk after a bulk load: a model
// fitted to fpstore-bench's measurements (docs/performance.md), for
// choosing a plan, plus `signature_bytes` + 2 bytes a document for
// documents loaded with signatures of that size (they do not compress).
FPSTORE_EXPORT double EstimateStoreBytes(const PermutationPlan& plan, std::uint64_t documents,
                                         int signature_bytes = 0);

// About how much memory a store like EstimateStoreBytes's holds while it
// answers queries: what stays pinned from open (the tables' member filters,
// every file's index, the records' key filter), all of it charged to the
// block cache of `block_cache_bytes` (StoreOptions::block_cache_bytes),
// whose data blocks fill the room left: the larger of the two. The member
// filters grow with the documents until every prefix of a table is taken,
// then stop (docs/performance.md, "Memory"). The operating system's page
// cache of the files comes on top: it makes the reads that pass the filters
// cheaper, and queries need none of it.
FPSTORE_EXPORT double EstimateStoreMemory(
    const PermutationPlan& plan, std::uint64_t documents, int signature_bytes = 0,
    std::size_t block_cache_bytes = StoreOptions{}.block_cache_bytes);

// Removes the store at `path` (a directory, or a "redis://" store's every
// key) for good. NotFound if there is none; Busy if a process has an
// embedded store open for writing. A store in Redis must not be open
// anywhere meanwhile: nothing there can tell. `options`: only a store in
// Redis's credentials and TLS files (redis_*) are read.
FPSTORE_EXPORT Status DestroyStore(const std::string& path, const StoreOptions& options);
FPSTORE_EXPORT Status DestroyStore(const std::string& path);

// `path` fit for a message or a log: the password of a Redis URL that holds
// one (redis://USER:PASSWORD@HOST:PORT/NAME) replaced by ***; any other path
// as it is. fpstore's own messages show paths so.
FPSTORE_EXPORT std::string HidePassword(const std::string& path);

class FPSTORE_EXPORT Store {
 public:
  // Opens the store at `path`, creating it if options allow. A path
  // "redis://HOST:PORT/NAME" names a store NAME in the Redis Cluster that
  // the node at HOST:PORT belongs to, which many processes on many hosts
  // may read and write at once (docs/design.md, "The Redis backend"); a
  // cluster that asks for a password takes
  // "redis://[USER[:PASSWORD]@]HOST:PORT/NAME" (percent-encoded) or
  // options.redis_user and redis_password, and InvalidArgument says when it
  // refuses them or the user may not run a command fpstore needs
  // (docs/scale.md). Errors:
  // InvalidArgument when `path` holds something that is not an fpstore store,
  // or when options name a plan or fingerprint options other than the
  // store's; NotSupported for a store this build cannot read (written by
  // another version, docs/format.md); Busy when another
  // process, or another Store object in this process, has it open for
  // writing; IOError from the file system. A failed
  // Open changes nothing on disk.
  static Result<std::unique_ptr<Store>> Open(const std::string& path,
                                             const StoreOptions& options = {});

  Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Closes without error reporting if Close was not called.
  virtual ~Store() = default;

  // Flushes and closes; every later call on this object fails, except
  // Close itself, which returns OK again.
  virtual Status Close() = 0;

  virtual const PermutationPlan& plan() const = 0;

  // Fingerprints text with the store's recorded fingerprint options.
  virtual const Fingerprinter& fingerprinter() const = 0;

  // Inserts or replaces a document; queries find it once this returns.
  // Atomic: after a crash the document (and the version it replaced) is
  // either wholly there or wholly absent. Durable as options.durability
  // says once the call returns OK. InvalidArgument if its signature is
  // neither empty nor of the store's fingerprinter's slot count.
  Status Insert(const NewDocument& doc) { return InsertBatch(std::span(&doc, 1)).status(); }
  // A bare fingerprint: it matches by distance alone.
  Status Insert(DocumentId id, Fingerprint fingerprint, std::string_view metadata = {}) {
    return Insert(NewDocument{id, fingerprint, metadata, {}, {}});
  }

  // Inserts or replaces several documents in one atomic write, and says how
  // many were new, replaced, or past the retention already. A repeated id
  // within `docs`: the last one wins. InvalidArgument naming the first bad
  // document writes none.
  virtual Result<InsertStats> InsertBatch(std::span<const NewDocument> docs) = 0;

  // Removes document `id`: queries no longer find it once this returns.
  // Like an insert it is staged (Flush), and may wait for room to stage.
  // NotFound if it is not stored.
  virtual Status Remove(DocumentId id) = 0;

  // The stored document `id`, or NotFound (also for a document past the
  // store's retention).
  virtual Result<Document> Get(DocumentId id) const = 0;

  // Removes every document whose time is earlier than `before` (seconds
  // since the Unix epoch), as Remove would, and returns how many it removed.
  // It works through the oldest in batches, each atomic: after a crash each
  // such document is wholly there or wholly gone, and another call finishes
  // the work. A store with a retention runs it in the background for the
  // documents past it. NotSupported on a read-only store.
  virtual Result<std::uint64_t> Expire(DocumentTime before) = 0;

  // The stored documents that match `query` as `options` say: every one
  // within the distance whose similarity passes, each once, nearest first
  // (ties by id), with its similarity when both have a signature.
  // InvalidArgument for an option out of range.
  virtual Result<std::vector<Match>> Query(const Sketch& query,
                                           const QueryOptions& options = {}) const = 0;
  // Every stored document at distance <= k from a bare fingerprint, which
  // has no signature: nothing is confirmed. InvalidArgument unless
  // 0 <= k <= distance().
  Result<std::vector<Match>> Query(Fingerprint fingerprint, int k) const {
    return Query(Sketch{fingerprint, {}}, QueryOptions{k, std::nullopt});
  }

  // Query for many at once, answers in the same order. Walks each table
  // once in key order, which beats separate queries for large batches.
  virtual Result<std::vector<std::vector<Match>>> QueryBatch(
      std::span<const Sketch> queries, const QueryOptions& options = {}) const = 0;
  Result<std::vector<std::vector<Match>>> QueryBatch(std::span<const Fingerprint> fingerprints,
                                                     int k) const;

  // The crawler's call: returns the stored documents that match `doc`
  // (Query with `options`) and inserts it as `policy` says. With
  // StoreOptions::refresh_matches, each match whose time is earlier than
  // `doc`'s takes `doc`'s time, in a write of its own before the call
  // returns (an error of that write is the call's, the insert before it
  // standing); should every match have gone meanwhile (swept past the
  // retention), the document is checked again. The check and
  // the insert are atomic with respect to other CheckAndInsert calls: of
  // two near-duplicate documents offered at once, the second sees the
  // first. The document itself (same id) is not its own match. Returns once
  // both the insert and the matches it reports are as durable as
  // options.durability promises.
  virtual Result<CheckResult> CheckAndInsert(const NewDocument& doc,
                                             InsertPolicy policy = InsertPolicy::kAlways,
                                             const QueryOptions& options = {}) = 0;
  // A bare fingerprint: its matches stand on distance alone.
  Result<CheckResult> CheckAndInsert(DocumentId id, Fingerprint fingerprint,
                                     std::string_view metadata = {},
                                     InsertPolicy policy = InsertPolicy::kAlways) {
    return CheckAndInsert(NewDocument{id, fingerprint, metadata, {}, {}}, policy);
  }

  // Calls `sink` once for every pair of stored documents within k (k <=
  // distance()) whose similarity passes scan.min_similarity (or which lack
  // a signature), in no particular order, from one thread at a time. Memory:
  // at most scan.memory_bytes, or when the store needs more than that, per
  // thread the largest group of fingerprints that share a table prefix and
  // the ids of up to a million fingerprints that pair within a table (fewer
  // with a smaller scan.memory_bytes; more ids when they have many copies).
  virtual Status FindAll(int k, const std::function<void(const NearPair&)>& sink,
                         const ScanOptions& scan = {}) const = 0;

  // Calls `sink` once for every cluster of two or more documents: the
  // connected components of the graph whose edges are FindAll(k)'s pairs,
  // confirmed alike. Ids within a cluster ascend.
  virtual Status Clusters(int k, const std::function<void(std::span<const DocumentId>)>& sink,
                          const ScanOptions& scan = {}) const = 0;

  // Calls `sink` for every stored document in ascending id order, all seen
  // at one snapshot, from one thread.
  //
  // The sinks of FindAll, Clusters and ForEachDocument may insert and remove
  // documents and wait for bulk loads that other threads finish meanwhile;
  // the scan does not see what they write. Verify's progress callback may
  // insert and remove too. None of them may close the store.
  virtual Status ForEachDocument(const std::function<void(const Document&)>& sink,
                                 const ScanOptions& scan = {}) const = 0;

  // Starts a bulk load (see bulk_loader.h). Fails with NotSupported on a
  // read-only store, IOError if the temporary directory cannot be made.
  virtual Result<std::unique_ptr<BulkLoader>> NewBulkLoader(
      const BulkLoadOptions& options = {}) = 0;

  // Writes are staged: inserts, replacements and removals are recorded
  // durably and seen by queries at once, and moved into the tables in
  // sorted batches by a background merge once options.staged_documents of
  // them have gathered. Flush merges what is staged so far now and returns
  // when it is in the tables. NotSupported on a read-only store.
  virtual Status Flush() = 0;

  // Merges what is staged (Flush), rewrites the hints that let queries of
  // documents inserted since the last bulk load skip tables (a scan like
  // FindAll's; docs/design.md), then compacts every part of the store
  // fully, scan.threads at a time (0: as many as
  // options.background_threads, at least 2), progress counted in parts.
  // Merges go on meanwhile; bulk loads wait.
  virtual Status Compact(const ScanOptions& scan = {}) = 0;

  virtual Result<StoreStats> Stats() const = 0;

  // Checks RocksDB's block checksums and that the tables agree with the
  // documents: table 0 holds every stored document once, every other table
  // each stored fingerprint once, all decoding to the stored fingerprints.
  // Corruption describing the first problems found, if any.
  virtual Status Verify(const ScanOptions& scan = {}) const = 0;

  // Mends what writes cut short left behind, and checks the rest as Verify
  // does. A store in Redis (Open's "redis://" paths) has writes that span
  // many nodes: a crash, a failover or a lost connection can leave table
  // entries of a write that never took effect, which queries pass by, and a
  // failover can lose entries of acknowledged documents, which queries then
  // miss; Repair removes the first and adds the second (docs/design.md, "The
  // Redis backend"). An embedded store's writes are atomic, so it has
  // nothing to mend: Repair is Verify.
  virtual Status Repair(const ScanOptions& scan = {}) { return Verify(scan); }

  // Writes a consistent copy of the store to `dir`, which must not exist.
  // Uses hard links where it can, so it is cheap on the same file system.
  virtual Status Checkpoint(const std::string& dir) const = 0;
};

}  // namespace fpstore

#endif  // FPSTORE_STORE_H_
