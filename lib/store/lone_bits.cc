// Rewriting the lone bits while merges go on, by Compact or in the
// background once enough fingerprints were merged (lone_bits_refresh.h,
// docs/design.md, "Hits that skip tables").

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <system_error>
#include <thread>
#include <utility>

#include "store/bulk_loader.h"
#include "store/store_impl.h"
#include "util/parallel.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

void StoreImpl::AddRecentPrefixes(std::span<const Fingerprint> fingerprints) {
  recent_.Add(fingerprints);
  if (unsealed_) unsealed_->insert(unsealed_->end(), fingerprints.begin(), fingerprints.end());
}

namespace {

// Runs `work` on a thread of the lowest CPU priority when `low` (a rewrite
// in the background then takes only the CPU that inserts, queries and
// compactions leave), else on this thread. No lock that they wait for may
// be held meanwhile: nothing would hurry the holder.
Status AtLowPriority(bool low, const std::function<Status()>& work) {
  if (!low) return work();
  Status s;
  std::thread thread;
  try {
    thread = std::thread([&] {
      // On Linux a thread's own nice value; a failure only costs the effect.
      (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 19);
      s = work();
    });
  } catch (const std::system_error&) {
    return work();  // no thread to be had: at this thread's priority
  }
  thread.join();
  return s;
}

}  // namespace

Status StoreImpl::RefreshLoneBits(const ScanOptions& scan, bool in_background) {
  const auto start = std::chrono::steady_clock::now();
  std::lock_guard refresh(refresh_mu_);
  const rocksdb::Snapshot* at = nullptr;
  std::uint64_t sealed = 0;
  {
    // With no merge under way, the snapshot shows whole merges, and the
    // fingerprints sealed are exactly the recent ones it shows.
    std::unique_lock merge = LockMergesAhead();
    at = db_->GetSnapshot();
    recent_.Seal();
    unsealed_.emplace();
    sealed = recent_.size();
  }
  rocksdb::ManagedSnapshot snapshot(db_.get(), at);
  const Status rewritten = RewriteLoneBits(scan, snapshot.snapshot(), in_background);
  const Status ended = EndLoneBitsRefresh(rewritten.ok());
  const Status s = !rewritten.ok() ? rewritten : ended;
  rocksdb::Log(rocksdb::InfoLogLevel::INFO_LEVEL, db_->GetDBOptions().info_log.get(),
               "fpstore: lone bits %s after %llu recent fingerprints, in %.1f s%s%s",
               s.ok() ? "rewritten" : "not rewritten", static_cast<unsigned long long>(sealed),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
               s.ok() ? "" : ": ", s.ok() ? "" : s.ToString().c_str());
  return s;
}

Status StoreImpl::RewriteLoneBits(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                                  bool in_background) {
  rocksdb::Logger* const log = db_->GetDBOptions().info_log.get();
  auto start = std::chrono::steady_clock::now();
  auto seconds = [&start] {
    const auto now = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(now - std::exchange(start, now)).count();
  };
  const std::size_t tables = std::min(plan_.table_count(), RecentPrefixes::kMaxTables);
  std::shared_ptr<const CrowdedTables> bits;
  Status s = AtLowPriority(in_background, [&] {
    std::vector<std::vector<Fingerprint>> crowded(tables);
    std::atomic<bool> out_of_memory{false};
    ScanOptions runs_scan = scan;
    runs_scan.progress = nullptr;  // Compact reports families
    // Versions whose removal is staged are still in the tables, where
    // queries meet them: their bits and their neighbours' count them.
    Status scanned = ScanRunsAt(
        runs_scan, snapshot,
        [&](std::size_t t, std::span<const TableEntry> run) {
          if (t >= tables || run.front().permuted == run.back().permuted) return;
          const TablePermutation& perm = plan_.table(t);
          // On a scan thread: out of memory fails the rewrite, not the process.
          try {
            for (const TableEntry& e : run) crowded[t].push_back(perm.Invert(e.permuted));
          } catch (const std::bad_alloc&) {
            out_of_memory = true;
          }
        },
        Runs::kEvery, Versions::kAlsoLeaving);
    if (!scanned.ok()) return scanned;
    try {
      if (!out_of_memory) bits = std::make_shared<const CrowdedTables>(plan_, std::move(crowded));
    } catch (const std::bad_alloc&) {
    }
    return bits != nullptr ? Status::OK() : Status::IOError("rewriting lone bits: out of memory");
  });
  if (!s.ok()) return s;
  rocksdb::Log(rocksdb::InfoLogLevel::INFO_LEVEL, log,
               "fpstore: lone bits: %zu fingerprints crowded, found in %.1f s", bits->size(),
               seconds());
  // Fingerprints merged from now on get bits that ignore their neighbours,
  // and their neighbours' bits ignore them; their prefixes are recent and
  // stay so, which makes both harmless (lone_bits_refresh.h).
  BeforeLoneBitsRewrite(closing_);
  s = AtLowPriority(in_background, [&] { return ReplaceCrowdedFamily(*bits); });
  if (!s.ok()) return s;
  rocksdb::Log(rocksdb::InfoLogLevel::INFO_LEVEL, log, "fpstore: lone bits: %s written in %.1f s",
               kCrowdedFamily, seconds());
  return Status::OK();
}

