// Queries of the RocksDB-backed store: a prefix range per table, the staged
// documents' index, then the matches' document records.

#include <algorithm>
#include <bit>
#include <chrono>
#include <exception>
#include <optional>
#include <utility>

#include "store/read_pool.h"
#include "store/store_impl.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

namespace {

// How queries read the tables. fpstore deletes no ranges from them; left
// on, range deletions cost every read a check.
rocksdb::ReadOptions TableReadOptions(const rocksdb::Snapshot* snapshot) {
  rocksdb::ReadOptions options;
  options.ignore_range_deletions = true;
  options.snapshot = snapshot;
  return options;
}

}  // namespace

Result<bool> StoreImpl::ReadGroup(std::size_t t, const GroupReads& groups, Fingerprint permuted,
                                  rocksdb::PinnableSlice& value) const {
  const TablePermutation& perm = plan_.table(t);
  const GroupLayout layout = group_layout(t);
  const GroupLayout::Key key = layout.KeyOf(permuted);
  const rocksdb::Slice key_slice(key.data(), layout.key_bytes());
  rocksdb::ReadOptions ro = TableReadOptions(groups.snapshot);
  if (groups.filter->files() <= 1) {
    const rocksdb::Status s = db_->Get(ro, table(t), key_slice, &value);
    if (s.IsNotFound()) return false;
    if (!s.ok()) return FromRocks(s, "reading " + TableFamilyName(t));
    return true;
  }
  // Merges and removals write operands for nearly every group, so the
  // group is in every file: a read that passes by the files whose filters
  // show no change to a member with the prefix reads a block of a few.
  ro.table_filter = [&](const rocksdb::TableProperties& file) {
    return FileMayTouch(file, layout, perm.prefix_mask(), permuted);
  };
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, table(t)));
  it->Seek(key_slice);
  if (!it->Valid() || it->key() != key_slice) {
    if (it->status().ok()) return false;
    return FromRocks(it->status(), "reading " + TableFamilyName(t));
  }
  value.PinSelf(it->value());
  return true;
}

Status StoreImpl::ScanGroup(const GroupReads& groups, std::size_t t, Fingerprint query, int k,
                            std::vector<Hit>& hits) const {
  const TablePermutation& perm = plan_.table(t);
  const Fingerprint permuted_query = perm.Apply(query);
  // Most probes of a crawler find nothing: the files' member filters tell
  // without reading a group. The probe's prefix lies in one group (G <= p).
  if (!groups.filter->MayContain(permuted_query)) return Status::OK();
  rocksdb::PinnableSlice read;
  Result<bool> found = ReadGroup(t, groups, permuted_query, read);
  if (!found.ok()) return found.status();
  if (!*found) return Status::OK();
  const GroupLayout layout = group_layout(t);
  const std::string_view value = read.ToStringView();
  const Fingerprint prefix = permuted_query & perm.prefix_mask();
  const Fingerprint group = layout.GroupOf(permuted_query);
  const std::optional<std::size_t> first = FirstMemberAtLeast(layout, group, value, prefix);
  if (!first) {
    return Status::Corruption(TableFamilyName(t) + " holds a malformed group of " +
                              std::to_string(perm.Invert(group)));
  }
  const std::size_t width = layout.member_bytes();
  for (std::size_t i = *first; i < value.size() / width; ++i) {
    const char* member = value.data() + i * width;
    const Fingerprint permuted = layout.MemberAt(group, member);
    if ((permuted & perm.prefix_mask()) != prefix) break;
    const int d = HammingDistance(permuted, permuted_query);
    if (d > k) continue;
    const Fingerprint fp = perm.Invert(permuted);
    if (plan_.FirstSharedTable(query, fp) == static_cast<int>(t)) {
      // Table 0's members name their documents; the others' are resolved
      // through it.
      if (layout.keeps_ids()) {
        hits.push_back({layout.IdAt(member), fp, d, /*by_fingerprint=*/false, 0});
      } else {
        hits.push_back({0, fp, d, /*by_fingerprint=*/true, 0});
      }
    }
  }
  return Status::OK();
}

