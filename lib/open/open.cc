// Opening, creating and closing a store; its metadata record.

#include <rocksdb/db.h>
#include <rocksdb/wal_filter.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <set>
#include <system_error>
#include <thread>
#include <utility>

#include "faults/damaged_log.h"
#include "faults/info_log.h"
#include "faults/rocks_open.h"
#include "format/families.h"
#include "format/recorded_options.h"
#include "open/store_impl.h"
#include "open/writer_claim.h"
#include "util/rocks_status.h"
#include "util/test_hooks.h"

namespace fpstore {
namespace internal {

namespace fs = std::filesystem;

namespace {

// What a store records about itself at creation.
struct Metadata {
  int format_version = 0;
  RecordedOptions recorded;
  int group_bits = 0;
};

// Reads the metadata of the store at `path`: read-only, so nothing on disk changes whatever the
// directory holds, and the metadata's family alone, so the others' options do not matter.
Result<Metadata> ReadMetadata(const std::string& path) {
  RocksConfig config = MakeInspectionConfig({rocksdb::kDefaultColumnFamilyName});
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status rs = OpenForReadOnly(config.db, config.families, path, &handles, &raw);
  if (!rs.ok()) return FromRocks(rs, "opening " + path);
  std::unique_ptr<rocksdb::DB> db(raw);
  auto get = [&](const char* key, std::string& value) {
    return db->Get(rocksdb::ReadOptions(), handles[0], key, &value);
  };
  Metadata meta;
  int plan_bits = 64;
  std::string value;
  Status result;
  rs = get(kFormatVersionKey, value);
  if (!rs.ok() && !rs.IsNotFound()) {
    result = FromRocks(rs, "reading the metadata of " + path);
  } else if (rs.IsNotFound() || !ParseNumber(value, meta.format_version)) {
    result = Status::InvalidArgument(path + " is not an fpstore store (no fpstore metadata)");
  } else if (meta.format_version != kFormatVersion) {
    result = Status::NotSupported(
        path + " has on-disk format version " + value + "; this build reads and writes version " +
        std::to_string(kFormatVersion) +
        " only. Dump its documents with the fpstore-admin that wrote it (fpstore-admin dump) "
        "and load them into a new store with this fpstore-load");
  } else if (!get(kPlanKey, value).ok() ||
             !ParsePlanRecord(value, &meta.recorded.blocks, &meta.recorded.distance, &plan_bits)) {
    result = Status::Corruption(path + ": unreadable plan record \"" + value + "\"");
  } else if (!get(kGroupBitsKey, value).ok()) {
    result = Status::Corruption(path + ": missing group bits record");
  } else if (!ParseNumber(value, meta.group_bits) || meta.group_bits < 1 ||
             meta.group_bits > kMaxGroupBits) {
    result = Status::Corruption(path + ": unreadable group bits record \"" + value + "\"");
  } else if (!get(kFingerprintKey, value).ok()) {
    result = Status::Corruption(path + ": missing fingerprint options record");
  } else if (Result<FingerprintOptions> fp = FingerprintOptions::Parse(value); !fp.ok()) {
    result = fp.status().WithContext(path);
  } else if (Status width = CheckPlanWidth(path, plan_bits, *fp); !width.ok()) {
    result = width;
  } else if (meta.recorded.fingerprint = *fp; !get(kMinSimilarityKey, value).ok()) {
    result = Status::Corruption(path + ": missing min_similarity record");
  } else if (!ParseNumber(value, meta.recorded.min_similarity) ||
             !CheckMinSimilarity(meta.recorded.min_similarity).ok()) {
    result = Status::Corruption(path + ": unreadable min_similarity record \"" + value + "\"");
  } else if (!get(kRetentionKey, value).ok()) {
    result = Status::Corruption(path + ": missing retention record");
  } else if (!ParseNumber(value, meta.recorded.retention_seconds) ||
             !CheckRetention(meta.recorded.retention_seconds).ok()) {
    result = Status::Corruption(path + ": unreadable retention record \"" + value + "\"");
  }
  for (rocksdb::ColumnFamilyHandle* h : handles) db->DestroyColumnFamilyHandle(h);
  db->Close().PermitUncheckedError();
  if (!result.ok()) return result;
  return meta;
}

bool IsEmptyOrAbsent(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return true;
  return fs::is_directory(path, ec) && fs::is_empty(path, ec);
}

// The metadata of the store at `path`, or of the one to create there.
Result<Metadata> MetadataFor(const std::string& path, const StoreOptions& options, bool exists) {
  if (exists) {
    Result<Metadata> recorded = ReadMetadata(path);
    if (!recorded.ok()) return recorded.status();
    if (Status s = CheckAgainstRecorded(path, options, recorded->recorded); !s.ok()) return s;
    return recorded;
  }
  if (!IsEmptyOrAbsent(path)) {
    return Status::InvalidArgument(path + " is not an fpstore store (not empty, no store in it)");
  }
  if (!options.create_if_missing || options.read_only) {
    return Status::NotFound("no store at " + path);
  }
  Result<RecordedOptions> recorded = RecordedOptionsFor(options);
  if (!recorded.ok()) return recorded.status();
  return Metadata{
      kFormatVersion, *recorded,
      GroupBitsFor(options.expected_documents.value_or(StoreOptions::kDefaultExpectedDocuments))};
}

// Opens RocksDB, creating a new store's families in one call (RocksDB writes its OPTIONS file per
// call; a plan can have hundreds of tables). A creation that fails leaves no directory it made.
Result<std::unique_ptr<rocksdb::DB>> OpenDatabase(
    const std::string& path, const RocksConfig& config, bool read_only, bool exists,
    std::vector<rocksdb::ColumnFamilyHandle*>& handles) {
  std::error_code ec;
  const bool created_dir = !fs::exists(path, ec);
  rocksdb::DB* raw = nullptr;
  rocksdb::Status rs;
  if (read_only) {
    rs = OpenForReadOnly(config.db, config.families, path, &handles, &raw);
  } else if (exists) {
    rs = rocksdb::DB::Open(config.db, path, config.families, &handles, &raw);
  } else {
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
    if (!rs.ok()) {
      if (raw != nullptr) {
        for (rocksdb::ColumnFamilyHandle* h : handles) raw->DestroyColumnFamilyHandle(h);
        delete raw;
        raw = nullptr;
        rocksdb::DestroyDB(path, rocksdb::Options()).PermitUncheckedError();
      }
      if (created_dir) fs::remove_all(path, ec);
    }
  }
  if (!rs.ok()) return FromRocks(rs, "opening " + path);
  return std::unique_ptr<rocksdb::DB>(raw);
}

// The metadata record, last and in one synced batch: a directory whose creation was cut short holds
// no record and is refused on open.
Status WriteMetadata(rocksdb::DB& db, rocksdb::ColumnFamilyHandle* meta_family,
                     const PermutationPlan& plan, const Metadata& meta) {
  rocksdb::WriteBatch batch;
  const std::pair<const char*, std::string> records[] = {
      {kFormatVersionKey, std::to_string(meta.format_version)},
      {kPlanKey, plan.ToString()},
      {kFingerprintKey, meta.recorded.fingerprint.ToString()},
      {kMinSimilarityKey, DoubleText(meta.recorded.min_similarity)},
      {kRetentionKey, std::to_string(meta.recorded.retention_seconds)},
      {kGroupBitsKey, std::to_string(meta.group_bits)}};
  for (const auto& [key, value] : records) {
    if (Status s = FromRocks(batch.Put(meta_family, key, value), "creating"); !s.ok()) return s;
  }
  rocksdb::WriteOptions sync;
  sync.sync = true;
  return FromRocks(db.Write(sync, &batch), "creating");
}

// Whether a replay of the logs of the store at `path` would drop acknowledged writes from damage in
// a log on (store/damaged_log.h). Such an open is refused with Corruption unless `options` ask to
// drop them; what is dropped is then returned in words, a writer's damaged logs and a list of every
// dropped document kept in lost/ first. Returns "" when nothing would be dropped.
Result<std::string> CheckLogs(const std::string& path, RocksConfig config,
                              const StoreOptions& options) {
  Result<std::optional<LogDamage>> damage = FindLogDamage(path);
  if (!damage.ok()) return damage.status().WithContext("reading the logs of " + path);
  if (!*damage) return std::string();
  // Which of the records from the damage on RocksDB's replay keeps: a read-only replay, which
  // changes nothing on disk, records what it reads.
  config.db.info_log = InfoLog::Discarding();
  ReplayedRecords replayed;
  const std::unique_ptr<rocksdb::WalFilter> recorder = NewReplayRecorder(replayed);
  config.db.wal_filter = recorder.get();
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  if (rocksdb::Status rs = OpenForReadOnly(config.db, config.families, path, &handles, &raw);
      !rs.ok()) {
    if (!rs.IsCorruption()) return FromRocks(rs, "opening " + path);
    // RocksDB refuses to stop its replay at the damage when files written after it (a flush, a
    // merge's ingestion) hold later writes: no open can drop the damaged writes alone. The
    // documents family is the first created (format/families.h), so its id is 1.
    constexpr std::uint32_t kDocumentsFamilyId = 1;
    return Status::Corruption(
        Describe(**damage, DroppedAfter(**damage, {}, 0, kDocumentsFamilyId)) +
        ". The store cannot be opened without them, not even with drop_damaged_log: files "
        "written after the damage depend on them (" +
        rs.ToString() +
        "). Restore it from a checkpoint (fpstore-admin checkpoint), or load its documents "
        "into a new store");
  }
  const std::unique_ptr<rocksdb::DB> db(raw);
  const DroppedWrites dropped =
      DroppedAfter(**damage, replayed, db->GetLatestSequenceNumber(), handles[1]->GetID());
  for (rocksdb::ColumnFamilyHandle* h : handles) db->DestroyColumnFamilyHandle(h);
  db->Close().PermitUncheckedError();
  if (dropped.Empty()) return std::string();
  const std::string what = Describe(**damage, dropped);
  if (!options.drop_damaged_log) {
    return Status::Corruption(what + ". Nothing was changed. To open the store without them, set " +
                              "drop_damaged_log (fpstore-admin recover --db " + path + ")");
  }
  const std::string lost = (fs::path(path) / "lost").string();
  if (options.read_only) {
    return what + "; this read-only handle reads the store without them, and writes no list of " +
           "them, as it writes nothing (a writable open with drop_damaged_log, fpstore-admin " +
           "recover, keeps the damaged logs and the list in " + lost + ")";
  }
  Result<std::string> list = KeepDropped(lost, **damage, dropped);
  if (!list.ok()) return list.status().WithContext(path);
  return what + "; dropped, the damaged logs kept in " + lost +
         ", every dropped document listed in " + *list;
}

Families FamiliesOf(std::vector<rocksdb::ColumnFamilyHandle*> handles, std::size_t tables) {
  Families f;
  f.meta = handles[0];
  f.documents = handles[1];
  f.staging = handles[2];
  f.tables.assign(handles.begin() + 3, handles.begin() + 3 + tables);
  f.times = handles[3 + tables];
  f.all = std::move(handles);
  return f;
}

}  // namespace

Result<std::unique_ptr<StoreImpl>> StoreImpl::Open(const std::string& path,
                                                   const StoreOptions& options,
                                                   std::shared_ptr<rocksdb::Logger> info_log) {
  // 0 would never merge and block every insert; past the maximum the staging index's 32-bit entry
  // numbers could wrap.
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
  Result<Metadata> meta = MetadataFor(path, options, exists);
  if (!meta.ok()) return meta.status();
  Result<PermutationPlan> plan = PermutationPlan::Create(
      meta->recorded.blocks, meta->recorded.distance, meta->recorded.fingerprint.bits);
  if (!plan.ok()) return plan.status().WithContext(path);
  Result<Fingerprinter> fingerprinter = Fingerprinter::Create(meta->recorded.fingerprint);
  if (!fingerprinter.ok()) return fingerprinter.status().WithContext(path);
  WriterReservation reservation;
  if (!options.read_only) {
    if (Status s = reservation.Reserve(path); !s.ok()) return s;
  }
  RocksConfig config = MakeRocksConfig(options, *plan, meta->group_bits);
  // fpstore's own info log: RocksDB's aborts on a full disk (faults/info_log.h), and a reader's
  // would rotate the writer's LOG.
  if (options.read_only) {
    config.db.info_log = InfoLog::Discarding();
  } else {
    config.db.info_log = info_log ? std::move(info_log) : InfoLog::ForWriter(path);
  }
  if (rocksdb::Env* env = EnvForTesting()) config.db.env = env;
  std::shared_ptr<HeldDeletions> held_deletions;
  std::unique_ptr<rocksdb::Env> env;
  if (!options.read_only) {
    held_deletions = std::make_shared<HeldDeletions>(config.db.env->GetFileSystem());
    env = rocksdb::NewCompositeEnv(held_deletions);
    config.db.env = env.get();
  }
  auto filters = std::make_shared<TableFilters>(*plan, meta->group_bits, config.block_cache);
  config.db.listeners.push_back(TableFilters::MakeListener(filters));
  auto background_errors = std::make_shared<BackgroundErrors>();
  config.db.listeners.push_back(BackgroundErrors::MakeListener(background_errors));
  Result<std::string> dropped = exists ? CheckLogs(path, config, options) : std::string();
  if (!dropped.ok()) return dropped.status();
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  Result<std::unique_ptr<rocksdb::DB>> db =
      OpenDatabase(path, config, options.read_only, exists, handles);
  if (!db.ok()) return db.status();
  if (!options.read_only) RemoveEmptyOldLogs(**db, path);
  if (!dropped->empty() && config.db.info_log) {
    rocksdb::Log(rocksdb::InfoLogLevel::WARN_LEVEL, config.db.info_log.get(), "%s",
                 dropped->c_str());
  }
  OpenedStore opened{path,
                     options,
                     *plan,
                     *std::move(fingerprinter),
                     meta->recorded.min_similarity,
                     meta->recorded.retention_seconds,
                     meta->group_bits,
                     std::move(env),
                     *std::move(db),
                     FamiliesOf(std::move(handles), plan->table_count()),
                     std::move(filters)};
  std::unique_ptr<StoreImpl> store(
      new StoreImpl(std::move(opened), std::move(background_errors), std::move(held_deletions)));
  store->writer_key_ = reservation.Keep();
  store->dropped_at_open_ = *std::move(dropped);
  if (!exists) {
    if (Status s = WriteMetadata(*store->db_, store->families_.meta, *plan, *meta); !s.ok()) {
      store.reset();
      rocksdb::DestroyDB(path, rocksdb::Options()).PermitUncheckedError();
      fs::remove_all(path, ec);
      return s.WithContext(path);
    }
  }
  if (Status s = store->Start(); !s.ok()) return s.WithContext(path);
  return store;
}

StoreImpl::StoreImpl(OpenedStore opened, std::shared_ptr<const BackgroundErrors> background_errors,
                     std::shared_ptr<HeldDeletions> held)
    : Writer(std::move(opened), std::move(background_errors), std::move(held)),
      scanner_(*db_, tables_, staging_, documents_, times_, closing_),
      verifier_(*db_, tables_, staging_, documents_, times_, scanner_, families_.all, path_) {}

Status StoreImpl::Start() {
  tables_.filters().Attach(db_.get(), families_.tables);
  if (Status s = documents_.LoadSigned(); !s.ok()) return s;
  if (Status s = staging_.Load(); !s.ok()) return s;
  if (!options_.read_only) StartBackground();
  return Status::OK();
}

Status StoreImpl::Close() {
  if (closed_) return Status::OK();
  closed_ = true;
  closing_ = true;
  closing_.notify_all();
  StopBackground();
  Status result;
  if (!options_.read_only && options_.durability == Durability::kNoSync) {
    result = FromRocks(db_->SyncWAL(), "closing " + path_);
  }
  // A clean close leaves the log empty: the next writable open would flush and delete it, and a
  // read-only open that read the manifest before would miss those writes.
  if (!options_.read_only && result.ok()) {
    result = FromRocks(db_->Flush(rocksdb::FlushOptions(), families_.all), "closing " + path_);
  }
  tables_.filters().Detach();
  for (rocksdb::ColumnFamilyHandle* h : families_.all) {
    rocksdb::Status rs = db_->DestroyColumnFamilyHandle(h);
    if (result.ok()) result = FromRocks(rs, "closing " + path_);
  }
  families_.all.clear();
  rocksdb::Status rs = db_->Close();
  if (result.ok()) result = FromRocks(rs, "closing " + path_);
  if (!writer_key_.empty()) ReleaseWriterClaim(writer_key_);
  return result;
}

}  // namespace internal
}  // namespace fpstore
