// Whole-store scans: FindAll, Clusters and ForEachDocument. Each table is
// read in key order, tables spread over threads, all at one snapshot, or
// the documents once and the tables sorted in memory.

#include <algorithm>
#include <atomic>
#include <unordered_map>

#include "plan/run_pairs.h"
#include "store/store_impl.h"
#include "util/parallel.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

namespace {

// Union-find over document ids with path halving.
class DisjointSets {
 public:
  void Union(DocumentId a, DocumentId b) {
    a = Find(a);
    b = Find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }
  DocumentId Find(DocumentId x) {
    auto it = parent_.try_emplace(x, x).first;
    while (it->second != x) {
      auto up = parent_.find(it->second);
      it->second = up->second;  // halve the path
      x = it->second;
      it = parent_.find(x);
    }
    return x;
  }
  const std::unordered_map<DocumentId, DocumentId>& members() const { return parent_; }

 private:
  std::unordered_map<DocumentId, DocumentId> parent_;
};

// The versions still in the tables whose removal is staged,
// which scans pass by as if the merge had taken them out.
class LeavingVersions {
 public:
  explicit LeavingVersions(std::span<const StagedDocument> staged) {
    for (const StagedDocument& doc : staged) {
      if (doc.leaving) by_id_.emplace(doc.id, *doc.leaving);
    }
  }
  bool empty() const { return by_id_.empty(); }
  bool Contains(DocumentId id, Fingerprint fingerprint) const {
    if (by_id_.empty()) return false;
    const auto it = by_id_.find(id);
    return it != by_id_.end() && it->second == fingerprint;
  }

 private:
  std::unordered_map<DocumentId, Fingerprint> by_id_;
};

}  // namespace

const rocksdb::Snapshot* StoreImpl::WholeSnapshot(TableFilters::View* filters) const {
  std::shared_lock ingest(ingest_mu_);
  // The view after the snapshot: a merge publishes its files' filters
  // before they go in, so the view has those of every file it can see.
  const rocksdb::Snapshot* snapshot = db_->GetSnapshot();
  if (filters != nullptr) *filters = table_filters_->Current();
  return snapshot;
}

Status StoreImpl::ScanRuns(const ScanOptions& scan, const RunVisitor& visit_run, Runs runs) const {
  if (Status s = CheckOpen(); !s.ok()) return s;
  rocksdb::ManagedSnapshot snapshot(db_.get(), WholeSnapshot());
  return ScanRunsAt(scan, snapshot.snapshot(), visit_run, runs);
}

Status StoreImpl::ScanRunsAt(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                             const RunVisitor& visit_run, Runs runs, Versions versions) const {
  Result<std::vector<StagedDocument>> staged = StagedDocuments(snapshot);
  if (!staged.ok()) return staged.status();
  // Not named as leaving, the tables' entries are all read.
  if (versions == Versions::kAlsoLeaving) {
    for (StagedDocument& doc : *staged) doc.leaving.reset();
  }
  Result<bool> done = ScanRunsInMemory(scan, snapshot, *staged, visit_run);
  if (!done.ok() || *done) return done.status();
  return ScanRunsFromTables(scan, snapshot, *staged, visit_run, runs);
}

// Reading a table through RocksDB's iterators costs about 250 ns an entry
// (perf: DBIter, the merging iterator's heap, thread-local perf counters),
// and the tables hold each document once per table. Reading the documents
// once and sorting each table in memory does that work once instead of
// table_count() times.
Result<bool> StoreImpl::ScanRunsInMemory(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                                         std::span<const StagedDocument> staged,
                                         const RunVisitor& visit_run) const {
  constexpr std::size_t kPerDocument = sizeof(IdFingerprint) + InMemoryTables::kBytesPerDocument;
  const std::uint64_t estimate = EstimatedEntries();
  const std::size_t limit =
      std::min<std::size_t>(scan.memory_bytes / kPerDocument, InMemoryTables::kMaxDocuments);
  if (estimate + staged.size() > limit) return false;
  Result<std::optional<std::vector<IdFingerprint>>> read =
      ReadAllDocuments(snapshot, staged, estimate, limit, scan.threads);
  if (!read.ok()) return read.status();
  if (!*read) return false;
  const std::vector<IdFingerprint>& docs = **read;
  if (docs.empty()) return true;
  // The documents, then a sorter (16 bytes a document) per thread; the
  // limit leaves room for at least one.
  const std::size_t sorters =
      std::min<std::size_t>(ScanThreads(scan.threads, plan_.table_count()),
                            (scan.memory_bytes - docs.size() * sizeof(IdFingerprint)) /
                                (docs.size() * InMemoryTables::kBytesPerDocument));
  ProgressMeter progress(scan, docs.size() * plan_.table_count());
  std::vector<InMemoryTables> tables(sorters);
  Status s = ForEachInParallel(
      plan_.table_count(), static_cast<int>(sorters), [&](std::size_t t, int worker) {
        if (closing_) return Closing();
        tables[worker].ForEachRun(docs, plan_, t,
                                  [&](std::span<const TableEntry> run) { visit_run(t, run); });
        progress.Add(docs.size());
        return Status::OK();
      });
  progress.Finish();
  if (!s.ok()) return s;
  return true;
}

