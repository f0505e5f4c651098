// Opening, creating and closing a store; the metadata record.

#include <fcntl.h>
#include <rocksdb/db.h>
#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>

#include "format/families.h"
#include "store/store_impl.h"
#include "util/rocks_status.h"

namespace fpstore {

Result<std::unique_ptr<Store>> Store::Open(const std::string& path, const StoreOptions& options) {
  return internal::StoreImpl::Open(path, options);
}

namespace internal {

namespace fs = std::filesystem;

namespace {

// What a store records about itself at creation.
struct Metadata {
  int format_version = 0;
  int blocks = 0;
  int distance = 0;
  FingerprintOptions fingerprint;
  int group_bits = 0;
};

bool ParseInt(std::string_view s, int& out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

// Reads the metadata record of the store at `path`, opened read-only so that
// nothing on disk changes, whatever the directory turns out to hold.
Result<Metadata> ReadMetadata(const std::string& path) {
  std::vector<std::string> names;
  rocksdb::Status rs = rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names);
  if (!rs.ok()) return FromRocks(rs, "reading " + path);
  // The metadata's family alone: the log's records for the others are
  // passed over, so their options (a packed table's merge operator needs
  // the plan) do not matter.
  RocksConfig config = MakeInspectionConfig({rocksdb::kDefaultColumnFamilyName});
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rs = rocksdb::DB::OpenForReadOnly(config.db, path, config.families, &handles, &raw);
  if (!rs.ok()) return FromRocks(rs, "opening " + path);
  std::unique_ptr<rocksdb::DB> db(raw);

  auto get = [&](const char* key, std::string& value) {
    return db->Get(rocksdb::ReadOptions(), handles[0], key, &value);
  };
  const std::string not_ours = path + " is not an fpstore store (no fpstore metadata)";
  Metadata meta;
  std::string value;
  Status result;
  rs = get(kFormatVersionKey, value);
  if (rs.IsNotFound() || !ParseInt(value, meta.format_version)) {
    result = Status::InvalidArgument(not_ours);
  } else if (meta.format_version != Store::kFormatVersion) {
    result = Status::NotSupported(
        path + " has on-disk format version " + value + "; this build reads and writes version " +
        std::to_string(Store::kFormatVersion) +
        " only. Dump its documents with the fpstore-admin that wrote it (fpstore-admin dump) "
        "and load them into a new store with this fpstore-load");
  } else if (!get(kPlanKey, value).ok() || std::sscanf(value.c_str(), "blocks=%d distance=%d",
                                                       &meta.blocks, &meta.distance) != 2) {
    result = Status::Corruption(path + ": unreadable plan record \"" + value + "\"");
  } else if (!get(kGroupBitsKey, value).ok()) {
    result = Status::Corruption(path + ": missing group bits record");
  } else if (!ParseInt(value, meta.group_bits) || meta.group_bits < 1 || meta.group_bits > 64) {
    result = Status::Corruption(path + ": unreadable group bits record \"" + value + "\"");
  } else if (!get(kFingerprintKey, value).ok()) {
    result = Status::Corruption(path + ": missing fingerprint options record");
  } else if (Result<FingerprintOptions> fp = FingerprintOptions::Parse(value); !fp.ok()) {
    result = fp.status().WithContext(path);
  } else {
    meta.fingerprint = *fp;
  }
  for (rocksdb::ColumnFamilyHandle* h : handles) db->DestroyColumnFamilyHandle(h);
  db->Close().PermitUncheckedError();
  if (!result.ok()) return result;
  return meta;
}

// Explicit options that disagree with what the store recorded.
Status CheckAgainstRecorded(const std::string& path, const StoreOptions& options,
                            const Metadata& meta) {
  auto mismatch = [&](const std::string& what, const std::string& asked,
                      const std::string& recorded) {
    return Status::InvalidArgument(path + " was created with " + what + " " + recorded + ", not " +
                                   asked);
  };
  if (options.blocks && *options.blocks != meta.blocks) {
    return mismatch("blocks", std::to_string(*options.blocks), std::to_string(meta.blocks));
  }
  if (options.distance && *options.distance != meta.distance) {
    return mismatch("distance", std::to_string(*options.distance), std::to_string(meta.distance));
  }
  if (options.fingerprint && !(*options.fingerprint == meta.fingerprint)) {
    return mismatch("fingerprint options", "\"" + options.fingerprint->ToString() + "\"",
                    "\"" + meta.fingerprint.ToString() + "\"");
  }
  return Status::OK();
}

// The stores this process has open for writing, by canonical path. RocksDB
// rotates the info log (LOG becomes LOG.old.<time>) before it finds the LOCK
// file taken, so a refused second writer would rename the live writer's log
// and change the directory; Open turns such a writer away before RocksDB.
class WriterRegistry {
 public:
  static WriterRegistry& Instance() {
    static WriterRegistry* const registry = new WriterRegistry;  // never destroyed
    return *registry;
  }
  // False if `key` is taken.
  bool Reserve(const std::string& key) {
    std::lock_guard lock(mu_);
    return owners_.try_emplace(key, nullptr).second;
  }
  void Assign(const std::string& key, const void* owner) {
    std::lock_guard lock(mu_);
    owners_[key] = owner;
  }
  void Release(const std::string& key) {
    std::lock_guard lock(mu_);
    owners_.erase(key);
  }
  void ReleaseOwner(const void* owner) {
    std::lock_guard lock(mu_);
    std::erase_if(owners_, [owner](const auto& entry) { return entry.second == owner; });
  }

