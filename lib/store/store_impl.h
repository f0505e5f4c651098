// The RocksDB-backed Store (see include/fpstore/store.h, docs/format.md).

#ifndef FPSTORE_LIB_STORE_STORE_IMPL_H_
#define FPSTORE_LIB_STORE_STORE_IMPL_H_

#include <rocksdb/db.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <span>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "format/families.h"
#include "format/records.h"
#include "format/table_entries.h"
#include "fpstore/store.h"
#include "plan/pair_finder.h"
#include "platform/freed_memory.h"
#include "store/crowded_tables.h"
#include "store/group_commit.h"
#include "store/id_locks.h"
#include "store/read_pool.h"
#include "store/recent_prefixes.h"
#include "store/staging_index.h"
#include "store/table_filters.h"

namespace fpstore::internal {

// Threads a query may wait on the device with (read_pool.h).
inline constexpr int kReadThreads = 8;

inline rocksdb::Slice AsSlice(const DocumentKey& key) { return {key.data(), key.size()}; }

// The error for a staging mark whose value is not a fingerprint.
Status MalformedStagingMark(DocumentId id);

class BulkLoaderImpl;

class StoreImpl final : public Store {
 public:
  // Opens `path`, which must hold a store or be creatable as one.
  static Result<std::unique_ptr<Store>> Open(const std::string& path, const StoreOptions& options);

  ~StoreImpl() override;

  Status Close() override;
  const PermutationPlan& plan() const override { return plan_; }
  const Fingerprinter& fingerprinter() const override { return fingerprinter_; }

  Status Insert(DocumentId id, Fingerprint fingerprint, std::string_view metadata) override;
  Status InsertBatch(std::span<const NewDocument> docs) override;
  Status Remove(DocumentId id) override;
  Result<Document> Get(DocumentId id) const override;
  Result<std::vector<Match>> Query(Fingerprint fingerprint, int k) const override;
  Result<std::vector<std::vector<Match>>> QueryBatch(std::span<const Fingerprint> fingerprints,
                                                     int k) const override;
  // QueryBatch for a caller that holds ingest_mu_.
  Result<std::vector<std::vector<Match>>> QueryBatchLocked(
      std::span<const Fingerprint> fingerprints, int k) const;
  Result<CheckResult> CheckAndInsert(DocumentId id, Fingerprint fingerprint,
                                     std::string_view metadata, InsertPolicy policy) override;
  Status FindAll(int k, const std::function<void(const NearPair&)>& sink,
                 const ScanOptions& scan) const override;
  Status Clusters(int k, const std::function<void(std::span<const DocumentId>)>& sink,
                  const ScanOptions& scan) const override;
  Status ForEachDocument(const std::function<void(const Document&)>& sink,
                         const ScanOptions& scan) const override;
  Result<std::unique_ptr<BulkLoader>> NewBulkLoader(const BulkLoadOptions& options) override;
  Status Flush() override;
  Status Compact(const ScanOptions& scan) override;
  Result<StoreStats> Stats() const override;
  Status Verify(const ScanOptions& scan) const override;
  Status Checkpoint(const std::string& dir) const override;

 private:
  friend class BulkLoaderImpl;

  // A candidate found in one table, before its metadata is fetched.
  struct Hit {
    DocumentId id;
    Fingerprint fingerprint;
    int distance;
    // Found in a table without ids: `id` is not known yet (ResolveIds).
    bool by_fingerprint = false;
    // Its lone bits (key_codec.h), once read from the crowded family.
    LoneBits lone = 0;
  };

  StoreImpl(std::string path, StoreOptions options, int group_bits, PermutationPlan plan,
            Fingerprinter fingerprinter, std::unique_ptr<rocksdb::DB> db,
            std::vector<rocksdb::ColumnFamilyHandle*> handles,
            std::shared_ptr<TableFilters> member_filters);

  Status CheckOpen() const;
  // The documents as RocksDB estimates them from the documents family's
  // keys: the tables' keys are groups, and each holds a document's
  // fingerprint at most once.
  std::uint64_t EstimatedEntries() const;
  // Flushes every family's memtable, so that a clean close leaves nothing
  // in the log: the next open for writing flushes what the log holds and
  // deletes it, and a read-only open beside it that had read the manifest
  // before would miss those writes (the document count, in the tools'
  // tests).
  Status FlushEveryFamily();
  // The error of work that Close cut short.
  Status Closing() const;
  Status CheckWritable() const;
  Status CheckDistance(int k) const;