Result<std::optional<std::vector<IdFingerprint>>> StoreImpl::ReadAllDocuments(
    const rocksdb::Snapshot* snapshot, std::span<const StagedDocument> staged, std::size_t estimate,
    std::size_t limit, int threads) const {
  // Table 0 holds every document that is not staged: the smallest thing to
  // read. Slices of its key range are read in parallel.
  const TablePermutation& perm = plan_.table(0);
  const GroupLayout layout = group_layout(0);
  // Slices cut the permuted fingerprints by their top 6 bits, or with
  // fewer group bits by those: they meet between groups.
  const int slice_bits = std::min(layout.group_bits(), 6);
  const std::size_t slices = ScanThreads(threads, std::size_t{1} << slice_bits);
  const LeavingVersions leaving(staged);
  std::vector<std::vector<IdFingerprint>> read(slices);
  std::atomic<std::size_t> total{staged.size()};
  std::atomic<bool> over{total > limit};
  Status s = ForEachInParallel(slices, static_cast<int>(slices), [&](std::size_t slice, int) {
    // Slice i holds the permuted fingerprints whose top bits fall in its
    // share of their values: the keys from its first one's.
    auto first_of = [&](std::size_t i) {
      return (Fingerprint{i} << slice_bits) / slices << (64 - slice_bits);
    };
    auto bound = [&](std::size_t i) {
      return std::string(layout.KeyView(layout.KeyOf(first_of(i))));
    };
    rocksdb::ReadOptions ro = ScanReadOptions(snapshot);
    const std::string upper = slice + 1 < slices ? bound(slice + 1) : std::string();
    const rocksdb::Slice upper_slice(upper);
    if (slice + 1 < slices) ro.iterate_upper_bound = &upper_slice;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, table(0)));
    TableEntryCursor entries(*it, layout, TableFamilyName(0));
    std::vector<IdFingerprint>& docs = read[slice];
    // Growing by doubling would copy and fault in twice the memory.
    docs.reserve(std::min(estimate, limit) / slices * 9 / 8);
    for (entries.Seek(first_of(slice)); entries.Valid() && !over; entries.Next()) {
      const TableEntry& e = entries.entry();
      const Fingerprint fp = perm.Invert(e.permuted);
      if (leaving.Contains(e.id, fp)) continue;
      docs.push_back({e.id, fp});
      if ((docs.size() & 4095) == 0) {
        if (closing_) return Closing();
        if (total.fetch_add(4096) + 4096 > limit) over = true;
      }
    }
    return entries.status();
  });
  if (!s.ok()) return s;
  std::size_t size = staged.size();
  for (const std::vector<IdFingerprint>& docs : read) size += docs.size();
  if (over || size > limit) return std::optional<std::vector<IdFingerprint>>();
  std::vector<IdFingerprint> all;
  all.reserve(size);
  for (std::vector<IdFingerprint>& docs : read) {
    all.insert(all.end(), docs.begin(), docs.end());
    docs = {};
  }
  for (const StagedDocument& doc : staged) {
    if (!doc.removal) all.push_back({doc.id, doc.fingerprint});
  }
  return std::optional<std::vector<IdFingerprint>>(std::move(all));
}

