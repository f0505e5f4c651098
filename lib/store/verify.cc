// Store::Verify: the tables against the documents, in constant memory
// unless something is off (docs/design.md, "Where CRoaring earns its place").

#include <xxhash.h>

#include <algorithm>
#include <mutex>
#include <roaring/roaring64map.hh>
#include <unordered_map>

#include "store/store_impl.h"
#include "util/parallel.h"
#include "util/rocks_status.h"

// CRoaring declares its C++ classes in namespace roaring from 0.3 on, and
// globally before (Debian 12 ships 0.2.66); this reaches them either way.
namespace roaring {}

namespace fpstore::internal {

using namespace ::roaring;  // NOLINT(google-build-using-namespace)

namespace {

// A table-0 entry's hash: its permuted fingerprint and id.
std::uint64_t EntryHash(Fingerprint permuted, DocumentId id) {
  const std::uint64_t entry[2] = {permuted, id};
  return XXH3_64bits(entry, sizeof entry);
}

// A table without ids hashes each entry's fingerprint, unpermuted, so that
// one sum over table 0's fingerprints is what every such table must match.
std::uint64_t FingerprintHash(Fingerprint fp) { return XXH3_64bits(&fp, sizeof fp); }

}  // namespace

void StoreImpl::FingerprintTableProblems(std::size_t t, const rocksdb::Snapshot* snapshot,
                                         const std::function<void(std::string)>& problem) const {
  const TablePermutation& perm = plan_.table(t);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ScanReadOptions(snapshot), table(t)));
  std::unique_ptr<rocksdb::Iterator> table0(
      db_->NewIterator(LookupReadOptions(snapshot), table(0)));
  std::size_t found = 0;
  // False once table 0 cannot be read: nothing more can be told.
  auto check_held = [&](Fingerprint permuted) {
    const Fingerprint fp = perm.Invert(permuted);
    bool held = false;
    Status s = ForEachIdOf(*table0, fp, [&](DocumentId) { return !(held = true); });
    if (!s.ok()) {
      problem(s.ToString());
      return false;
    }
    if (!held) {
      ++found;
      problem(TableFamilyName(t) + ": fingerprint " + std::to_string(fp) +
              ", which no document in the tables has");
    }
    return true;
  };
  // A malformed group ends the walk: its members cannot be told apart.
  {
    TableEntryCursor entries(*it, group_layout(t), TableFamilyName(t));
    for (entries.SeekToFirst(); entries.Valid(); entries.Next()) {
      if (!check_held(entries.entry().permuted)) return;
    }
    if (Status s = entries.status(); !s.ok()) {
      ++found;
      problem(s.ToString());
    }
  }
  // And the other way: every fingerprint of table 0 has its entry here. (A
  // malformed entry of table 0 ends the walk: table 0's own problem.)
  it.reset(db_->NewIterator(LookupReadOptions(snapshot), table(t)));
  table0.reset(db_->NewIterator(ScanReadOptions(snapshot), table(0)));
  TableEntryCursor entries(*it, group_layout(t), TableFamilyName(t));
  TableEntryCursor entries0(*table0, group_layout(0), TableFamilyName(0));
  for (entries0.SeekToFirst(); entries0.Valid(); entries0.Next()) {
    const TableEntry& e = entries0.entry();
    const Fingerprint fp = plan_.table(0).Invert(e.permuted);
    entries.Seek(perm.Apply(fp));
    if (entries.Valid() && entries.entry().permuted == perm.Apply(fp)) continue;
    ++found;
    if (Status s = entries.status(); !s.ok()) return problem(s.ToString());
    problem(TableFamilyName(t) + ": fingerprint " + std::to_string(fp) + " of document " +
            std::to_string(e.id) + " has no entry");
  }
  if (found == 0) problem(TableFamilyName(t) + ": entry hashes disagree with table 0");
}

