#include "scan/scans.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "format/families.h"
#include "format/table_entries.h"
#include "plan/near_pairs.h"
#include "plan/pair_finder.h"
#include "plan/run_pairs.h"
#include "plan/table_entry.h"
#include "util/parallel.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

namespace {

Status Closing() { return Status::Busy("the store is closing"); }

// The signatures of `run`'s documents that have one, read at `snapshot` in one batch.
Result<RunSignatures> ReadRunSignatures(const Documents& documents,
                                        const rocksdb::Snapshot* snapshot,
                                        std::span<const TableEntry> run) {
  std::vector<DocumentId> ids;
  ids.reserve(run.size());
  for (const TableEntry& e : run) ids.push_back(e.id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  RunSignatures result;
  Status s = documents.Read(snapshot, ids, /*whole=*/true, [&](std::size_t, const Document& doc) {
    result.Add(doc.id, doc.signature);
  });
  if (!s.ok()) return s;
  return result;
}

// Versions in the tables whose removal is staged: scans pass them by as if merged out.
class LeavingVersions {
 public:
  explicit LeavingVersions(std::span<const StagedDocument> staged) {
    for (const StagedDocument& doc : staged) {
      if (doc.leaving) by_id_.emplace(doc.id, *doc.leaving);
    }
  }
  bool Contains(DocumentId id, Word fingerprint) const {
    if (by_id_.empty()) return false;
    const auto it = by_id_.find(id);
    return it != by_id_.end() && it->second == fingerprint;
  }

 private:
  std::unordered_map<DocumentId, Word> by_id_;
};

// One table's runs in key order, staged documents merged in. In a table without ids a run keeps
// only entries within the plan's distance of another (only they can pair) and waits, so that a
// batch's ids are read from table 0 with forward seeks rather than one random seek each.
class TableRunReader {
 public:
  TableRunReader(const Tables& tables, std::size_t t, const rocksdb::Snapshot* snapshot,
                 const LeavingVersions& leaving, std::size_t waiting_limit,
                 const Scanner::RunVisitor& visit_run)
      : tables_(tables),
        plan_(tables.plan()),
        perm_(plan_.table(t)),
        t_(t),
        snapshot_(snapshot),
        leaving_(leaving),
        with_ids_(t == 0),
        waiting_limit_(waiting_limit),
        visit_run_(visit_run) {}

  // Adds the next entry in table order; `from_table`: not staged.
  Status Take(const TableEntry& e, bool from_table) {
    if (!run_.empty() &&
        (run_.front().permuted & PrefixMask(perm_)) != (e.permuted & PrefixMask(perm_))) {
      if (Status s = EndRun(); !s.ok()) return s;
    }
    run_.push_back(e);
    by_fingerprint_.push_back(from_table && !with_ids_);
    return Status::OK();
  }
  // After the last entry.
  Status Finish() {
    if (Status s = EndRun(); !s.ok()) return s;
    return ResolveWaiting();
  }

 private:
  Status EndRun() {
    Status s;
    if (run_.size() >= 2) s = with_ids_ ? (visit_run_(t_, run_), Status::OK()) : WaitForIds();
    run_.clear();
    by_fingerprint_.clear();
    return s;
  }

  // Keeps the run's linked entries until their ids are read.
  Status WaitForIds() {
    std::vector<bool> linked(run_.size(), false);
    ForEachLinkedCopies(
        run_, plan_, t_, plan_.distance(), [](std::span<const TableEntry>) {},
        [&](std::span<const TableEntry> a, std::span<const TableEntry> b, int) {
          for (std::span<const TableEntry> g : {a, b}) {
            std::fill_n(linked.begin() + (g.data() - run_.data()), g.size(), true);
          }
        });
    for (std::size_t i = 0; i < run_.size(); ++i) {
      if (!linked[i]) continue;
      waiting_.push_back(run_[i]);
      waiting_by_fingerprint_.push_back(by_fingerprint_[i]);
    }
    if (waiting_ends_.empty() || waiting_ends_.back() != waiting_.size()) {
      waiting_ends_.push_back(waiting_.size());
    }
    return waiting_.size() >= waiting_limit_ ? ResolveWaiting() : Status::OK();
  }

  // The waiting fingerprints' documents, read in table 0's order; sorted by fingerprint.
  Result<std::vector<IdFingerprint>> WaitingDocuments() {
    if (table0_ == nullptr) {
      rocksdb::ReadOptions ro;  // lookups: no readahead
      ro.snapshot = snapshot_;
      table0_.reset(tables_.NewIterator(0, ro));
    }
    const TablePermutation& perm0 = plan_.table(0);
    std::vector<Word> wanted;  // permuted as in table 0
    for (std::size_t i = 0; i < waiting_.size(); ++i) {
      if (waiting_by_fingerprint_[i]) {
        wanted.push_back(Permute(perm0, Unpermute(perm_, waiting_[i].permuted)));
      }
    }
    std::sort(wanted.begin(), wanted.end());
    wanted.erase(std::unique(wanted.begin(), wanted.end()), wanted.end());
    std::vector<IdFingerprint> docs;
    for (Word permuted0 : wanted) {
      const Word fp = Unpermute(perm0, permuted0);
      bool held = false;
      Status s = tables_.ForEachIdOf(*table0_, fp, [&](DocumentId id) {
        held = true;
        if (!leaving_.Contains(id, fp)) docs.push_back({id, fp});
        return true;
      });
      if (!s.ok()) return s;
      if (!held) {
        return Status::Corruption(TableFamilyName(t_) + " holds fingerprint " +
                                  FingerprintText(fp) + ", which no document in " +
                                  TableFamilyName(0) + " has");
      }
    }
    std::sort(docs.begin(), docs.end(), ByFingerprint);
    return docs;
  }

  Status ResolveWaiting() {
    if (waiting_.empty()) return Status::OK();
    Result<std::vector<IdFingerprint>> docs = WaitingDocuments();
    if (!docs.ok()) return docs.status();
    auto by_fp = [](const IdFingerprint& a, const IdFingerprint& b) {
      return a.fingerprint < b.fingerprint;
    };
    std::vector<TableEntry> resolved;
    std::size_t begin = 0;
    for (std::size_t end : waiting_ends_) {
      resolved.clear();
      for (std::size_t i = begin; i < end; ++i) {
        if (!waiting_by_fingerprint_[i]) {
          resolved.push_back(waiting_[i]);
          continue;
        }
        const Word fp = Unpermute(perm_, waiting_[i].permuted);
        // None if every document with it is leaving.
        const auto [lo, hi] =
            std::equal_range(docs->begin(), docs->end(), IdFingerprint{0, fp}, by_fp);
        for (auto d = lo; d != hi; ++d) resolved.push_back({waiting_[i].permuted, d->id});
      }
      std::sort(resolved.begin(), resolved.end());
      if (resolved.size() > 1) visit_run_(t_, resolved);
      begin = end;
    }
    waiting_.clear();
    waiting_by_fingerprint_.clear();
    waiting_ends_.clear();
    return Status::OK();
  }

  const Tables& tables_;
  const PermutationPlan& plan_;
  const TablePermutation& perm_;
  const std::size_t t_;
  const rocksdb::Snapshot* const snapshot_;
  const LeavingVersions& leaving_;
  const bool with_ids_;
  const std::size_t waiting_limit_;
  const Scanner::RunVisitor& visit_run_;
  std::unique_ptr<rocksdb::Iterator> table0_;
  // The current run, and which entries still need their ids read.
  std::vector<TableEntry> run_;
  std::vector<bool> by_fingerprint_;
  // Linked entries of whole runs waiting for their ids, and each run's end.
  std::vector<TableEntry> waiting_;
  std::vector<bool> waiting_by_fingerprint_;
  std::vector<std::size_t> waiting_ends_;
};

}  // namespace

const rocksdb::Snapshot* Scanner::WholeSnapshot(TableFilters::View* filters) const {
  // Filters after the snapshot: ingestions publish theirs first, so the view covers it.
  const rocksdb::Snapshot* snapshot = staging_.TakeSnapshot();
  if (filters != nullptr) *filters = tables_.filters().Current();
  return snapshot;
}

Status Scanner::ScanRunsAt(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                           const RunVisitor& visit_run) const {
  Result<std::vector<StagedDocument>> staged = staging_.Documents(snapshot);
  if (!staged.ok()) return staged.status();
  Result<bool> done = ScanRunsInMemory(scan, snapshot, *staged, visit_run);
  if (!done.ok() || *done) return done.status();
  return ScanRunsFromTables(scan, snapshot, *staged, visit_run);
}

// Cheaper than iterating every table: documents read once, each table sorted in memory.
Result<bool> Scanner::ScanRunsInMemory(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                                       std::span<const StagedDocument> staged,
                                       const RunVisitor& visit_run) const {
  // A 64-bit plan's fingerprints are copied side by side too (NarrowFingerprints).
  const std::size_t kPerDocument = sizeof(IdFingerprint) + InMemoryTables::kBytesPerDocument +
                                   (plan_.bits() == 64 ? sizeof(std::uint64_t) : 0);
  const std::size_t limit =
      std::min<std::size_t>(scan.memory_bytes / kPerDocument, InMemoryTables::kMaxDocuments);
  if (documents_.Estimate() + staged.size() > limit) return false;
  Result<std::optional<std::vector<IdFingerprint>>> read =
      ReadAllDocuments(snapshot, staged, limit, scan.threads);
  if (!read.ok()) return read.status();
  if (!*read) return false;
  const std::vector<IdFingerprint>& docs = **read;
  if (docs.empty()) return true;
  const std::vector<std::uint64_t> narrow = NarrowFingerprints(docs, plan_);
  // The documents, then a sorter per thread in the memory left (at least one).
  const std::size_t sorters =
      std::min<std::size_t>(ThreadsFor(scan.threads, plan_.table_count()),
                            (scan.memory_bytes - docs.size() * sizeof(IdFingerprint) -
                             narrow.size() * sizeof(std::uint64_t)) /
                                (docs.size() * InMemoryTables::kBytesPerDocument));
  ProgressMeter progress(scan.progress, docs.size() * plan_.table_count());
  std::vector<InMemoryTables> tables(sorters);
  Status s = ForEachInParallel(
      plan_.table_count(), static_cast<int>(sorters), [&](std::size_t t, int worker) {
        if (closing_) return Closing();
        tables[worker].ForEachRun(
            docs, plan_, t, [&](std::span<const TableEntry> run) { visit_run(t, run); }, narrow);
        progress.Add(docs.size());
        return Status::OK();
      });
  progress.Finish();
  if (!s.ok()) return s;
  return true;
}

Result<std::optional<std::vector<IdFingerprint>>> Scanner::ReadAllDocuments(
    const rocksdb::Snapshot* snapshot, std::span<const StagedDocument> staged, std::size_t limit,
    int threads) const {
  // Table 0, the smallest holder of every unstaged document, read in parallel slices cut by the
  // permuted fingerprints' top bits (at most the group bits: slices meet between groups).
  const TablePermutation& perm = plan_.table(0);
  const GroupLayout& layout = tables_.layout(0);
  const int slice_bits = std::min(layout.group_bits(), 6);
  const std::size_t slices = ThreadsFor(threads, std::size_t{1} << slice_bits);
  const std::size_t estimate = std::min<std::size_t>(documents_.Estimate(), limit);
  const LeavingVersions leaving(staged);
  std::vector<std::vector<IdFingerprint>> read(slices);
  std::atomic<std::size_t> total{staged.size()};
  std::atomic<bool> over{total > limit};
  Status s = ForEachInParallel(slices, static_cast<int>(slices), [&](std::size_t slice, int) {
    // The first permuted fingerprint of slice i.
    auto first_of = [&](std::size_t i) {
      return layout.WordOf((Head{i} << slice_bits) / slices << (64 - slice_bits), 0);
    };
    rocksdb::ReadOptions ro = ScanReadOptions(snapshot);
    const std::string upper = slice + 1 < slices
                                  ? std::string(layout.KeyView(layout.KeyOf(first_of(slice + 1))))
                                  : std::string();
    const rocksdb::Slice upper_slice(upper);
    if (slice + 1 < slices) ro.iterate_upper_bound = &upper_slice;
    std::unique_ptr<rocksdb::Iterator> it(tables_.NewIterator(0, ro));
    TableEntryCursor entries(*it, layout, TableFamilyName(0));
    std::vector<IdFingerprint>& docs = read[slice];
    // Growing by doubling would copy and fault in twice the memory.
    docs.reserve(estimate / slices * 9 / 8);
    for (entries.Seek(first_of(slice)); entries.Valid() && !over; entries.Next()) {
      const TableEntry& e = entries.entry();
      const Word fp = Unpermute(perm, e.permuted);
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

Status Scanner::ScanRunsFromTables(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                                   std::span<const StagedDocument> staged,
                                   const RunVisitor& visit_run) const {
  ProgressMeter progress(scan.progress,
                         (documents_.Estimate() + staged.size()) * plan_.table_count());
  const LeavingVersions leaving(staged);
  // Linked entries waiting for their ids, per thread, within the scan's budget.
  const std::size_t waiting_limit = std::clamp<std::size_t>(
      scan.memory_bytes / ThreadsFor(scan.threads, plan_.table_count()) / (4 * sizeof(TableEntry)),
      1024, std::size_t{1} << 20);
  Status s = ForEachInParallel(plan_.table_count(), scan.threads, [&](std::size_t t, int) {
    if (closing_) return Closing();
    const TablePermutation& perm = plan_.table(t);
    std::vector<TableEntry> staged_entries;
    staged_entries.reserve(staged.size());
    for (const StagedDocument& doc : staged) {
      if (!doc.removal) staged_entries.push_back({Permute(perm, doc.fingerprint), doc.id});
    }
    std::sort(staged_entries.begin(), staged_entries.end());
    auto next_staged = staged_entries.begin();
    TableRunReader reader(tables_, t, snapshot, leaving, waiting_limit, visit_run);
    std::unique_ptr<rocksdb::Iterator> it(tables_.NewIterator(t, ScanReadOptions(snapshot)));
    TableEntryCursor entries(*it, tables_.layout(t), TableFamilyName(t));
    std::uint64_t unreported = 0;
    auto take = [&](const TableEntry& e, bool from_table) -> Status {
      if (++unreported == 4096) {
        progress.Add(unreported);
        unreported = 0;
        if (closing_) return Closing();
      }
      return reader.Take(e, from_table);
    };
    Status status;
    for (entries.SeekToFirst(); entries.Valid() && status.ok(); entries.Next()) {
      const TableEntry& e = entries.entry();
      if (t == 0 && leaving.Contains(e.id, Unpermute(perm, e.permuted))) continue;
      for (; next_staged != staged_entries.end() && *next_staged <= e && status.ok();
           ++next_staged) {
        status = take(*next_staged, false);
      }
      if (status.ok()) status = take(e, true);
    }
    if (Status s = entries.status(); !s.ok()) return s;
    for (; next_staged != staged_entries.end() && status.ok(); ++next_staged) {
      status = take(*next_staged, false);
    }
    if (status.ok()) status = reader.Finish();
    progress.Add(unreported);
    return status;
  });
  progress.Finish();
  return s;
}

Status Scanner::ForEachDocument(DocumentTime expired_before,
                                const std::function<void(const Document&)>& sink,
                                const ScanOptions& scan) const {
  rocksdb::ManagedSnapshot snapshot(&db_, WholeSnapshot());
  Result<std::uint64_t> total = documents_.Count(snapshot.snapshot());
  ProgressMeter progress(scan.progress, total.ok() ? *total : 0);
  Status s = documents_.ForEach(snapshot.snapshot(), [&](const Document& doc) {
    if (doc.time >= expired_before) sink(doc);
    progress.Add(1);
    return Status::OK();
  });
  progress.Finish();
  return s;
}

namespace {

// Whether `id` is in `ids` (ascending).
bool Among(std::span<const DocumentId> ids, DocumentId id) {
  return !ids.empty() && std::binary_search(ids.begin(), ids.end(), id);
}

}  // namespace

Status Scanner::FindAll(int k, double min_similarity, DocumentTime expired_before,
                        const std::function<void(const NearPair&)>& sink,
                        const ScanOptions& scan) const {
  std::mutex sink_mu;
  rocksdb::ManagedSnapshot snapshot(&db_, WholeSnapshot());
  Result<bool> any_signed = documents_.AnySigned(snapshot.snapshot());
  if (!any_signed.ok()) return any_signed.status();
  Result<std::vector<DocumentId>> expired =
      times_.DocumentsBefore(snapshot.snapshot(), expired_before);
  if (!expired.ok()) return expired.status();
  Status failed;  // the first failed read of signatures, under sink_mu
  Status s =
      ScanRunsAt(scan, snapshot.snapshot(), [&](std::size_t t, std::span<const TableEntry> run) {
        std::vector<NearPair> pairs;
        ForEachPairInRun(run, plan_, t, k, [&](const NearPair& p) {
          if (!Among(*expired, p.first) && !Among(*expired, p.second)) pairs.push_back(p);
        });
        if (pairs.empty()) return;
        Status read;
        if (*any_signed) {  // else every pair stands on its distance
          Result<RunSignatures> signatures =
              ReadRunSignatures(documents_, snapshot.snapshot(), run);
          if (signatures.ok()) {
            KeepConfirmed(pairs, *signatures, min_similarity);
          } else {
            read = signatures.status();
          }
        }
        std::lock_guard lock(sink_mu);
        if (!read.ok() && failed.ok()) failed = read;
        if (!failed.ok()) return;
        for (const NearPair& p : pairs) sink(p);
      });
  return s.ok() ? failed : s;
}

Status Scanner::Clusters(int k, double min_similarity, DocumentTime expired_before,
                         const std::function<void(std::span<const DocumentId>)>& sink,
                         const ScanOptions& scan) const {
  std::mutex sets_mu;
  DisjointSets sets;
  rocksdb::ManagedSnapshot snapshot(&db_, WholeSnapshot());
  Result<bool> any_signed = documents_.AnySigned(snapshot.snapshot());
  if (!any_signed.ok()) return any_signed.status();
  Result<std::vector<DocumentId>> expired =
      times_.DocumentsBefore(snapshot.snapshot(), expired_before);
  if (!expired.ok()) return expired.status();
  Status failed;  // the first failed read of signatures, under sets_mu
  Status s =
      ScanRunsAt(scan, snapshot.snapshot(), [&](std::size_t t, std::span<const TableEntry> run) {
        std::vector<std::pair<DocumentId, DocumentId>> edges;
        std::optional<Result<RunSignatures>> signatures;  // read at the run's first link
        auto read = [&]() -> const RunSignatures* {
          if (!signatures) {
            signatures.emplace(*any_signed ? ReadRunSignatures(documents_, snapshot.snapshot(), run)
                                           : RunSignatures());
          }
          return signatures->ok() ? &**signatures : nullptr;
        };
        // By reference: most runs link nothing, and a std::function holding the lambda itself
        // would allocate for each.
        AddClusterEdges(run, plan_, t, k, min_similarity, std::ref(read), edges);
        if (!expired->empty()) {
          std::erase_if(edges, [&](const std::pair<DocumentId, DocumentId>& e) {
            return Among(*expired, e.first) || Among(*expired, e.second);
          });
        }
        const bool read_failed = signatures && !signatures->ok();
        if (edges.empty() && !read_failed) return;
        std::lock_guard lock(sets_mu);
        if (read_failed && failed.ok()) failed = signatures->status();
        for (auto [a, b] : edges) sets.Union(a, b);
      });
  if (!s.ok()) return s;
  if (!failed.ok()) return failed;
  sets.ForEachSet(sink);
  return Status::OK();
}

}  // namespace fpstore::internal
