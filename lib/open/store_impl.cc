// The store's whole-store calls (scans, checks, statistics, checkpoints, compaction), each handed
// to the component that does it. Opening and closing are in open.cc.

#include "open/store_impl.h"

#include <rocksdb/utilities/checkpoint.h>

#include <algorithm>
#include <filesystem>
#include <mutex>

#include "format/families.h"
#include "util/parallel.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

StoreImpl::~StoreImpl() { (void)Close(); }

Status StoreImpl::FindAll(int k, const std::function<void(const NearPair&)>& sink,
                          const ScanOptions& scan) const {
  Result<Matching> matching = MatchingFor(k, scan.min_similarity);
  if (!matching.ok()) return matching.status();
  Result<DocumentTime> expired_before = ExpiredBefore();
  if (!expired_before.ok()) return expired_before.status();
  return scanner_.FindAll(k, matching->min_similarity, *expired_before, sink, scan);
}

Status StoreImpl::Clusters(int k, const std::function<void(std::span<const DocumentId>)>& sink,
                           const ScanOptions& scan) const {
  Result<Matching> matching = MatchingFor(k, scan.min_similarity);
  if (!matching.ok()) return matching.status();
  Result<DocumentTime> expired_before = ExpiredBefore();
  if (!expired_before.ok()) return expired_before.status();
  return scanner_.Clusters(k, matching->min_similarity, *expired_before, sink, scan);
}

Status StoreImpl::ForEachDocument(const std::function<void(const Document&)>& sink,
                                  const ScanOptions& scan) const {
  if (Status s = CheckOpen(); !s.ok()) return s;
  Result<DocumentTime> expired_before = ExpiredBefore();
  if (!expired_before.ok()) return expired_before.status();
  return scanner_.ForEachDocument(*expired_before, sink, scan);
}

Status StoreImpl::Verify(const ScanOptions& scan) const {
  if (Status s = CheckOpen(); !s.ok()) return s;
  return verifier_.Run(scan);
}

Result<StoreStats> StoreImpl::Stats() const {
  if (Status s = CheckOpen(); !s.ok()) return s;
  StoreStats stats;
  stats.blocks = plan_.blocks();
  stats.distance = plan_.distance();
  stats.fingerprint = fingerprinter_.options();
  stats.min_similarity = min_similarity_;
  stats.retention_seconds = retention_seconds_;
  // The count and the times at one state.
  rocksdb::ManagedSnapshot snapshot(db_.get());
  Result<std::uint64_t> documents = documents_.Count(snapshot.snapshot());
  if (!documents.ok()) return documents.status();
  stats.documents = *documents;
  Result<std::optional<TimeIndex::Span>> span = times_.TimeSpan(snapshot.snapshot());
  if (!span.ok()) return span.status();
  if (*span) {
    stats.oldest_time = (*span)->oldest;
    stats.newest_time = (*span)->newest;
  }
  Result<DocumentTime> expired_before = ExpiredBefore();
  if (!expired_before.ok()) return expired_before.status();
  Result<std::vector<DocumentId>> expired =
      times_.DocumentsBefore(snapshot.snapshot(), *expired_before);
  if (!expired.ok()) return expired.status();
  stats.expired_documents = expired->size();
  Result<std::vector<StagedDocument>> staged = staging_.Documents(nullptr);
  if (!staged.ok()) return staged.status();
  stats.staged_documents = staged->size();
  for (rocksdb::ColumnFamilyHandle* table : tables_.families()) {
    rocksdb::ColumnFamilyMetaData family;
    db_->GetColumnFamilyMetaData(table, &family);
    stats.table_bytes.push_back(family.size);
  }
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(path_, ec)) {
    if (entry.is_regular_file(ec)) stats.bytes_on_disk += entry.file_size(ec);
  }
  stats.dropped_at_open = dropped_at_open_;
  stats.internals.format_version = kFormatVersion;
  stats.internals.group_bits = tables_.group_bits();
  return stats;
}

Status StoreImpl::Checkpoint(const std::string& dir) const {
  if (Status s = CheckOpen(); !s.ok()) return s;
  rocksdb::Checkpoint* raw = nullptr;
  if (Status s = FromRocks(rocksdb::Checkpoint::Create(db_.get(), &raw), "checkpoint"); !s.ok()) {
    return s;
  }
  std::unique_ptr<rocksdb::Checkpoint> checkpoint(raw);
  return FromRocks(checkpoint->CreateCheckpoint(dir), "writing checkpoint " + dir);
}

Status StoreImpl::Compact(const ScanOptions& scan) {
  if (Status s = Flush(); !s.ok()) return s;
  const std::size_t total = families_.all.size();
  if (scan.progress) scan.progress(0, total);
  // One pool thread per compaction; unless told, no more at once than the background threads, as
  // each needs disk room for the family it rewrites.
  const int threads =
      ThreadsFor(scan.threads > 0 ? scan.threads : std::max(2, options_.background_threads), total);
  db_->GetEnv()->IncBackgroundThreadsIfNeeded(threads, rocksdb::Env::Priority::LOW);
  rocksdb::CompactRangeOptions cro;
  cro.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForceOptimized;
  cro.exclusive_manual_compaction = false;
  std::mutex progress_mu;
  std::size_t done = 0;
  return ForEachInParallel(total, threads, [&](std::size_t i, int) {
    rocksdb::ColumnFamilyHandle* family = families_.all[i];
    rocksdb::Status rs = db_->CompactRange(cro, family, nullptr, nullptr);
    if (!rs.ok()) return FromRocks(rs, "compacting " + family->GetName());
    std::lock_guard lock(progress_mu);
    ++done;
    if (scan.progress) scan.progress(done, total);
    return Status::OK();
  });
}

}  // namespace fpstore::internal
