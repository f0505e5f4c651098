#include "member_filters.h"

#include <rocksdb/sst_file_reader.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>

#include "rocks_status.h"

namespace fpstore::internal {

namespace {

// splitmix64's finalizer, of x offset by the golden ratio so that prefix 0
// does not hash to 0.
std::uint64_t Mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// A file's filter property, or null if it has none.
const std::string* FilterProperty(const rocksdb::TableProperties& file) {
  const auto found = file.user_collected_properties.find(kMemberFilterProperty);
  return found != file.user_collected_properties.end() ? &found->second : nullptr;
}

constexpr int kBitsPerPrefix = 10;
constexpr int kProbes = 6;
constexpr std::size_t kBlockBytes = 64;
// The property: the count of chunks (4 bytes), an index entry a chunk
// (its first and last group, 8 bytes each, and where its filter ends, 4),
// then the filters end to end.
constexpr std::size_t kCountBytes = 4;
constexpr std::size_t kIndexEntryBytes = 8 + 8 + 4;

// The block, from the high half of the hash; the bits in it, from 9-bit
// slices of the top of the hash times an odd constant, whose every bit
// depends on the whole hash: a second finalizer cost loads a tenth more.
std::size_t BlockOf(std::uint64_t h, std::size_t blocks) {
  return static_cast<std::size_t>(((h >> 32) * blocks) >> 32);
}
std::uint64_t BitSlices(std::uint64_t h) { return (h * 0x9e3779b97f4a7c15ULL) >> 10; }

Fingerprint PrefixMask(int prefix_bits) { return ~Fingerprint{0} << (64 - prefix_bits); }

// Builds the property (docs/format.md) from the file's entries in key
// order. A chunk closes once it holds kChunkPrefixes, so a file of any
// size costs the collector a bounded buffer, and a probe tests one chunk's
// filter a file. Removed members count as much as added ones: a read that
// passes a file by must not miss a removal.
class MemberFilterCollector final : public rocksdb::TablePropertiesCollector {
 public:
  MemberFilterCollector(const GroupLayout& layout, int prefix_bits)
      : layout_(layout), prefix_mask_(PrefixMask(prefix_bits)) {}

  rocksdb::Status AddUserKey(const rocksdb::Slice& key, const rocksdb::Slice& value,
                             rocksdb::EntryType type, rocksdb::SequenceNumber,
                             std::uint64_t) override {
    if (type != rocksdb::kEntryPut && type != rocksdb::kEntryMerge) return rocksdb::Status::OK();
    Fingerprint group = 0;
    if (!layout_.DecodeKey(key.ToStringView(), &group)) {
      // The file is written all the same; a filter that passes everything
      // keeps probes exact, and Verify reports the entry.
      malformed_ = true;
      return rocksdb::Status::OK();
    }
    // Chunks end between groups (a group's versions kept for snapshots
    // come one after another), so that their ranges do not overlap.
    if (!prefixes_.empty() && group != last_group_ && prefixes_.size() >= kChunkPrefixes) {
      CloseChunk();
    }
    const std::size_t before = prefixes_.size();
    // The members' order is Verify's to check: the filter needs their bits.
    if (!ForEachMemberOf(layout_, value.ToStringView(), type == rocksdb::kEntryMerge,
                         [&](Fingerprint member) {
                           const Fingerprint prefix = (group | member) & prefix_mask_;
                           if (prefixes_.size() == before || prefixes_.back() != prefix) {
                             prefixes_.push_back(prefix);
                           }
                         })) {
      malformed_ = true;
      return rocksdb::Status::OK();
    }
    if (prefixes_.size() == before) return rocksdb::Status::OK();
    if (before == 0) first_group_ = group;
    last_group_ = group;
    return rocksdb::Status::OK();
  }

  // RocksDB calls this again for the builder's table properties: the
  // filters are built once.
  rocksdb::Status Finish(rocksdb::UserCollectedProperties* properties) override {
    if (malformed_) return rocksdb::Status::OK();  // no property: may hold anything
    if (!prefixes_.empty()) CloseChunk();
    std::string value(kCountBytes, '\0');
    PutBigEndianBytes(value.data(), index_.size() / kIndexEntryBytes, kCountBytes);
    value += index_;
    value += filters_;
    (*properties)[kMemberFilterProperty] = std::move(value);
    return rocksdb::Status::OK();
  }

  rocksdb::UserCollectedProperties GetReadableProperties() const override {
    return {{kMemberFilterProperty, std::to_string(index_.size() / kIndexEntryBytes) + " chunks, " +
                                        std::to_string(filters_.size()) + " bytes"}};
  }
  const char* Name() const override { return "fpstore.MemberFilterCollector"; }

