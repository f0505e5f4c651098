// Compact: the lone bits written anew (store_lone_bits.cc), then every
// family compacted.

#include <algorithm>
#include <mutex>
#include <vector>

#include "store/store_impl.h"
#include "util/parallel.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

Status StoreImpl::Compact(const ScanOptions& scan) {
  if (Status s = Flush(); !s.ok()) return s;
  const std::size_t total = handles_.size();
  if (scan.progress) scan.progress(0, total);
  // First: the rewrite clears the recent family, which is then compacted
  // with the others.
  if (Status s = RefreshLoneBits(scan, /*in_background=*/false); !s.ok()) return s;
  // A few at a time: one compaction runs on one thread, and RocksDB's pool
  // of them holds as many as it runs by itself (two, at two background
  // threads). Unless told, no more than the background threads: each
  // compaction needs room on disk for the family it rewrites.
  const int threads = ScanThreads(
      scan.threads > 0 ? scan.threads : std::max(2, options_.background_threads), total);
  db_->GetEnv()->IncBackgroundThreadsIfNeeded(threads, rocksdb::Env::Priority::LOW);
  rocksdb::CompactRangeOptions cro;
  cro.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForceOptimized;
  cro.exclusive_manual_compaction = false;
  std::mutex progress_mu;
  std::size_t done = 0;
  return ForEachInParallel(total, threads, [&](std::size_t i, int) {
    rocksdb::Status rs = db_->CompactRange(cro, handles_[i], nullptr, nullptr);
    if (!rs.ok()) return FromRocks(rs, "compacting " + handles_[i]->GetName());
    std::lock_guard lock(progress_mu);
    ++done;
    if (scan.progress) scan.progress(done, total);
    return Status::OK();
  });
}

}  // namespace fpstore::internal
