// Compact: every family compacted, and table 0's lone bits written anew on
// the way (lone_bits_refresh.h).

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
  // RocksDB's pool of them holds as many as it runs by itself (one, at
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
  rocksdb::CompactRangeOptions cro;
  if (lone_bits_ == nullptr) {
    cro.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForceOptimized;
    return FromRocks(db_->CompactRange(cro, table(0), nullptr, nullptr),
                     "compacting " + TableFamilyName(0));
  }
  // The bits say which fingerprints the tables hold beside each one, so no
  // fingerprint may enter them until the bits are written. Removals may go
  // on: they only leave a fingerprint lonelier than its bits say.
  std::lock_guard merge(merge_mu_);
  // Verify's snapshot would see the rewritten values (compaction filters
  // ignore snapshots) beside tables older than the bits.
  std::unique_lock rewrite(lone_bits_mu_);
  const std::size_t tables = std::min(plan_.table_count(), RecentPrefixes::kMaxTables);
  std::vector<std::vector<Fingerprint>> crowded(tables);
  std::atomic<bool> out_of_memory{false};
  ScanOptions runs_scan = scan;
  runs_scan.progress = nullptr;  // Compact reports families
  Status s = ScanRuns(
      runs_scan,
      [&](std::size_t t, std::span<const TableEntry> run) {
        if (t >= tables || run.front().permuted == run.back().permuted) return;
        const TablePermutation& perm = plan_.table(t);
        // On a scan thread: out of memory fails the Compact, not the process.
        try {
          for (const TableEntry& e : run) crowded[t].push_back(perm.Invert(e.permuted));
        } catch (const std::bad_alloc&) {
          out_of_memory = true;
        }
      },
      Runs::kEvery);
  if (!s.ok()) return s;
  std::shared_ptr<const CrowdedTables> bits;
  try {
    if (!out_of_memory) bits = std::make_shared<const CrowdedTables>(plan_, std::move(crowded));
  } catch (const std::bad_alloc&) {
  }
  if (bits == nullptr) return Status::IOError("compacting: out of memory for the lone bits");
  // kForce compacts again even the bottom files this compaction wrote, so
  // that those of a compaction already running (without the rewriter) are
  // rewritten too.
  cro.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  lone_bits_->Start(bits);
  const rocksdb::Status rs = db_->CompactRange(cro, table(0), nullptr, nullptr);
  lone_bits_->Stop();
  rewrite.unlock();
  if (!rs.ok()) return FromRocks(rs, "compacting " + TableFamilyName(0));
  // Checked rather than assumed of RocksDB: an entry the compaction did not
  // rewrite may have bits that only the recent prefixes make safe.
  Result<bool> rewritten = LoneBitsMatch(*bits);
  if (!rewritten.ok()) return rewritten.status();
  return *rewritten ? ForgetRecent() : Status::OK();
}

Result<bool> StoreImpl::LoneBitsMatch(const CrowdedTables& crowded) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ScanReadOptions(nullptr), table(0)));
  std::string expected;
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    if (!lone_bits_->ValueFor(crowded, it->key(), &expected) ||
        (DecodeLoneBits(it->value().ToStringView()) & ~DecodeLoneBits(expected)) != 0) {
      return false;
    }
  }
  if (!it->status().ok()) return FromRocks(it->status(), "scanning " + TableFamilyName(0));
  return true;
}

Status StoreImpl::ForgetRecent() {
  // One range deletion: a delete per fingerprint (millions after a long
  // run of inserts) flushed the family's memtable over and over, and its
  // level-0 files stopped all writes. merge_mu_ is held, so nothing enters
  // the family meanwhile. A crash may lose it: recent fingerprints that
  // stay only cost skips.
  const std::string end(9, '\xff');  // past every 8-byte key
  const rocksdb::Status rs =
      db_->DeleteRange(rocksdb::WriteOptions(), recent_family(), rocksdb::Slice(), end);
  if (!rs.ok()) return FromRocks(rs, "clearing the recent family");
  std::unique_lock exclusive(ingest_mu_);
  recent_.Clear();
  return Status::OK();
}

}  // namespace fpstore::internal
