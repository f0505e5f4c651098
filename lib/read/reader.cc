#include "read/reader.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <optional>
#include <system_error>
#include <utility>

#include "format/families.h"
#include "format/groups.h"
#include "plan/table_entry.h"

namespace fpstore::internal {

Reader::Reader(OpenedStore opened)
    : freed_memory_(opened.options.release_memory_on_close),
      path_(std::move(opened.path)),
      options_(std::move(opened.options)),
      plan_(std::move(opened.plan)),
      fingerprinter_(std::move(opened.fingerprinter)),
      min_similarity_(opened.min_similarity),
      retention_seconds_(opened.retention_seconds),
      env_(std::move(opened.env)),
      db_(std::move(opened.db)),
      families_(std::move(opened.families)),
      documents_(*db_, families_.documents, families_.meta, plan_.bits()),
      times_(*db_, families_.times, documents_),
      tables_(*db_, plan_, opened.group_bits, families_.tables, std::move(opened.filters)),
      staging_(*db_, families_.staging, plan_.distance(), plan_.bits(), options_.staged_documents,
               !options_.read_only) {}

Status Reader::CheckOpen() const {
  return closed_ ? Status::InvalidArgument("the store " + path_ + " is closed") : Status::OK();
}

Result<Matching> Reader::MatchingFor(std::optional<int> distance,
                                     std::optional<double> min_similarity) const {
  if (Status s = CheckOpen(); !s.ok()) return s;
  return internal::MatchingFor(distance, min_similarity, plan_.distance(), min_similarity_);
}

Result<DocumentTime> Reader::ExpiredBefore() const {
  return RetentionCutoffNow(options_.clock, retention_seconds_);
}

Result<Document> Reader::Get(DocumentId id) const {
  if (Status s = CheckOpen(); !s.ok()) return s;
  Result<DocumentTime> expired_before = ExpiredBefore();
  if (!expired_before.ok()) return expired_before.status();
  Result<Document> doc = documents_.Get(id);
  if (doc.ok() && doc->time < *expired_before) {
    return Status::NotFound("document " + std::to_string(id) + " (past the store's retention)");
  }
  return doc;
}

Result<std::vector<Match>> Reader::Query(const Sketch& query, const QueryOptions& options) const {
  Result<std::vector<std::vector<Match>>> batch = QueryBatch(std::span(&query, 1), options);
  if (!batch.ok()) return batch.status();
  return std::move((*batch)[0]);
}

Result<std::vector<std::vector<Match>>> Reader::QueryBatch(std::span<const Sketch> queries,
                                                           const QueryOptions& options) const {
  if (Status s = CheckQueries(queries, plan().bits()); !s.ok()) return s;
  Result<Matching> matching = MatchingFor(options.distance, options.min_similarity);
  if (!matching.ok()) return matching.status();
  // One snapshot for every table, the staging marks and the documents: a document being replaced is
  // seen either before or after, never half-way.
  return Run(queries, matching->distance, matching->min_similarity, staging_.ReadAt());
}

Result<std::vector<std::vector<Match>>> Reader::Run(std::span<const Sketch> queries, int k,
                                                    double min_similarity,
                                                    const Staging::ReadPoint& at) const {
  const rocksdb::Snapshot* const snapshot = at.snapshot();
  std::vector<Word> fingerprint_list;
  fingerprint_list.reserve(queries.size());
  for (const Sketch& q : queries) fingerprint_list.push_back(q.fingerprint);
  const std::span<const Word> fingerprints = fingerprint_list;
  // One filter view, taken after the snapshot: merges and bulk loads publish their files' filters
  // before they ingest them, so the view covers every file the snapshot shows.
  const TableFilters::View filters = tables_.filters().Current();
  Hits hits(fingerprints.size());
  auto hit_count = [&] {
    std::size_t n = 0;
    for (const std::vector<Hit>& h : hits) n += h.size();
    return n;
  };
  // Tables in turn on this thread while blocks come from memory. Once a table's probes wait on the
  // device and find something (likely shared by other tables), the rest go in parallel
  // (read_pool.h); a wait that found nothing was most likely a filter's false positive.
  std::size_t found = 0;
  auto start = std::chrono::steady_clock::now();
  for (std::size_t t = 0; t < plan_.table_count(); ++t) {
    if (Status s = ProbeTable(t, filters, snapshot, fingerprints, k, hits, hits); !s.ok()) return s;
    const auto end = std::chrono::steady_clock::now();
    const std::size_t found_before = std::exchange(found, hit_count());
    if (found != found_before && t + 1 < plan_.table_count() &&
        ProbesWaitedOnDevice(end - start, fingerprints.size())) {
      Status s = ProbeTablesInParallel(t + 1, filters, snapshot, fingerprints, k, hits);
      if (!s.ok()) return s;
      break;
    }
    start = end;
  }
  std::unique_ptr<rocksdb::Iterator> table0;
  for (std::vector<Hit>& h : hits) {
    if (Status s = ResolveIds(h, snapshot, table0); !s.ok()) return s;
  }
  Result<std::vector<Staging::Candidate>> staged = staging_.Within(fingerprints, k, at);
  if (!staged.ok()) return staged.status();
  for (const Staging::Candidate& c : *staged) {
    hits[c.query].push_back({c.id, c.fingerprint, c.distance});
  }
  Result<DocumentTime> expired_before = ExpiredBefore();
  if (!expired_before.ok()) return expired_before.status();
  std::vector<std::vector<Match>> results;
  results.reserve(hits.size());
  for (std::size_t q = 0; q < hits.size(); ++q) {
    Result<std::vector<Match>> matches = ToMatches(
        std::move(hits[q]), snapshot, queries[q].signature, min_similarity, *expired_before);
    if (!matches.ok()) return matches.status();
    results.push_back(*std::move(matches));
  }
  return results;
}

Status Reader::ProbeTable(std::size_t t, const TableFilters::View& filters,
                          const rocksdb::Snapshot* snapshot, std::span<const Word> fingerprints,
                          int k, const Hits& known, Hits& hits) const {
  const TableMemberFilter& filter = *(*filters)[t];
  if (fingerprints.size() == 1) {
    return tables_.Probe(t, filter, snapshot, fingerprints[0], k, known[0], hits[0]);
  }
  // A batch's probes in key order read the table forward.
  const TablePermutation& perm = plan_.table(t);
  std::vector<std::size_t> order(fingerprints.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return Permute(perm, fingerprints[a]) < Permute(perm, fingerprints[b]);
  });
  for (std::size_t i : order) {
    Status s = tables_.Probe(t, filter, snapshot, fingerprints[i], k, known[i], hits[i]);
    if (!s.ok()) return s;
  }
  return Status::OK();
}