Status StoreImpl::ForEachIdOf(rocksdb::Iterator& table0, Fingerprint fingerprint,
                              const std::function<bool(DocumentId)>& found) const {
  const Fingerprint permuted = plan_.table(0).Apply(fingerprint);
  // The fingerprint's documents are a run of members of one group.
  const GroupLayout layout = group_layout(0);
  const GroupLayout::Key key = layout.KeyOf(permuted);
  const rocksdb::Slice key_slice(key.data(), layout.key_bytes());
  // Callers that go through fingerprints in table 0's order find the
  // iterator on their group already, its operands folded.
  if (!table0.Valid() || table0.key() != key_slice) table0.Seek(key_slice);
  if (!table0.Valid() || table0.key() != key_slice) {
    if (table0.status().ok()) return Status::OK();
    return FromRocks(table0.status(), "reading " + TableFamilyName(0));
  }
  const std::string_view value = table0.value().ToStringView();
  const Fingerprint group = layout.GroupOf(permuted);
  const std::optional<std::size_t> first = FirstMemberAtLeast(layout, group, value, permuted);
  if (!first) {
    return Status::Corruption(TableFamilyName(0) + " holds a malformed group " +
                              table0.key().ToString(true));
  }
  const std::size_t width = layout.member_bytes();
  for (std::size_t i = *first; i < value.size() / width; ++i) {
    const char* member = value.data() + i * width;
    if (layout.MemberAt(group, member) != permuted || !found(layout.IdAt(member))) break;
  }
  return Status::OK();
}

Status StoreImpl::ReadLoneBits(std::span<Hit> hits, const rocksdb::Snapshot* snapshot) const {
  const TablePermutation& perm0 = plan_.table(0);
  std::vector<Fingerprint> keys;  // the crowded family's: as table 0 permutes them
  keys.reserve(hits.size());
  for (const Hit& h : hits) keys.push_back(perm0.Apply(h.fingerprint));
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  // Most fingerprints are alone everywhere, and not there.
  std::vector<LoneBits> lone(keys.size(), AllLoneBits(plan_.table_count()));
  Status s = MultiGetIds(crowded_family(), snapshot, keys, [&](std::size_t i, std::string_view v) {
    lone[i] = DecodeLoneBits(v);
    return Status::OK();
  });
  if (!s.ok()) return s;
  for (Hit& h : hits) {
    const auto at = std::lower_bound(keys.begin(), keys.end(), perm0.Apply(h.fingerprint));
    h.lone = lone[at - keys.begin()];
  }
  return Status::OK();
}

Status StoreImpl::ResolveIds(std::vector<Hit>& hits, const rocksdb::Snapshot* snapshot,
                             std::unique_ptr<rocksdb::Iterator>& table0) const {
  if (std::none_of(hits.begin(), hits.end(), [](const Hit& h) { return h.by_fingerprint; })) {
    return Status::OK();
  }
  if (table0 == nullptr) {
    table0.reset(db_->NewIterator(TableReadOptions(snapshot), table(0)));
  }
  std::vector<Hit> resolved;
  resolved.reserve(hits.size());
  for (const Hit& h : hits) {
    if (!h.by_fingerprint) {
      resolved.push_back(h);
      continue;
    }
    const std::size_t before = resolved.size();
    Status s = ForEachIdOf(*table0, h.fingerprint, [&](DocumentId id) {
      resolved.push_back({id, h.fingerprint, h.distance, false, h.lone});
      return true;
    });
    if (!s.ok()) return s;
    if (resolved.size() == before) {
      return Status::Corruption("a table holds fingerprint " + std::to_string(h.fingerprint) +
                                ", which no document in " + TableFamilyName(0) + " has");
    }
  }
  hits = std::move(resolved);
  return Status::OK();
}

Status StoreImpl::FindStaged(std::span<const Fingerprint> queries, int k,
                             const rocksdb::Snapshot* snapshot,
                             std::vector<std::vector<Hit>>& hits) const {
  struct Candidate {
    std::size_t query;
    Hit hit;
  };
  std::vector<Candidate> candidates;
  for (const StagingIndex* index : {merging_.get(), staging_.get()}) {
    if (index == nullptr || index->size() == 0) continue;
    for (std::size_t i = 0; i < queries.size(); ++i) {
      index->ForEachWithin(queries[i], k, [&](DocumentId id, Fingerprint fp, int d) {
        candidates.push_back({i, {id, fp, d}});
      });
    }
  }
  if (candidates.empty()) return Status::OK();
  // An index keeps superseded entries: only what the staging family holds
  // at the snapshot counts, once per query.
  std::sort(candidates.begin(), candidates.end(), [](const Candidate& a, const Candidate& b) {
    return a.hit.id != b.hit.id ? a.hit.id < b.hit.id : a.query < b.query;
  });
  std::vector<DocumentId> ids;
  for (const Candidate& c : candidates) {
    if (ids.empty() || ids.back() != c.hit.id) ids.push_back(c.hit.id);
  }
  Result<std::vector<StagingMark>> marks = StagingMarks(snapshot, ids);
  if (!marks.ok()) return marks.status();
  std::size_t at = 0;
  const Candidate* accepted = nullptr;
  for (const Candidate& c : candidates) {
    while (ids[at] != c.hit.id) ++at;
    if ((*marks)[at].staged != c.hit.fingerprint) continue;
    if (accepted != nullptr && accepted->hit.id == c.hit.id && accepted->query == c.query) continue;
    hits[c.query].push_back(c.hit);
    accepted = &c;
  }
  return Status::OK();
}