Status StoreImpl::ScanRunsFromTables(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                                     std::span<const StagedDocument> staged,
                                     const RunVisitor& visit_run, Runs runs) const {
  std::uint64_t total = EstimatedEntries() * plan_.table_count();
  // Staged documents are not in the tables yet; each table's stream takes
  // them in, sorted, beside its own entries.
  total += staged.size() * plan_.table_count();
  ProgressMeter progress(scan, total);
  const LeavingVersions leaving(staged);
  // Linked entries that wait for their ids, per thread: within the scan's
  // memory budget, at least a thousand, at most a million.
  const std::size_t waiting_limit = std::clamp<std::size_t>(
      scan.memory_bytes / ScanThreads(scan.threads, plan_.table_count()) / (4 * sizeof(TableEntry)),
      1024, std::size_t{1} << 20);
  Status s = ForEachInParallel(plan_.table_count(), scan.threads, [&](std::size_t t, int) {
    if (closing_) return Closing();
    const TablePermutation& perm = plan_.table(t);
    const Fingerprint mask = perm.prefix_mask();
    const bool with_ids = t == 0;
    const bool every_run = with_ids || runs == Runs::kEvery;
    std::vector<TableEntry> staged_entries;
    staged_entries.reserve(staged.size());
    for (const StagedDocument& doc : staged) {
      if (!doc.removal) staged_entries.push_back({perm.Apply(doc.fingerprint), doc.id});
    }
    std::sort(staged_entries.begin(), staged_entries.end());
    auto next_staged = staged_entries.begin();
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ScanReadOptions(snapshot), table(t)));
    // Lookups, not a scan: no readahead.
    std::unique_ptr<rocksdb::Iterator> table0;
    if (!every_run) table0.reset(db_->NewIterator(LookupReadOptions(snapshot), table(0)));
    // The current run, and which of its entries are a table's fingerprint
    // whose ids are still to be read.
    std::vector<TableEntry> run;
    std::vector<bool> by_fingerprint;
    // In a table without ids, runs keep only their linked entries and wait
    // here, so that their ids are read from table 0 in its own order, seeks
    // moving forward through it, rather than one random seek each.
    std::vector<TableEntry> waiting;
    std::vector<bool> waiting_by_fingerprint;
    std::vector<std::size_t> waiting_ends;  // where each waiting run ends
    std::vector<TableEntry> resolved;
    auto resolve_waiting = [&]() -> Status {
      const TablePermutation& perm0 = plan_.table(0);
      std::vector<Fingerprint> wanted;  // permuted as in table 0
      for (std::size_t i = 0; i < waiting.size(); ++i) {
        if (waiting_by_fingerprint[i])
          wanted.push_back(perm0.Apply(perm.Invert(waiting[i].permuted)));
      }
      std::sort(wanted.begin(), wanted.end());
      wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
      std::vector<IdFingerprint> ids;
      for (Fingerprint permuted0 : wanted) {
        const Fingerprint fp = perm0.Invert(permuted0);
        bool held = false;
        Status s = ForEachIdOf(*table0, fp, [&](DocumentId id) {
          held = true;
          if (!leaving.Contains(id, fp)) ids.push_back({id, fp});
          return true;
        });
        if (!s.ok()) return s;
        if (!held) {
          return Status::Corruption(TableFamilyName(t) + " holds fingerprint " +
                                    std::to_string(fp) + ", which no document in " +
                                    TableFamilyName(0) + " has");
        }
      }
      std::sort(ids.begin(), ids.end(), ByFingerprint);
      auto by_fp = [](const IdFingerprint& a, const IdFingerprint& b) {
        return a.fingerprint < b.fingerprint;
      };
      std::size_t begin = 0;
      for (std::size_t end : waiting_ends) {
        resolved.clear();
        for (std::size_t i = begin; i < end; ++i) {
          if (!waiting_by_fingerprint[i]) {
            resolved.push_back(waiting[i]);
            continue;
          }
          const Fingerprint fp = perm.Invert(waiting[i].permuted);
          // None if every document with it is leaving.
          const auto [lo, hi] =
              std::equal_range(ids.begin(), ids.end(), IdFingerprint{0, fp}, by_fp);
          for (auto d = lo; d != hi; ++d) resolved.push_back({waiting[i].permuted, d->id});
        }
        std::sort(resolved.begin(), resolved.end());
        if (resolved.size() > 1) visit_run(t, resolved);
        begin = end;
      }
      waiting.clear();
      waiting_by_fingerprint.clear();
      waiting_ends.clear();
      return Status::OK();
    };
    Status status;
    auto visit = [&] {
      if (run.size() < 2 || !status.ok()) return;
      if (every_run) return visit_run(t, run);
      // Only fingerprints linked to another in this table (any k up to the
      // plan's) can be in a pair here.
      std::vector<bool> linked(run.size(), false);
      ForEachLinkedGroup(
          run, plan_, t, plan_.distance(), [](std::span<const TableEntry>) {},
          [&](std::span<const TableEntry> a, std::span<const TableEntry> b, int) {
            for (std::span<const TableEntry> g : {a, b}) {
              std::fill_n(linked.begin() + (g.data() - run.data()), g.size(), true);
            }
          });
      for (std::size_t i = 0; i < run.size(); ++i) {
        if (!linked[i]) continue;
        waiting.push_back(run[i]);
        waiting_by_fingerprint.push_back(by_fingerprint[i]);
      }
      if (waiting_ends.empty() || waiting_ends.back() != waiting.size()) {
        waiting_ends.push_back(waiting.size());
      }
      if (waiting.size() >= waiting_limit) status = resolve_waiting();
    };
    std::uint64_t unreported = 0;
    auto take = [&](const TableEntry& e, bool from_table) {
      if (!run.empty() && (run.front().permuted & mask) != (e.permuted & mask)) {
        visit();
        run.clear();
        by_fingerprint.clear();
      }
      run.push_back(e);
      by_fingerprint.push_back(from_table && !with_ids);
      if (++unreported == 4096) {
        progress.Add(unreported);
        unreported = 0;
        if (closing_) status = Closing();
      }
    };
    TableEntryCursor entries(*it, group_layout(t), TableFamilyName(t));
    for (entries.SeekToFirst(); entries.Valid() && status.ok(); entries.Next()) {
      const TableEntry& e = entries.entry();
      if (with_ids && !leaving.empty() && leaving.Contains(e.id, perm.Invert(e.permuted))) {
        continue;
      }
      for (; next_staged != staged_entries.end() && *next_staged <= e; ++next_staged) {
        take(*next_staged, false);
      }
      take(e, true);
    }
    if (Status s = entries.status(); !s.ok()) return s;
    for (; next_staged != staged_entries.end(); ++next_staged) take(*next_staged, false);
    visit();
    if (status.ok()) status = resolve_waiting();
    progress.Add(unreported);
    return status;
  });
  progress.Finish();
  return s;
}