  // Where a document's current version is: its fingerprint, and whether it
  // waits in the staging family or is in the tables.
  struct StoredVersion {
    Fingerprint fingerprint;
    bool staged;
  };

  // What an id has now: its stored version, if any, and the fingerprint of
  // a version that is still in the tables until the next merge takes it
  // out.
  struct IdVersions {
    std::optional<StoredVersion> stored;
    std::optional<Fingerprint> leaving;
    // The fingerprint its table entries have, if it has any.
    std::optional<Fingerprint> in_tables() const {
      return stored && !stored->staged ? std::optional(stored->fingerprint) : leaving;
    }
  };

  // A document to write and what its id has now.
  struct PendingInsert {
    const NewDocument* doc;
    IdVersions old;
  };

  // Entries a writer may add to the staging index, held from before its
  // locks until they are in: writers together stay within the index's room,
  // so it never grows (rehashing under its lock) for want of it.
  class StagingRoom {
   public:
    StagingRoom() = default;
    StagingRoom(StoreImpl* store, std::size_t entries) : store_(store), entries_(entries) {}
    StagingRoom(StagingRoom&& other) noexcept
        : store_(std::exchange(other.store_, nullptr)), entries_(other.entries_) {}
    StagingRoom& operator=(StagingRoom&& other) noexcept;
    ~StagingRoom() { Release(); }

   private:
    void Release();
    StoreImpl* store_ = nullptr;
    std::size_t entries_ = 0;
  };

  // The locks a write holds: its staging room, the load and ingest locks
  // shared and its ids. Released in reverse: the room last, once the
  // entries are in.
  struct WriteLocks {
    StagingRoom room;
    std::shared_lock<std::shared_mutex> load;
    std::shared_lock<std::shared_mutex> ingest;
    IdLocks::Held ids;
  };

  // Takes the locks for a write to `ids` (sorted, unique) that stages up to
  // `staged` entries, once the staging index has room for them and no id is
  // in a running merge (its staged version is being copied into the tables,
  // and must not change until it is there).
  Result<WriteLocks> LockForWrite(std::span<const DocumentId> ids, std::size_t staged);

  // Adds to `batch` what it takes to make each document current: its record
  // and its staging mark, which names a replaced version still in the
  // tables. Adds the staged versions to the staging index first. Returns
  // how many documents are new.
  int StageInserts(rocksdb::WriteBatch& batch, std::span<const PendingInsert> inserts);

  // Reads a staging mark of `id`.
  Status DecodeMark(DocumentId id, std::string_view value, StagingMark* mark) const;
  // The staging marks of `ids` (sorted) at `snapshot` (null: the latest
  // state), in one batched read; an id without one gets an empty mark.
  Result<std::vector<StagingMark>> StagingMarks(const rocksdb::Snapshot* snapshot,
                                                std::span<const DocumentId> ids) const;
  // What each of `ids` (sorted) has now, reading the latest state.
  Result<std::vector<IdVersions>> CurrentVersions(std::span<const DocumentId> ids) const;

  // Writes `batch` to the log and memtables without waiting for the disk.
  // Other writers may see it at once; it is in the log before anything they
  // write after seeing it, so a later sync covers it too.
  Status WriteUnsynced(rocksdb::WriteBatch& batch);
  // Waits until everything written so far is as durable as
  // options_.durability promises. Called without locks held, so that
  // concurrent writers share fsyncs.
  Status MakeDurable();