 private:
  std::mutex mu_;
  std::map<std::string, const void*> owners_;
};

// The pid of another process holding the store's LOCK file as RocksDB takes
// it (a POSIX write lock), or 0. Only asks: it must not take the lock, as
// closing any descriptor of a file drops every POSIX lock this process holds
// on it. REQUIRES: this process holds no lock on it (see WriterRegistry).
pid_t LockHolder(const std::string& path) {
  const int fd = ::open((fs::path(path) / "LOCK").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  struct flock lock = {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  const bool held = ::fcntl(fd, F_GETLK, &lock) == 0 && lock.l_type != F_UNLCK;
  ::close(fd);
  return held ? lock.l_pid : 0;
}

// A writer's claim on a store path, from the checks until the store exists;
// given back if the open fails. A writer that appears between these checks
// and RocksDB's own lock still gets Busy, from RocksDB.
class WriterReservation {
 public:
  WriterReservation() = default;
  WriterReservation(const WriterReservation&) = delete;
  WriterReservation& operator=(const WriterReservation&) = delete;
  ~WriterReservation() {
    if (!key_.empty()) WriterRegistry::Instance().Release(key_);
  }

  // Busy if another Store object or another process has `path` open for
  // writing.
  Status Reserve(const std::string& path) {
    std::error_code ec;
    fs::path canonical = fs::weakly_canonical(path, ec);
    if (ec) canonical = fs::absolute(path, ec);
    if (!canonical.has_filename()) canonical = canonical.parent_path();  // "dir/"
    if (!WriterRegistry::Instance().Reserve(canonical.string())) {
      return Status::Busy("opening " + path +
                          ": the store is in use by another Store object in this process");
    }
    key_ = canonical.string();
    if (const pid_t holder = LockHolder(path); holder != 0) {
      return Status::Busy("opening " + path + ": the store is in use by another process (pid " +
                          std::to_string(holder) + ")");
    }
    return Status::OK();
  }

  // The claim now lasts until `owner` closes.
  void HandTo(const StoreImpl* owner) {
    WriterRegistry::Instance().Assign(key_, owner);
    key_.clear();
  }

 private:
  std::string key_;
};

bool IsEmptyOrAbsent(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return true;
  return fs::is_directory(path, ec) && fs::is_empty(path, ec);
}

}  // namespace

Result<std::unique_ptr<Store>> StoreImpl::Open(const std::string& path,
                                               const StoreOptions& options) {
  // None would never merge and hold every insert for room; past 2^30 the
  // staging index's 32-bit entry numbers could wrap.
  if (options.staged_documents == 0 ||
      options.staged_documents > StoreOptions::kMaxStagedDocuments) {
    return Status::InvalidArgument("staged_documents must be from 1 to " +
                                   std::to_string(StoreOptions::kMaxStagedDocuments) + ", not " +
                                   std::to_string(options.staged_documents));
  }
  std::error_code ec;
  const bool exists = fs::exists(fs::path(path) / "CURRENT", ec);
  if (exists && options.error_if_exists) {
    return Status::InvalidArgument(path + " already holds a store (error_if_exists is set)");
  }

  Metadata meta;
  if (exists) {
    Result<Metadata> recorded = ReadMetadata(path);
    if (!recorded.ok()) return recorded.status();
    meta = *recorded;
    if (Status s = CheckAgainstRecorded(path, options, meta); !s.ok()) return s;
  } else {
    if (!IsEmptyOrAbsent(path)) {
      return Status::InvalidArgument(path + " is not an fpstore store (not empty, no store in it)");
    }
    if (!options.create_if_missing || options.read_only) {
      return Status::NotFound("no store at " + path);
    }
    meta = {
        Store::kFormatVersion, options.blocks.value_or(6), options.distance.value_or(3),
        options.fingerprint.value_or(FingerprintOptions{}),
        GroupBitsFor(options.expected_documents.value_or(StoreOptions::kDefaultExpectedDocuments))};
  }

  Result<PermutationPlan> plan = PermutationPlan::Create(meta.blocks, meta.distance);
  if (!plan.ok()) return plan.status().WithContext(path);
  Result<Fingerprinter> fingerprinter = Fingerprinter::Create(meta.fingerprint);
  if (!fingerprinter.ok()) return fingerprinter.status().WithContext(path);

  WriterReservation reservation;
  if (!options.read_only) {
    if (Status s = reservation.Reserve(path); !s.ok()) return s;
  }

  RocksConfig config = MakeRocksConfig(options, *plan, meta.group_bits);
  auto member_filters = std::make_shared<TableFilters>(*plan, meta.group_bits, config.block_cache);
  config.db.listeners.push_back(TableFilters::MakeListener(member_filters));
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  const bool created_dir = !fs::exists(path, ec);
  rocksdb::Status rs;
  if (options.read_only) {
    rs = rocksdb::DB::OpenForReadOnly(config.db, path, config.families, &handles, &raw);
  } else if (exists) {
    rs = rocksdb::DB::Open(config.db, path, config.families, &handles, &raw);
  } else {
    // Creating the families in one call writes RocksDB's OPTIONS file once
    // instead of once per family (and a plan can have hundreds).
    const std::vector<rocksdb::ColumnFamilyDescriptor> first(config.families.begin(),
                                                             config.families.begin() + 1);
    rs = rocksdb::DB::Open(config.db, path, first, &handles, &raw);
    std::vector<rocksdb::ColumnFamilyHandle*> created;
    if (rs.ok()) {
      rs = raw->CreateColumnFamilies(std::vector<rocksdb::ColumnFamilyDescriptor>(
                                         config.families.begin() + 1, config.families.end()),
                                     &created);
      handles.insert(handles.end(), created.begin(), created.end());
    }
    if (!rs.ok() && raw != nullptr) {
      for (rocksdb::ColumnFamilyHandle* h : handles) raw->DestroyColumnFamilyHandle(h);
      delete raw;
      rocksdb::DestroyDB(path, rocksdb::Options()).PermitUncheckedError();
      if (created_dir) fs::remove_all(path, ec);
    }
  }
  if (!rs.ok()) return FromRocks(rs, "opening " + path);

  std::unique_ptr<StoreImpl> store(
      new StoreImpl(path, options, meta.group_bits, *std::move(plan), *std::move(fingerprinter),
                    std::unique_ptr<rocksdb::DB>(raw), handles, member_filters));
  if (!options.read_only) reservation.HandTo(store.get());
  store->table_filters_->Attach(store->db_.get(), store->tables());
  if (Status s = store->LoadStagingIndex(); !s.ok()) return s.WithContext(path);
  if (Status s = store->LoadRecentPrefixes(); !s.ok()) return s.WithContext(path);
  if (!exists) {
    // The metadata record goes last and in one synced batch: a directory
    // whose creation was cut short holds no record and is refused on open.
    rocksdb::WriteBatch batch;
    Status s;
    const std::string plan_text = store->plan_.ToString();
    std::vector<std::pair<const char*, std::string>> records = {
        {kFormatVersionKey, std::to_string(meta.format_version)},
        {kPlanKey, plan_text},
        {kFingerprintKey, meta.fingerprint.ToString()},
        {kGroupBitsKey, std::to_string(meta.group_bits)}};
    for (const auto& [key, value] : records) {
      if (s.ok()) s = FromRocks(batch.Put(store->meta(), key, value), "creating " + path);
    }
    rocksdb::WriteOptions sync;
    sync.sync = true;
    if (s.ok()) s = FromRocks(store->db_->Write(sync, &batch), "creating " + path);
    if (!s.ok()) {
      store.reset();
      rocksdb::DestroyDB(path, rocksdb::Options()).PermitUncheckedError();
      if (created_dir) fs::remove_all(path, ec);
      return s;
    }
  }
  if (!options.read_only) {
    store->merger_ = std::thread([raw = store.get()] { raw->MergeWhenFull(); });
    store->refresher_ = std::thread([raw = store.get()] { raw->RefreshWhenDue(); });
  }
  return std::unique_ptr<Store>(std::move(store));
}

StoreImpl::StoreImpl(std::string path, StoreOptions options, int group_bits, PermutationPlan plan,
                     Fingerprinter fingerprinter, std::unique_ptr<rocksdb::DB> db,
                     std::vector<rocksdb::ColumnFamilyHandle*> handles,
                     std::shared_ptr<TableFilters> member_filters)
    : path_(std::move(path)),
      options_(std::move(options)),
      group_bits_(group_bits),
      plan_(std::move(plan)),
      fingerprinter_(std::move(fingerprinter)),
      db_(std::move(db)),
      handles_(std::move(handles)),
      group_commit_([this] { return FromRocks(db_->SyncWAL(), "syncing " + path_); }),
      table_filters_(std::move(member_filters)) {}

StoreImpl::~StoreImpl() { (void)Close(); }

Status StoreImpl::FlushEveryFamily() {
  return FromRocks(db_->Flush(rocksdb::FlushOptions(), handles_), "closing " + path_);
}

Status StoreImpl::Close() {
  if (closed_) return Status::OK();
  closed_ = true;
  closing_ = true;
  closing_.notify_all();
  {
    std::lock_guard lock(staging_mu_);
    stopping_ = true;
  }
  staging_cv_.notify_all();
  if (merger_.joinable()) merger_.join();
  if (refresher_.joinable()) refresher_.join();
  Status result;
  if (!options_.read_only && options_.durability == Durability::kNoSync) {
    result = FromRocks(db_->SyncWAL(), "closing " + path_);
  }
  if (!options_.read_only && result.ok()) result = FlushEveryFamily();
  table_filters_->Detach();
  for (rocksdb::ColumnFamilyHandle* h : handles_) {
    rocksdb::Status rs = db_->DestroyColumnFamilyHandle(h);
    if (result.ok()) result = FromRocks(rs, "closing " + path_);
  }
  handles_.clear();
  rocksdb::Status rs = db_->Close();
  if (result.ok()) result = FromRocks(rs, "closing " + path_);
  db_.reset();
  if (!options_.read_only) WriterRegistry::Instance().ReleaseOwner(this);
  return result;
}

}  // namespace internal
}  // namespace fpstore
