// The permutation tables (docs/design.md, "Storing it"), and their probe: a column family per table
// of packed groups of permuted fingerprints (format/groups.h), with ids in table 0 only, read at a
// snapshot; and the member filters (format/member_filter.h) of the tables' live files, kept in
// memory for every probe, one view per query, replaced whole when files come or go. A probe reads
// a group only where the filters show the prefix may be held, and not where they show it held by
// at most one fingerprint that the query has found already (TableMemberFilter::Lookup). Only read
// here; merges and bulk loads write the tables by ingestion.
//
// Thread safety: thread-safe.

#ifndef FPSTORE_LIB_READ_TABLES_H_
#define FPSTORE_LIB_READ_TABLES_H_

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/listener.h>
#include <rocksdb/table_properties.h>

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "format/groups.h"
#include "format/member_filter.h"
#include "fpstore/permutation.h"
#include "fpstore/status.h"
#include "ingest/table_writer.h"
#include "plan/table_entry.h"
#include "util/mutex.h"

namespace fpstore::internal {

// Charges memory held outside a block cache (the filters live in the files' table properties) to
// that cache while this lives, so the store keeps one budget. Charged in pieces spread over the
// cache's shards: one large entry would overfill its shard.
class CacheCharge {
 public:
  // A null cache charges nothing.
  CacheCharge(std::shared_ptr<rocksdb::Cache> cache, std::size_t bytes);
  CacheCharge(const CacheCharge&) = delete;
  CacheCharge& operator=(const CacheCharge&) = delete;
  ~CacheCharge();

 private:
  std::shared_ptr<rocksdb::Cache> cache_;
  std::vector<rocksdb::Cache::Handle*> handles_;
};

// Each file's charge, shared by the filter sets that hold the file, so that a set read anew after a
// merge or compaction charges only its new files, not the whole table again. Thread-safe.
class FileCharges {
 public:
  explicit FileCharges(std::shared_ptr<rocksdb::Cache> cache) : cache_(std::move(cache)) {}
  // The charge of `bytes` for `file`, made if none lives. Keyed by address: an open file's
  // properties are one object (every file stays open), kept alive by the charge's holders.
  std::shared_ptr<const CacheCharge> For(
      const std::shared_ptr<const rocksdb::TableProperties>& file, std::size_t bytes);

 private:
  const std::shared_ptr<rocksdb::Cache> cache_;
  Mutex mu_;
  std::map<const rocksdb::TableProperties*, std::weak_ptr<const CacheCharge>> charges_
      GUARDED_BY(mu_);
};

// What a table's filters say of the distinct members with a prefix.
enum class PrefixMembers { kNone, kAtMostOne, kMaybeMany };

// The filters of one packed table's live files.
class TableMemberFilter {
 public:
  TableMemberFilter() = default;
  // Reads the family's current files' filters, charging them through `charges` if not null.
  static Result<std::shared_ptr<const TableMemberFilter>> Read(rocksdb::DB& db,
                                                               rocksdb::ColumnFamilyHandle* family,
                                                               const GroupLayout& layout,
                                                               int prefix_bits,
                                                               FileCharges* charges = nullptr);
  // A filter that passes every probe.
  static std::shared_ptr<const TableMemberFilter> PassingAll();
  // This one plus the files `added` (their properties), charged through `charges` if not null.
  std::shared_ptr<const TableMemberFilter> With(
      std::span<const std::shared_ptr<const rocksdb::TableProperties>> added,
      FileCharges* charges) const;
  // kNone only if no file's members have `permuted`'s p-bit prefix. With `count`, kAtMostOne only
  // if one file alone may have it and at most one distinct member there does; without, kMaybeMany
  // for any prefix that may be held.
  PrefixMembers Lookup(Word permuted, bool count) const;
  bool MayContain(Word permuted) const {
    return Lookup(permuted, /*count=*/false) != PrefixMembers::kNone;
  }
  // The table's files when the filters were read, and added since.
  std::size_t files() const { return properties_.size() + added_.size(); }

 private:
  struct File {
    std::optional<FileMemberFilter> filter;  // none: it may hold anything
    // Its ChunkFirstGroups, side by side: searched in the index, each step would miss the cache.
    std::vector<Head> first_groups;
  };
  // Adds `file`'s filters, unless it holds no members.
  void Add(const std::shared_ptr<const rocksdb::TableProperties>& file, FileCharges* charges);
  GroupLayout layout_{64, 64};
  Head prefix_mask_ = 0;
  std::vector<File> files_;
  // They hold the filters' bits: the live files' (by name) and those added since.
  rocksdb::TablePropertiesCollection properties_;
  std::vector<std::shared_ptr<const rocksdb::TableProperties>> added_;
  std::vector<std::shared_ptr<const CacheCharge>> charges_;
};

// Every table's filters, replaced whole when files come or go. Made before the database opens, for
// its listener; thread-safe.
class TableFilters {
 public:
  // Groups are cut at `group_bits` (format/groups.h); memory is charged to `cache` if not null.
  TableFilters(const PermutationPlan& plan, int group_bits, std::shared_ptr<rocksdb::Cache> cache);

  // Reads every table's filters from `db`, then each table's anew after its compactions. A table
  // whose filters cannot be read gets one that passes every probe: slower, never wrong.
  void Attach(rocksdb::DB* db, std::span<rocksdb::ColumnFamilyHandle* const> tables);
  // Before the database closes.
  void Detach();