  // The queries' answers, every table, the staged documents and the
  // documents read at `snapshot`.
  Result<std::vector<std::vector<Match>>> QueryTables(std::span<const Fingerprint> fingerprints,
                                                      int k,
                                                      const rocksdb::Snapshot* snapshot) const;
  // How a probe reads a table: its files' member filters, and the
  // query's snapshot.
  struct GroupReads {
    const TableMemberFilter* filter;
    const rocksdb::Snapshot* snapshot;
  };
  // Finds the hits of each of `fingerprints` in table `t`, adding them to
  // hits[i] for fingerprints[i]; skips those whose skip[i] has bit t set
  // (MarkSkippable).
  Status ProbeTable(const GroupReads& groups, std::size_t t,
                    std::span<const Fingerprint> fingerprints, int k,
                    std::span<const LoneBits> skip, std::vector<std::vector<Hit>>& hits) const;
  // ProbeTable for every table from `first` on, side by side on read_pool_,
  // while the calling thread, which takes the pool's first task, reads the
  // records of the documents in `hits` so far into the block cache
  // (WarmRecordsOf). REQUIRES: first > 0.
  Status ProbeTablesInParallel(std::size_t first, const TableFilters::View& filters,
                               std::span<const Fingerprint> fingerprints, int k,
                               std::span<const LoneBits> skip, const rocksdb::Snapshot* snapshot,
                               std::vector<std::vector<Hit>>& hits) const;
  // Reads the documents of `hits` (through table 0 for those found by
  // fingerprint) and their records at `snapshot`, for the blocks alone: the
  // answer is read again from the cache, so a failure here is left for that
  // read to report.
  void WarmRecordsOf(const std::vector<std::vector<Hit>>& hits,
                     const rocksdb::Snapshot* snapshot) const;
  // The filters of the packed tables' files among `args`, read before their
  // ingestion; none if they could not be read.
  std::optional<TableFilters::Ingested> ReadIngestedFilters(
      std::span<const rocksdb::IngestExternalFileArg> args) const;
  // Before the ingestion of `args`, and any lock it takes: flushes the
  // memtables of its families that hold anything. IngestExternalFiles
  // flushes those its files overlap (the staging family's, which a merge's
  // deletions of marks always do), and queries, or writers, waited for
  // those flushes.
  void FlushBeforeIngesting(std::span<const rocksdb::IngestExternalFileArg> args);
  // A merge's ingestion of `args`, whose files' filters are `ingested`,
  // while queries go on and writers wait (docs/design.md, "Consistent
  // queries": at a query's snapshot a merged document is in the tables or
  // staged, never both nor neither).
  Status IngestBesideQueries(const std::vector<rocksdb::IngestExternalFileArg>& args,
                             const TableFilters::Ingested& ingested);
  // After the ingestion of `args`, before queries that waited for it
  // resume: the ingested files' filters added, if it succeeded and they
  // were read, else the tables' filters read anew (member_filters.h).
  void PublishMemberFilters(std::span<const rocksdb::IngestExternalFileArg> args,
                            const std::optional<TableFilters::Ingested>& ingested,
                            const Status& ingestion) const;
  // Finds the hits of `query` in table `t`; each document is found in
  // exactly one table. Reads the query's group if one of its files' member
  // filters passes. A table without ids adds one hit by fingerprint for all
  // the documents that have it.
  Status ScanGroup(const GroupReads& groups, std::size_t t, Fingerprint query, int k,
                   std::vector<Hit>& hits) const;
  // Reads into `value` the group of table t that holds `permuted`, with
  // its operands folded, from only the files whose filters show a change
  // to a member with its prefix; false if there is none.
  Result<bool> ReadGroup(std::size_t t, const GroupReads& groups, Fingerprint permuted,
                         rocksdb::PinnableSlice& value) const;
  // Sets each hit's lone bits from the crowded family at `snapshot`.
  Status ReadLoneBits(std::span<Hit> hits, const rocksdb::Snapshot* snapshot) const;
  // Replaces each hit found by fingerprint by one hit per document that
  // table 0 holds with that fingerprint at `snapshot`, read through
  // `table0` (made if null).
  Status ResolveIds(std::vector<Hit>& hits, const rocksdb::Snapshot* snapshot,
                    std::unique_ptr<rocksdb::Iterator>& table0) const;
  // Of the fingerprints of `leaving` (sorted by ByFingerprint), those that
  // table 0, at its latest state, holds for a document not in `leaving`.
  // Sorted.
  Result<std::vector<Fingerprint>> FingerprintsKept(std::span<const IdFingerprint> leaving) const;
  // Calls found(id) for each document that table 0, read through `table0`,
  // holds with `fingerprint`, in id order, while found returns true.
  Status ForEachIdOf(rocksdb::Iterator& table0, Fingerprint fingerprint,
                     const std::function<bool(DocumentId)>& found) const;
  // Adds to `skip` the tables after `t` that `found`, hits of `query`, leave
  // nothing to find in: tables where `query` shares a hit's prefix and the
  // hit is alone with it (recent_prefixes.h). Hits whose bits were not
  // read yet have none.
  void MarkSkippable(Fingerprint query, std::span<const Hit> found, std::size_t t,
                     LoneBits& skip) const;