 private:
  static constexpr std::size_t kChunkPrefixes = std::size_t{1} << 16;

  void CloseChunk() {
    MemberFilter::Build(prefixes_, filters_);
    const std::size_t at = index_.size();
    index_.resize(at + kIndexEntryBytes);
    PutBigEndian64(index_.data() + at, first_group_);
    PutBigEndian64(index_.data() + at + 8, last_group_);
    PutBigEndianBytes(index_.data() + at + 16, filters_.size(), 4);
    prefixes_.clear();
  }

  const GroupLayout layout_;
  const Fingerprint prefix_mask_;
  std::vector<Fingerprint> prefixes_;  // of the open chunk
  Fingerprint first_group_ = 0, last_group_ = 0;
  std::string index_, filters_;  // of the closed chunks
  bool malformed_ = false;
};

class MemberFilterCollectorFactory final : public rocksdb::TablePropertiesCollectorFactory {
 public:
  MemberFilterCollectorFactory(const GroupLayout& layout, int prefix_bits)
      : layout_(layout), prefix_bits_(prefix_bits) {}
  rocksdb::TablePropertiesCollector* CreateTablePropertiesCollector(
      rocksdb::TablePropertiesCollectorFactory::Context) override {
    return new MemberFilterCollector(layout_, prefix_bits_);
  }
  const char* Name() const override { return "fpstore.MemberFilterCollectorFactory"; }

 private:
  const GroupLayout layout_;
  const int prefix_bits_;
};

class RefreshAfterCompactions final : public rocksdb::EventListener {
 public:
  explicit RefreshAfterCompactions(std::shared_ptr<MemberFilters> filters)
      : filters_(std::move(filters)) {}
  // RocksDB calls this without holding its own locks, so it may read the
  // family's table properties.
  void OnCompactionCompleted(rocksdb::DB*, const rocksdb::CompactionJobInfo& info) override {
    filters_->RefreshFamily(info.cf_id);
  }