Result<std::vector<Match>> StoreImpl::ToMatches(std::vector<Hit> hits,
                                                const rocksdb::Snapshot* snapshot) const {
  std::sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) {
    return a.distance != b.distance ? a.distance < b.distance : a.id < b.id;
  });
  std::vector<DocumentKey> keys;
  keys.reserve(hits.size());
  for (const Hit& h : hits) keys.push_back(EncodeDocumentKey(h.id));
  std::vector<rocksdb::Slice> slices;
  for (const DocumentKey& key : keys) slices.push_back(AsSlice(key));
  std::vector<rocksdb::PinnableSlice> values(hits.size());
  std::vector<rocksdb::Status> statuses(hits.size());
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  db_->MultiGet(ro, documents_family(), slices.size(), slices.data(), values.data(),
                statuses.data());
  std::vector<Match> matches;
  matches.reserve(hits.size());
  // Hits whose record is gone (false) or moved on (true): table entries
  // that a staged removal takes out at the next merge, or else corruption.
  std::vector<std::pair<std::size_t, bool>> stale;
  for (std::size_t i = 0; i < hits.size(); ++i) {
    if (!statuses[i].ok() && !statuses[i].IsNotFound()) {
      return FromRocks(statuses[i], "reading document " + std::to_string(hits[i].id));
    }
    Match m{hits[i].id, hits[i].fingerprint, hits[i].distance, {}};
    Fingerprint stored;
    if (statuses[i].IsNotFound() ||
        !DecodeDocumentValue(values[i].ToStringView(), &stored, &m.metadata) ||
        stored != m.fingerprint) {
      stale.emplace_back(i, !statuses[i].IsNotFound());
      continue;
    }
    // A version back at the fingerprint its entries still have is found
    // there and in staging: once.
    if (!matches.empty() && matches.back().id == m.id) continue;
    matches.push_back(std::move(m));
  }
  if (Status s = CheckLeaving(hits, stale, snapshot); !s.ok()) return s;
  return matches;
}