Status StoreImpl::ForEachDocument(const std::function<void(const Document&)>& sink,
                                  const ScanOptions& scan) const {
  if (Status s = CheckOpen(); !s.ok()) return s;
  rocksdb::ManagedSnapshot snapshot(db_.get(), WholeSnapshot());
  std::string count;
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot.snapshot();
  const std::uint64_t total =
      db_->Get(ro, meta(), kDocumentCountKey, &count).ok() && count.size() == 8
          ? GetBigEndian64(count.data())
          : 0;
  ProgressMeter progress(scan, total);
  std::unique_ptr<rocksdb::Iterator> it(
      db_->NewIterator(ScanReadOptions(snapshot.snapshot()), documents_family()));
  Document doc;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (it->key().size() != 8 ||
        !DecodeDocumentValue(it->value().ToStringView(), &doc.fingerprint, &doc.metadata)) {
      return Status::Corruption("documents: malformed record with key " + it->key().ToString(true));
    }
    doc.id = GetBigEndian64(it->key().data());
    sink(doc);
    progress.Add(1);
  }
  progress.Finish();
  return FromRocks(it->status(), "scanning documents");
}

Status StoreImpl::FindAll(int k, const std::function<void(const NearPair&)>& sink,
                          const ScanOptions& scan) const {
  if (Status s = CheckDistance(k); !s.ok()) return s;
  std::mutex sink_mu;
  return ScanRuns(scan, [&](std::size_t t, std::span<const TableEntry> run) {
    std::vector<NearPair> pairs;
    ForEachPairInRun(run, plan_, t, k, [&](const NearPair& p) { pairs.push_back(p); });
    if (pairs.empty()) return;
    std::lock_guard lock(sink_mu);
    for (const NearPair& p : pairs) sink(p);
  });
}

Status StoreImpl::Clusters(int k, const std::function<void(std::span<const DocumentId>)>& sink,
                           const ScanOptions& scan) const {
  if (Status s = CheckDistance(k); !s.ok()) return s;
  std::mutex sets_mu;
  DisjointSets sets;
  Status s = ScanRuns(scan, [&](std::size_t t, std::span<const TableEntry> run) {
    std::vector<std::pair<DocumentId, DocumentId>> edges;
    ForEachLinkedGroup(
        run, plan_, t, k,
        [&](std::span<const TableEntry> group) {
          for (std::size_t i = 1; i < group.size(); ++i) {
            edges.emplace_back(group[0].id, group[i].id);
          }
        },
        [&](std::span<const TableEntry> a, std::span<const TableEntry> b, int) {
          edges.emplace_back(a[0].id, b[0].id);
        });
    if (edges.empty()) return;
    std::lock_guard lock(sets_mu);
    for (auto [a, b] : edges) sets.Union(a, b);
  });
  if (!s.ok()) return s;

  std::unordered_map<DocumentId, std::vector<DocumentId>> clusters;
  for (const auto& [id, parent] : sets.members()) clusters[sets.Find(id)].push_back(id);
  std::vector<std::vector<DocumentId>> ordered;
  ordered.reserve(clusters.size());
  for (auto& [root, ids] : clusters) {
    std::sort(ids.begin(), ids.end());
    ordered.push_back(std::move(ids));
  }
  std::sort(ordered.begin(), ordered.end(),
            [](const auto& a, const auto& b) { return a.front() < b.front(); });
  for (const std::vector<DocumentId>& ids : ordered) sink(ids);
  return Status::OK();
}

}  // namespace fpstore::internal