Status StoreImpl::ReplaceCrowdedFamily(const CrowdedTables& crowded) {
  BulkLoadOptions options;
  options.memory_bytes = options_.write_buffer_bytes;
  Result<std::unique_ptr<BulkLoaderImpl>> loader = MakeBulkLoader(options);
  if (!loader.ok()) return loader.status();
  std::vector<rocksdb::IngestExternalFileArg> args;
  if (Status s = (*loader)->WriteLoneBitsFile(crowded, args); !s.ok()) return s;
  if (closing_) return Closing();
  // Its own family, which nothing else writes: queries read it at their
  // snapshots, and an ingested file's entries are newer than every one.
  return FromRocks(db_->IngestExternalFiles(args), "writing " + std::string(kCrowdedFamily));
}

Status StoreImpl::EndLoneBitsRefresh(bool rewritten) {
  std::unique_lock merge = LockMergesAhead();
  std::vector<Fingerprint> unsealed = std::move(*unsealed_);
  unsealed_.reset();
  // Unless all goes well, the background refresher waits for as many new
  // fingerprints again before it tries anew.
  refresh_after_ = recent_.size();
  if (!rewritten) return Status::OK();
  // The family keeps only the fingerprints merged since the seal, in one
  // atomic batch: a range deletion (a delete per fingerprint, millions
  // after a long run of inserts, flushed the family's memtable over and
  // over, and its level-0 files stopped all writes) and their keys again.
  // merge_mu_ is held, so nothing enters the family meanwhile. A crash may
  // lose the batch: fingerprints that stay recent only cost skips.
  std::sort(unsealed.begin(), unsealed.end());
  unsealed.erase(std::unique(unsealed.begin(), unsealed.end()), unsealed.end());
  rocksdb::WriteBatch batch;
  const std::string end(9, '\xff');  // past every 8-byte key
  rocksdb::Status rs = batch.DeleteRange(recent_family(), rocksdb::Slice(), end);
  for (Fingerprint fp : unsealed) {
    if (!rs.ok()) break;
    char key[8];
    PutBigEndian64(key, fp);
    rs = batch.Put(recent_family(), rocksdb::Slice(key, 8), rocksdb::Slice());
  }
  if (rs.ok()) rs = db_->Write(rocksdb::WriteOptions(), &batch);
  if (!rs.ok()) return FromRocks(rs, "clearing the recent family");
  std::unique_lock exclusive(ingest_mu_);
  recent_.DropSealed();
  refresh_after_ = 0;
  return Status::OK();
}

bool StoreImpl::RefreshDue() const {
  if (!merged_since_open_) return false;
  std::uint64_t recent = recent_.size();
  // An open stops reading the recent family once the filter is full: the
  // family knows better how many there are.
  if (recent_.full()) {
    std::uint64_t in_family = 0;
    db_->GetIntProperty(recent_family(), rocksdb::DB::Properties::kEstimateNumKeys, &in_family);
    recent = std::max(recent, in_family);
  }
  const std::uint64_t after = refresh_after_;
  // Checked before the store's size is asked for: this runs on every wake.
  if (recent <= after || recent - after < LoneBitsRefreshThreshold(0)) return false;
  return recent - after >= LoneBitsRefreshThreshold(EstimatedEntries());
}

void StoreImpl::RefreshWhenDue() {
  std::unique_lock lock(staging_mu_);
  while (!stopping_) {
    // Merges announce their end on staging_cv_; the timeout covers one
    // sent between the check and the wait.
    staging_cv_.wait_for(lock, std::chrono::seconds(1),
                         [&] { return stopping_ || (merge_error_.ok() && RefreshDue()); });
    if (stopping_ || !merge_error_.ok() || !RefreshDue()) continue;
    lock.unlock();
    // One thread: the other core is the inserts' and queries'.
    ScanOptions scan;
    scan.threads = 1;
    // A failure is logged, and refresh_after_ holds off a retry.
    (void)RefreshLoneBits(scan, /*in_background=*/true);
    lock.lock();
  }
}

}  // namespace fpstore::internal