Status StoreImpl::Verify(const ScanOptions& scan) const {
  if (Status s = CheckOpen(); !s.ok()) return s;
  if (Status s = FromRocks(db_->VerifyChecksum(), "verifying block checksums"); !s.ok()) {
    return Status::Corruption(s.message());
  }
  TableFilters::View filters;
  rocksdb::ManagedSnapshot snapshot(db_.get(), WholeSnapshot(&filters));
  const std::size_t tables = plan_.table_count();
  std::vector<std::string> problems;
  auto problem = [&](std::string what) {
    if (problems.size() < 20) problems.push_back(std::move(what));
  };

  // What table 0 should hold, summarised as a count and an
  // order-independent sum of entry hashes, so that it can be checked while
  // streaming, in constant memory; the other tables must hold its distinct
  // fingerprints.
  std::uint64_t documents = 0;
  std::uint64_t expected_sum = 0;
  // Documents that have entries in the tables: all but the staged ones,
  // and the versions whose removal is staged.
  Roaring64Map ids;
  Result<std::vector<StagedDocument>> staged = StagedDocuments(snapshot.snapshot());
  if (!staged.ok()) return staged.status();
  std::unordered_map<DocumentId, Fingerprint> staged_fps, leaving_fps;
  for (const StagedDocument& doc : *staged) {
    if (!doc.removal) staged_fps.emplace(doc.id, doc.fingerprint);
    if (doc.leaving) leaving_fps.emplace(doc.id, *doc.leaving);
  }
  {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(ScanReadOptions(snapshot.snapshot()), documents_family()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      Fingerprint fp;
      if (it->key().size() != 8 || !DecodeDocumentValue(it->value().ToStringView(), &fp, nullptr)) {
        problem("documents: malformed record with key " + it->key().ToString(true));
        continue;
      }
      const DocumentId id = GetBigEndian64(it->key().data());
      ++documents;
      if (leaving_fps.contains(id) && !staged_fps.contains(id)) {
        problem("staging: the removal of document " + std::to_string(id) +
                " is staged, but it is stored");
      }
      if (auto mark = staged_fps.find(id); mark != staged_fps.end()) {
        if (mark->second != fp) {
          problem("staging: the mark of document " + std::to_string(id) +
                  " does not match its fingerprint");
        }
        staged_fps.erase(mark);
        continue;
      }
      ids.add(id);
      expected_sum += EntryHash(plan_.table(0).Apply(fp), id);
    }
    if (!it->status().ok()) return FromRocks(it->status(), "scanning documents");
  }
  for (const auto& [id, fp] : staged_fps) {
    problem("staging: mark for document " + std::to_string(id) + ", which is not stored");
  }
  for (const auto& [id, fp] : leaving_fps) {
    ids.add(id);
    expected_sum += EntryHash(plan_.table(0).Apply(fp), id);
  }
  const std::uint64_t in_tables = ids.cardinality();

  // The fingerprints lone bits need not hold against (recent_prefixes.h).
  std::vector<Fingerprint> recent;
  {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(ScanReadOptions(snapshot.snapshot()), recent_family()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (it->key().size() != 8) {
        problem("recent: malformed key " + it->key().ToString(true));
        continue;
      }
      recent.push_back(GetBigEndian64(it->key().data()));
    }
    if (!it->status().ok()) return FromRocks(it->status(), "scanning the recent family");
  }
  {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(ScanReadOptions(snapshot.snapshot()), crowded_family()));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      if (it->key().size() != 8 || it->value().size() > 4) {
        problem(std::string(kCrowdedFamily) + ": malformed entry " + it->key().ToString(true));
      } else if ((DecodeLoneBits(it->value().ToStringView()) & ~AllLoneBits(tables)) != 0) {
        problem(std::string(kCrowdedFamily) + ": fingerprint " +
                std::to_string(plan_.table(0).Invert(GetBigEndian64(it->key().data()))) +
                " has lone bits for tables the plan does not have");
      }
    }
    if (!it->status().ok()) return FromRocks(it->status(), "scanning the crowded family");
  }
  std::mutex problem_mu;

  std::vector<std::uint64_t> actual_sum(tables, 0), actual_count(tables, 0);
  ProgressMeter progress(scan, documents + in_tables * tables);
  progress.Add(documents);
  // Table 0's distinct fingerprints, for the tables without ids.
  std::uint64_t fingerprint_sum = 0, fingerprint_count = 0;
  Status s = ForEachInParallel(tables, scan.threads, [&](std::size_t t, int) {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(ScanReadOptions(snapshot.snapshot()), table(t)));
    const TablePermutation& perm = plan_.table(t);
    Fingerprint last = 0;
    // The fingerprints of the prefix being read, for the lone bits.
    const bool check_lone = t < RecentPrefixes::kMaxTables;
    std::vector<Fingerprint> group;
    auto check_group = [&]() -> Status {
      // No member may be marked alone here, unless one of them is recent:
      // queries then trust no member's bit for this prefix.
      if (group.size() < 2) return Status::OK();
      for (Fingerprint fp : group) {
        if (std::binary_search(recent.begin(), recent.end(), fp)) return Status::OK();
      }
      std::vector<Hit> hits;
      for (Fingerprint fp : group) hits.push_back({0, fp, 0, true, 0});
      if (Status s = ReadLoneBits(hits, snapshot.snapshot()); !s.ok()) return s;
      for (const Hit& h : hits) {
        if ((h.lone >> t & 1) == 0) continue;
        std::lock_guard lock(problem_mu);
        problem(std::string(kCrowdedFamily) + ": fingerprint " + std::to_string(h.fingerprint) +
                " is marked alone with its prefix in " + TableFamilyName(t) +
                ", where other fingerprints share it");
      }
      return Status::OK();
    };
    auto track_lone = [&](const TableEntry& e) -> Status {
      const Fingerprint fp = perm.Invert(e.permuted);
      if (!group.empty() &&
          (perm.Apply(group.back()) & perm.prefix_mask()) != (e.permuted & perm.prefix_mask())) {
        if (Status s = check_group(); !s.ok()) return s;
        group.clear();
      }
      if (group.empty() || group.back() != fp) group.push_back(fp);
      return Status::OK();
    };
    // Table 0's distinct fingerprints, in its (permuted) order.
    auto track_fingerprint = [&](const TableEntry& e) {
      if (fingerprint_count != 0 && e.permuted == last) return;
      last = e.permuted;
      fingerprint_sum += FingerprintHash(perm.Invert(e.permuted));
      ++fingerprint_count;
    };
    const TableMemberFilter& filter = *(*filters)[t];
    TableEntryCursor entries(*it, group_layout(t), TableFamilyName(t));
    for (entries.SeekToFirst(); entries.Valid(); entries.Next()) {
      const TableEntry& e = entries.entry();
      if (t == 0) {
        actual_sum[t] += EntryHash(e.permuted, e.id);
        track_fingerprint(e);
      } else {
        actual_sum[t] += FingerprintHash(perm.Invert(e.permuted));
      }
      if (++actual_count[t] % 4096 == 0) progress.Add(4096);
      if (!filter.MayContain(e.permuted)) {
        std::lock_guard lock(problem_mu);
        problem(TableFamilyName(t) + ": fingerprint " + std::to_string(perm.Invert(e.permuted)) +
                " is missing from its files' member filters");
      }
      if (check_lone) {
        if (Status s = track_lone(e); !s.ok()) return s;
      }
    }
    if (Status s = entries.status(); !s.ok()) {
      if (!s.IsCorruption()) return s;
      std::lock_guard lock(problem_mu);
      problem(s.message());
    }
    return check_group();
  });
  progress.Finish();
  if (!s.ok()) return s;
  // Table 0 against the documents; the others against table 0's distinct
  // fingerprints (each checked against the documents) once.
  std::vector<std::uint64_t> expected_sum_of(tables, fingerprint_sum);
  std::vector<std::uint64_t> expected_count(tables, fingerprint_count);
  expected_sum_of[0] = expected_sum;
  expected_count[0] = in_tables;

  for (std::size_t t = 0; t < tables; ++t) {
    if (actual_count[t] == expected_count[t] && actual_sum[t] == expected_sum_of[t]) continue;
    // Something is off: find out what, entry by entry.
    if (t != 0) {
      FingerprintTableProblems(t, snapshot.snapshot(), problem);
      continue;
    }
    std::uint64_t orphans = 0, wrong = 0, duplicates = 0;
    Roaring64Map seen;
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(ScanReadOptions(snapshot.snapshot()), table(t)));
    auto check = [&](const TableEntry& e) {
      if (!ids.contains(e.id)) {
        ++orphans;
        problem(TableFamilyName(t) + ": entry for document " + std::to_string(e.id) +
                ", which is not stored or is staged");
        return;
      }
      if (!seen.addChecked(e.id)) {
        ++duplicates;
        problem(TableFamilyName(t) + ": document " + std::to_string(e.id) +
                " has more than one entry");
      }
      // At the snapshot: writers may have changed the document since.
      std::optional<Fingerprint> fp;
      Status read;
      if (const auto l = leaving_fps.find(e.id); l != leaving_fps.end()) {
        fp = l->second;
      } else {
        read = MultiGetIds(documents_family(), snapshot.snapshot(), std::span(&e.id, 1),
                           [&](std::size_t, std::string_view v) {
                             Fingerprint stored;
                             if (DecodeDocumentValue(v, &stored, nullptr)) fp = stored;
                             return Status::OK();
                           });
      }
      if (read.ok() && fp && plan_.table(t).Apply(*fp) != e.permuted) {
        ++wrong;
        problem(TableFamilyName(t) + ": entry for document " + std::to_string(e.id) +
                " does not match its fingerprint");
      }
    };
    {
      // A malformed group ends the walk: its members cannot be told apart.
      TableEntryCursor entries(*it, group_layout(t), TableFamilyName(t));
      for (entries.SeekToFirst(); entries.Valid(); entries.Next()) check(entries.entry());
      if (Status s = entries.status(); !s.ok()) problem(s.ToString());
    }
    const Roaring64Map missing = ids - seen;
    for (auto id = missing.begin(); id != missing.end() && problems.size() < 20; ++id) {
      problem(TableFamilyName(t) + ": document " + std::to_string(*id) + " has no entry");
    }
    if (orphans + wrong + duplicates + missing.cardinality() == 0) {
      problem(TableFamilyName(t) + ": entry hashes disagree with the documents");
    }
  }

  std::string count;
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot.snapshot();
  if (db_->Get(ro, meta(), kDocumentCountKey, &count).ok() || documents > 0) {
    const std::uint64_t recorded = count.size() == 8 ? GetBigEndian64(count.data()) : 0;
    if (recorded != documents) {
      problem("document count record says " + std::to_string(recorded) + ", but " +
              std::to_string(documents) + " documents are stored");
    }
  }
  if (problems.empty()) return Status::OK();
  std::string message = std::to_string(problems.size()) + (problems.size() == 20 ? "+" : "") +
                        " problem(s) in " + path_ + ":";
  for (const std::string& p : problems) message += "\n  " + p;
  return Status::Corruption(message);
}

}  // namespace fpstore::internal
