#include "store/skip_hints.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <new>
#include <system_error>
#include <utility>

#include "format/families.h"
#include "format/recorded_options.h"
#include "format/records.h"
#include "ingest/sst_sink.h"
#include "store/test_hooks.h"
#include "util/multi_get.h"
#include "util/rocks_status.h"

namespace fpstore::internal {

namespace {

// Runs `work` on a thread of the lowest CPU priority when `low` (a background rewrite then takes
// only the CPU that inserts, queries and compactions leave), else on this thread. No lock that they
// wait for may be held meanwhile: nothing would hurry the holder.
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

// The fingerprints with company in some table, ascending as table 0 permutes them (the crowded
// family's keys), each with the tables where it has it. crowded[t]: those with company in table t,
// in any order, with repeats; merged in one at a time, so only one list is held twice.
std::vector<std::pair<Fingerprint, LoneBits>> CrowdedList(
    const PermutationPlan& plan, std::vector<std::vector<Fingerprint>> crowded) {
  const TablePermutation& perm0 = plan.table(0);
  std::vector<std::pair<Fingerprint, LoneBits>> list;
  for (std::size_t t = 0; t < crowded.size(); ++t) {
    std::vector<Fingerprint>& fps = crowded[t];
    for (Fingerprint& fp : fps) fp = perm0.Apply(fp);
    std::sort(fps.begin(), fps.end());
    fps.erase(std::unique(fps.begin(), fps.end()), fps.end());
    std::vector<std::pair<Fingerprint, LoneBits>> merged;
    merged.reserve(list.size() + fps.size());
    const LoneBits bit = LoneBits{1} << t;
    auto old = list.begin();
    for (Fingerprint fp : fps) {
      for (; old != list.end() && old->first < fp; ++old) merged.push_back(*old);
      if (old != list.end() && old->first == fp) {
        merged.emplace_back(fp, old->second | bit);
        ++old;
      } else {
        merged.emplace_back(fp, bit);
      }
    }
    merged.insert(merged.end(), old, list.end());
    list = std::move(merged);
    fps = {};
  }
  return list;
}

}  // namespace

SkipHints::SkipHints(rocksdb::DB& db, const PermutationPlan& plan,
                     rocksdb::ColumnFamilyHandle* crowded, rocksdb::ColumnFamilyHandle* recent,
                     rocksdb::ColumnFamilyHandle* meta,
                     std::shared_ptr<std::atomic<std::uint64_t>> recent_epoch, StoreLocks& locks,
                     const Scanner& scanner, const IngestGuard& guard, std::string store_path,
                     const std::atomic<bool>& closing)
    : db_(db),
      plan_(plan),
      crowded_(crowded),
      recent_family_(recent),
      meta_(meta),
      recent_epoch_(std::move(recent_epoch)),
      locks_(locks),
      scanner_(scanner),
      guard_(guard),
      store_path_(std::move(store_path)),
      closing_(closing),
      recent_(plan, RecentPrefixesLimit()) {}

Result<std::uint64_t> SkipHints::RecentEpoch(const rocksdb::Snapshot* snapshot) const {
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  std::string value;
  const rocksdb::Status rs = db_.Get(ro, meta_, kRecentEpochKey, &value);
  if (rs.IsNotFound()) return std::uint64_t{0};
  if (!rs.ok()) return FromRocks(rs, std::string("reading ") + kRecentEpochKey);
  std::uint64_t epoch = 0;
  if (!ParseNumber(value, epoch)) {
    return Status::Corruption(std::string(kRecentEpochKey) + ": not a whole number: \"" + value +
                              "\"");
  }
  return epoch;
}

Result<RecentEntry> SkipHints::DecodeRecentEntry(const rocksdb::Slice& key,
                                                 const rocksdb::Slice& value) {
  const std::optional<RecentEntry> entry = DecodeRecentKey(key.ToStringView());
  if (!entry) return Status::Corruption("recent: malformed key " + key.ToString(true));
  if (!value.empty()) {
    return Status::Corruption("recent: a value where none belongs, at key " + key.ToString(true));
  }
  return *entry;
}

void SkipHints::WithNoRewriteEnding(const std::function<void()>& read) const {
  MutexLock rewrite(locks_.rewrite);
  read();
}

Status SkipHints::Load() {
  Result<std::uint64_t> epoch = RecentEpoch(nullptr);
  if (!epoch.ok()) return epoch.status();
  recent_epoch_->store(*epoch, std::memory_order_release);
  entry_epoch_ = *epoch;
  std::unique_ptr<rocksdb::Iterator> it(db_.NewIterator(rocksdb::ReadOptions(), recent_family_));
  std::vector<Fingerprint> recent;
  auto add = [&]() -> Status {
    try {
      recent_.Add(recent);
    } catch (const std::exception& e) {
      return Status::IOError(std::string("loading the recent prefixes: ") + e.what());
    }
    recent.clear();
    return Status::OK();
  };
  // Entries of later epochs than the store's come from rewrites that did not end: new ones get
  // the latest, so that the next rewrite takes them all in.
  it->SeekToLast();
  if (it->Valid()) {
    Result<RecentEntry> last = DecodeRecentEntry(it->key(), it->value());
    if (!last.ok()) return last.status();
    entry_epoch_ = std::max(entry_epoch_, last->epoch);
  }
  // From the store's epoch (the entries before were taken in by rewrites), and no further than it
  // takes to fill the filter, if it fills.
  for (it->Seek(RecentEpochStart(*epoch).view()); it->Valid() && !recent_.full(); it->Next()) {
    Result<RecentEntry> entry = DecodeRecentEntry(it->key(), it->value());
    if (!entry.ok()) return entry.status();
    recent.push_back(entry->fingerprint);
    if (recent.size() == 65536) {
      if (Status s = add(); !s.ok()) return s;
    }
  }
  if (Status s = FromRocks(it->status(), "reading the recent family"); !s.ok()) return s;
  return add();
}

Result<std::vector<LoneBits>> SkipHints::Read(std::span<const Fingerprint> fingerprints,
                                              const rocksdb::Snapshot* snapshot) const {
  const TablePermutation& perm0 = plan_.table(0);
  std::vector<Fingerprint> keys;  // as table 0 permutes them
  keys.reserve(fingerprints.size());
  for (Fingerprint fp : fingerprints) keys.push_back(perm0.Apply(fp));
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  // Most fingerprints are alone everywhere, and not there.
  std::vector<LoneBits> bits(keys.size(), AllLoneBits(plan_.table_count()));
  Status s = MultiGet(db_, crowded_, snapshot, keys, [&](std::size_t i, std::string_view v) {
    bits[i] = DecodeLoneBits(v);
    return Status::OK();
  });
  if (!s.ok()) return s;
  std::vector<LoneBits> out;
  out.reserve(fingerprints.size());
  for (Fingerprint fp : fingerprints) {
    out.push_back(bits[std::lower_bound(keys.begin(), keys.end(), perm0.Apply(fp)) - keys.begin()]);
  }
  return out;
}

LoneBits SkipHints::Skippable(Fingerprint query, Fingerprint hit, LoneBits bits,
                              std::size_t t) const {
  // Only tables after t that the plan has: bits past them, in a corrupt value, name no table.
  if (t + 1 >= kMaxLoneBitTables) return 0;
  const LoneBits later = ~((LoneBits{2} << t) - 1) & AllLoneBits(plan_.table_count());
  LoneBits skip = 0;
  for (bits &= later; bits != 0; bits &= bits - 1) {
    const auto u = static_cast<std::size_t>(std::countr_zero(bits));
    const TablePermutation& perm = plan_.table(u);
    const Fingerprint prefix = perm.Apply(query) & perm.prefix_mask();
    if (prefix == (perm.Apply(hit) & perm.prefix_mask()) && !recent_.MayHold(u, prefix)) {
      skip |= LoneBits{1} << u;
    }
  }
  return skip;
}

Status SkipHints::AddRecent(std::vector<Fingerprint> fingerprints, const std::string& path,
                            std::vector<rocksdb::IngestExternalFileArg>& args) {
  if (fingerprints.empty()) return Status::OK();
  std::sort(fingerprints.begin(), fingerprints.end());
  fingerprints.erase(std::unique(fingerprints.begin(), fingerprints.end()), fingerprints.end());
  SstSink sink(db_, recent_family_, path);
  for (Fingerprint fp : fingerprints) {
    if (Status s = sink.Put(RecentKey(entry_epoch_, fp).view(), {}); !s.ok()) return s;
  }
  // Out of memory here, on a merge's thread, fails the merge rather than the process.
  try {
    recent_.Add(fingerprints);
  } catch (const std::exception& e) {
    return Status::IOError(std::string("adding recent prefixes: ") + e.what());
  }
  return sink.FinishInto(args);
}

Status SkipHints::Rewrite(const ScanOptions& scan, bool in_background) {
  const auto start = std::chrono::steady_clock::now();
  MutexLock rewrite(locks_.rewrite);
  const rocksdb::Snapshot* at = nullptr;
  std::uint64_t sealed = 0;
  std::uint64_t next_epoch = 0;
  {
    // With no merge under way, the snapshot shows whole merges, and the fingerprints sealed are
    // exactly the recent ones it shows: those of the epochs up to this one. Merges from now on
    // write the next.
    MergeTurnLock merge(locks_.merge, MergeTurnLock::kAhead);
    at = db_.GetSnapshot();
    recent_.Seal();
    sealed = recent_.size();
    next_epoch = ++entry_epoch_;
  }
  rocksdb::ManagedSnapshot snapshot(&db_, at);
  const Status rewritten = RewriteSealed(scan, snapshot.snapshot(), next_epoch, in_background);
  const Status ended = EndRewrite(rewritten.ok() ? std::optional(next_epoch) : std::nullopt);
  const Status s = !rewritten.ok() ? rewritten : ended;
  rocksdb::Log(rocksdb::InfoLogLevel::INFO_LEVEL, db_.GetDBOptions().info_log.get(),
               "fpstore: lone bits %s after %llu recent fingerprints, in %.1f s%s%s",
               s.ok() ? "rewritten" : "not rewritten", static_cast<unsigned long long>(sealed),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(),
               s.ok() ? "" : ": ", s.ok() ? "" : s.ToString().c_str());
  return s;
}

Status SkipHints::RewriteSealed(const ScanOptions& scan, const rocksdb::Snapshot* snapshot,
                                std::uint64_t next_epoch, bool in_background) {
  const std::size_t tables = std::min(plan_.table_count(), kMaxLoneBitTables);
  std::vector<std::pair<Fingerprint, LoneBits>> crowded;
  Status s = AtLowPriority(in_background, [&] {
    std::vector<std::vector<Fingerprint>> per_table(tables);
    std::atomic<bool> out_of_memory{false};
    ScanOptions runs_scan = scan;
    runs_scan.progress = nullptr;  // Compact reports families
    // Versions with a staged removal are still in the tables, where queries meet them: count them.
    Status scanned = scanner_.ScanRunsAt(
        runs_scan, snapshot,
        [&](std::size_t t, std::span<const TableEntry> run) {
          if (t >= tables || run.front().permuted == run.back().permuted) return;
          const TablePermutation& perm = plan_.table(t);
          // On a scan thread: out of memory fails the rewrite, not the process.
          try {
            for (const TableEntry& e : run) per_table[t].push_back(perm.Invert(e.permuted));
          } catch (const std::bad_alloc&) {
            out_of_memory = true;
          }
        },
        Scanner::Runs::kEvery, Scanner::Versions::kAlsoLeaving);
    if (!scanned.ok()) return scanned;
    try {
      if (!out_of_memory) crowded = CrowdedList(plan_, std::move(per_table));
    } catch (const std::bad_alloc&) {
      out_of_memory = true;
    }
    return out_of_memory ? Status::IOError("rewriting lone bits: out of memory") : Status::OK();
  });
  if (!s.ok()) return s;
  // Fingerprints merged from now on get bits that ignore their neighbours, and their neighbours'
  // bits ignore them; their prefixes are recent and stay so, which makes both harmless.
  BeforeLoneBitsRewrite(closing_);
  // The family is replaced whole by one file: a deletion of each key it holds that the new list
  // lacks, and the new entries. Nothing else writes it, so no lock is needed. (Point deletions,
  // not one range deletion: RocksDB 7.8 can abort the process when a compaction that a range
  // deletion leaves without output fails to write it; docs/reliability.md.)
  return AtLowPriority(in_background, [&]() -> Status {
    Result<ScratchDir> dir = ScratchDir::Make(store_path_);
    if (!dir.ok()) return dir.status();
    SstSink sink(db_, crowded_, dir->Path("crowded.sst"));
    std::unique_ptr<rocksdb::Iterator> old(db_.NewIterator(rocksdb::ReadOptions(), crowded_));
    old->SeekToFirst();
    auto delete_old_below = [&](std::string_view key) -> Status {
      for (; old->Valid() && old->key().ToStringView() < key; old->Next()) {
        if (Status s = sink.Delete(old->key()); !s.ok()) return s;
      }
      return FromRocks(old->status(), "reading the crowded family");
    };
    const LoneBits all = AllLoneBits(plan_.table_count());
    for (const auto& [permuted0, company] : crowded) {
      const Key8 key(permuted0);
      if (Status s = delete_old_below(key.view()); !s.ok()) return s;
      if (old->Valid() && old->key().ToStringView() == key.view()) old->Next();  // replaced
      const std::string value = EncodeLoneBits(all & ~company, plan_.table_count());
      if (Status s = sink.Put(key.view(), value); !s.ok()) return s;
    }
    const std::string end(9, '\xff');  // past every 8-byte key
    if (Status s = delete_old_below(end); !s.ok()) return s;
    std::vector<rocksdb::IngestExternalFileArg> args;
    if (Status s = sink.FinishInto(args); !s.ok()) return s;  // none if empty before and after
    // The store's recent epoch moves to that of the fingerprints merged since the seal, in the
    // same ingestion as the bits: a reader that sees either sees both (a write to the log could
    // reach a read-only open that read the manifest before the bits).
    SstSink epoch(db_, meta_, dir->Path("recent-epoch.sst"));
    if (Status s = epoch.Put(kRecentEpochKey, std::to_string(next_epoch)); !s.ok()) return s;
    if (Status s = epoch.FinishInto(args); !s.ok()) return s;
    if (closing_) return Status::Busy("the store is closing");
    return guard_.Ingest(db_, args, "writing the crowded family and the recent epoch");
  });
}

Status SkipHints::EndRewrite(std::optional<std::uint64_t> next_epoch) {
  MergeTurnLock merge(locks_.merge, MergeTurnLock::kAhead);
  // Unless all goes well, the background rewrites wait for as many new fingerprints again.
  rewrite_after_ = recent_.size();
  if (!next_epoch) return Status::OK();
  // The rewrite's ingestion moved the store's recent epoch: the family's entries of the epochs
  // before are no longer recent, and compactions may drop them (families.cc).
  recent_epoch_->store(*next_epoch, std::memory_order_release);
  WriterLock readers(locks_.readers);
  recent_.DropSealed();
  rewrite_after_ = 0;
  return Status::OK();
}

void SkipHints::StartRewrites(std::function<std::uint64_t()> documents) {
  documents_ = std::move(documents);
  rewriter_ = std::thread([this] { RewriteWhenDue(); });
}

void SkipHints::MergeEnded() {
  {
    MutexLock lock(mu_);
    merged_ = true;
  }
  cv_.NotifyAll();
}

void SkipHints::StopRewrites() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  cv_.NotifyAll();
  if (rewriter_.joinable()) rewriter_.join();
}

