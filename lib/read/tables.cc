#include "read/tables.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>

#include "format/families.h"
#include "plan/table_entry.h"
#include "util/parallel.h"
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
  files_.push_back({parsed, parsed ? parsed->ChunkFirstGroups() : std::vector<Head>()});
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

PrefixMembers TableMemberFilter::Lookup(Word permuted, bool count) const {
  const Head head = layout_.HeadOf(permuted);
  const Head group = layout_.GroupHead(head);
  const std::uint64_t hash = MemberFilter::Hash(head & prefix_mask_);
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

namespace {

std::vector<GroupLayout> LayoutsOf(const PermutationPlan& plan, int group_bits) {
  std::vector<GroupLayout> layouts;
  for (std::size_t t = 0; t < plan.table_count(); ++t) {
    layouts.push_back(TableGroupLayout(plan, t, group_bits));
  }
  return layouts;
}

// fpstore deletes no ranges from the tables: spare every read the check.
rocksdb::ReadOptions TableReadOptions(const rocksdb::Snapshot* snapshot) {
  rocksdb::ReadOptions options;
  options.ignore_range_deletions = true;
  options.snapshot = snapshot;
  return options;
}

}  // namespace

Tables::Tables(rocksdb::DB& db, const PermutationPlan& plan, int group_bits,
               std::vector<rocksdb::ColumnFamilyHandle*> families,
               std::shared_ptr<TableFilters> filters)
    : db_(db),
      plan_(plan),
      group_bits_(group_bits),
      families_(std::move(families)),
      layouts_(LayoutsOf(plan, group_bits)),
      filters_(std::move(filters)) {}

rocksdb::Iterator* Tables::NewIterator(std::size_t t, const rocksdb::ReadOptions& options) const {
  return db_.NewIterator(options, families_[t]);
}

Status Tables::Probe(std::size_t t, const TableMemberFilter& filter,
                     const rocksdb::Snapshot* snapshot, Word query, int k,
                     std::span<const Hit> known, std::vector<Hit>& hits) const {
  const TablePermutation& perm = plan_.table(t);
  const Word permuted_query = Permute(perm, query);
  const Word prefix = permuted_query & PrefixMask(perm);
  // A fingerprint found in an earlier table is in this one too (every table holds every
  // fingerprint at the snapshot); if it has the query's prefix here and the filters show no other
  // with it, it is all the group would give for the prefix, and it is reported once already.
  const bool shares_a_hit = std::any_of(known.begin(), known.end(), [&](const Hit& h) {
    return (Permute(perm, h.fingerprint) & PrefixMask(perm)) == prefix;
  });
  // Most probes find nothing, which the member filters tell without a read. The prefix lies in one
  // group (group bits <= prefix bits).
  switch (filter.Lookup(permuted_query, /*count=*/shares_a_hit)) {
    case PrefixMembers::kNone:
      return Status::OK();
    case PrefixMembers::kAtMostOne:
      if (shares_a_hit) return Status::OK();
      break;
    case PrefixMembers::kMaybeMany:
      break;
  }
  rocksdb::PinnableSlice read;
  Result<bool> found = ReadGroup(t, filter, snapshot, permuted_query, read);
  if (!found.ok()) return found.status();
  if (!*found) return Status::OK();
  const GroupLayout& layout = layouts_[t];
  const Word group = layout.GroupOf(permuted_query);
  thread_local GroupValue members;
  if (!members.DecodeRange(layout, read.ToStringView(), layout.MemberHead(layout.HeadOf(prefix)),
                           layout.MemberHead(layout.HeadOf(prefix | ~PrefixMask(perm))))) {
    return Status::Corruption(TableFamilyName(t) + " holds a malformed group of fingerprint " +
                              FingerprintText(query));
  }
  for (std::size_t i = 0; i < members.size(); ++i) {
    const Word permuted = group | members.bits(i);
    // A 128-bit prefix longer than the head goes on into the tail.
    if ((permuted & PrefixMask(perm)) != prefix) continue;
    const int d = HammingDistance(permuted, permuted_query);
    if (d > k) continue;
    const Word fp = Unpermute(perm, permuted);
    if (plan_.FirstSharedTable(query, fp) != static_cast<int>(t)) continue;
    if (layout.keeps_ids()) {
      hits.push_back({members.id(i), fp, d, /*by_fingerprint=*/false});
    } else {
      hits.push_back({0, fp, d, /*by_fingerprint=*/true});
    }
  }
  return Status::OK();
}

Result<bool> Tables::ReadGroup(std::size_t t, const TableMemberFilter& filter,
                               const rocksdb::Snapshot* snapshot, Word permuted,
                               rocksdb::PinnableSlice& value) const {
  const GroupLayout& layout = layouts_[t];
  const GroupLayout::Key key = layout.KeyOf(permuted);
  const rocksdb::Slice key_slice(key.data(), layout.key_bytes());
  rocksdb::ReadOptions ro = TableReadOptions(snapshot);
  if (filter.files() <= 1) {
    const rocksdb::Status s = db_.Get(ro, families_[t], key_slice, &value);
    if (s.IsNotFound()) return false;
    if (!s.ok()) return FromRocks(s, "reading " + TableFamilyName(t));
    return true;
  }
  // Merges and removals write operands for nearly every group, so each group is in every file:
  // passing by files whose filters rule out the prefix saves reads.
  const Head prefix_mask = PrefixMask(plan_.table(t).prefix_bits());
  ro.table_filter = [&](const rocksdb::TableProperties& file) {
    return FileMayTouch(file, layout, prefix_mask, permuted);
  };
  std::unique_ptr<rocksdb::Iterator> it(db_.NewIterator(ro, families_[t]));
  it->Seek(key_slice);
  if (!it->Valid() || it->key() != key_slice) {
    if (it->status().ok()) return false;
    return FromRocks(it->status(), "reading " + TableFamilyName(t));
  }
  value.PinSelf(it->value());
  return true;
}

Status Tables::ForEachIdOf(rocksdb::Iterator& table0, Word fingerprint,
                           const std::function<bool(DocumentId)>& found) const {
  const Word permuted = Permute(plan_.table(0), fingerprint);
  // The fingerprint's documents are a run of members of one group.
  const GroupLayout& layout = layouts_[0];
  const GroupLayout::Key key = layout.KeyOf(permuted);
  const rocksdb::Slice key_slice(key.data(), layout.key_bytes());
  if (!table0.Valid() || table0.key() != key_slice) table0.Seek(key_slice);
  if (!table0.Valid() || table0.key() != key_slice) {
    if (table0.status().ok()) return Status::OK();
    return FromRocks(table0.status(), "reading " + TableFamilyName(0));
  }
  GroupValue members;  // not the thread's: `found` may probe
  const Word bits = layout.MemberBits(permuted);
  const Head head = layout.HeadOf(bits);
  if (!members.DecodeRange(layout, table0.value().ToStringView(), head, head)) {
    return Status::Corruption(TableFamilyName(0) + " holds a malformed group " +
                              table0.key().ToString(true));
  }
  for (std::size_t i = 0; i < members.size(); ++i) {
    // Members of the head sought, by tail then id: those of other tails pass by.
    if (members.bits(i) != bits) continue;
    if (!found(members.id(i))) break;
  }
  return Status::OK();
}

Result<std::vector<Word>> Tables::FingerprintsKept(std::span<const IdFingerprint> leaving) const {
  // A table-0 seek per fingerprint: large inputs take two threads, split between fingerprints.
  const auto kept_of = [&](std::span<const IdFingerprint> part, std::vector<Word>& kept) -> Status {
    std::unique_ptr<rocksdb::Iterator> table0(
        db_.NewIterator(TableReadOptions(nullptr), families_[0]));
    // Each fingerprint once, in table 0's order, so that each group is read once.
    std::vector<Word> fps;
    for (std::size_t i = 0; i < part.size(); ++i) {
      if (i == 0 || part[i - 1].fingerprint != part[i].fingerprint) {
        fps.push_back(part[i].fingerprint);
      }
    }
    const TablePermutation& perm0 = plan_.table(0);
    std::sort(fps.begin(), fps.end(),
              [&](Word a, Word b) { return Permute(perm0, a) < Permute(perm0, b); });
    for (const Word fp : fps) {
      bool keeps = false;
      Status s = ForEachIdOf(*table0, fp, [&](DocumentId id) {
        keeps = !std::binary_search(leaving.begin(), leaving.end(), IdFingerprint{id, fp},
                                    ByFingerprint);
        return !keeps;
      });
      if (!s.ok()) return s;
      if (keeps) kept.push_back(fp);
    }
    return Status::OK();
  };
  constexpr std::size_t kSplitAbove = 4096;
  std::vector<Word> kept, kept_after;
  const Status s = ForEachHalf(
      leaving, leaving.size() > kSplitAbove, [](const IdFingerprint& f) { return f.fingerprint; },
      [&](std::size_t part, std::span<const IdFingerprint> items) {
        return kept_of(items, part == 0 ? kept : kept_after);
      },
      "finding the fingerprints that stay: ");
  if (!s.ok()) return s;
  kept.insert(kept.end(), kept_after.begin(), kept_after.end());
  std::sort(kept.begin(), kept.end());
  return kept;
}

}  // namespace fpstore::internal
