// Compact: every family compacted, and table 0's lone bits written anew on
// the way (store_lone_bits.cc).

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "rocks_status.h"
#include "scan_support.h"
#include "store_impl.h"

namespace fpstore::internal {

Status StoreImpl::Compact(const ScanOptions& scan) {
  if (Status s = Flush(); !s.ok()) return s;
  const std::size_t total = handles_.size();
  if (scan.progress) scan.progress(0, total);
  // Table 0 first: the recent family, which its refresh clears, must be
  // compacted after it.
  if (Status s = CompactTableZero(scan); !s.ok()) return s;
  std::vector<rocksdb::ColumnFamilyHandle*> others;
  for (rocksdb::ColumnFamilyHandle* h : handles_) {
    if (h != table(0)) others.push_back(h);
  }
  // The others a few at a time: one compaction runs on one thread, and
  // RocksDB's pool of them holds as many as it runs by itself (two, at
  // two background threads). Unless told, no more than the background
  // threads: each compaction needs room on disk for the family it rewrites.
  const int threads = ScanThreads(
      scan.threads > 0 ? scan.threads : std::max(2, options_.background_threads), others.size());
  db_->GetEnv()->IncBackgroundThreadsIfNeeded(threads, rocksdb::Env::Priority::LOW);
  rocksdb::CompactRangeOptions cro;
  cro.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForceOptimized;
  cro.exclusive_manual_compaction = false;
  std::mutex progress_mu;
  std::size_t done = 1;
  if (scan.progress) scan.progress(done, total);
  return ForEachInParallel(others.size(), threads, [&](std::size_t i, int) {
    rocksdb::Status rs = db_->CompactRange(cro, others[i], nullptr, nullptr);
    if (!rs.ok()) return FromRocks(rs, "compacting " + others[i]->GetName());
    std::lock_guard lock(progress_mu);
    ++done;
    if (scan.progress) scan.progress(done, total);
    return Status::OK();
  });
}

Status StoreImpl::CompactTableZero(const ScanOptions& scan) {
  // Formats 5 to 8 rewrite the bits as they compact table 0; from format
  // 9 the bits are the crowded family's, compacted with the others.
  if (lone_bits_ != nullptr) return RefreshLoneBits(scan, /*in_background=*/false);
  if (crowded_family() != nullptr) {
    if (Status s = RefreshLoneBits(scan, /*in_background=*/false); !s.ok()) return s;
  }
  rocksdb::CompactRangeOptions cro;
  cro.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForceOptimized;
  return FromRocks(db_->CompactRange(cro, table(0), nullptr, nullptr),
                   "compacting " + TableFamilyName(0));
}

}  // namespace fpstore::internal