Status StoreImpl::CheckLeaving(std::span<const Hit> hits,
                               std::span<const std::pair<std::size_t, bool>> stale,
                               const rocksdb::Snapshot* snapshot) const {
  if (stale.empty()) return Status::OK();
  std::vector<DocumentId> ids;
  for (const auto& [i, has_record] : stale) ids.push_back(hits[i].id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  Result<std::vector<StagingMark>> marks = StagingMarks(snapshot, ids);
  if (!marks.ok()) return marks.status();
  for (const auto& [i, has_record] : stale) {
    const std::size_t at = std::lower_bound(ids.begin(), ids.end(), hits[i].id) - ids.begin();
    if ((*marks)[at].leaving != hits[i].fingerprint) {
      return Status::Corruption(
          "table entry for document " + std::to_string(hits[i].id) +
          (has_record ? " disagrees with its document record" : " has no document record"));
    }
  }
  return Status::OK();
}

Result<std::vector<Match>> StoreImpl::Query(Fingerprint fingerprint, int k) const {
  Result<std::vector<std::vector<Match>>> batch = QueryBatch(std::span(&fingerprint, 1), k);
  if (!batch.ok()) return batch.status();
  return std::move((*batch)[0]);
}

Result<std::vector<std::vector<Match>>> StoreImpl::QueryBatch(
    std::span<const Fingerprint> fingerprints, int k) const {
  std::shared_lock shared(ingest_mu_);
  return QueryBatchLocked(fingerprints, k);
}

Result<std::vector<std::vector<Match>>> StoreImpl::QueryBatchLocked(
    std::span<const Fingerprint> fingerprints, int k) const {
  if (Status s = CheckDistance(k); !s.ok()) return s;
  // One snapshot for every table, the staging marks and the documents: a
  // document being replaced is seen either before or after, never
  // half-way (found twice, or in no table).
  rocksdb::ManagedSnapshot snapshot(db_.get());
  return QueryTables(fingerprints, k, snapshot.snapshot());
}

namespace {

template <typename T>
std::size_t HitCount(const std::vector<std::vector<T>>& hits) {
  std::size_t n = 0;
  for (const std::vector<T>& h : hits) n += h.size();
  return n;
}

}  // namespace

void StoreImpl::MarkSkippable(Fingerprint query, std::span<const Hit> found, std::size_t t,
                              LoneBits& skip) const {
  // Only tables after t (t < 32 here) that the plan has: a corrupt value's
  // bits past them must not name a table.
  const LoneBits later = t + 1 < RecentPrefixes::kMaxTables
                             ? ~((LoneBits{2} << t) - 1) & AllLoneBits(plan_.table_count())
                             : 0;
  for (const Hit& h : found) {
    for (LoneBits bits = h.lone & later & ~skip; bits != 0; bits &= bits - 1) {
      const auto u = static_cast<std::size_t>(std::countr_zero(bits));
      const TablePermutation& perm = plan_.table(u);
      const Fingerprint prefix = perm.Apply(query) & perm.prefix_mask();
      if (prefix == (perm.Apply(h.fingerprint) & perm.prefix_mask()) &&
          !recent_.MayHold(u, prefix)) {
        skip |= LoneBits{1} << u;
      }
    }
  }
}

Status StoreImpl::ProbeTable(const GroupReads& groups, std::size_t t,
                             std::span<const Fingerprint> fingerprints, int k,
                             std::span<const LoneBits> skip,
                             std::vector<std::vector<Hit>>& hits) const {
  const TablePermutation& perm = plan_.table(t);
  auto skipped = [&](std::size_t i) {
    return t < RecentPrefixes::kMaxTables && (skip[i] >> t & 1) != 0;
  };
  if (fingerprints.size() == 1) {
    return skipped(0) ? Status::OK() : ScanGroup(groups, t, fingerprints[0], k, hits[0]);
  }
  // Probes in key order keep the iterator moving forward through the table.
  std::vector<std::size_t> order(fingerprints.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return perm.Apply(fingerprints[a]) < perm.Apply(fingerprints[b]);
  });
  for (std::size_t i : order) {
    if (skipped(i)) continue;
    if (Status s = ScanGroup(groups, t, fingerprints[i], k, hits[i]); !s.ok()) return s;
  }
  return Status::OK();
}