  // Checks that each of `stale` (indexes into `hits`, and whether the
  // document has a record), table hits whose document record is gone or
  // has another fingerprint at `snapshot`, is a version whose removal is
  // staged: else the store is corrupt.
  Status CheckLeaving(std::span<const Hit> hits,
                      std::span<const std::pair<std::size_t, bool>> stale,
                      const rocksdb::Snapshot* snapshot) const;
  // Adds to `hits` the staged documents within k of each query, as the
  // staging family has them at `snapshot`. REQUIRES: ingest_mu_ held.
  Status FindStaged(std::span<const Fingerprint> queries, int k, const rocksdb::Snapshot* snapshot,
                    std::vector<std::vector<Hit>>& hits) const;
  // Every staged document at `snapshot`, by id; with `ids`, only those
  // from ids.front() to ids.back() (ids sorted, not empty).
  Result<std::vector<StagedDocument>> StagedDocuments(const rocksdb::Snapshot* snapshot,
                                                      std::span<const DocumentId> ids = {}) const;
  // Looks up `ids` (sorted) in `family` at `snapshot` (null: the latest
  // state) in one batched read, so that RocksDB reads each block once for
  // all its keys; calls found(i, value) for each id present.
  Status MultiGetIds(rocksdb::ColumnFamilyHandle* family, const rocksdb::Snapshot* snapshot,
                     std::span<const DocumentId> ids,
                     const std::function<Status(std::size_t, std::string_view)>& found) const;

  // Rebuilds the staging index from the staging family (at open).
  Status LoadStagingIndex();
  // Rebuilds recent_ from the recent family (at open).
  Status LoadRecentPrefixes();
  // Adds `fingerprints`, about to enter the tables, to recent_ (and to
  // unsealed_ while a rewrite of the lone bits runs). REQUIRES: merge_mu_.
  void AddRecentPrefixes(std::span<const Fingerprint> fingerprints);

  // Writes every fingerprint's lone bits anew, from the tables at one
  // snapshot, while merges go on (docs/design.md, "Hits that skip tables"),
  // then forgets the recent fingerprints that were merged before the
  // snapshot. Bulk loads wait meanwhile. `in_background`: its scans run at
  // the lowest CPU priority.
  Status RefreshLoneBits(const ScanOptions& scan, bool in_background);
  // RefreshLoneBits' work between the seal and its end: the crowded tables
  // at `snapshot`, then the crowded family replaced by them in one
  // ingested file.
  Status RewriteLoneBits(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                         bool in_background);
  // The crowded family's entries replaced by `crowded`'s, in one ingested
  // file.
  Status ReplaceCrowdedFamily(const CrowdedTables& crowded);
  // Ends a rewrite begun by sealing recent_: if `rewritten`, the recent
  // family keeps only the fingerprints merged since, and recent_ drops the
  // sealed ones.
  Status EndLoneBitsRefresh(bool rewritten);
  // The background refresher: RefreshLoneBits whenever RefreshDue.
  void RefreshWhenDue();
  // Enough fingerprints were merged since the bits were written to rewrite
  // them (LoneBitsRefreshThreshold), and one merge at least since the open.
  bool RefreshDue() const;
  // merge_mu_, taken ahead of the background merger, which under a steady
  // stream of inserts takes it back to back (a waiter could starve).
  std::unique_lock<std::mutex> LockMergesAhead();
  // Entries a staging index of a store that takes writes has room for:
  // twice the merge threshold, so that inserts go on while a merge runs.
  std::size_t StagingRoomEntries() const { return 2 * options_.staged_documents; }
  // Waits until the staging index has room for `entries` more beside those
  // other writers hold, and holds it. A batch that cannot fit goes alone
  // once fewer than staged_documents are staged, and may grow the index.
  Result<StagingRoom> ReserveStagingRoom(std::size_t entries);
  // Moves the documents staged so far into the tables: freezes the staging
  // index, writes their table entries as sorted files and ingests them,
  // with the deletion of their staging marks, in one atomic step.
  // REQUIRES: merge_mu_ held.
  Status MergeStaged();
  // The background merger: merges whenever the staging index is full.
  void MergeWhenFull();
  // A bulk loader with a fresh temporary directory.
  Result<std::unique_ptr<BulkLoaderImpl>> MakeBulkLoader(const BulkLoadOptions& options);

  // Fetches metadata for `hits` at `snapshot` and orders them nearest first,
  // each document once, without versions whose removal is staged.
  Result<std::vector<Match>> ToMatches(std::vector<Hit> hits,
                                       const rocksdb::Snapshot* snapshot) const;