  // Reads anew the tables of the families with these ids, if any are tables: after their
  // compactions, and after a failed ingestion into them. Under one mutex, a refresh that read
  // before an ingestion cannot publish after the ingestion's own.
  void Refresh(std::vector<std::uint32_t> family_ids);

  // Before an ingestion, which queries do not wait for: adds the filters of `files`
  // (files.properties, read from the files before it: ingest/table_writer.h), kept in every view
  // until EndPending, compaction refreshes included (else one that read the family's files before
  // the ingestion would drop them). Where they could not be read ahead, the tables `files` go into
  // pass every probe until then. Filters of files never ingested only cost reads.
  void AddPending(const TableWriter::Output& files);
  // After that ingestion: if it failed, or its filters were not read ahead, its tables are read
  // anew. Files that compactions replaced meanwhile may stay until the next refresh: their filters
  // cover what the new ones hold.
  void EndPending(const TableWriter::Output& files, bool ingested);

  // One filter for each table: a consistent view for one query.
  using View = std::shared_ptr<const std::vector<std::shared_ptr<const TableMemberFilter>>>;
  View Current() const { return current_.load(); }

  // Calls Refresh after every compaction.
  static std::shared_ptr<rocksdb::EventListener> MakeListener(
      std::shared_ptr<TableFilters> filters);

 private:
  // Reads anew the tables of the families with these ids, or every table if `ids` is none.
  void RefreshLocked(std::optional<std::vector<std::uint32_t>> ids) REQUIRES(mu_);
  // The current filters plus `files`, or passing every probe in the tables of `passing`.
  void PublishWithLocked(std::span<const WrittenFile> files, std::span<const std::uint32_t> passing)
      REQUIRES(mu_);
  // Table t's files among `files`.
  std::vector<std::shared_ptr<const rocksdb::TableProperties>> FilesOf(
      std::span<const WrittenFile> files, std::size_t t) const REQUIRES(mu_);

  const PermutationPlan plan_;
  const int group_bits_;
  FileCharges charges_;
  mutable Mutex mu_;
  rocksdb::DB* db_ GUARDED_BY(mu_) = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> tables_ GUARDED_BY(mu_);
  std::vector<WrittenFile> pending_ GUARDED_BY(mu_);
  std::vector<std::uint32_t> pending_unread_ GUARDED_BY(mu_);  // families of pending files unread
  std::atomic<View> current_;
};

class Tables {
 public:
  // `families`: table t's at [t]. `filters` must be attached to them.
  Tables(rocksdb::DB& db, const PermutationPlan& plan, int group_bits,
         std::vector<rocksdb::ColumnFamilyHandle*> families, std::shared_ptr<TableFilters> filters);

  const PermutationPlan& plan() const { return plan_; }
  int group_bits() const { return group_bits_; }
  std::span<rocksdb::ColumnFamilyHandle* const> families() const { return families_; }
  const GroupLayout& layout(std::size_t t) const { return layouts_[t]; }
  std::span<const GroupLayout> layouts() const { return layouts_; }
  TableFilters& filters() const { return *filters_; }
  // An iterator over table t's groups; the caller deletes it.
  rocksdb::Iterator* NewIterator(std::size_t t, const rocksdb::ReadOptions& options) const;

  // A fingerprint within a query's distance, found in one table.
  struct Hit {
    DocumentId id;
    Word fingerprint;
    int distance;
    // Found in a table without ids: its documents are still to be read (ForEachIdOf).
    bool by_fingerprint = false;
  };
  // Adds to `hits` what table t, at `snapshot`, holds within k of `query`: only what the plan
  // reports in this table (FirstSharedTable), so that each is found in one table. Reads nothing
  // where `filter` (the reader's view) shows no member with the query's prefix, nor where it shows
  // at most one and `known` (the query's hits in earlier tables) holds a fingerprint with that
  // prefix: every table holds every fingerprint at a snapshot, so only that one is there, reported
  // already. `known` may be `hits` itself: it is read before anything is added.
  Status Probe(std::size_t t, const TableMemberFilter& filter, const rocksdb::Snapshot* snapshot,
               Word query, int k, std::span<const Hit> known, std::vector<Hit>& hits) const;

  // Calls found(id), in id order while it returns true, for each document table 0 holds with
  // `fingerprint`, read through `table0`; callers going in table 0's order read each group once.
  Status ForEachIdOf(rocksdb::Iterator& table0, Word fingerprint,
                     const std::function<bool(DocumentId)>& found) const;

  // Of the fingerprints of `leaving` (sorted by ByFingerprint), those that table 0, at its latest
  // state, holds for a document not in `leaving`, ascending: the tables without ids keep them.
  Result<std::vector<Word>> FingerprintsKept(std::span<const IdFingerprint> leaving) const;

 private:
  // Reads table t's group holding `permuted` at `snapshot`, operands folded; false if none. Reads
  // only the files that `filter` (the reader's view) shows may change a member with its prefix.
  Result<bool> ReadGroup(std::size_t t, const TableMemberFilter& filter,
                         const rocksdb::Snapshot* snapshot, Word permuted,
                         rocksdb::PinnableSlice& value) const;

  rocksdb::DB& db_;
  const PermutationPlan plan_;
  const int group_bits_;
  const std::vector<rocksdb::ColumnFamilyHandle*> families_;
  const std::vector<GroupLayout> layouts_;
  const std::shared_ptr<TableFilters> filters_;
};

}  // namespace fpstore::internal

#endif  // FPSTORE_LIB_READ_TABLES_H_