bool SkipHints::RewriteDue() const {
  std::uint64_t recent = recent_.size();
  // Once the filter is full an open stops reading the family: ask the family how many it holds.
  if (recent_.full()) {
    std::uint64_t in_family = 0;
    db_.GetIntProperty(recent_family_, rocksdb::DB::Properties::kEstimateNumKeys, &in_family);
    recent = std::max(recent, in_family);
  }
  const std::uint64_t after = rewrite_after_;
  // Checked before the store's size is asked for: this runs on every wake.
  if (recent <= after || recent - after < LoneBitsRewriteThreshold(0)) return false;
  return recent - after >= LoneBitsRewriteThreshold(documents_());
}

void SkipHints::RewriteWhenDue() {
  while (true) {
    {
      MutexLock lock(mu_);
      if (stopping_) return;
      // Merges announce their end; the timeout covers one sent between the check and the wait.
      if (!merged_ || !RewriteDue()) {
        cv_.WaitFor(mu_, std::chrono::seconds(1));
        continue;
      }
    }
    // One thread: the others are the inserts' and queries'.
    ScanOptions scan;
    scan.threads = 1;
    // A failure is logged, and rewrite_after_ holds off a retry.
    (void)Rewrite(scan, /*in_background=*/true);
  }
}

}  // namespace fpstore::internal