  // Sees a run of two or more entries that share table `table`'s prefix,
  // sorted as the table holds them; called from several threads at once,
  // each table's runs from one.
  using RunVisitor = std::function<void(std::size_t table, std::span<const TableEntry> run)>;
  // Which runs of a table without ids a scan from the tables visits: those
  // within the plan's distance of another, cut down to them, with their
  // ids (FindAll, Clusters); or every run, with id 0 for what the table
  // holds. The scan in memory always visits every run, with ids.
  enum class Runs { kLinkedWithIds, kEvery };

  // A snapshot of every table, the staging and the documents as one
  // state, taken outside a bulk load's ingestion (a merge's gives its files
  // one sequence number past every live snapshot, so a snapshot sees all
  // of them or none). Reads at it stay put while merges and bulk loads go
  // on, so scans need hold no lock after it: their sinks and progress
  // callbacks may write. The caller releases it.
  // With `filters`, also the member filters of that moment, which cover
  // every member at the snapshot.
  const rocksdb::Snapshot* WholeSnapshot(TableFilters::View* filters = nullptr) const;
  // Every table's runs, tables spread over threads, all at one snapshot:
  // sorted in memory when the store fits scan.memory_bytes, else streamed.
  Status ScanRuns(const ScanOptions& scan, const RunVisitor& visit_run,
                  Runs runs = Runs::kLinkedWithIds) const;
  // Which versions a scan sees: the documents' current ones; or those and
  // every version still in the tables, as the tables' lone bits must count
  // them (versions whose removal is staged).
  enum class Versions { kCurrent, kAlsoLeaving };

  // ScanRuns at `snapshot`, which shows every table in one state: taken by
  // WholeSnapshot, or with merge_mu_ held.
  Status ScanRunsAt(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                    const RunVisitor& visit_run, Runs runs,
                    Versions versions = Versions::kCurrent) const;
  // ScanRuns from every document read once and each table sorted in
  // memory; false, having called nothing, when that needs more than
  // scan.memory_bytes.
  Result<bool> ScanRunsInMemory(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                                std::span<const StagedDocument> staged,
                                const RunVisitor& visit_run) const;
  // ScanRuns reading each table from RocksDB in key order, the staged
  // documents merged in.
  Status ScanRunsFromTables(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                            std::span<const StagedDocument> staged, const RunVisitor& visit_run,
                            Runs runs) const;
  // Every document at `snapshot`: table 0's entries, unpermuted, read on
  // `threads` threads, and `staged`; nullopt once more than `limit`.
  // `estimate` is about how many entries table 0 holds.
  Result<std::optional<std::vector<IdFingerprint>>> ReadAllDocuments(
      const rocksdb::Snapshot* snapshot, std::span<const StagedDocument> staged,
      std::size_t estimate, std::size_t limit, int threads) const;

  // Reports through problem() what is wrong with table t, a table without
  // ids: fingerprints no document in table 0 has, and the other way round.
  void FingerprintTableProblems(std::size_t t, const rocksdb::Snapshot* snapshot,
                                const std::function<void(std::string)>& problem) const;

  // Table t's groups: table 0's members keep their documents' ids, the
  // others' do not (docs/format.md).
  GroupLayout group_layout(std::size_t t) const { return TableGroupLayout(plan_, t, group_bits_); }

  rocksdb::ColumnFamilyHandle* documents_family() const { return handles_[1]; }
  rocksdb::ColumnFamilyHandle* staging_family() const { return handles_[2]; }
  rocksdb::ColumnFamilyHandle* recent_family() const { return handles_[3 + plan_.table_count()]; }
  // The lone bits of the crowded fingerprints.
  rocksdb::ColumnFamilyHandle* crowded_family() const { return handles_[4 + plan_.table_count()]; }
  // Every table's family, in table order.
  std::span<rocksdb::ColumnFamilyHandle* const> tables() const {
    return std::span(handles_).subspan(3, plan_.table_count());
  }
  rocksdb::ColumnFamilyHandle* table(std::size_t t) const { return tables()[t]; }
  rocksdb::ColumnFamilyHandle* meta() const { return handles_[0]; }

  // First, so destroyed last (freed_memory.h).
  FreedMemoryReturn freed_memory_return_;

