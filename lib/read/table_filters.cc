#include "read/table_filters.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>

#include "util/rocks_status.h"

namespace fpstore::internal {

namespace {

class RefreshAfterCompactions final : public rocksdb::EventListener {
 public:
  explicit RefreshAfterCompactions(std::shared_ptr<TableFilters> filters)
      : filters_(std::move(filters)) {}
  // RocksDB calls this holding none of its locks, so it may read the family's table properties.
  void OnCompactionCompleted(rocksdb::DB*, const rocksdb::CompactionJobInfo& info) override {
    filters_->Refresh({info.cf_id});
  }

 private:
  const std::shared_ptr<TableFilters> filters_;
};

}  // namespace

CacheCharge::CacheCharge(std::shared_ptr<rocksdb::Cache> cache, std::size_t bytes)
    : cache_(std::move(cache)) {
  if (cache_ == nullptr) return;
  constexpr std::size_t kPiece = std::size_t{256} << 10;
  // Keys of their own: this object's address, unique while it lives, and the piece's number.
  const std::string prefix =
      "fpstore.member_filters." + std::to_string(reinterpret_cast<std::uintptr_t>(this)) + ".";
  for (std::size_t at = 0, piece = 0; at < bytes; at += kPiece, ++piece) {
    rocksdb::Cache::Handle* handle = nullptr;
    const rocksdb::Status s = cache_->Insert(
        prefix + std::to_string(piece), nullptr, std::min(kPiece, bytes - at),
        [](const rocksdb::Slice&, void*) {}, &handle, rocksdb::Cache::Priority::HIGH);
    if (s.ok() && handle != nullptr) handles_.push_back(handle);  // else a full strict cache
  }
}

CacheCharge::~CacheCharge() {
  for (rocksdb::Cache::Handle* h : handles_) cache_->Release(h, /*erase_if_last_ref=*/true);
}

std::shared_ptr<const CacheCharge> FileCharges::For(
    const std::shared_ptr<const rocksdb::TableProperties>& file, std::size_t bytes) {
  MutexLock lock(mu_);
  std::weak_ptr<const CacheCharge>& slot = charges_[file.get()];
  std::shared_ptr<const CacheCharge> charge = slot.lock();
  if (charge == nullptr) {
    // Drop the slots of files that compactions replaced.
    std::erase_if(charges_, [](const auto& entry) { return entry.second.expired(); });
    charge = std::make_shared<const CacheCharge>(cache_, bytes);
    charges_[file.get()] = charge;
  }
  return charge;
}

Result<std::shared_ptr<const TableMemberFilter>> TableMemberFilter::Read(
    rocksdb::DB& db, rocksdb::ColumnFamilyHandle* family, const GroupLayout& layout,
    int prefix_bits, FileCharges* charges) {
  auto filter = std::make_shared<TableMemberFilter>();
  filter->layout_ = layout;
  filter->prefix_mask_ = PrefixMask(prefix_bits);
  if (Status s = FromRocks(db.GetPropertiesOfAllTables(family, &filter->properties_),
                           "reading the member filters of " + family->GetName());
      !s.ok()) {
    return s;
  }
  for (const auto& [file, properties] : filter->properties_) filter->Add(properties, charges);
  return std::shared_ptr<const TableMemberFilter>(std::move(filter));
}

void TableMemberFilter::Add(const std::shared_ptr<const rocksdb::TableProperties>& file,
                            FileCharges* charges) {
  const std::string* property = MemberFilterProperty(*file);
  std::optional<FileMemberFilter> parsed;
  if (property != nullptr) parsed = FileMemberFilter::Parse(*property, /*thorough=*/true);
  if (parsed && parsed->empty()) return;  // no entry with members
  files_.push_back({parsed, parsed ? parsed->ChunkFirstGroups() : std::vector<Fingerprint>()});
  if (parsed && charges != nullptr) charges_.push_back(charges->For(file, property->size()));
}

std::shared_ptr<const TableMemberFilter> TableMemberFilter::With(
    std::span<const std::shared_ptr<const rocksdb::TableProperties>> added,
    FileCharges* charges) const {
  auto filter = std::make_shared<TableMemberFilter>(*this);
  for (const auto& file : added) {
    filter->added_.push_back(file);
    filter->Add(file, charges);
  }
  return filter;
}

std::shared_ptr<const TableMemberFilter> TableMemberFilter::PassingAll() {
  auto filter = std::make_shared<TableMemberFilter>();
  filter->files_.push_back({std::nullopt, {}});
  return filter;
}

PrefixMembers TableMemberFilter::Lookup(Fingerprint permuted, bool count) const {
  const Fingerprint group = layout_.GroupOf(permuted);
  const std::uint64_t hash = MemberFilter::Hash(permuted & prefix_mask_);
  // Prefetch the files' blocks before testing any: a table may have many files, and their cache
  // misses then overlap.
  constexpr std::size_t kAhead = 16;
  std::array<const char*, kAhead> blocks;
  const char* passed = nullptr;  // the one file's block that passed so far
  for (std::size_t first = 0; first < files_.size(); first += kAhead) {
    std::size_t fetched = 0;
    for (std::size_t i = first; i < std::min(files_.size(), first + kAhead); ++i) {
      const File& f = files_[i];
      if (!f.filter) return PrefixMembers::kMaybeMany;
      const auto after = std::upper_bound(f.first_groups.begin(), f.first_groups.end(), group);
      if (after == f.first_groups.begin()) continue;
      const char* block = f.filter->BlockIn(after - f.first_groups.begin() - 1, group, hash);
      if (block == FileMemberFilter::kUnchecked) return PrefixMembers::kMaybeMany;
      if (block == nullptr) continue;
      __builtin_prefetch(block);
      blocks[fetched++] = block;
    }
    for (std::size_t i = 0; i < fetched; ++i) {
      if (!MemberFilter::BlockPasses(blocks[i], hash)) continue;
      if (!count || passed != nullptr) return PrefixMembers::kMaybeMany;
      passed = blocks[i];
    }
  }
  if (passed == nullptr) return PrefixMembers::kNone;
  return MemberFilter::BlockSaysCrowded(passed, hash) ? PrefixMembers::kMaybeMany
                                                      : PrefixMembers::kAtMostOne;
}

TableFilters::TableFilters(const PermutationPlan& plan, int group_bits,
                           std::shared_ptr<rocksdb::Cache> cache)
    : plan_(plan), group_bits_(group_bits), charges_(std::move(cache)) {}

void TableFilters::Attach(rocksdb::DB* db, std::span<rocksdb::ColumnFamilyHandle* const> tables) {
  MutexLock lock(mu_);
  db_ = db;
  tables_.assign(tables.begin(), tables.end());
  RefreshLocked(std::nullopt);
}

void TableFilters::Detach() {
  MutexLock lock(mu_);
  db_ = nullptr;
  tables_.clear();
}

void TableFilters::Refresh(std::vector<std::uint32_t> family_ids) {
  MutexLock lock(mu_);
  RefreshLocked(std::move(family_ids));
}

namespace {

std::vector<std::uint32_t> FamiliesOf(const TableWriter::Output& files) {
  std::vector<std::uint32_t> ids;
  for (const rocksdb::IngestExternalFileArg& arg : files.args) {
    ids.push_back(arg.column_family->GetID());
  }
  return ids;
}

}  // namespace

void TableFilters::AddPending(const TableWriter::Output& files) {
  MutexLock lock(mu_);
  if (files.properties) {
    pending_ = *files.properties;
  } else {
    pending_unread_ = FamiliesOf(files);
  }
  PublishWithLocked(pending_, pending_unread_);
}

void TableFilters::EndPending(const TableWriter::Output& files, bool ingested) {
  MutexLock lock(mu_);
  pending_.clear();
  pending_unread_.clear();
  if (!ingested || !files.properties) RefreshLocked(FamiliesOf(files));
}

std::vector<std::shared_ptr<const rocksdb::TableProperties>> TableFilters::FilesOf(
    std::span<const WrittenFile> files, std::size_t t) const {
  std::vector<std::shared_ptr<const rocksdb::TableProperties>> found;
  for (const WrittenFile& file : files) {
    if (file.family_id == tables_[t]->GetID()) found.push_back(file.properties);
  }
  return found;
}

void TableFilters::PublishWithLocked(std::span<const WrittenFile> files,
                                     std::span<const std::uint32_t> passing) {
  if (db_ == nullptr || (files.empty() && passing.empty())) return;
  const View old = current_.load();
  auto next = std::make_shared<std::vector<std::shared_ptr<const TableMemberFilter>>>(*old);
  for (std::size_t t = 0; t < tables_.size(); ++t) {
    if ((*next)[t] == nullptr) continue;
    if (std::find(passing.begin(), passing.end(), tables_[t]->GetID()) != passing.end()) {
      (*next)[t] = TableMemberFilter::PassingAll();
      continue;
    }
    const auto added = FilesOf(files, t);
    if (!added.empty()) (*next)[t] = (*next)[t]->With(added, &charges_);
  }
  current_.store(std::move(next));
}

void TableFilters::RefreshLocked(std::optional<std::vector<std::uint32_t>> ids) {
  if (db_ == nullptr) return;
  const View old = current_.load();
  auto next =
      old ? std::make_shared<std::vector<std::shared_ptr<const TableMemberFilter>>>(*old)
          : std::make_shared<std::vector<std::shared_ptr<const TableMemberFilter>>>(tables_.size());
  bool changed = false;
  for (std::size_t t = 0; t < tables_.size(); ++t) {
    if (ids && std::find(ids->begin(), ids->end(), tables_[t]->GetID()) == ids->end()) continue;
    const int prefix_bits = plan_.table(t).prefix_bits();
    Result<std::shared_ptr<const TableMemberFilter>> read = TableMemberFilter::Read(
        *db_, tables_[t], TableGroupLayout(plan_, t, group_bits_), prefix_bits, &charges_);
    if (std::find(pending_unread_.begin(), pending_unread_.end(), tables_[t]->GetID()) !=
        pending_unread_.end()) {
      // Files are being ingested whose filters were not read ahead.
      (*next)[t] = TableMemberFilter::PassingAll();
    } else if (read.ok()) {
      (*next)[t] = *std::move(read);
      // Files being ingested, which the family may not list yet.
      if (const auto pending = FilesOf(pending_, t); !pending.empty()) {
        (*next)[t] = (*next)[t]->With(pending, &charges_);
      }
    } else {
      // Files may have come that the old filters do not know: until a refresh succeeds, every probe
      // of the table reads its group.
      (*next)[t] = TableMemberFilter::PassingAll();
    }
    changed = true;
  }
  if (changed || !old) current_.store(std::move(next));
}

std::shared_ptr<rocksdb::EventListener> TableFilters::MakeListener(
    std::shared_ptr<TableFilters> filters) {
  return std::make_shared<RefreshAfterCompactions>(std::move(filters));
}

}  // namespace fpstore::internal