Status Reader::ProbeTablesInParallel(std::size_t first, const TableFilters::View& filters,
                                     const rocksdb::Snapshot* snapshot,
                                     std::span<const Word> fingerprints, int k, Hits& hits) const {
  const std::size_t count = plan_.table_count() - first;
  std::vector<Hits> found(count, Hits(fingerprints.size()));
  std::vector<Status> statuses(count);
  // Task 0, taken first by the calling thread, warms the records found so far, overlapping their
  // device reads (table 0 for ids, then records) with the probes. Every task only reads `hits`.
  read_pool_.Run(count + 1, [&](std::size_t task) {
    // Pool tasks must not throw: out of memory fails a probe, and only skips warming.
    try {
      if (task == 0) {
        WarmRecordsOf(hits, snapshot);
      } else {
        statuses[task - 1] =
            ProbeTable(first + task - 1, filters, snapshot, fingerprints, k, hits, found[task - 1]);
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

Status Reader::ResolveIds(std::vector<Hit>& hits, const rocksdb::Snapshot* snapshot,
                          std::unique_ptr<rocksdb::Iterator>& table0) const {
  if (std::none_of(hits.begin(), hits.end(), [](const Hit& h) { return h.by_fingerprint; })) {
    return Status::OK();
  }
  if (table0 == nullptr) {
    rocksdb::ReadOptions ro;
    ro.snapshot = snapshot;
    table0.reset(tables_.NewIterator(0, ro));
  }
  std::vector<Hit> resolved;
  resolved.reserve(hits.size());
  for (const Hit& h : hits) {
    if (!h.by_fingerprint) {
      resolved.push_back(h);
      continue;
    }
    const std::size_t before = resolved.size();
    Status s = tables_.ForEachIdOf(*table0, h.fingerprint, [&](DocumentId id) {
      resolved.push_back({id, h.fingerprint, h.distance, false});
      return true;
    });
    if (!s.ok()) return s;
    if (resolved.size() == before) {
      return Status::Corruption("a table holds fingerprint " + FingerprintText(h.fingerprint) +
                                ", which no document in " + TableFamilyName(0) + " has");
    }
  }
  hits = std::move(resolved);
  return Status::OK();
}

void Reader::WarmRecordsOf(const Hits& hits, const rocksdb::Snapshot* snapshot) const {
  std::vector<DocumentId> ids;
  std::unique_ptr<rocksdb::Iterator> table0;
  for (std::vector<Hit> resolved : hits) {
    if (!ResolveIds(resolved, snapshot, table0).ok()) return;
    for (const Hit& h : resolved) ids.push_back(h.id);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  (void)documents_.Read(snapshot, ids, /*whole=*/false, [](std::size_t, const Document&) {});
}

Result<std::vector<Match>> Reader::ToMatches(std::vector<Hit> hits,
                                             const rocksdb::Snapshot* snapshot,
                                             const Signature& signature, double min_similarity,
                                             DocumentTime expired_before) const {
  std::vector<DocumentId> ids;
  for (const Hit& h : hits) ids.push_back(h.id);
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  std::vector<std::optional<Document>> records(ids.size());
  Status s = documents_.Read(snapshot, ids, /*whole=*/true,
                             [&](std::size_t i, const Document& doc) { records[i] = doc; });
  if (!s.ok()) return s;
  std::sort(hits.begin(), hits.end(), [](const Hit& a, const Hit& b) {
    return a.distance != b.distance ? a.distance < b.distance : a.id < b.id;
  });
  // Hits whose record is gone or has moved on: versions still in the tables whose removal is
  // staged, or else corruption.
  std::vector<std::pair<const Hit*, bool>> stale;  // with whether it has a record
  std::vector<Match> matches;
  matches.reserve(hits.size());
  std::optional<DocumentId> last;  // the last hit's id counted or refused
  for (const Hit& h : hits) {
    const std::optional<Document>& record =
        records[std::lower_bound(ids.begin(), ids.end(), h.id) - ids.begin()];
    if (!record || record->fingerprint != h.fingerprint) {
      stale.emplace_back(&h, record.has_value());
      continue;
    }
    // A version found both in the tables and staged counts once (its hits are adjacent).
    if (std::exchange(last, h.id) == h.id) continue;
    if (record->time < expired_before) continue;  // past the retention
    const std::optional<double> similarity = EstimateSimilarity(signature, record->signature);
    if (similarity && *similarity < min_similarity) continue;  // not confirmed
    matches.push_back(
        {h.id, h.fingerprint, h.distance, record->metadata, similarity, record->time});
  }
  if (stale.empty()) return matches;
  std::vector<DocumentId> stale_ids;
  for (const auto& [h, has_record] : stale) stale_ids.push_back(h->id);
  std::sort(stale_ids.begin(), stale_ids.end());
  stale_ids.erase(std::unique(stale_ids.begin(), stale_ids.end()), stale_ids.end());
  Result<std::vector<StagingMark>> marks = staging_.Marks(snapshot, stale_ids);
  if (!marks.ok()) return marks.status();
  for (const auto& [h, has_record] : stale) {
    const std::size_t at =
        std::lower_bound(stale_ids.begin(), stale_ids.end(), h->id) - stale_ids.begin();
    if ((*marks)[at].leaving != h->fingerprint) {
      return Status::Corruption(
          "table entry for document " + std::to_string(h->id) +
          (has_record ? " disagrees with its document record" : " has no document record"));
    }
  }
  return matches;
}

// ---- The read pool ----

namespace {

constexpr std::chrono::nanoseconds kDefaultSlowProbeTime = std::chrono::microseconds(50);
std::atomic<std::chrono::nanoseconds::rep> slow_probe_nanos{kDefaultSlowProbeTime.count()};

// Whether the calling thread read from the device since it last asked;
// true the first time, and where the kernel keeps no count.
bool ReadFromDeviceSinceLastAsked() {
  static const bool kernel_counts_reads = ::access("/proc/self/io", R_OK) == 0;
  thread_local long last_blocks_read = -1;
  rusage usage;
  if (!kernel_counts_reads || getrusage(RUSAGE_THREAD, &usage) != 0) return true;
  return std::exchange(last_blocks_read, usage.ru_inblock) != usage.ru_inblock;
}

}  // namespace

bool ProbesWaitedOnDevice(std::chrono::nanoseconds took, std::size_t queries) {
  const std::chrono::nanoseconds slow(slow_probe_nanos.load(std::memory_order_relaxed));
  if (slow.count() == 0) return true;  // tests: every probe counts as slow
  return took >= slow * static_cast<std::int64_t>(queries) && ReadFromDeviceSinceLastAsked();
}

void SetSlowProbeTimeForTesting(std::chrono::nanoseconds time) {
  slow_probe_nanos.store((time.count() < 0 ? kDefaultSlowProbeTime : time).count(),
                         std::memory_order_relaxed);
}

ReadPool::~ReadPool() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  work_cv_.NotifyAll();
  for (std::thread& t : threads) t.join();
}

std::size_t ReadPool::TakeTask(Job& job) {
  const std::size_t i = job.next++;
  if (job.next == job.count) jobs_.erase(std::find(jobs_.begin(), jobs_.end(), &job));
  return i;
}

void ReadPool::Run(std::size_t count, const std::function<void(std::size_t)>& task) {
  if (count == 0) return;
  Job job{&task, count};
  MutexLock lock(mu_);
  try {
    while (static_cast<int>(threads_.size()) < thread_count_) {
      threads_.emplace_back([this] { WorkerLoop(); });
    }
  } catch (const std::system_error&) {
    // Refused threads: the caller runs what the pool cannot.
  }
  jobs_.push_back(&job);
  work_cv_.NotifyAll();
  while (job.next < job.count) {
    const std::size_t i = TakeTask(job);
    mu_.Unlock();
    task(i);
    mu_.Lock();
    ++job.done;
  }
  while (job.done != job.count) done_cv_.Wait(mu_);
}

void ReadPool::WorkerLoop() {
  MutexLock lock(mu_);
  while (true) {
    while (!stopping_ && jobs_.empty()) work_cv_.Wait(mu_);
    if (stopping_) return;
    Job& job = *jobs_.front();
    const std::size_t i = TakeTask(job);
    mu_.Unlock();
    (*job.task)(i);
    mu_.Lock();
    // The caller may return, and its job go, as soon as this is counted.
    if (++job.done == job.count) done_cv_.NotifyAll();
  }
}

}  // namespace fpstore::internal