  const std::string path_;
  const StoreOptions options_;
  const int group_bits_;  // where the tables cut their groups, as recorded
  const PermutationPlan plan_;
  const Fingerprinter fingerprinter_;
  std::unique_ptr<rocksdb::DB> db_;
  // [0] default (metadata), [1] documents, [2] staging, [3 + t] table t,
  // then recent, then crowded.
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  GroupCommit group_commit_;
  // Reads a query's tables side by side once it waits on the device.
  mutable ReadPool read_pool_{kReadThreads};

  // Writers hold their ids so that read-old-then-write is atomic.
  IdLocks id_locks_;
  // Shared by every read and write, exclusive while a bulk load ingests:
  // RocksDB installs ingested files family by family, and no reader may
  // see some tables with them and some without. A merge takes it only to
  // retire its index, and for its ingestion only if it could not read the
  // files' filters ahead; else it ingests beside queries
  // (IngestBesideQueries). Scans hold it only to take their snapshot, as
  // their sinks may insert (store_scan.cc).
  mutable std::shared_mutex ingest_mu_;
  // Shared by every write, exclusive for a bulk load's whole Finish (the
  // stored versions it matches its documents against must stay current
  // until its files are in) and for a merge's ingestion beside queries.
  // Queries and scans go on meanwhile; they wait for ingest_mu_ only
  // Taken before ingest_mu_. (Shared locks
  // of std::shared_mutex let new readers pass a waiting writer on glibc: a
  // stream of queries can delay an ingestion, and with it, here, writers.)
  mutable std::shared_mutex load_mu_;
  // Serialises CheckAndInsert's look-then-write.
  std::mutex check_mu_;

  // Staged documents in memory (staging_index.h). The pointers change only
  // with ingest_mu_ held exclusively and staging_mu_ held, so a holder of
  // either may read them.
  std::shared_ptr<StagingIndex> staging_;
  // The staging index a running merge is moving into the tables, and its ids.
  std::shared_ptr<StagingIndex> merging_;
  std::vector<DocumentId> merging_ids_;
  // The last merged index, emptied, to be the next one: a new index's
  // pages (64 MiB of buckets at the defaults) took about 60 ms a merge to
  // fault in, on the merge's critical path. Guarded by merge_mu_.
  std::shared_ptr<StagingIndex> spare_staging_;
  // One merge, or bulk ingestion, at a time.
  std::mutex merge_mu_;
  // Callers of LockMergesAhead waiting for merge_mu_: the background
  // merger lets them have it first.
  std::atomic<int> merge_mu_waiters_{0};
  // One rewrite of the lone bits at a time, and no bulk load meanwhile: a
  // load into an empty store writes bits of its own, which the rewrite
  // would overwrite. Taken before merge_mu_.
  std::mutex refresh_mu_;
  // While a rewrite runs: the fingerprints merged since it sealed recent_,
  // which stay recent when it ends. Guarded by merge_mu_.
  std::optional<std::vector<Fingerprint>> unsealed_;
  // RefreshWhenDue's thread, and the recent fingerprints it counts from
  // (those a rewrite that failed left: it waits for as many again).
  std::thread refresher_;
  std::atomic<std::uint64_t> refresh_after_{0};
  // Guards merge_error_, stopping_ and the staging room's counts;
  // staging_cv_ announces room in the staging index, the end of a merge,
  // and the need for one.
  std::mutex staging_mu_;
  std::condition_variable staging_cv_;
  std::size_t staging_reserved_ = 0;      // entries writers hold room for
  std::size_t staging_room_waiters_ = 0;  // writers waiting for room
  Status merge_error_;
  bool stopping_ = false;
  std::thread merger_;

  // The prefixes that lone bits must not be trusted for (recent_prefixes.h).
  // Add (AddRecentPrefixes) and Seal with merge_mu_ held; DropSealed with
  // merge_mu_ and ingest_mu_ held.
  RecentPrefixes recent_{plan_, RecentPrefixesLimit()};
  // The packed tables' filters (member_filters.h): a merge's files' are
  // published before its ingestion, and a bulk load's after it with
  // ingest_mu_ held exclusively, so that a query, which reads the view
  // after its snapshot and cursors, never meets a file its view lacks.
  const std::shared_ptr<TableFilters> table_filters_;

  bool closed_ = false;
  // Set by Close: scans and rewrites still running stop early.
  std::atomic<bool> closing_{false};
  // A merge moved documents into the tables since the store was opened.
  // Until then no rewrite of the lone bits runs in the background: a
  // process that only queries, or inserts a few documents and closes, does
  // not pay for one.
  std::atomic<bool> merged_since_open_{false};
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_STORE_STORE_IMPL_H_