void StoreImpl::WarmRecordsOf(const std::vector<std::vector<Hit>>& hits,
                              const rocksdb::Snapshot* snapshot) const {
  std::vector<DocumentId> ids;
  std::unique_ptr<rocksdb::Iterator> table0;
  for (std::vector<Hit> resolved : hits) {
    if (!ResolveIds(resolved, snapshot, table0).ok()) return;
    for (const Hit& h : resolved) ids.push_back(h.id);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  (void)MultiGetIds(documents_family(), snapshot, ids,
                    [](std::size_t, std::string_view) { return Status::OK(); });
}

Status StoreImpl::ProbeTablesInParallel(std::size_t first, const TableFilters::View& filters,
                                        std::span<const Fingerprint> fingerprints, int k,
                                        std::span<const LoneBits> skip,
                                        const rocksdb::Snapshot* snapshot,
                                        std::vector<std::vector<Hit>>& hits) const {
  const std::size_t count = plan_.table_count() - first;
  std::vector<std::vector<std::vector<Hit>>> found(
      count, std::vector<std::vector<Hit>>(fingerprints.size()));
  std::vector<Status> statuses(count);
  // Task 0, which the calling thread takes first, warms the records of the
  // documents found so far: reading them after the tables would wait on the
  // device once or twice more (table 0 for their ids, then the records).
  read_pool_.Run(count + 1, [&](std::size_t task) {
    // The pool's tasks must not throw: running out of memory fails the
    // query if a table's probes did, and only skips the warming if it did.
    try {
      if (task == 0) {
        WarmRecordsOf(hits, snapshot);
      } else {
        const std::size_t t = first + task - 1;
        statuses[task - 1] =
            ProbeTable({(*filters)[t].get(), snapshot}, t, fingerprints, k, skip, found[task - 1]);
      }
    } catch (const std::exception& e) {
      if (task > 0) {
        statuses[task - 1] = Status::IOError(std::string("reading the tables: ") + e.what());
      }
    }
  });
  for (std::size_t i = 0; i < count; ++i) {
    if (!statuses[i].ok()) return statuses[i];
    for (std::size_t q = 0; q < fingerprints.size(); ++q) {
      hits[q].insert(hits[q].end(), found[i][q].begin(), found[i][q].end());
    }
  }
  return Status::OK();
}

Result<std::vector<std::vector<Match>>> StoreImpl::QueryTables(
    std::span<const Fingerprint> fingerprints, int k, const rocksdb::Snapshot* snapshot) const {
  // One view of the tables' filters for the whole query, read after the
  // snapshot: a merge publishes its files' filters
  // before they go in, a bulk load while the caller waits (ingest_mu_), so
  // the view has those of every file they can see.
  const TableFilters::View filters = table_filters_->Current();
  std::vector<std::vector<Hit>> hits(fingerprints.size());
  // Table by table on this thread while the blocks come from memory; once
  // a table's probes waited on the device (they were slow, and the thread
  // read from it) and found a document, which others near it are likely to
  // share, the other tables side by side (read_pool.h). A probe that waited
  // and found nothing was most likely a prefix filter's false positive:
  // handing off the rest cost cold misses more than it saved.
  std::size_t found = 0;
  // Hits' lone bits read as soon as they are found, which may spare the
  // query tables still to come (MarkSkippable).
  const bool lone_bits = !recent_.full();
  std::vector<LoneBits> skip(fingerprints.size(), 0);
  std::vector<std::size_t> marked(fingerprints.size(), 0);  // hits[i] seen by MarkSkippable
  // One clock reading per table: each table's end is the next one's start.
  auto start = std::chrono::steady_clock::now();
  for (std::size_t t = 0; t < plan_.table_count(); ++t) {
    if (Status s = ProbeTable({(*filters)[t].get(), snapshot}, t, fingerprints, k, skip, hits);
        !s.ok()) {
      return s;
    }
    const auto end = std::chrono::steady_clock::now();
    const auto took = end - std::exchange(start, end);
    const std::size_t found_before = std::exchange(found, HitCount(hits));
    const bool hand_off = t + 1 < plan_.table_count() && found > found_before &&
                          ProbesWaitedOnDevice(took, fingerprints.size());
    if (lone_bits && found > found_before && t + 1 < RecentPrefixes::kMaxTables &&
        t + 1 < plan_.table_count()) {
      for (std::size_t i = 0; i < fingerprints.size(); ++i) {
        if (hits[i].size() == marked[i]) continue;
        std::vector<Hit> fresh(hits[i].begin() + marked[i], hits[i].end());
        // The crowded family is small, and its filters in memory: most
        // fingerprints are not there, and need no read.
        if (Status s = ReadLoneBits(fresh, snapshot); !s.ok()) return s;
        MarkSkippable(fingerprints[i], fresh, t, skip[i]);
        hits[i].resize(marked[i]);
        hits[i].insert(hits[i].end(), fresh.begin(), fresh.end());
        marked[i] = hits[i].size();
      }
      found = HitCount(hits);
      start = std::chrono::steady_clock::now();  // the bits' reads are not the next table's
    }
    if (hand_off) {
      Status s = ProbeTablesInParallel(t + 1, filters, fingerprints, k, skip, snapshot, hits);
      if (!s.ok()) return s;
      break;
    }
  }
  // Fingerprints found in tables without ids, to their documents.
  std::unique_ptr<rocksdb::Iterator> table0;
  for (std::vector<Hit>& h : hits) {
    if (Status s = ResolveIds(h, snapshot, table0); !s.ok()) return s;
  }
  if (Status s = FindStaged(fingerprints, k, snapshot, hits); !s.ok()) return s;
  std::vector<std::vector<Match>> results;
  results.reserve(hits.size());
  for (std::vector<Hit>& h : hits) {
    Result<std::vector<Match>> matches = ToMatches(std::move(h), snapshot);
    if (!matches.ok()) return matches.status();
    results.push_back(*std::move(matches));
  }
  return results;
}

}  // namespace fpstore::internal