 private:
  const std::shared_ptr<MemberFilters> filters_;
};

}  // namespace

void MemberFilter::Build(std::span<const Fingerprint> prefixes, std::string& out) {
  const std::size_t blocks = std::max<std::size_t>(
      1, (prefixes.size() * kBitsPerPrefix + 8 * kBlockBytes - 1) / (8 * kBlockBytes));
  const std::size_t at = out.size();
  out.resize(at + blocks * kBlockBytes);
  char* const bits = out.data() + at;
  for (Fingerprint prefix : prefixes) {
    const std::uint64_t h = Mix(prefix);
    char* block = bits + kBlockBytes * BlockOf(h, blocks);
    const std::uint64_t slices = BitSlices(h);
    for (int i = 0; i < kProbes; ++i) {
      const unsigned bit = (slices >> (9 * i)) & 511;
      block[bit / 8] = static_cast<char>(block[bit / 8] | (1 << (bit % 8)));
    }
  }
}

std::uint64_t MemberFilter::Hash(Fingerprint prefix) { return Mix(prefix); }

const char* MemberFilter::BlockFor(std::string_view bits, std::uint64_t hash) {
  return bits.data() + kBlockBytes * BlockOf(hash, bits.size() / kBlockBytes);
}

bool MemberFilter::BlockPasses(const char* block, std::uint64_t hash) {
  const std::uint64_t slices = BitSlices(hash);
  for (int i = 0; i < kProbes; ++i) {
    const unsigned bit = (slices >> (9 * i)) & 511;
    if ((block[bit / 8] & (1 << (bit % 8))) == 0) return false;
  }
  return true;
}

std::optional<FileMemberFilter> FileMemberFilter::Parse(std::string_view value, bool thorough) {
  if (value.size() < kCountBytes) return std::nullopt;
  const std::size_t chunks = GetBigEndianBytes(value.data(), kCountBytes);
  value.remove_prefix(kCountBytes);
  if (value.size() / kIndexEntryBytes < chunks) return std::nullopt;
  const FileMemberFilter f(value.substr(0, chunks * kIndexEntryBytes),
                           value.substr(chunks * kIndexEntryBytes), chunks);
  if ((chunks > 0 ? f.FilterEnd(chunks - 1) : 0) != f.filters_.size()) return std::nullopt;
  for (std::size_t i = 0; thorough && i < chunks; ++i) {
    const std::size_t begin = i == 0 ? 0 : f.FilterEnd(i - 1);
    if (f.FilterEnd(i) <= begin || (f.FilterEnd(i) - begin) % kBlockBytes != 0 ||
        f.FirstGroup(i) > f.LastGroup(i) || (i > 0 && f.LastGroup(i - 1) >= f.FirstGroup(i))) {
      return std::nullopt;
    }
  }
  return f;
}

Fingerprint FileMemberFilter::FirstGroup(std::size_t i) const {
  return GetBigEndian64(index_.data() + i * kIndexEntryBytes);
}
Fingerprint FileMemberFilter::LastGroup(std::size_t i) const {
  return GetBigEndian64(index_.data() + i * kIndexEntryBytes + 8);
}
std::size_t FileMemberFilter::FilterEnd(std::size_t i) const {
  return GetBigEndianBytes(index_.data() + i * kIndexEntryBytes + 16, 4);
}

const char* const FileMemberFilter::kUnchecked = "";

bool FileMemberFilter::MayTouch(Fingerprint group, Fingerprint prefix) const {
  // The last chunk that begins at or before the group.
  std::size_t lo = 0, hi = chunks_;
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (FirstGroup(mid) <= group) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return false;
  const std::uint64_t hash = MemberFilter::Hash(prefix);
  const char* block = BlockIn(lo - 1, group, hash);
  if (block == nullptr) return false;
  return block == kUnchecked || MemberFilter::BlockPasses(block, hash);
}

std::vector<Fingerprint> FileMemberFilter::ChunkFirstGroups() const {
  std::vector<Fingerprint> groups(chunks_);
  for (std::size_t i = 0; i < chunks_; ++i) groups[i] = FirstGroup(i);
  return groups;
}

const char* FileMemberFilter::BlockIn(std::size_t chunk, Fingerprint group,
                                      std::uint64_t hash) const {
  if (group > LastGroup(chunk)) return nullptr;
  const std::size_t begin = chunk == 0 ? 0 : FilterEnd(chunk - 1), end = FilterEnd(chunk);
  // A chunk that a quick parse did not check, and is malformed: no answer.
  if (end <= begin || end > filters_.size() || (end - begin) % kBlockBytes != 0) {
    return kUnchecked;
  }
  return MemberFilter::BlockFor(filters_.substr(begin, end - begin), hash);
}

bool FileMayTouch(const rocksdb::TableProperties& file, const GroupLayout& layout,
                  Fingerprint prefix_mask, Fingerprint permuted) {
  const std::string* property = FilterProperty(file);
  if (property == nullptr) return true;
  const std::optional<FileMemberFilter> filter =
      FileMemberFilter::Parse(*property, /*thorough=*/false);
  return !filter || filter->MayTouch(layout.GroupOf(permuted), permuted & prefix_mask);
}

std::shared_ptr<rocksdb::TablePropertiesCollectorFactory> NewMemberFilterCollectorFactory(
    const GroupLayout& layout, int prefix_bits) {
  return std::make_shared<MemberFilterCollectorFactory>(layout, prefix_bits);
}

CacheCharge::CacheCharge(std::shared_ptr<rocksdb::Cache> cache, std::size_t bytes)
    : cache_(std::move(cache)) {
  if (cache_ == nullptr) return;
  constexpr std::size_t kPiece = std::size_t{256} << 10;
  // Keys of their own: this object's address, unique while it lives, and
  // the piece's number.
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
  std::lock_guard lock(mu_);
  std::weak_ptr<const CacheCharge>& slot = charges_[file.get()];
  std::shared_ptr<const CacheCharge> charge = slot.lock();
  if (charge == nullptr) {
    // Files go as compactions replace them: their slots with them.
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
  const std::string* property = FilterProperty(*file);
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

bool TableMemberFilter::MayContain(Fingerprint permuted) const {
  const Fingerprint group = layout_.GroupOf(permuted);
  const std::uint64_t hash = MemberFilter::Hash(permuted & prefix_mask_);
  // The files' blocks fetched before any is tested: under sustained inserts
  // a table has ten files or more, and a probe waited on a cache miss for
  // each in turn.
  constexpr std::size_t kAhead = 16;
  std::array<const char*, kAhead> blocks;
  for (std::size_t first = 0; first < files_.size(); first += kAhead) {
    std::size_t fetched = 0;
    for (std::size_t i = first; i < std::min(files_.size(), first + kAhead); ++i) {
      const File& f = files_[i];
      if (!f.filter) return true;
      const auto after = std::upper_bound(f.first_groups.begin(), f.first_groups.end(), group);
      if (after == f.first_groups.begin()) continue;
      const char* block = f.filter->BlockIn(after - f.first_groups.begin() - 1, group, hash);
      if (block == FileMemberFilter::kUnchecked) return true;
      if (block == nullptr) continue;
      __builtin_prefetch(block);
      blocks[fetched++] = block;
    }
    for (std::size_t i = 0; i < fetched; ++i) {
      if (MemberFilter::BlockPasses(blocks[i], hash)) return true;
    }
  }
  return false;
}

MemberFilters::MemberFilters(const PermutationPlan& plan, int group_bits,
                             std::shared_ptr<rocksdb::Cache> cache)
    : plan_(plan), group_bits_(group_bits), charges_(std::move(cache)) {}

void MemberFilters::Attach(rocksdb::DB* db, std::span<rocksdb::ColumnFamilyHandle* const> tables) {
  std::lock_guard lock(mu_);
  db_ = db;
  tables_.assign(tables.begin(), tables.end());
  RefreshLocked(std::nullopt);
}

void MemberFilters::Detach() {
  std::lock_guard lock(mu_);
  db_ = nullptr;
  tables_.clear();
}

void MemberFilters::Refresh(std::span<rocksdb::ColumnFamilyHandle* const> families) {
  std::vector<std::uint32_t> ids;
  for (rocksdb::ColumnFamilyHandle* f : families) ids.push_back(f->GetID());
  std::lock_guard lock(mu_);
  RefreshLocked(std::move(ids));
}

Result<MemberFilters::Ingested> MemberFilters::ReadIngested(
    rocksdb::DB& db, std::span<const rocksdb::IngestExternalFileArg> args) const {
  Ingested ingested;
  for (const rocksdb::IngestExternalFileArg& arg : args) {
    const std::uint32_t id = arg.column_family->GetID();
    bool is_table = false;
    {
      std::lock_guard lock(mu_);
      for (rocksdb::ColumnFamilyHandle* table : tables_) is_table |= table->GetID() == id;
    }
    if (!is_table) continue;
    for (const std::string& path : arg.external_files) {
      rocksdb::SstFileReader reader(db.GetOptions(arg.column_family));
      if (Status s = FromRocks(reader.Open(path), "reading " + path); !s.ok()) return s;
      ingested.files.emplace_back(id, reader.GetTableProperties());
    }
  }
  return ingested;
}

std::size_t MemberFilters::Ingested::bytes() const {
  std::size_t sum = 0;
  for (const auto& [id, file] : files) {
    if (const std::string* property = FilterProperty(*file)) sum += property->size();
  }
  return sum;
}

void MemberFilters::AddIngested(const Ingested& ingested) {
  std::lock_guard lock(mu_);
  PublishWithLocked(ingested);
}

void MemberFilters::AddPending(const Ingested& ingested) {
  std::lock_guard lock(mu_);
  pending_ = ingested;
  PublishWithLocked(ingested);
}

void MemberFilters::EndPending() {
  std::lock_guard lock(mu_);
  pending_ = {};
}

std::vector<std::shared_ptr<const rocksdb::TableProperties>> MemberFilters::FilesOf(
    const Ingested& ingested, std::size_t t) const {
  std::vector<std::shared_ptr<const rocksdb::TableProperties>> files;
  for (const auto& [id, file] : ingested.files) {
    if (id == tables_[t]->GetID()) files.push_back(file);
  }
  return files;
}

void MemberFilters::PublishWithLocked(const Ingested& ingested) {
  if (db_ == nullptr || ingested.files.empty()) return;
  const View old = current_.load();
  auto next = std::make_shared<std::vector<std::shared_ptr<const TableMemberFilter>>>(*old);
  for (std::size_t t = 0; t < tables_.size(); ++t) {
    if ((*next)[t] == nullptr) continue;
    const auto added = FilesOf(ingested, t);
    if (!added.empty()) (*next)[t] = (*next)[t]->With(added, &charges_);
  }
  current_.store(std::move(next));
}

void MemberFilters::RefreshFamily(std::uint32_t family_id) {
  std::lock_guard lock(mu_);
  RefreshLocked(std::vector<std::uint32_t>{family_id});
}

void MemberFilters::RefreshLocked(std::optional<std::vector<std::uint32_t>> ids) {
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
    if (read.ok()) {
      (*next)[t] = *std::move(read);
      // Files being ingested, which the family may not list yet.
      if (const auto pending = FilesOf(pending_, t); !pending.empty()) {
        (*next)[t] = (*next)[t]->With(pending, &charges_);
      }
    } else {
      // Files may have come that the old filters do not know: until a
      // refresh succeeds, every probe of the table reads its group.
      (*next)[t] = TableMemberFilter::PassingAll();
    }
    changed = true;
  }
  if (changed || !old) current_.store(std::move(next));
}

std::shared_ptr<rocksdb::EventListener> MemberFilters::MakeListener(
    std::shared_ptr<MemberFilters> filters) {
  return std::make_shared<RefreshAfterCompactions>(std::move(filters));
}

}  // namespace fpstore::internal
